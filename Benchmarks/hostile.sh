#!/usr/bin/env bash
# Hostile sources (issue 21's findings): what each costs our release imgpipe beside the peer a
# Linux user would run on it, in the same run. One run each (RUNS=N for more; the fastest is
# kept), every command under `timeout 600`. For each: wall milliseconds, peak RSS, exit status,
# and the first line of stderr (what the tool said). The inputs are ../shared/hostile/files
# (made by that folder's tools/), gunzipped into Benchmarks/.inputs/hostile.
#
#   JPEG scan bombs     imgpipe thumb --size 256   | vipsthumbnail -s 256 | djpeg -scale 1/8
#   many-frame GIF      imgpipe frames             | gifsicle --explode
#   huge-canvas WebP    imgpipe frames             | anim_dump (libwebp's example tool, when present)
#   huge-canvas WebP 2  imgpipe frames / thumb     | vipsthumbnail (issue 41, finding 8: w10k-2.webp, 2 frames)
#   large ICC profile   imgpipe info / thumb       | vipsheader / vipsthumbnail
#   header floods       imgpipe fetch              | curl (against the LoaderHTTP fixture server)
#   SSRF                imgpipe fetch --public-only| curl (the server's hit count after each)
#
# ONLY=PATTERN runs the rows whose input label matches it (grep -E), e.g. ONLY=w10k.
#
# Idempotent: installs missing tools with scripts/bootstrap (libvips-tools, libjpeg-turbo-progs,
# gifsicle, webp, curl, time, liblcms2-dev for the ICC generator) and builds the release imgpipe.
source "$(dirname "$0")/common.sh"
hostile="$root/../shared/hostile"
[ -d "$hostile/files" ] || { echo "hostile.sh: $hostile is absent" >&2; exit 1; }
out=$(mktemp -d)
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$out"' EXIT
bench_runs 1

bench_bootstrap libvips-tools libjpeg-turbo-progs gifsicle webp curl time liblcms2-dev
imgpipe="$(bench_build imgpipe)/imgpipe"

# The inputs, once.
files="$inputs/hostile"
mkdir -p "$files"
for name in scans-10k-1000.jpg scans-4k-1000.jpg scans-4k-1001.jpg gif-1k-big.gif webp-1k-big.webp icc-base.jpg; do
    [ -f "$files/$name" ] || cp "$hostile/files/$name" "$files/$name"
done
for name in gif-100k-64.gif webp-100k.webp; do
    [ -f "$files/$name" ] || gunzip -c "$hostile/files/$name.gz" >"$files/$name"
done
if [ ! -f "$files/icc-10m.jpg" ]; then
    gcc -O2 -o "$out/mkicc" "$hostile/tools/mkicc.c" -llcms2
    "$out/mkicc" bigclut "$out/big.icc" >/dev/null
    "$pillow" "$hostile/tools/embed_icc.py" "$out/big.icc" "$files/icc-base.jpg" "$files/icc-10m.jpg" >/dev/null
fi

# hostile_row LABEL TOOL COMMAND...: the fastest of $runs runs; the exit status and stderr's
# first line of the last. A refusal is a success here: the tool said no, and what it cost.
hostile_row() {
    local label=$1 tool=$2 best_ms="" best_kb="" ms kb status said rusage start end
    shift 2
    if [ -n "${ONLY:-}" ] && ! grep -qE -- "$ONLY" <<<"$label"; then return 0; fi
    rusage="$out/rusage"
    for _ in $(seq "$runs"); do
        rm -rf "$out/d"
        mkdir -p "$out/d"
        start=$EPOCHREALTIME
        status=0
        /usr/bin/time -o "$rusage" -f "%M" timeout 600 "$@" >/dev/null 2>"$out/stderr" || status=$?
        end=$EPOCHREALTIME
        ms=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.0f", (e - s) * 1000 }')
        kb=$(tail -n 1 "$rusage")
        if [ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ]; then best_ms=$ms; fi
        if [ -z "$best_kb" ] || [ "$kb" -lt "$best_kb" ]; then best_kb=$kb; fi
    done
    # The most telling line: the first that says why (cannot, unable, refused, error), else the first.
    said=$( (grep -E -m 1 'cannot|unable|refused|rror|curl:' "$out/stderr" || grep -v -e '^[[:space:]]*$' "$out/stderr" || true) |
        head -n 1 | sed -e "s|$files/||g" -e 's/^ *//' | cut -c1-160)
    printf "%-28s %-14s %9s %9s %5s %7s  %s\n" "$label" "$tool" "$best_ms" "$(mib "$best_kb")" "$status" \
        "$(find "$out/d" -type f | wc -l)" "${said:-(nothing on stderr)}"
}

