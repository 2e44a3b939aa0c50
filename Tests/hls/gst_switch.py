#!/usr/bin/python3
"""Plays an HLS master playlist with GStreamer (uridecodebin3 -> hlsdemux2) into a WAV file and
makes hlsdemux2 switch variant mid-track by changing its `connection-speed`.

usage: gst_switch.py URL OUT.wav FROM_KBPS TO_KBPS AT_SECONDS

hlsdemux2 picks the variant of the highest BANDWIDTH below connection-speed x
bandwidth-target-ratio (0.8) when it starts a fragment; with connection-speed set it does not
measure the download rate, so the choice is deterministic. The watermarks are kept at 1 s so the
demuxer downloads only about a fragment ahead of what it has pushed; the speed changes, in the
streaming thread itself (a pad probe, no clock), on the first buffer AT_SECONDS after the first.
The system python3: gi comes from Debian's python3-gi."""
import sys
import gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst

Gst.init(None)
url, out, from_kbps, to_kbps, at = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
pipeline = Gst.parse_launch("uridecodebin3 name=decode ! audioconvert ! audio/x-raw,format=S16LE ! wavenc ! filesink name=sink")
pipeline.get_by_name("decode").set_property("uri", url)
pipeline.get_by_name("sink").set_property("location", out)
state = {"first": None, "switched": None}

def on_buffer(pad, info, demux):
    pts = info.get_buffer().pts
    if pts == Gst.CLOCK_TIME_NONE or state["switched"] is not None:
        return Gst.PadProbeReturn.OK
    if state["first"] is None:
        state["first"] = pts
    if pts - state["first"] >= at * Gst.SECOND:
        demux.set_property("connection-speed", to_kbps)
        state["switched"] = (pts - state["first"]) / Gst.SECOND
    return Gst.PadProbeReturn.OK

def on_element(bin, sub, element):
    factory = element.get_factory()
    if factory is not None and factory.get_name() == "hlsdemux2":
        element.set_property("connection-speed", from_kbps)
        element.set_property("high-watermark-time", Gst.SECOND)
        element.set_property("max-buffering-time", Gst.SECOND)
        element.connect("pad-added", lambda demux, pad: pad.add_probe(Gst.PadProbeType.BUFFER, on_buffer, demux))

pipeline.get_by_name("decode").connect("deep-element-added", on_element)
pipeline.set_state(Gst.State.PLAYING)
message = pipeline.get_bus().timed_pop_filtered(120 * Gst.SECOND, Gst.MessageType.EOS | Gst.MessageType.ERROR)
pipeline.set_state(Gst.State.NULL)
if message is None:
    sys.exit("no end of stream in 120 s")
if message.type == Gst.MessageType.ERROR:
    sys.exit("error: %s" % (message.parse_error(),))
print("switched at", state["switched"])
sys.exit(0 if state["switched"] is not None else 3)
