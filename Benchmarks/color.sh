#!/usr/bin/env bash
# Colour-management cost: a 24 MP JPEG (6000x4000) thumbnailed to 256 and a 12 MP JPEG
# (4243x2828) decoded whole, each with the Adobe RGB profile of ../shared/corpus/icc spliced
# in (no re-encoding), decoded with and without conversion to sRGB. Prints a Markdown table,
# the minimum of $RUNS runs (default 7).
#
# Needs Benchmarks/.inputs/photo-baseline.jpg (run Benchmarks/thumbnails.sh once) and vips
# (libvips-tools) for the 12 MP file. Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
corpus="$root/../shared/corpus/icc"
bench_runs 7
bench_bootstrap libvips-tools
[ -f "$inputs/photo-baseline.jpg" ] || { echo "color: run Benchmarks/thumbnails.sh first (it makes $inputs)" >&2; exit 1; }
if [ ! -f "$inputs/photo-12mp-adobe.jpg" ]; then
  vips resize "$inputs/photo-baseline.jpg" "$inputs/photo-12mp.jpg[Q=90]" 0.70711
  python3 Benchmarks/splice_icc.py "$corpus/AdobeRGB1998.jpg" "$inputs/photo-baseline.jpg" "$inputs/photo-24mp-adobe.jpg"
  python3 Benchmarks/splice_icc.py "$corpus/AdobeRGB1998.jpg" "$inputs/photo-12mp.jpg" "$inputs/photo-12mp-adobe.jpg"
fi
"$(bench_build ColorBenchmark)/ColorBenchmark" "$runs" "$inputs/photo-24mp-adobe.jpg:256" "$inputs/photo-12mp-adobe.jpg:0"
