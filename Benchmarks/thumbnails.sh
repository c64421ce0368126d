#!/usr/bin/env bash
# Thumbnail benchmark: a whole `imgpipe thumb --size 256` process beside vipsthumbnail and
# Pillow (draft + thumbnail) on 6000x4000 photos: baseline and progressive JPEG (q90), PNG RGB
# and RGBA, lossy WebP (cwebp -q 90; with `dwebp -scale`, libwebp's own scaled decode, as the
# floor). Prints the minimum of $RUNS runs (default 7) of wall time and peak RSS
# (/usr/bin/time -f %M) per tool and input.
#
# Idempotent: installs missing peers (libvips-tools, time, Pillow), builds the release
# imgpipe, and makes the inputs once into Benchmarks/.inputs (gitignored).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
inputs="$root/Benchmarks/.inputs"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=${RUNS:-7}
size=256

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
command -v vipsthumbnail >/dev/null || missing+=(libvips-tools)
[ -x /usr/bin/time ] || missing+=(time)
command -v cwebp >/dev/null || missing+=(webp)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "thumbnails: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
python3 -c "import PIL" 2>/dev/null || python3 -m pip install --quiet Pillow

swift build -c release --product imgpipe >&2
imgpipe="$(swift build -c release --show-bin-path)/imgpipe"

if [ ! -f "$inputs/photo-rgba.png" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download plasma-workspace-wallpapers >/dev/null && dpkg-deb -x ./*.deb unpacked)
  python3 Benchmarks/make_inputs.py "$tmp/unpacked/usr/share/wallpapers" "$inputs"
  rm -rf "$tmp"
fi
[ -f "$inputs/photo-lossy.webp" ] || cwebp -quiet -q 90 "$inputs/photo-rgb.png" -o "$inputs/photo-lossy.webp"

pillow='import sys
from PIL import Image
im = Image.open(sys.argv[1])
im.draft("RGB", (256, 256))
im.thumbnail((256, 256))
im.save(sys.argv[2])'

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

printf "%-22s %-14s %8s %10s\n" input tool "ms" "peak MiB"
for input in photo-baseline.jpg photo-progressive.jpg photo-rgb.png photo-rgba.png photo-lossy.webp; do
  file="$inputs/$input"
  tools="imgpipe vipsthumbnail pillow"
  [[ $input == *.webp ]] && tools+=" dwebp-scale"
  for tool in $tools; do
    case $tool in
      imgpipe) result=$(measure "$imgpipe" thumb "$file" --size $size --out "$out/t.png") ;;
      vipsthumbnail) result=$(measure vipsthumbnail "$file" -s $size -o "$out/v.png") ;;
      pillow) result=$(measure python3 -c "$pillow" "$file" "$out/p.png") ;;
      dwebp-scale) result=$(measure dwebp "$file" -scale $size 0 -pam -o "$out/d.pam") ;;
    esac
    read -r ms kb <<<"$result"
    printf "%-22s %-14s %8s %10s\n" "$input" "$tool" "$ms" "$(python3 -c "print(f'{$kb/1024:.1f}')")"
  done
done
