import StreamClient
print("streamplay")
