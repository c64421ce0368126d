#!/usr/bin/env bash
# Thumbnail benchmark: a whole `imgpipe thumb --size 256` process beside vipsthumbnail 8.14
# (Debian's), pyvips 8.18 (PyPI, in-process) and Pillow (draft + thumbnail) on 6000x4000
# photos: baseline and progressive JPEG (q90), PNG RGB and RGBA, lossy WebP (cwebp -q 90; with
# `dwebp -scale`, libwebp's own scaled decode, as the floor), lossless WebP (cwebp -lossless),
# HEIC (heif-enc -q 90), AVIF (avifenc, aom cq-level 28), JPEG XL (cjxl -d 1), and an SVG icon
# (the corpus's tango-computer.svg, which svg.sh draws too) at 256 px. Prints the minimum of
# $RUNS runs (default 7) of wall time and peak RSS (/usr/bin/time -f %M) per tool and input,
# then per input a line of each tool's time and peak as a multiple of vipsthumbnail's (the goal:
# imgpipe at most 0.9x in both).
#
# pyvips 8.18 (PyPI pyvips + pyvips-binary, pinned, in the venv scripts/python-venv makes in
# .build/venvs/pyvips) runs Benchmarks/pyvips_thumbnail.py, which says exactly what it counts:
# its time is the fastest of $RUNS `Image.thumbnail(FILE, 256).write_to_file(OUT)` calls in one
# process after an untimed warm-up call (Python's start-up and the import are not counted;
# "first" in the row is that warm-up call); its peak is a fresh process's VmHWM after one
# thumbnail minus its VmRSS just before `import pyvips` (the interpreter is not counted,
# libvips's libraries and the picture are), the minimum of $RUNS processes.
#
# BASELINE_IMGPIPE=/path/to/imgpipe adds a row per input: another build of imgpipe (say, main
# before a change) measured in the same run. IMGPIPE=/path/to/imgpipe measures that build
# instead of building the benchmark package's. INPUTS="photo-d1.jxl icon.svg" limits the inputs.
#
# Idempotent: installs missing peers with scripts/bootstrap (libvips-tools, webp, time,
# python3-pil, libheif-examples, libavif-bin, libjxl-tools), builds the release imgpipe (the
# benchmark package's), and makes the inputs once into Benchmarks/.inputs (gitignored).
source "$(dirname "$0")/common.sh"
bench_runs 7
size=256
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench_bootstrap libvips-tools webp time python3-pil libheif-examples libavif-bin libjxl-tools
imgpipe=${IMGPIPE:-"$(bench_build imgpipe)/imgpipe"}
pyvips=$("$root/scripts/python-venv" pyvips "pyvips==3.2.0" "pyvips-binary==8.18.7")

photo_inputs
photo="$inputs/photo-rgb.png"
[ -f "$inputs/photo-lossy.webp" ] || cwebp -quiet -q 90 "$photo" -o "$inputs/photo-lossy.webp"
[ -f "$inputs/photo-lossless.webp" ] || cwebp -quiet -lossless "$photo" -o "$inputs/photo-lossless.webp"
# heif-memory.sh's input too.
[ -f "$inputs/photo.heic" ] || heif-enc -q 90 "$photo" -o "$inputs/photo.heic" >/dev/null
[ -f "$inputs/photo.avif" ] || avifenc -s 6 -j 2 -y 420 -d 8 --min 0 --max 63 -a end-usage=q -a cq-level=28 \
  "$photo" "$inputs/photo.avif" >/dev/null
# jxl.sh's input too (it makes it from the same photo when thumbnails.sh's exists).
[ -f "$inputs/photo-d1.jxl" ] || cjxl "$photo" "$inputs/photo-d1.jxl" -d 1 --quiet
[ -f "$inputs/icon.svg" ] || cp "$root/../shared/corpus/svg/tango-computer.svg" "$inputs/icon.svg" \
  || echo "thumbnails.sh: no ../shared/corpus/svg (see ../shared/corpus/README.md): the SVG row is left out" >&2

