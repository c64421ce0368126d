#!/usr/bin/env bash
# SVG thumbnails beside rsvg-convert: the 37 valid SVGs of ../shared/corpus/svg/ (icons of 16 to
# 213 px) drawn at 512 px (fitted in 512x512) as PNG: one imgpipe process for all of them
# (`imgpipe thumb … --size 512 --out-dir`), and one `rsvg-convert -w 512 -h 512 -a` per file, as
# it is used. The same library (librsvg 2.54) draws both; what differs is the process start,
# the PNG encoder and the pipeline around it. Then how many of imgpipe's pictures are
# rsvg-convert's pixels exactly (PAM through pngtopam; a side rounded rather than rounded up
# makes a picture one row or column smaller, and those are counted apart).
# Minimum of $RUNS runs (default 5). Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 5
bench_bootstrap librsvg2-bin netpbm
require_tools rsvg-convert pngtopam
corpus="$root/../shared/corpus/svg"
[ -d "$corpus" ] || { echo "$(basename "$0"): $corpus is absent (see ../shared/corpus/README.md)" >&2; exit 1; }
bin="$(bench_build imgpipe)/imgpipe"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/ours" "$work/rsvg"
files=("$corpus"/*.svg "$corpus"/*.svgz)

rsvg_batch() {
  local f name
  for f in "${files[@]}"; do
    name=$(basename "$f"); name=${name%.*}; [[ "$f" == *.svgz ]] && name="$name-z"
    rsvg-convert -w 512 -h 512 -a -f png -o "$work/rsvg/$name.png" "$f"
  done
}
ours_batch() {
  "$bin" thumb "${files[@]}" --size 512 --out-dir "$work/ours" --format png --no-disk-cache
}

echo "${#files[@]} SVG files to 512-px PNG (ms, best of $runs):"
printf '%-44s %6s\n' "imgpipe thumb --size 512 (one process)" "$(best ours_batch)"
printf '%-44s %6s\n' "rsvg-convert -w 512 -h 512 -a (one per file)" "$(best rsvg_batch)"

rsvg_batch; "$bin" thumb "$corpus"/*.svg --size 512 --out-dir "$work/ours" --format png --no-disk-cache >/dev/null 2>&1
same=0 smaller=0 differ=0
for f in "$corpus"/*.svg; do
  name=$(basename "$f" .svg)
  a=$(pngtopam -alphapam "$work/ours/$name.png" | md5sum) b=$(pngtopam -alphapam "$work/rsvg/$name.png" | md5sum)
  if [ "$a" = "$b" ]; then same=$((same + 1))
  elif [ "$(pngtopam -alphapam "$work/ours/$name.png" | head -3)" != "$(pngtopam -alphapam "$work/rsvg/$name.png" | head -3)" ]; then smaller=$((smaller + 1))
  else differ=$((differ + 1)); echo "  differs: $name" >&2
  fi
done
echo "pixels: $same identical to rsvg-convert's, $smaller a row or column smaller (rounded, not rounded up), $differ different"
