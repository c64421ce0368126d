#!/usr/bin/env bash
# Peak memory of odd but legal inputs, whole processes, minimum of $RUNS runs (default 5) of
# wall time and of peak RSS (/usr/bin/time -f %M):
#
#  1. a 6000x4000 HEIC without an embedded thumbnail to 256 px: `imgpipe thumb --size 256`
#     beside `heif-thumbnailer -s 256` (libheif's own thumbnailer, same libheif and libde265);
#  2. the 104-byte animated WebP with a 9999x9999 canvas (Tests/CodecWebPTests/Fixtures) to 256 px;
#  3. a full `imgpipe decode` of a 12000x8000 JPEG (96 MP, a 384 MB bitmap) to .pam and to .png.
#
# BASELINE=/path/to/another/imgpipe adds its rows (e.g. a release build of an older commit).
#
# Idempotent: installs missing tools (heif-thumbnailer, libheif-examples for heif-enc, time,
# python3-pil, all from Debian), builds the release imgpipe, and makes the inputs once into Benchmarks/.inputs
# (gitignored): the 6000x4000 photo of ./Benchmarks/thumbnails.sh, encoded with `heif-enc -q 90`
# (which embeds no thumbnail unless asked), and that photo tiled 2x2 as a JPEG.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
inputs="$root/Benchmarks/.inputs"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=${RUNS:-5}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
command -v heif-thumbnailer >/dev/null || missing+=(heif-thumbnailer)
command -v heif-enc >/dev/null || missing+=(libheif-examples)
[ -x /usr/bin/time ] || missing+=(time)
/usr/bin/python3 -c "import PIL" 2>/dev/null || missing+=(python3-pil)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "heif-memory: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -c "import PIL" 2>/dev/null || 
swift build -c release --product imgpipe >&2
imgpipe="$(swift build -c release --show-bin-path)/imgpipe"

if [ ! -f "$inputs/photo-rgb.png" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download plasma-workspace-wallpapers >/dev/null && dpkg-deb -x ./*.deb unpacked)
  /usr/bin/python3 Benchmarks/make_inputs.py "$tmp/unpacked/usr/share/wallpapers" "$inputs"
  rm -rf "$tmp"
fi
if [ ! -f "$inputs/photo.heic" ]; then
  heif-enc -q 90 "$inputs/photo-rgb.png" -o "$inputs/photo.heic" >/dev/null
fi
if [ ! -f "$inputs/photo-96mp.jpg" ]; then
  /usr/bin/python3 - "$inputs/photo-baseline.jpg" "$inputs/photo-96mp.jpg" <<'EOF'
import sys
from PIL import Image
photo = Image.open(sys.argv[1]).convert("RGB")
canvas = Image.new("RGB", (photo.width * 2, photo.height * 2))
for i in range(4):
    canvas.paste(photo, ((i % 2) * photo.width, (i // 2) * photo.height))
canvas.save(sys.argv[2], quality=90)
EOF
fi
canvas="$root/Tests/CodecWebPTests/Fixtures/huge-canvas.webp"

# Prints "milliseconds KiB" for the fastest and the smallest of $runs runs of "$@".
measure() {
  local best_ms="" best_kb="" start end ms kb
  for _ in $(seq "$runs"); do
    start=$EPOCHREALTIME
    /usr/bin/time -o "$out/rss" -f %M "$@" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; echo "failed"; return; }
    end=$EPOCHREALTIME
    ms=$(python3 -c "print(round(($end - $start) * 1000))")
    kb=$(tail -n 1 "$out/rss")
    if [ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ]; then best_ms=$ms; fi
    if [ -z "$best_kb" ] || [ "$kb" -lt "$best_kb" ]; then best_kb=$kb; fi
  done
  echo "$best_ms $best_kb"
}

row() {  # label tool command...
  local label=$1 tool=$2 result ms kb
  shift 2
  result=$(measure "$@")
  read -r ms kb <<<"$result"
  printf "%-34s %-18s %8s %10s\n" "$label" "$tool" "$ms" "$(python3 -c "print(f'{$kb/1024:.1f}')")"
}

imgpipes=("imgpipe:$imgpipe")
[ -n "${BASELINE:-}" ] && imgpipes+=("baseline:$BASELINE")

printf "%-34s %-18s %8s %10s\n" input tool "ms" "peak MiB"
for entry in "${imgpipes[@]}"; do
  row "6000x4000 HEIC -> 256 px" "${entry%%:*}" "${entry#*:}" thumb "$inputs/photo.heic" --size 256 --out "$out/t.png"
done
row "6000x4000 HEIC -> 256 px" heif-thumbnailer heif-thumbnailer -s 256 "$inputs/photo.heic" "$out/h.png"
for entry in "${imgpipes[@]}"; do
  row "9999x9999 WebP canvas -> 256 px" "${entry%%:*}" "${entry#*:}" thumb "$canvas" --size 256 --out "$out/w.png"
done
for entry in "${imgpipes[@]}"; do
  row "12000x8000 JPEG decode -> .pam" "${entry%%:*}" "${entry#*:}" decode "$inputs/photo-96mp.jpg" --out "$out/d.pam"
  row "12000x8000 JPEG decode -> .png" "${entry%%:*}" "${entry#*:}" decode "$inputs/photo-96mp.jpg" --out "$out/d.png"
done
