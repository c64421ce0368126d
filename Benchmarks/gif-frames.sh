#!/usr/bin/env bash
# All frames of an animated GIF composited and written out, our `imgpipe frames` beside Pillow
# (ImageSequence, each frame converted to RGBA and written as a PAM) and ImageMagick
# (`convert -coalesce`, one PAM per frame); and a first-frame 256-px thumbnail of a large GIF
# beside vipsthumbnail. Minimum of $RUNS runs (default 3) of wall time and of peak RSS
# (/usr/bin/time -f %M), whole processes, on ../shared/corpus/gif.
#
# Idempotent: installs missing tools from Debian (imagemagick, python3-pil, libvips-tools,
# time) and builds the release imgpipe.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus="$(pwd)/../shared/corpus/gif"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
runs=${RUNS:-3}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
missing=()
[ -x /usr/bin/convert ] || missing+=(imagemagick)
[ -x /usr/bin/vipsthumbnail ] || missing+=(libvips-tools)
[ -x /usr/bin/time ] || missing+=(time)
/usr/bin/python3 -c "import PIL" 2>/dev/null || missing+=(python3-pil)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "gif-frames: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
swift build -c release --product imgpipe >&2
imgpipe="$(swift build -c release --show-bin-path)/imgpipe"

cat >"$out/pillow.py" <<'PY'
import sys
from PIL import Image, ImageSequence
image = Image.open(sys.argv[1])
for index, frame in enumerate(ImageSequence.Iterator(image)):
    rgba = frame.convert("RGBA")
    with open(f"{sys.argv[2]}/frame-{index:04d}.pam", "wb") as f:
        f.write(f"P7\nWIDTH {rgba.width}\nHEIGHT {rgba.height}\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n".encode())
        f.write(rgba.tobytes())
PY

# Prints "milliseconds KiB" for the fastest and the smallest of $runs runs of "$@" (in a fresh $out/d).
measure() {
  local best_ms="" best_kb="" start end ms kb
  for _ in $(seq "$runs"); do
    rm -rf "$out/d"; mkdir -p "$out/d"
    start=$EPOCHREALTIME
    /usr/bin/time -o "$out/rss" -f %M "$@" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; echo "failed"; return; }
    end=$EPOCHREALTIME
    ms=$(/usr/bin/python3 -c "print(round(($end - $start) * 1000))")
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
  printf "%-40s %-14s %8s %10s  (%s files)\n" "$label" "$tool" "$ms" "$(/usr/bin/python3 -c "print(f'{$kb/1024:.1f}')")" \
    "$(ls "$out/d" | wc -l)"
}

printf "%-40s %-14s %8s %10s\n" input tool "ms" "peak MiB"
for gif in sample_big.gif gifplayer-muybridge.gif; do
  row "$gif all frames -> .pam" imgpipe "$imgpipe" frames "$corpus/$gif" --out-dir "$out/d" --no-disk-cache
  row "$gif all frames -> .pam" pillow /usr/bin/python3 "$out/pillow.py" "$corpus/$gif" "$out/d"
  row "$gif all frames -> .pam" "convert" /usr/bin/convert "$corpus/$gif" -coalesce "$out/d/frame-%04d.pam"
done
row "note.gif (1080x2160) -> 256 px" imgpipe "$imgpipe" thumb "$corpus/note.gif" --size 256 --out "$out/d/t.png" --no-disk-cache
row "note.gif (1080x2160) -> 256 px" vipsthumbnail /usr/bin/vipsthumbnail "$corpus/note.gif" -s 256 -o "$out/d/t.png"
row "sample_big.gif (1000x175) -> 256 px" imgpipe "$imgpipe" thumb "$corpus/sample_big.gif" --size 256 --out "$out/d/t.png" --no-disk-cache
row "sample_big.gif (1000x175) -> 256 px" vipsthumbnail /usr/bin/vipsthumbnail "$corpus/sample_big.gif" -s 256 -o "$out/d/t.png"
