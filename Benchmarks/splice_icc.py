#!/usr/bin/env python3
"""Copies the APP2 ICC_PROFILE segments of one JPEG into another, right after its SOI, without
re-encoding: splice_icc.py PROFILE_SOURCE.jpg TARGET.jpg OUT.jpg. Also writes OUT.jpg.icc, the
reassembled profile."""
import sys


def icc_segments(data: bytes) -> list:
    segments, i = [], 2
    while i + 4 <= len(data) and data[i] == 0xFF and data[i + 1] != 0xDA:
        length = data[i + 2] << 8 | data[i + 3]
        if data[i + 1] == 0xE2 and data[i + 4:i + 16] == b"ICC_PROFILE\0":
            segments.append(data[i:i + 2 + length])
        i += 2 + length
    return segments


def main() -> None:
    source, target, out = (open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read(), sys.argv[3])
    segments = icc_segments(source)
    if not segments or target[:2] != b"\xff\xd8":
        sys.exit("splice_icc: no ICC segments in the source, or the target is not a JPEG")
    open(out, "wb").write(target[:2] + b"".join(segments) + target[2:])
    open(out + ".icc", "wb").write(b"".join(s[18:] for s in segments))


main()
