#!/usr/bin/env bash
# `imgpipe thumb --trim` beside `vips find_trim` (libvips 8.14, the rule ours follows), same
# machine, same files, minimum of $RUNS runs (default 3); both decode the file and search it.
# The inputs, made once into Benchmarks/.inputs/trim with vips: a uniform 10000x10000 PNG (issue
# 41's finding 9: nothing to trim, every pixel searched) and the same with a 9000x9000 subject
# inside a 500-pixel border. IMGPIPE=/path/to/imgpipe measures that binary instead of building
# the benchmark package's; BASELINE_IMGPIPE=/path/to/imgpipe adds its rows (a build before a
# change). Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 3
bench_bootstrap libvips-tools time
require_tools vips
imgpipe=${IMGPIPE:-"$(bench_build imgpipe)/imgpipe"}
folder="$inputs/trim"
mkdir -p "$folder"
uniform="$folder/uniform-10000.png" bordered="$folder/bordered-10000.png"
if [ ! -f "$uniform" ]; then
    vips black "$folder/black.v" 10000 10000 --bands 3
    vips linear "$folder/black.v" "$folder/grey.v" 1 200 --uchar
    vips copy "$folder/grey.v" "$uniform[compression=1]"
    vips black "$folder/subject.v" 9000 9000 --bands 3
    vips embed "$folder/subject.v" "$folder/embedded.v" 500 500 10000 10000 --extend background --background "200 200 200"
    vips copy "$folder/embedded.v" "$bordered[compression=1]"
    rm -f "$folder"/*.v
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
row_format="| %s | %s | %s | %s |"
echo "| picture | tool | ms | peak MiB |"
echo "|---|---|---:|---:|"
for picture in "$uniform" "$bordered"; do
    name=$(basename "$picture" .png)
    row "$name" "vips find_trim" vips find_trim "$picture" --background "200 200 200"
    row "$name" "imgpipe thumb --trim -s 256" "$imgpipe" thumb "$picture" --trim -s 256 -o "$out/t.png"
    if [ -n "${BASELINE_IMGPIPE:-}" ]; then
        row "$name" "baseline imgpipe thumb --trim -s 256" "$BASELINE_IMGPIPE" thumb "$picture" --trim -s 256 -o "$out/t.png"
    fi
    row "$name" "imgpipe thumb -s 256 (no trim)" "$imgpipe" thumb "$picture" -s 256 -o "$out/t.png"
done
