#!/usr/bin/env python3
"""frame_diff.py - our lz4 and zstd decoding (compress/lz4.c, zstd.c, through fuzz_lz4 and
fuzz_zstd) against the lz4 and zstd tools on the same objects: the same verdict (decoded or
refused) and, when both decode, the same bytes.

    frame_diff.py BUILD lz4|zstd DIR...    every file under the DIRs

Where ours refuses an object the tool decodes, after a prefix of the same bytes (stricter),
it is counted and listed, not failed. Exit
status 1 on any other difference, with the object and both verdicts."""
import os, subprocess, sys, tempfile

build, codec, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
target = os.path.join(build, "fuzz_" + codec)
tool = {"lz4": ["lz4", "-dc"], "zstd": ["zstd", "-dcq"]}[codec]
# fuzz_decode.h stops after this much output; the tools are compared on that much
MAX_OUTPUT = 64 << 20


def ours(path):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "verdict")
        subprocess.run([target, path], env=dict(os.environ, FUZZ_DECODE_OUT=out), capture_output=True)
        try:
            verdict = open(out).read().strip()
            data = open(out + ".data", "rb").read()
        except FileNotFoundError:
            return "crashed", b""
    return verdict, data


def theirs(path):
    if os.path.getsize(path) == 0:
        # the tools read an empty file as no frames at all; an object is never empty
        return "empty", b""
    r = subprocess.run(tool + [path], capture_output=True)
    return ("ok" if r.returncode == 0 else "refused"), r.stdout


files = sorted(os.path.join(top, f) for d in dirs for top, _, fs in os.walk(d) for f in fs)
same = stricter = 0
bad = []
for f in files:
    v_ours, d_ours = ours(f)
    v_tool, d_tool = theirs(f)
    if v_tool == "empty":
        same += 1
    elif v_ours == "crashed":
        bad.append((f, "fuzz_%s crashed on it" % codec))
    elif v_ours == "ok" and v_tool == "ok":
        if d_ours != d_tool[:MAX_OUTPUT]:
            bad.append((f, "both decode it, to different bytes (%d and %d)" % (len(d_ours), len(d_tool))))
        else:
            same += 1
    elif v_ours == "ok":
        bad.append((f, "ours decodes what %s refuses" % tool[0]))
    elif v_tool == "ok" and d_tool.startswith(d_ours):
        # ours refuses what the tool decodes, having given a prefix of the same bytes
        stricter += 1
    elif v_tool == "ok":
        bad.append((f, "%s decodes it; ours refuses it after other bytes" % tool[0]))
    else:
        # both refuse: ours must not have given bytes the tool did not
        if not d_tool.startswith(d_ours) and not d_ours.startswith(d_tool):
            bad.append((f, "both refuse it, after different bytes"))
        else:
            same += 1
print(f"frame_diff {codec}: {len(files)} objects: {same} with the same verdict and bytes, "
      f"{stricter} refused by ours only, {len(bad)} differences")
for f, what in bad[:10]:
    print(f"frame_diff {codec}: {f}: {what}")
sys.exit(1 if bad else 0)
