#!/usr/bin/env bash
# Thumbnail benchmark: a whole `imgpipe thumb --size 256` process beside vipsthumbnail and
# Pillow (draft + thumbnail) on 6000x4000 photos: baseline and progressive JPEG (q90), PNG RGB
# and RGBA, lossy WebP (cwebp -q 90; with `dwebp -scale`, libwebp's own scaled decode, as the
# floor). Prints the minimum of $RUNS runs (default 7) of wall time and peak RSS
# (/usr/bin/time -f %M) per tool and input. BASELINE_IMGPIPE=/path/to/imgpipe adds a row per
# input: another build of imgpipe (say, main before a change) measured in the same run.
#
# Idempotent: installs missing peers with scripts/bootstrap (libvips-tools, webp, time,
# python3-pil), builds the release imgpipe (the benchmark package's), and makes the inputs once
# into Benchmarks/.inputs (gitignored).
source "$(dirname "$0")/common.sh"
bench_runs 7
size=256
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench_bootstrap libvips-tools webp time python3-pil
imgpipe="$(bench_build imgpipe)/imgpipe"

photo_inputs
[ -f "$inputs/photo-lossy.webp" ] || cwebp -quiet -q 90 "$inputs/photo-rgb.png" -o "$inputs/photo-lossy.webp"

pillow_script='import sys
from PIL import Image
im = Image.open(sys.argv[1])
im.draft("RGB", (256, 256))
im.thumbnail((256, 256))
im.save(sys.argv[2])'

row_format="%-22s %-14s %8s %10s"
printf "$row_format\n" input tool "ms" "peak MiB"
for input in photo-baseline.jpg photo-progressive.jpg photo-rgb.png photo-rgba.png photo-lossy.webp; do
  file="$inputs/$input"
  tools="imgpipe"
  [ -n "${BASELINE_IMGPIPE:-}" ] && tools+=" baseline"
  tools+=" vipsthumbnail pillow"
  [[ $input == *.webp ]] && tools+=" dwebp-scale"
  for tool in $tools; do
    case $tool in
      imgpipe) row "$input" "$tool" "$imgpipe" thumb "$file" --size $size --out "$out/t.png" ;;
      baseline) row "$input" "baseline" "$BASELINE_IMGPIPE" thumb "$file" --size $size --out "$out/b.png" ;;
      vipsthumbnail) row "$input" "$tool" vipsthumbnail "$file" -s $size -o "$out/v.png" ;;
      pillow) row "$input" "$tool" "$pillow" -c "$pillow_script" "$file" "$out/p.png" ;;
      dwebp-scale) row "$input" "$tool" dwebp "$file" -scale $size 0 -pam -o "$out/d.pam" ;;
    esac
  done
done
