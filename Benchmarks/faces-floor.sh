#!/usr/bin/env bash
# What loading OpenCV on first use saves (issue 40): imgpipe opens the FaceDetectionOpenCV
# plugin at its first face search. The peer is the same release binary with OpenCV's three
# libraries added back as NEEDED entries by `patchelf --add-needed` (as imgpipe linked them
# before), so the loader maps them, and all they bring, at start. Both have the plugin beside
# them. Rows: `imgpipe --help`, a 256-px fill of opencv-doc's messi5.jpg and the same with
# `--smartcrop faces`: fastest wall time and least peak RSS of $RUNS runs (default 11), and the
# shared objects of `ldd` and those the loader maps for `--help` (LD_DEBUG=files).
# Needs patchelf, opencv-doc and opencv-data (scripts/bootstrap).
source "$(dirname "$0")/common.sh"
bench_runs 11
bench_bootstrap patchelf
require_tools patchelf ldd
messi=/usr/share/doc/opencv-doc/examples/data/messi5.jpg
[ -f "$messi" ] || { echo "faces-floor: $messi is absent (scripts/bootstrap installs opencv-doc)" >&2; exit 1; }
# The root package's products (the plugin is one of them; the Benchmarks package has none of its own here).
(cd "$root" && swift build -c release --product imgpipe >&2 && swift build -c release --product FaceDetectionOpenCV >&2)
bin="$(cd "$root" && swift build -c release --show-bin-path)"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lazy" "$work/linked"
for flavour in lazy linked; do cp "$bin/imgpipe" "$bin/libFaceDetectionOpenCV.so" "$work/$flavour/"; done
for soname in $(ldd "$bin/libFaceDetectionOpenCV.so" | grep -oE 'libopencv_(objdetect|imgproc|core)\.so\.[0-9]+' | sort -u); do
  patchelf --add-needed "$soname" "$work/linked/imgpipe"
done
ldd "$work/linked/imgpipe" | grep -q libopencv_objdetect || { echo "faces-floor: patchelf did not add OpenCV" >&2; exit 1; }

row_format="%-46s %-14s %6s ms %6s MiB"
for flavour in linked lazy; do
  exe="$work/$flavour/imgpipe"
  echo "$flavour: ldd $(ldd "$exe" | wc -l) shared objects; --help maps $(LD_DEBUG=files "$exe" --help 2>&1 >/dev/null | grep -c 'generating link map')"
done
for flavour in linked lazy; do row "--help" "OpenCV $flavour" "$work/$flavour/imgpipe" --help; done
for crop in "--fill 256x256" "-s 256x256 --smartcrop faces"; do
  for flavour in linked lazy; do
    # shellcheck disable=SC2086 # $crop is words
    row "thumb messi5.jpg $crop" "OpenCV $flavour" "$work/$flavour/imgpipe" thumb "$messi" $crop -o "$work/$flavour.png" --no-disk-cache
  done
done
cmp -s "$work/linked.png" "$work/lazy.png" && echo "the face crops are byte-identical" || { echo "faces-floor: the face crops differ" >&2; exit 1; }
