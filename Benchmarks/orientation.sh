#!/usr/bin/env bash
# Issue 40: a rotated thumbnail beside a plain one (ours, in-process: OrientationBenchmark,
# release build) and beside vipsthumbnail followed by `vips rot` (processes, start-up included,
# with a no-op vips process for scale); BlurHash encode time beside ThumbHash (ours) and PyPI's
# blurhash 1.1.5 (the reference the tests check us against) on the same 100-pixel decode.
# Inputs: the EXIF-orientation corpus (../shared/corpus/exif-orientation, 1800x1200 photographs,
# Landscape_1 stored upright, Landscape_6 stored turned with EXIF 6). Minimum of $RUNS runs
# (default 7). Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 7
bench_bootstrap libvips-tools
corpus="$root/../shared/corpus/exif-orientation"
[ -d "$corpus" ] || { echo "orientation.sh: needs $corpus" >&2; exit 1; }
bin="$(bench_build OrientationBenchmark)/OrientationBenchmark"
reference=$("$root/scripts/python-venv" blurhash blurhash==1.1.5)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

echo "| input | what | ms |"; echo "|---|---|---:|"
"$bin" "$runs" "$corpus/Landscape_1.jpg" "$corpus/Landscape_6.jpg"
best() {  # best ARGS...: the minimum wall time of $runs runs of a command, in ms
    local best=999999 start end ms
    for _ in $(seq "$runs"); do
        start=$(date +%s%N); "$@" >/dev/null; end=$(date +%s%N)
        ms=$(( (end - start) / 1000 )); [ "$ms" -lt "$best" ] && best=$ms
    done
    printf "%d.%03d" $((best / 1000)) $((best % 1000))
}
for name in Landscape_1 Landscape_6; do
    vipsthumbnail "$corpus/$name.jpg" -s 256 -o "$work/$name.v"
    echo "| $name.jpg | vipsthumbnail -s 256 (process) | $(best vipsthumbnail "$corpus/$name.jpg" -s 256 -o "$work/t.v") |"
    echo "| $name.jpg | + vips rot d90 of its output (a second process) | $(best vips rot "$work/$name.v" "$work/r.v" d90) |"
done
echo "| (scale) | vips copy of that output: a vips process doing nothing | $(best vips copy "$work/Landscape_1.v" "$work/c.v") |"

echo; echo "| input | what | ms per hash |"; echo "|---|---|---:|"
for name in Landscape_1 Landscape_6; do
    "$bin" "$runs" --hashes "$corpus/$name.jpg" "$work/$name.ppm"
    "$reference" "$root/scripts/blurhash-reference" time "$runs" "$work/$name.ppm" "$name.jpg"
done
