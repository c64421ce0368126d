#!/usr/bin/env bash
# Batch thumbnail throughput: 100 photos of 1280x853 (JPEG q90) to 256-px thumbnails, each
# tool in one run over all 100 files, in the same run on the same machine:
#   imgpipe thumb FILES... --size 256 --out-dir DIR --format $FORMAT   (one process, every core)
#   vipsthumbnail -s 256 -o DIR/%s.$FORMAT FILES...                     (one process)
#   Pillow draft + thumbnail + save, multiprocessing.Pool(2)           (2 worker processes)
#   pyvips 8.18 Image.thumbnail + write_to_file, 2 Python threads       (in-process, see below)
# Prints the minimum of $RUNS runs (default 5; the tools take turns) of wall time per tool,
# pictures/s, the CPU seconds (user + sys) and peak RSS (/usr/bin/time) of that fastest run,
# and the bytes written.
#
# FORMAT=png (default) or FORMAT=jpg (quality 80 for every tool; needs imgpipe's JPEG encoder):
# every tool writes the same format. FORMAT=pam measures decoding and resizing alone: imgpipe
# writes PAM, vips and Pillow PPM (uncompressed both).
#
# pyvips 8.18 (PyPI pyvips + pyvips-binary, pinned, in scripts/python-venv's .build/venvs/pyvips)
# runs Benchmarks/pyvips_thumbnail.py's batch mode: after `import pyvips` (not timed, so Python's
# start-up is not counted against it) a ThreadPoolExecutor(2) thumbnails the 100 files, each
# call with libvips's own thread pool too; its seconds and CPU are those of the batch inside the
# process, its peak the process's VmHWM minus its VmRSS before the import (the interpreter).
#
# IMGPIPE_EXTRA="--compression-level 4" adds a row: imgpipe again with those options.
# BASELINE_IMGPIPE=/path/to/imgpipe adds a row: another build of imgpipe (say, main before a
# change), measured in the same runs, so a refactor can show its numbers did not move.
#
# Inputs: there is no perf corpus under ../shared, so they are made here, once, into
# Benchmarks/.inputs/batch-1280 (gitignored) with vips: 100 windows of 1920x1280 cut on a
# 10x10 grid from the 6000x4000 Benchmarks/.inputs/photo-baseline.jpg (four real photographs
# from Debian's plasma-workspace-wallpapers, made by Benchmarks/thumbnails.sh's recipe), each
# scaled by 2/3 to 1280x853 and saved as JPEG q90.
#
# Idempotent: installs missing peers with scripts/bootstrap (libvips-tools, time, python3-pil),
# builds the release imgpipe (the benchmark package's; IMGPIPE=/path/to/imgpipe measures that
# build instead).
# Don't run it while other builds share the machine unless you need a number.
source "$(dirname "$0")/common.sh"
batch="$inputs/batch-1280"
bench_runs 5
format=${FORMAT:-png}
size=256
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

case $format in
  png) imgpipe_options=(); vips_suffix=""; pillow_options="{}" ;;
  jpg) imgpipe_options=(--quality 80); vips_suffix="[Q=80]"; pillow_options="{'quality': 80}" ;;
  pam) imgpipe_options=(); vips_suffix=""; pillow_options="{}" ;;
  *) echo "batch: FORMAT must be png, jpg or pam" >&2; exit 2 ;;
esac
peer_format=$format
[ "$format" = pam ] && peer_format=ppm

bench_bootstrap libvips-tools time python3-pil
imgpipe=${IMGPIPE:-"$(bench_build imgpipe)/imgpipe"}
pyvips=$("$root/scripts/python-venv" pyvips "pyvips==3.2.0" "pyvips-binary==8.18.7")

photo_inputs
if [ "$(ls "$batch"/*.jpg 2>/dev/null | wc -l)" -ne 100 ]; then
  echo "batch: making 100 1280x853 inputs in $batch" >&2
  rm -rf "$batch"; mkdir -p "$batch"
  vips copy "$inputs/photo-baseline.jpg" "$out/photo.v"
  for i in $(seq 0 99); do
    vips crop "$out/photo.v" "$out/crop.v" $(( (i % 10) * 453 )) $(( (i / 10) * 302 )) 1920 1280
    vips resize "$out/crop.v" "$batch/$(printf photo-%03d $i).jpg[Q=90]" 0.6666667
  done
  rm -f "$out/photo.v" "$out/crop.v"
