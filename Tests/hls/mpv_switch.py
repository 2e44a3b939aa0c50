#!/usr/bin/env python3
"""Plays an HLS master playlist in mpv and switches its audio track (one variant of the ladder)
mid-track through mpv's JSON IPC; mpv writes what it plays with --ao=pcm.

usage: mpv_switch.py URL OUT.wav LOG FROM_AID TO_AID AT_SECONDS [MPV_OPTION ...]

The arealtime filter paces mpv at 4x real time, so the switch, sent when time-pos first reaches
AT_SECONDS, lands mid-track even though --ao=pcm itself writes as fast as mpv decodes. Where it
lands exactly is read from the output, not assumed. Prints `switched at T` and mpv's exit status."""
import json, os, socket, subprocess, sys

url, out, log_path, from_aid, to_aid, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
extra = sys.argv[7:]
ours, theirs = socket.socketpair()
with open(log_path, "w") as log:
    mpv = subprocess.Popen(["mpv", "--no-config", "--really-quiet=no", "-v", "--vo=null", "--ao=pcm", "--ao-pcm-file=" + out,
                            "--af=lavfi=[arealtime=speed=4]", "--aid=%d" % from_aid, "--pause"] + extra + [
                            "--input-ipc-client=fd://%d" % theirs.fileno(), url],
                           stdout=log, stderr=subprocess.STDOUT, pass_fds=[theirs.fileno()])
theirs.close()
stream = ours.makefile("rwb")

def send(*command):
    stream.write((json.dumps({"command": list(command)}) + "\n").encode())
    stream.flush()

send("observe_property", 1, "time-pos")
send("set_property", "pause", False)
switched = None
for line in stream:
    message = json.loads(line)
    event = message.get("event")
    if event == "property-change" and message.get("name") == "time-pos" and message.get("data") is not None:
        if switched is None and message["data"] >= at:
            switched = message["data"]
            send("set_property", "aid", to_aid)
    elif event in ("end-file", "shutdown", "idle"):
        break
send("quit")
status = mpv.wait(timeout=60)
print("switched at", switched)
print("mpv exit", status)
sys.exit(0 if switched is not None else 3)