printf "%-28s %-14s %9s %9s %5s %7s  %s\n" input tool ms "peak MiB" exit files "stderr's first line"
for name in scans-10k-1000.jpg scans-4k-1000.jpg scans-4k-1001.jpg; do
    hostile_row "$name" imgpipe "$imgpipe" thumb "$files/$name" --size 256 --out "$out/d/t.png" --no-disk-cache
    hostile_row "$name" vipsthumbnail vipsthumbnail "$files/$name" -s 256 -o "$out/d/t.png"
    hostile_row "$name" "djpeg 1/8" djpeg -scale 1/8 -outfile "$out/d/t.ppm" "$files/$name"
done
hostile_row gif-100k-64.gif imgpipe "$imgpipe" frames "$files/gif-100k-64.gif" --out-dir "$out/d" --no-disk-cache
hostile_row gif-100k-64.gif gifsicle gifsicle --explode --output "$out/d/f" "$files/gif-100k-64.gif"
hostile_row gif-1k-big.gif imgpipe "$imgpipe" frames "$files/gif-1k-big.gif" --out-dir "$out/d" --no-disk-cache --size 64
hostile_row webp-1k-big.webp imgpipe "$imgpipe" frames "$files/webp-1k-big.webp" --out-dir "$out/d" --no-disk-cache --size 64
if command -v anim_dump >/dev/null; then
    hostile_row webp-1k-big.webp anim_dump anim_dump -folder "$out/d" "$files/webp-1k-big.webp"
fi
# Two 1×1 frames on a 10000×10000 canvas (136 bytes, a test fixture): the animation is refused
# for its canvases (.animationCanvases); the still (its first frame) is made without the canvas.
w10k="$root/Tests/CodecWebPTests/Fixtures/w10k-2.webp"
hostile_row "w10k-2.webp frames" imgpipe "$imgpipe" frames "$w10k" --out-dir "$out/d" --no-disk-cache
hostile_row "w10k-2.webp thumb 64 webp" imgpipe "$imgpipe" thumb "$w10k" --size 64 --out "$out/d/t.webp" --no-disk-cache
hostile_row "w10k-2.webp thumb 64 webp" vipsthumbnail vipsthumbnail "$w10k[n=-1]" -s 64 -o "$out/d/t.webp"
hostile_row "w10k-2.webp thumb 64 png" imgpipe "$imgpipe" thumb "$w10k" --size 64 --out "$out/d/t.png" --no-disk-cache
hostile_row "w10k-2.webp thumb 64 png" vipsthumbnail vipsthumbnail "$w10k" -s 64 -o "$out/d/t.png"
hostile_row "icc-10m.jpg info" imgpipe "$imgpipe" info "$files/icc-10m.jpg"
hostile_row "icc-10m.jpg info" vipsheader vipsheader "$files/icc-10m.jpg"
hostile_row "icc-10m.jpg thumb" imgpipe "$imgpipe" thumb "$files/icc-10m.jpg" --size 256 --out "$out/d/t.png" --no-disk-cache
hostile_row "icc-10m.jpg thumb" vipsthumbnail vipsthumbnail "$files/icc-10m.jpg" -s 256 -o "$out/d/t.png"

# The network cases, against the LoaderHTTP tests' fixture server on loopback.
if [ -n "${ONLY:-}" ] && ! grep -qE -- "$ONLY" <<<"flood continue lines longline http://localhost loopback"; then exit 0; fi
coproc SERVER { exec python3 "$root/Tests/LoaderHTTPTests/Fixtures/fixture_server.py"; }
server_pid=$SERVER_PID
read -r _ port <&"${SERVER[0]}"
base="http://127.0.0.1:$port"
hits() { curl -s "$base/stats" | python3 -c "import json, sys; print(json.load(sys.stdin)['hits'].get(sys.argv[1], 0))" "$1"; }
for kind in continue lines longline; do
    hostile_row "flood $kind" imgpipe "$imgpipe" fetch --no-disk-cache "$base/flood/i-$kind?kind=$kind"
    echo "    requests the server saw: $(hits "/flood/i-$kind")"
    hostile_row "flood $kind" curl curl -sS --retry 2 -o /dev/null "$base/flood/c-$kind?kind=$kind"
    echo "    requests the server saw: $(hits "/flood/c-$kind")"
done
hostile_row "http://localhost loopback" imgpipe "$imgpipe" fetch --no-disk-cache --public-only "http://localhost:$port/image/ssrf-i"
echo "    requests the server saw: $(hits /image/ssrf-i)"
hostile_row "http://localhost loopback" curl curl -sS -o /dev/null "http://localhost:$port/image/ssrf-c"
echo "    requests the server saw: $(hits /image/ssrf-c)"