fi
files=("$batch"/*.jpg)

pillow_script="import os, sys
from multiprocessing import Pool
from PIL import Image
def one(job):
    source, target = job
    im = Image.open(source)
    im.draft('RGB', ($size, $size))
    im.thumbnail(($size, $size))
    im.save(target, **$pillow_options)
if __name__ == '__main__':
    out = sys.argv[1]
    jobs = [(f, os.path.join(out, os.path.splitext(os.path.basename(f))[0] + '.$peer_format')) for f in sys.argv[2:]]
    with Pool(2) as pool:
        pool.map(one, jobs, chunksize=4)"

# Runs "$@" once (in a fresh $out/t) and prints "seconds cpu-seconds KiB output-KiB", or
# "failed".
measure_once() {
  rm -rf "$out/t"; mkdir -p "$out/t"
  timed_run "$@" || { echo "failed"; return; }
  [ "$(ls "$out/t" | wc -l)" -eq 100 ] || { echo "batch: $1 wrote $(ls "$out/t" | wc -l) files" >&2; echo "failed"; return; }
  echo "$(awk -v s="$run_seconds" 'BEGIN { printf "%.3f", s }') $run_cpu $run_kib $(du -sk "$out/t" | cut -f1)"
}

# pyvips_thumbnail.py's own numbers (it times the batch inside the process), as measure_once prints.
measure_pyvips() {
  local result
  rm -rf "$out/t"; mkdir -p "$out/t"
  result=$("$pyvips" "$root/Benchmarks/pyvips_thumbnail.py" batch 2 $size "$out/t" "$peer_format$vips_suffix" "${files[@]}") \
    || { echo "failed"; return; }
  [ "$(ls "$out/t" | wc -l)" -eq 100 ] || { echo "batch: pyvips wrote $(ls "$out/t" | wc -l) files" >&2; echo "failed"; return; }
  echo "$result $(du -sk "$out/t" | cut -f1)"
}

run_tool() {
  case $1 in
    imgpipe) measure_once "$imgpipe" thumb "${files[@]}" --size $size --out-dir "$out/t" --format "$format" "${imgpipe_options[@]}" ;;
    # shellcheck disable=SC2086
    imgpipe-extra) measure_once "$imgpipe" thumb "${files[@]}" --size $size --out-dir "$out/t" --format "$format" \
                     "${imgpipe_options[@]}" $IMGPIPE_EXTRA ;;
    imgpipe-baseline) measure_once "$BASELINE_IMGPIPE" thumb "${files[@]}" --size $size --out-dir "$out/t" --format "$format" \
                        "${imgpipe_options[@]}" ;;
    vipsthumbnail) measure_once vipsthumbnail "${files[@]}" -s $size -o "$out/t/%s.$peer_format$vips_suffix" ;;
    pillow) measure_once "$pillow" -c "$pillow_script" "$out/t" "${files[@]}" ;;
    pyvips) measure_pyvips ;;
  esac
}

echo "100 photos 1280x853 -> ${size}px $format, min of $runs runs, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
tools=(imgpipe)
[ -n "${IMGPIPE_EXTRA:-}" ] && tools+=(imgpipe-extra)
[ -n "${BASELINE_IMGPIPE:-}" ] && tools+=(imgpipe-baseline)
tools+=(vipsthumbnail pyvips pillow)
# The tools take turns within each run, so a change in the machine's load hits them alike;
# each keeps its fastest run.
declare -A best
for _ in $(seq "$runs"); do
  for tool in "${tools[@]}"; do
    result=$(run_tool "$tool")
    [ "$result" = failed ] && { best[$tool]=failed; continue; }
    [ "${best[$tool]:-}" = failed ] && continue
    if [ -z "${best[$tool]:-}" ] || awk -v a="${result%% *}" -v b="${best[$tool]%% *}" 'BEGIN { exit !(a < b) }'; then
      best[$tool]=$result
    fi
  done
done
echo "load $(cut -d' ' -f1 /proc/loadavg) at the end"
printf "%-34s %8s %12s %9s %10s %11s\n" tool "s" "pictures/s" "CPU s" "peak MiB" "output KiB"
for tool in "${tools[@]}"; do
  result=${best[$tool]}
  [ "$result" = failed ] && { printf "%-34s failed\n" "$tool"; continue; }
  read -r seconds cpu kb bytes <<<"$result"
  label=$tool
  [ "$tool" = imgpipe ] && label="imgpipe thumb --out-dir"
  [ "$tool" = imgpipe-extra ] && label="imgpipe $IMGPIPE_EXTRA"
  [ "$tool" = imgpipe-baseline ] && label="baseline imgpipe"
  [ "$tool" = vipsthumbnail ] && label="vipsthumbnail (one process)"
  [ "$tool" = pillow ] && label="Pillow draft+thumbnail, Pool(2)"
  [ "$tool" = pyvips ] && label="pyvips 8.18, 2 threads, in-process"
  printf "%-34s %8s %12s %9s %10s %11s\n" "$label" "$seconds" "$(awk -v s="$seconds" 'BEGIN { printf "%.1f", 100 / s }')" "$cpu" \
    "$(mib "$kb")" "$bytes"
done
# The goal: imgpipe's throughput at least 1.5x pyvips 8.18's.
if [ "${best[imgpipe]}" != failed ] && [ "${best[pyvips]}" != failed ]; then
  awk -v a="${best[imgpipe]%% *}" -v b="${best[pyvips]%% *}" -v c="${best[vipsthumbnail]%% *}" \
    'BEGIN { printf "imgpipe pictures/s × pyvips 8.18: %.2f; × vipsthumbnail: %.2f\n", b / a, c / a }'
fi
