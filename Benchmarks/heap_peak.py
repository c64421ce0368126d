"""Summarises `heaptrack_print --print-peaks 1` (read on stdin): the heap at its peak, as the
largest call sites, each named by the innermost frame of its stack that belongs to a codec library,
to our code or to the Swift runtime's allocator. Prints "peak heap MiB" then "MiB site" lines,
largest first (the TOP given as the argument, default 6).
"""

import re
import sys

UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}  # heaptrack_print's sizes are decimal
SIZE = re.compile(r"^\s*([0-9.]+)([KMG]?B?) consumed over \d+ calls from:")
PEAK = re.compile(r"^peak heap memory consumption: ([0-9.]+)([KMG]?B?)")
# The frames that say whose allocation it is.
OWNERS = [
    (re.compile(r"PipelineCore6BitmapV"), "PipelineCore Bitmap (the picture)"),
    (re.compile(r"RowResampler|Resampler"), "PipelineCore resampler"),
    (re.compile(r"^\s*(Jxl\w+)"), None),
    (re.compile(r"^\s*(jpeg_\w+|jinit_\w+)"), None),
    (re.compile(r"^\s*(WebP\w+)"), None),
    (re.compile(r"^\s*(heif_\w+|de265_\w+|dav1d_\w+)"), None),
    (re.compile(r"^\s*(rsvg_\w+|cairo_\w+|pango_\w+|xml\w+)"), None),
    (re.compile(r"^\s*(png_\w+|spng_\w+)"), None),
    (re.compile(r"\$s\d*(Codec\w+?)\d"), None),
    (re.compile(r"\$s\d*(PipelineCore|imgpipe)\d"), None),
]


def owner(frames):
    for frame in frames:  # innermost first
        for pattern, name in OWNERS:
            match = pattern.search(frame)
            if match:
                return name or match.group(1)
    return frames[0].strip() if frames else "?"


def size(number, unit):
    return float(number) * UNITS[unit.rstrip("B")]


def main():
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    sites, current, peak = [], None, 0.0
    for line in sys.stdin:
        match = SIZE.match(line)
        if match:
            current = [size(*match.groups()), []]
            sites.append(current)
            continue
        match = PEAK.match(line)
        if match:
            peak = size(*match.groups())
            current = None
            continue
        if current is not None and line.startswith("    ") and not line.strip().startswith(("in ", "at ")):
            current[1].append(line)
        elif current is not None and not line.startswith(" "):
            current = None
    print(f"peak heap {peak / (1 << 20):.1f} MiB")
    merged = {}
    for amount, frames in sites:
        name = owner(frames)
        merged[name] = merged.get(name, 0) + amount
    for name, amount in sorted(merged.items(), key=lambda item: -item[1])[:top]:
        print(f"  {amount / (1 << 20):7.1f} MiB  {name}")


main()
