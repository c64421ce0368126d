#!/usr/bin/env bash
# The first picture of a screen (issue 23): 30 photos requested at once as 320×320 fills, with
# no processor, `.circle` and `.gaussianBlur(radius: 2)`. A processed picture follows its own
# decode (`ProcessingFollowUp`), so it arrives about when the first plain one does, not after
# every queued decode. Two measurements, in one run:
#
#   FirstPictureBenchmark  the pipeline's API, medians of $RUNS screens (default 7)
#   imgpipe thumb          --out-dir with --concurrency 30: when the first file appears in the
#                          folder (polled every millisecond) and when the command ends
#
# Inputs: the 1280-px photos of Benchmarks/.inputs/batch-1280 (Benchmarks/batch.sh makes them).
# Results: Benchmarks/README.md, "The first picture of a screen".
source "$(dirname "$0")/common.sh"
bench_runs 7
bench_bootstrap
photos="$inputs/batch-1280"
[ -d "$photos" ] || { echo "first-picture.sh: no $photos (run Benchmarks/batch.sh once)" >&2; exit 1; }
bin=$(bench_build FirstPictureBenchmark imgpipe)
"$bin/FirstPictureBenchmark" "$runs" "$photos" 30

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in"
for file in $(ls "$photos"/*.jpg | sort | head -30); do ln -s "$file" "$work/in/"; done
python3 - "$bin/imgpipe" "$work" "$runs" <<'PY'
import os, shutil, statistics, subprocess, sys, time
imgpipe, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
sources = sorted(os.path.join(work, "in", name) for name in os.listdir(os.path.join(work, "in")))
variants = [("no processor", []), ("--round", ["--round"]), ("--blur 2", ["--blur", "2"])]
def once(extra):
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    start = time.perf_counter()
    process = subprocess.Popen([imgpipe, "thumb", *sources, "--fill", "320x320", "--concurrency", "30", "--no-disk-cache",
                                "--out-dir", out, "--format", "jpg", *extra], stderr=subprocess.DEVNULL)
    first = None
    while process.poll() is None:
        if first is None and os.listdir(out):
            first = time.perf_counter() - start
        time.sleep(0.001)
    total = time.perf_counter() - start
    if process.returncode != 0 or len(os.listdir(out)) != len(sources):
        sys.exit("first-picture.sh: imgpipe thumb failed")
    return (first if first is not None else total) * 1000, total * 1000
results = {name: [] for name, _ in variants}
once([])  # warm the page cache
for _ in range(runs):
    for name, extra in variants:
        results[name].append(once(extra))
print("\n| imgpipe thumb, 30 photos, --fill 320x320 --concurrency 30 | first file (ms) | command (ms) | first ÷ plain first |")
print("|---|---:|---:|---:|")
plain = statistics.median(first for first, _ in results["no processor"])
for name, _ in variants:
    first = statistics.median(f for f, _ in results[name])
    total = statistics.median(t for _, t in results[name])
    print(f"| {name} | {first:.0f} | {total:.0f} | {first / plain:.2f}× |")
PY