pillow_script='import sys
from PIL import Image
im = Image.open(sys.argv[1])
im.draft("RGB", (256, 256))
im.thumbnail((256, 256))
im.save(sys.argv[2])'

# The pyvips row: pyvips_thumbnail.py's in-process time, and its peak in fresh processes.
pyvips_row() {
  local file=$1 label=$2 result best_ms first_ms before after peak kib="" _
  # pyvips-binary has no JPEG XL loader and no HEVC decoder: such a row says libvips's reason.
  result=$("$pyvips" "$root/Benchmarks/pyvips_thumbnail.py" time "$runs" $size "$out/y.png" "$file" 2>"$out/y.err") \
    || { printf "$row_format  (%s)\n" "$label" "pyvips 8.18" failed "" "$(grep -E 'heif:|not a known' "$out/y.err" | tail -n 1 | sed 's/^ *//')"
         row_ms=failed; return; }
  read -r best_ms first_ms <<<"$result"
  for _ in $(seq "$runs"); do
    result=$("$pyvips" "$root/Benchmarks/pyvips_thumbnail.py" rss $size "$out/y.png" "$file")
    read -r before after peak <<<"$result"
    if [ -z "$kib" ] || [ $((peak - before)) -lt "$kib" ]; then kib=$((peak - before)); fi
  done
  row_ms=$best_ms row_kib=$kib
  printf "$row_format  (first call %s ms; %s MiB above the import)\n" "$label" "pyvips 8.18" "$best_ms" "$(mib "$kib")" \
    "$first_ms" "$(mib $((kib - (after - before))))"
}

row_format="%-22s %-14s %8s %10s"
printf "$row_format\n" input tool "ms" "peak MiB"
for input in ${INPUTS:-photo-baseline.jpg photo-progressive.jpg photo-rgb.png photo-rgba.png photo-lossy.webp \
  photo-lossless.webp photo.heic photo.avif photo-d1.jxl icon.svg}; do
  file="$inputs/$input"
  [ -f "$file" ] || continue
  tools="imgpipe"
  [ -n "${BASELINE_IMGPIPE:-}" ] && tools+=" baseline"
  tools+=" vipsthumbnail pyvips"
  [[ $input == *.jpg || $input == *.png || $input == *.webp ]] && tools+=" pillow"
  [[ $input == photo-lossy.webp ]] && tools+=" dwebp-scale"
  declare -A ms=() kib=()
  for tool in $tools; do
    case $tool in
      imgpipe) row "$input" "$tool" "$imgpipe" thumb "$file" --size $size --out "$out/t.png" ;;
      baseline) row "$input" "baseline" "$BASELINE_IMGPIPE" thumb "$file" --size $size --out "$out/b.png" ;;
      vipsthumbnail) row "$input" "$tool" vipsthumbnail "$file" -s $size -o "$out/v.png" ;;
      pyvips) pyvips_row "$file" "$input" ;;
      pillow) row "$input" "$tool" "$pillow" -c "$pillow_script" "$file" "$out/p.png" ;;
      dwebp-scale) row "$input" "$tool" dwebp "$file" -scale $size 0 -pam -o "$out/d.pam" ;;
    esac
    ms[$tool]=$row_ms kib[$tool]=${row_kib:-}
  done
  # Each tool's time and peak as a multiple of vipsthumbnail's.
  if [ "${ms[vipsthumbnail]}" != failed ]; then
    line="  × vipsthumbnail:"
    for tool in $tools; do
      [ "$tool" = vipsthumbnail ] || [ "${ms[$tool]}" = failed ] && continue
      line+=$(awk -v t="$tool" -v a="${ms[$tool]}" -v b="${ms[vipsthumbnail]}" -v c="${kib[$tool]}" -v d="${kib[vipsthumbnail]}" \
        'BEGIN { printf "  %s %.2f× time %.2f× peak;", t, a / b, c / d }')
    done
    echo "$line"
  fi
done
