#!/usr/bin/env bash
# JPEG XL thumbnails: a 256-px thumbnail of a 6000x4000 (24 MP) lossy JPEG XL, a whole
# `imgpipe thumb --size 256` process, beside vipsthumbnail (libvips 8.14's jxlload: the same
# libjxl 0.7, full decode then shrink) and djxl 0.7's decode alone (`--downsampling=8`, which
# skips only the passes of a progressive file that carry hints for it, and a plain decode): the
# libjxl floor, no thumbnail made. imgpipe at 256 px stops at the frame's 1:8 DC image
# (CodecJXL's only shrink-on-load in 0.7); `--size 1000` (over an eighth of the width) is its
# full decode, for comparison. Both lossy (VarDCT, -d 1) and progressive (-p -d 1) inputs.
# imgpipe decodes on one thread (JXLDecoder's threadCount 0); vipsthumbnail gives libjxl a
# thread per core, so it is also run with VIPS_CONCURRENCY=1.
#
# The input: Benchmarks/.inputs/photo-rgb.png (thumbnails.sh's 6000x4000 photo) when it exists,
# else four 3000x2000 crops of Debian's installed 5120x2880 wallpapers (Altai, MilkyWay, Patak,
# IceCold) tiled with vips; encoded once with cjxl into Benchmarks/.inputs.
# Minimum of $RUNS runs (default 5). Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 5
bench_bootstrap libjxl-tools libvips-tools
require_tools cjxl djxl vips vipsthumbnail
bin="$(bench_build imgpipe)/imgpipe"
mkdir -p "$inputs"
source_png="$inputs/photo-rgb.png"
if [ ! -f "$source_png" ]; then
    # Four 3000x2000 crops of Debian's 5120x2880 wallpapers at their own resolution (no
    # upscaling, so the detail, and the AC data, is a real photo's), tiled 2x2.
    source_png="$inputs/jxl-source-6000x4000.png"
    if [ ! -f "$source_png" ]; then
        tiles=()
        for name in Altai MilkyWay Patak IceCold; do
            wallpaper=/usr/share/wallpapers/$name/contents/images/5120x2880.png
            [ -f "$wallpaper" ] || { echo "$(basename "$0"): needs $inputs/photo-rgb.png (thumbnails.sh) or $wallpaper" >&2; exit 1; }
            vips crop "$wallpaper" "$inputs/jxl-crop.v" 1060 440 3000 2000
            vips extract_band "$inputs/jxl-crop.v" "$inputs/jxl-tile-$name.v" 0 --n 3  # RGB: some are RGBA
            tiles+=("$inputs/jxl-tile-$name.v")
        done
        vips arrayjoin "${tiles[*]}" "$source_png" --across 2
        rm -f "${tiles[@]}" "$inputs/jxl-crop.v"
    fi
fi
[ -f "$inputs/photo-d1.jxl" ] || cjxl "$source_png" "$inputs/photo-d1.jxl" -d 1 --quiet
[ -f "$inputs/photo-p-d1.jxl" ] || cjxl "$source_png" "$inputs/photo-p-d1.jxl" -p -d 1 --quiet
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

row_format="%-26s %-40s %8s %10s"
echo "24 MP JPEG XL → 256-px thumbnail (ms and peak MiB, best of $runs):"
printf "$row_format\n" "input" "tool" "ms" "peak MiB"
for name in photo-d1 photo-p-d1; do
    file="$inputs/$name.jxl"
    label="$name ($(( $(stat -c %s "$file") / 1024 )) KiB)"
    row "$label" "imgpipe thumb --size 256 (DC)" "$bin" thumb "$file" --size 256 --out "$work/t.png" --no-disk-cache
    row "$label" "imgpipe thumb --size 1000 (full decode)" "$bin" thumb "$file" --size 1000 --out "$work/f.png" --no-disk-cache
    row "$label" "vipsthumbnail -s 256" vipsthumbnail "$file" -s 256 -o "$work/v.png"
    row "$label" "VIPS_CONCURRENCY=1 vipsthumbnail -s 256" env VIPS_CONCURRENCY=1 vipsthumbnail "$file" -s 256 -o "$work/v1.png"
    row "$label" "djxl --downsampling=8 (decode only)" djxl "$file" "$work/d.ppm" --downsampling=8 --quiet
    row "$label" "djxl --num_threads=1 (decode only)" djxl "$file" "$work/d.ppm" --num_threads=1 --quiet
done
"$bin" thumb "$inputs/photo-d1.jxl" --size 256 --out "$work/t.png" --no-disk-cache >/dev/null 2>&1
vipsthumbnail "$inputs/photo-d1.jxl" -s 256 -o "$work/v.png"
echo "PSNR of imgpipe's DC thumbnail against vipsthumbnail's (full decode): $("$pillow" - "$work/t.png" "$work/v.png" <<'PY'
import sys
from PIL import Image
import math
a, b = (Image.open(p).convert("RGB") for p in sys.argv[1:3])
if a.size != b.size:
    b = b.resize(a.size)
pa, pb = a.tobytes(), b.tobytes()
mse = sum((x - y) ** 2 for x, y in zip(pa, pb)) / len(pa)
print("inf" if mse == 0 else f"{10 * math.log10(255 * 255 / mse):.1f} dB")
PY
)"
