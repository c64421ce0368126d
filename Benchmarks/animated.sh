#!/usr/bin/env bash
# Animated output beside gif2webp and ImageMagick, on the animated GIFs of ../shared/corpus/gif
# (the 380-frame Muybridge, the 259-frame sample_big, moon_impact, and Samples/orbit.gif):
#   - GIF to animated WebP at full size: `imgpipe convert in.gif out.webp` (lossy q80, and
#     --lossless) beside `gif2webp -q 80` (lossy) and `gif2webp` (its lossless default);
#   - GIF to a 128-px animated thumbnail: `imgpipe thumb in.gif -s 128 -o out.webp|out.gif`
#     beside `convert in.gif -coalesce -resize 128x128 [-layers optimize] out.webp|out.gif`
#     (ImageMagick 6's way to resize an animation);
# with the bytes written, the best wall time of $RUNS runs (default 3) and the peak RSS.
# Needs webp (gif2webp) and imagemagick. Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 3
bench_bootstrap webp imagemagick
require_tools gif2webp convert
bin="$(bench_build imgpipe)/imgpipe"
corpus="$(dirname "$0")/../../shared/corpus/gif"
[ -d "$corpus" ] || { echo "animated: $corpus is absent" >&2; exit 1; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
inputs=("$corpus/gifplayer-muybridge.gif" "$corpus/sample_big.gif" "$corpus/moon_impact.gif" "$(dirname "$0")/../Samples/orbit.gif")

row_format="%-26s %-44s %8s ms %8s MiB"
row_note() { printf "  %9s bytes" "$(stat -c %s "$out")"; }
for input in "${inputs[@]}"; do
  name=$(basename "$input" .gif)
  echo "$name: $("$bin" info "$input" | sed 's/^[^:]*: //')"
  out="$work/$name-ours.webp"; row "$name → WebP q80" "imgpipe convert" "$bin" convert "$input" "$out" --no-disk-cache
  out="$work/$name-gif2webp.webp"; row "$name → WebP q80" "gif2webp -q 80" gif2webp -quiet -lossy -q 80 "$input" -o "$out"
  out="$work/$name-ours-ll.webp"; row "$name → WebP lossless" "imgpipe convert --lossless" "$bin" convert "$input" "$out" --lossless --no-disk-cache
  out="$work/$name-gif2webp-ll.webp"; row "$name → WebP lossless" "gif2webp" gif2webp -quiet "$input" -o "$out"
  out="$work/$name-ours-128.webp"; row "$name → 128 px WebP" "imgpipe thumb -s 128" "$bin" thumb "$input" -s 128 -o "$out" --no-disk-cache
  out="$work/$name-im-128.webp"; row "$name → 128 px WebP" "convert -coalesce -resize 128x128" convert "$input" -coalesce -resize 128x128 "$out"
  out="$work/$name-ours-128.gif"; row "$name → 128 px GIF" "imgpipe thumb -s 128" "$bin" thumb "$input" -s 128 -o "$out" --no-disk-cache
  out="$work/$name-im-128.gif"; row "$name → 128 px GIF" "convert -coalesce -resize … -layers optimize" convert "$input" -coalesce -resize 128x128 -layers optimize "$out"
  for file in "$work/$name-ours-128.gif" "$work/$name-im-128.gif" "$work/$name-ours-128.webp" "$work/$name-im-128.webp"; do
    printf "  frames in %-22s %s\n" "$(basename "$file")" "$("$bin" info "$file" | grep -o '[0-9]* frames')"
  done
  echo
done
