import StreamServer
print("streamd: the server arrives with issue 4")
