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
# Idempotent: installs missing tools with scripts/bootstrap (heif-thumbnailer, libheif-examples
# for heif-enc, time, python3-pil), builds the release imgpipe (the benchmark package's), and
# makes the inputs once into Benchmarks/.inputs
# (gitignored): the 6000x4000 photo of ./Benchmarks/thumbnails.sh, encoded with `heif-enc -q 90`
# (which embeds no thumbnail unless asked), and that photo tiled 2x2 as a JPEG.
source "$(dirname "$0")/common.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bench_runs 5

bench_bootstrap heif-thumbnailer libheif-examples time python3-pil
imgpipe="$(bench_build imgpipe)/imgpipe"

photo_inputs
if [ ! -f "$inputs/photo.heic" ]; then
  heif-enc -q 90 "$inputs/photo-rgb.png" -o "$inputs/photo.heic" >/dev/null
fi
if [ ! -f "$inputs/photo-96mp.jpg" ]; then
  "$pillow" - "$inputs/photo-baseline.jpg" "$inputs/photo-96mp.jpg" <<'EOF'
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

row_format="%-34s %-18s %8s %10s"

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
