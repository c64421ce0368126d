#!/usr/bin/env bash
# What isolating SVG costs (issue 41): each document parsed and drawn in this process
# (SVGDecoder()) beside the same in a worker process per document (SVGDecoder(isolation:
# .worker(...)), the svg-worker product), by Benchmarks/Sources/SVGIsolationBenchmark: a thumbnail
# (parse, then draw fitted in 64 x 64) and a drawing at the natural size, best of $RUNS (default
# 20) in ms, and the peak resident memory of the benchmark process; then the peak of one worker
# drawing the 64-px thumbnail, svg-worker run alone under /usr/bin/time on a request made here
# (a spawned child's ru_maxrss would start from its parent's size). Files: a 16-px symbolic icon
# and the corpus's largest SVG (Samples/ has no SVG). Release builds.
source "$(dirname "$0")/common.sh"
bench_runs 20
corpus="$root/../shared/corpus/svg"
[ -d "$corpus" ] || { echo "$(basename "$0"): $corpus is absent (see ../shared/corpus/README.md)" >&2; exit 1; }
bin=$(bench_build SVGIsolationBenchmark svg-worker)
icon="$corpus/adwaita-user-home-symbolic.svg"
large="$corpus/$(cd "$corpus" && ls -S *.svg | head -1)"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-34s %-10s %9s %9s %10s\n' file mode "64px ms" "full ms" "peak KiB"
for file in "$icon" "$large"; do
  for mode in in-process worker; do
    read -r thumb full self < <("$bin/SVGIsolationBenchmark" "$mode" "$file" "$runs" "$bin/svg-worker")
    printf '%-34s %-10s %9s %9s %10s\n' "$(basename "$file")" "$mode" "$thumb" "$full" "$self"
  done
  # One worker's own peak: the open message (256 MiB allowance, 11 s of CPU), the document, a
  # 64 x 64 premultiplied drawing (SVGWorkerWire).
  request=$(mktemp)
  python3 -c 'import struct, sys; d = open(sys.argv[1], "rb").read()
sys.stdout.buffer.write(b"SVGW\x01" + struct.pack("<QIQ", 256 << 20, 11, len(d)) + d + b"SVGW\x03" + struct.pack("<IIBQ", 64, 64, 0, 64 * 64 * 12))' "$file" > "$request"
  peak=$( { /usr/bin/time -f %M "$bin/svg-worker" < "$request" > /dev/null; } 2>&1 | tail -1)
  rm -f "$request"
  printf '%-34s %-10s %9s %9s %10s\n' "$(basename "$file")" "one worker" "" "" "$peak"
done
