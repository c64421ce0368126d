#!/usr/bin/env bash
# Where the memory goes (issue 39): for each 6000x4000 input of thumbnails.sh (and its SVG
# icon), a 256-px `imgpipe thumb` beside `vipsthumbnail -s 256`:
#   peak       least peak RSS of $RUNS runs (/usr/bin/time -f %M), and what is above the tool's
#              floor (its `--help` peak, measured the same way)
#   split      Benchmarks/memory_split.py: resident memory at the sampled peak (the fullest of
#              3 runs sampled every ~2 ms from /proc/PID/smaps) by mapping: shared libraries,
#              the executable, other files, glibc's main heap, its other arenas, threads'
#              stacks, and other anonymous mappings ("blocks": mmap'ed allocations such as a
#              picture's bitmaps and a codec's planes); a short run's sample can miss its peak
#   arena2     imgpipe's least peak with MALLOC_ARENA_MAX=2 (glibc's arenas capped at two)
#   libraries  first, the shared objects most resident during a baseline JPEG thumbnail, each tool
#   heap       with heaptrack installed: imgpipe's heap at its peak by allocation site
#              (Benchmarks/heap_peak.py: the picture's Bitmap, libjxl, libjpeg ...); HEAPTRACK=0 skips it
# Needs thumbnails.sh's inputs (it makes them). IMGPIPE=/path/to/imgpipe measures that build.
source "$(dirname "$0")/common.sh"
bench_runs 7
bench_bootstrap libvips-tools time heaptrack
imgpipe=${IMGPIPE:-"$(bench_build imgpipe)/imgpipe"}
[ -f "$inputs/icon.svg" ] && [ -f "$inputs/photo-d1.jxl" ] && [ -f "$inputs/photo.avif" ] \
  || { echo "$(basename "$0"): run Benchmarks/thumbnails.sh once first (it makes the inputs)" >&2; exit 1; }
bench_workdir where-memory

# split COMMAND...: the fullest of 3 samplings (memory_split.py's line without its first field).
split() {
  local line best="" _
  for _ in 1 2 3; do
    line=$(python3 "$root/Benchmarks/memory_split.py" "$@" 2>>"$work/stderr" | cut -d' ' -f2-)  # vips's nclx warnings
    if [ -z "$best" ] || [ "${line%% *}" -gt "${best%% *}" ]; then best=$line; fi
  done
  echo "$best"
}
peak_kib() { read -r _ kib <<<"$(measure "$@")"; echo "$kib"; }

echo "$(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg); MiB; min of $runs runs"
imgpipe_floor=$(peak_kib "$imgpipe" --help)
vips_floor=$(peak_kib vipsthumbnail --help)
echo "floors (--help): imgpipe $(mib "$imgpipe_floor"), vipsthumbnail $(mib "$vips_floor")"
# The floor's make-up: the shared objects most resident during a baseline JPEG thumbnail.
for tool in imgpipe vipsthumbnail; do
  exe=$imgpipe; [ $tool = vipsthumbnail ] && exe=vipsthumbnail
  args=(thumb "$inputs/photo-baseline.jpg" --size 256 --out "$work/t.png")
  [ $tool = vipsthumbnail ] && args=("$inputs/photo-baseline.jpg" -s 256 -o "$work/v.png")
  echo "$tool, baseline JPEG: the 12 most resident of $(python3 "$root/Benchmarks/memory_split.py" --libraries 999 "$exe" "${args[@]}" 2>/dev/null \
    | tail -n +2 | tee "$work/libraries" | wc -l) shared objects (MiB):"
  head -n 12 "$work/libraries" | while read -r kib name; do printf "  %s %s;" "$(mib "$kib")" "$name"; done
  echo
done
format="%-20s %-8s %6s %6s | %6s %5s %5s %5s %6s %6s %6s %3s | %6s\n"
printf "$format" input tool peak +floor sampled libs exe files heap arenas stacks thr arena2
for input in ${INPUTS:-photo-baseline.jpg photo-progressive.jpg photo-rgb.png photo-rgba.png photo-lossy.webp \
  photo-lossless.webp photo.heic photo.avif photo-d1.jxl icon.svg}; do
  file="$inputs/$input"
  for tool in imgpipe vips; do
    if [ $tool = imgpipe ]; then
      command=("$imgpipe" thumb "$file" --size 256 --out "$work/t.png"); floor=$imgpipe_floor
    else
      command=(vipsthumbnail "$file" -s 256 -o "$work/v.png"); floor=$vips_floor
    fi
    peak=$(peak_kib "${command[@]}")
    read -r sampled libs exe files heap arenas stacks blocks threads <<<"$(split "${command[@]}")"
    arena2=""
    [ $tool = imgpipe ] && arena2=$(mib "$(MALLOC_ARENA_MAX=2 peak_kib "${command[@]}")")
    printf "$format" "$input" "$tool" "$(mib "$peak")" "$(mib $((peak - floor)))" "$(mib "$sampled")" "$(mib "$libs")" \
      "$(mib "$exe")" "$(mib "$files")" "$(mib "$heap")" "$(mib "$arenas")" "$(mib "$stacks")" "$threads" "$arena2"
    echo "$(printf '%-29s' '')blocks (mmap'ed: bitmaps, codec buffers) $(mib "$blocks")"
  done
  if [ "${HEAPTRACK:-1}" != 0 ] && command -v heaptrack >/dev/null; then
    heaptrack -o "$work/heap" "$imgpipe" thumb "$file" --size 256 --out "$work/t.png" >/dev/null 2>&1
    heaptrack_print -f "$work/heap.zst" --print-peaks 1 --print-allocators 0 --print-temporary 0 --print-leaks 0 \
      --peak-limit 20 2>/dev/null | python3 "$root/Benchmarks/heap_peak.py" 4 | sed 's/^/    imgpipe /'
    rm -f "$work"/heap.*
  fi
done
echo "load $(cut -d' ' -f1 /proc/loadavg) at the end"
