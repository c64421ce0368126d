#!/usr/bin/env bash
# All frames of an animated GIF composited and written out, our `imgpipe frames` beside Pillow
# (ImageSequence, each frame converted to RGBA and written as a PAM) and ImageMagick
# (`convert -coalesce`, one PAM per frame); and a first-frame 256-px thumbnail of a large GIF
# beside vipsthumbnail. Minimum of $RUNS runs (default 3) of wall time and of peak RSS
# (/usr/bin/time -f %M), whole processes, on ../shared/corpus/gif.
#
# Idempotent: installs missing tools with scripts/bootstrap (imagemagick, python3-pil,
# libvips-tools, time) and builds the release imgpipe (the benchmark package's).
source "$(dirname "$0")/common.sh"
corpus="$root/../shared/corpus/gif"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench_runs 3

bench_bootstrap imagemagick python3-pil libvips-tools time
imgpipe="$(bench_build imgpipe)/imgpipe"

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

# Every run writes into a fresh $out/d.
before_each_run() { rm -rf "$out/d"; mkdir -p "$out/d"; }

row_format="%-40s %-14s %8s %10s"
row_note() { printf "  (%s files)" "$(ls "$out/d" | wc -l)"; }

printf "%-40s %-14s %8s %10s\n" input tool "ms" "peak MiB"
for gif in sample_big.gif gifplayer-muybridge.gif; do
  row "$gif all frames -> .pam" imgpipe "$imgpipe" frames "$corpus/$gif" --out-dir "$out/d" --no-disk-cache
  row "$gif all frames -> .pam" pillow "$pillow" "$out/pillow.py" "$corpus/$gif" "$out/d"
  row "$gif all frames -> .pam" "convert" /usr/bin/convert "$corpus/$gif" -coalesce "$out/d/frame-%04d.pam"
done
row "note.gif (1080x2160) -> 256 px" imgpipe "$imgpipe" thumb "$corpus/note.gif" --size 256 --out "$out/d/t.png" --no-disk-cache
row "note.gif (1080x2160) -> 256 px" vipsthumbnail /usr/bin/vipsthumbnail "$corpus/note.gif" -s 256 -o "$out/d/t.png"
row "sample_big.gif (1000x175) -> 256 px" imgpipe "$imgpipe" thumb "$corpus/sample_big.gif" --size 256 --out "$out/d/t.png" --no-disk-cache
row "sample_big.gif (1000x175) -> 256 px" vipsthumbnail /usr/bin/vipsthumbnail "$corpus/sample_big.gif" -s 256 -o "$out/d/t.png"
