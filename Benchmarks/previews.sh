#!/usr/bin/env bash
# Pictures before they arrive (issue 26): progressive previews over a slow loopback server,
# the placeholder hash's cost beside the reference implementation's, and placeholder(for:)
# on a disk cache of 100,000 entries beside a disk-hit decode. Results: Benchmarks/README.md,
# "Pictures before they arrive".
#
#   previews      a 1280-px progressive JPEG (a Debian wallpaper, Pillow's progressive
#                 encoding at quality 85) sent 16 KB every 50 ms by the LoaderHTTP fixture
#                 server's /slow; requested at 320 and 1280 px, with previews and without
#   thumbhash     ThumbHash(bitmap:) on the same 100-px pixels as thumbhash-python's
#                 rgba_to_thumbhash (PyPI, the reference), and on a 1280-px decode
#   placeholders  placeholder(for:) on a cold pipeline over 100,000 entries (ENTRIES=N; each a
#                 240-px JPEG, about 1.5 GB of disk, kept in Benchmarks/.inputs for reruns), the
#                 bytes each lookup reads, beside image(for:) of the same entries
#
#   previews.sh [PART...]   runs only the parts named (default: all three, in this order)
#
# Idempotent: installs what is missing (scripts/bootstrap; a venv in Benchmarks/.venv-thumbhash
# for the reference), builds the release benchmark, makes the inputs once in Benchmarks/.inputs.
source "$(dirname "$0")/common.sh"
bench_runs 5
entries=${ENTRIES:-100000}
parts=" ${*:-previews thumbhash placeholders} "
want() { [[ "$parts" == *" $1 "* ]]; }
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null' EXIT

bench_bootstrap
bin=$(bench_build PreviewBenchmark)

mkdir -p "$inputs"
photo="$inputs/preview-1280-progressive.jpg"
small="$inputs/preview-100.pam"
thumbnail="$inputs/preview-240.jpg"
if [ ! -f "$photo" ] || [ ! -f "$small" ] || [ ! -f "$thumbnail" ]; then
    wallpaper=$(find "$(wallpapers)" -name '2560x1600.jpg' | sort | head -n 1)
    "$pillow" - "$wallpaper" "$photo" "$small" "$thumbnail" <<'PY'
import sys
from PIL import Image
source, photo, small, thumbnail = sys.argv[1:]
image = Image.open(source).convert("RGB")
image = image.resize((1280, 1280 * image.height // image.width), Image.LANCZOS)
image.save(photo, "JPEG", quality=85, progressive=True)
image.resize((240, 240 * image.height // image.width), Image.LANCZOS).save(thumbnail, "JPEG", quality=85)
image.thumbnail((100, 100))
with open(small, "wb") as out:
    rgba = image.convert("RGBA")
    out.write(b"P7\nWIDTH %d\nHEIGHT %d\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n" % rgba.size)
    out.write(rgba.tobytes())
PY
fi

venv="$root/Benchmarks/.venv-thumbhash"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import thumbhash" 2>/dev/null; then
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet thumbhash-python==1.0.1
fi

coproc SERVER { exec python3 "$root/Tests/LoaderHTTPTests/Fixtures/fixture_server.py"; }
server_pid=$SERVER_PID
read -r _ port <&"${SERVER[0]}"
slow="http://127.0.0.1:$port/slow/preview?file=$photo&chunk=16384&interval_ms=50"

if want previews; then
echo "== previews: $(stat -c %s "$photo") bytes, 16 KB every 50 ms"
for size in 320 1280; do
    "$bin/PreviewBenchmark" previews "$slow&size=$size" "$size" "$runs"
done
fi

if want thumbhash; then
echo "== thumbhash: one hash"
"$bin/PreviewBenchmark" thumbhash "$small" "$photo"
"$venv/bin/python" - "$small" "$photo" <<'PY'
import base64, sys, time
from PIL import Image
from thumbhash.encode import rgba_to_thumbhash
data = open(sys.argv[1], "rb").read()
header, pixels = data.split(b"ENDHDR\n", 1)
fields = dict(line.split(b" ", 1) for line in header.split(b"\n")[1:] if b" " in line)
width, height = int(fields[b"WIDTH"]), int(fields[b"HEIGHT"])
rgba = list(pixels)
rounds = 20
start = time.perf_counter()
for _ in range(rounds):
    hashed = rgba_to_thumbhash(width, height, rgba)
seconds = (time.perf_counter() - start) / rounds
print("  thumbhash-python, %dx%d RGBA  %.3f ms per hash  %s" % (width, height, seconds * 1000,
      base64.b64encode(bytes(hashed)).decode()))
# The reduction thumbhash-python's image_to_thumbhash makes of a large picture (what ours
# copies): Pillow's thumbnail((100, 100)) of the decoded RGBA, decode excluded.
photo = Image.open(sys.argv[2]).convert("RGBA")
rounds = 20
start = time.perf_counter()
for _ in range(rounds):
    copy = photo.copy()
    copy.thumbnail((100, 100))
seconds = (time.perf_counter() - start) / rounds
print("  Pillow thumbnail((100, 100)) of the %dx%d RGBA decode  %.3f ms" % (photo.width, photo.height, seconds * 1000))
PY
fi

want placeholders || exit 0
echo "== placeholders"
# Every entry's body is a real 240-px JPEG (a grid's thumbnail): a lookup that read bodies would show.
"$bin/PreviewBenchmark" placeholders "$inputs/placeholder-cache-$entries" "$entries" "$thumbnail"
