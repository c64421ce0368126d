#!/usr/bin/env bash
# The memory floor (issue 39): what a process costs before the picture. Rows, each the fastest
# wall time and least peak RSS (/usr/bin/time -f %M) of $RUNS runs (default 11), then the shared
# objects `ldd` lists (`ldd | wc -l`, the vdso and the loader included) and those the loader
# actually maps during that run (LD_DEBUG=files "generating link map" lines: the NEEDED tree plus
# whatever is dlopen'ed on first use):
#   imgpipe --help                                    the release imgpipe (the benchmark package's)
#   imgpipe thumb Samples/mandelbrot.jpg --size 256   a JPEG-only thumbnail of a small JPEG
#   README app on Samples/mandelbrot.jpg              scripts/readme-app's build (debug, as that
#                                                     script builds it: .build/readme-app/MyApp/.build/debug/MyApp)
#   vipsthumbnail --help, vipsthumbnail mandelbrot.jpg -s 256   the peer
#   Swift programs that print a line: plain, importing FoundationEssentials, importing Foundation
#   (swiftc -O in a temporary folder), for scale.
# IMGPIPE=/path/to/imgpipe measures that build instead of building the benchmark package's;
# NO_README_APP=1 skips the README app (its first build takes minutes).
source "$(dirname "$0")/common.sh"
bench_runs 11
bench_bootstrap libvips-tools time
require_tools vipsthumbnail swiftc ldd
imgpipe=${IMGPIPE:-"$(bench_build imgpipe)/imgpipe"}
jpeg="$root/Samples/mandelbrot.jpg"
bench_workdir floor
export XDG_CACHE_HOME="$work/cache"   # the README app's disk cache, not the user's

# Swift programs for scale.
echo 'print("hello")' > "$work/plain.swift"
printf 'import FoundationEssentials\nprint(Data([104, 105]).count)\n' > "$work/essentials.swift"
printf 'import Foundation\nprint(Data([104, 105]).count)\n' > "$work/foundation.swift"
for program in plain essentials foundation; do
  swiftc -O "$work/$program.swift" -o "$work/$program" 2>"$work/swiftc.log" || { cat "$work/swiftc.log" >&2; exit 1; }
done

app=""
if [ -z "${NO_README_APP:-}" ]; then
  "$root/scripts/readme-app" >&2
  app="$root/.build/readme-app/MyApp/.build/debug/MyApp"
fi

mapped() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -c 'generating link map' || true; }
row_note() { printf "  %4s %6s" "$ldd_count" "$map_count"; }
floor_row() {
  local label=$1
  shift
  ldd_count=$(ldd "$1" | wc -l)
  map_count=$(mapped "$@")
  row "$label" "" "$@"
}

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); min of $runs runs"
row_format="%-44s%s %6s ms %6s MiB"
printf "%-44s %9s %10s  %4s %6s\n" "" "" "" ldd mapped
floor_row "imgpipe --help" "$imgpipe" --help
floor_row "imgpipe thumb mandelbrot.jpg --size 256" "$imgpipe" thumb "$jpeg" --size 256 --out "$work/t.png" --no-disk-cache
[ -n "$app" ] && floor_row "README app (debug) mandelbrot.jpg" "$app" "$jpeg"
floor_row "vipsthumbnail --help" "$(command -v vipsthumbnail)" --help
floor_row "vipsthumbnail mandelbrot.jpg -s 256" "$(command -v vipsthumbnail)" "$jpeg" -s 256 -o "$work/v.png"
floor_row "swift: print" "$work/plain"
floor_row "swift: FoundationEssentials" "$work/essentials"
floor_row "swift: Foundation" "$work/foundation"
echo "load $(cut -d' ' -f1 /proc/loadavg) at the end"
