#!/usr/bin/env bash
# Decode admission by memory (issue 15). Two tables:
#  1. per format, the decoder's estimate of one decode's peak memory (as the pipeline admits
#     it) beside the measured peak RSS growth of that decode, full size and as a 256-px thumbnail;
#  2. 100 progressive 24-MP JPEG thumbnails at once on 16 decode threads (a 16-core server's
#     default), with no memory budget and with a 256 MiB one: peak RSS and wall time.
# Each line is its own process. Inputs: the 6000x4000 photos of thumbnails.sh (made there), and
# 3000x2000 copies in other formats made here with vips, cwebp, heif-enc and ImageMagick.
source "$(dirname "$0")/common.sh"
[ -f "$inputs/photo-rgba.png" ] || { echo "decode-memory: run Benchmarks/thumbnails.sh once to make the inputs" >&2; exit 1; }
bench_bootstrap libvips-tools webp libheif-examples imagemagick
bench="$(bench_build DecodeMemoryBenchmark)/DecodeMemoryBenchmark"
m="$inputs/memory"
mkdir -p "$m"
if [ ! -f "$m/small.gif" ]; then
  vips resize "$inputs/photo-rgba.png" "$m/small-rgba.png" 0.5
  vips resize "$inputs/photo-rgb.png" "$m/small-rgb.png" 0.5
  vips pngsave "$m/small-rgba.png" "$m/interlaced.png" --interlace
  cwebp -quiet -q 80 "$m/small-rgb.png" -o "$m/lossy.webp"
  cwebp -quiet -q 80 "$m/small-rgba.png" -o "$m/lossy-alpha.webp"
  cwebp -quiet -lossless "$m/small-rgba.png" -o "$m/lossless.webp"
  heif-enc -q 50 "$m/small-rgb.png" -o "$m/photo.heic" >/dev/null
  heif-enc -A -q 50 "$m/small-rgb.png" -o "$m/photo.avif" >/dev/null
  convert "$m/small-rgb.png" "$m/small.gif"
fi
echo "## One decode: estimate vs measured peak RSS growth"
for f in "$inputs/photo-baseline.jpg" "$inputs/photo-progressive.jpg" "$inputs/photo-rgba.png" "$m/interlaced.png" \
         "$m/lossy.webp" "$m/lossy-alpha.webp" "$m/lossless.webp" "$m/photo.heic" "$m/photo.avif" "$m/small.gif"; do
  "$bench" estimate "$f"
  "$bench" estimate "$f" 256
done
echo "## 100 progressive JPEG thumbnails at once, 16 decode threads"
"$bench" concurrent "$inputs/photo-progressive.jpg" 100 256 16 none
"$bench" concurrent "$inputs/photo-progressive.jpg" 100 256 16 256
