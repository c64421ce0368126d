#!/usr/bin/env bash
# Built-in processors on a 512x512 bitmap (ProcessorBenchmark, release build) beside Pillow's
# GaussianBlur / ImageOps.fit + ellipse mask / convert("L") / ImageEnhance, vips gaussblur,
# sharpen and gamma (on the same synthetic bitmap and on Samples/dunes-progressive.jpg made
# 512x512), and ImageMagick's -modulate, same machine, minimum of $RUNS runs (default 7). Needs
# python3-pil, libvips-tools and imagemagick. Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 7
bench_bootstrap libvips-tools python3-pil imagemagick
bin="$(bench_build ProcessorBenchmark)/ProcessorBenchmark"
# The photo for the sharpen rows: a real photo stretched to 512x512 (RGBA), raw for the driver.
mkdir -p "$inputs"
photo="$inputs/dunes-512.v"
vips thumbnail Samples/dunes-progressive.jpg "$inputs/dunes-512-rgb.v" 512 --height 512 --size force
vips bandjoin_const "$inputs/dunes-512-rgb.v" "$photo" 255
vips rawsave "$photo" "$inputs/dunes-512.raw"
PHOTO="$inputs/dunes-512.raw" "$bin" "$runs"
# .colorAdjustment, each step and all at once, opaque and premultiplied with an alpha ramp.
"$bin" "$runs" adjust
# Second launch of a 100-photo grid (1280 px JPEGs -> 256x256 round): renditions vs originals on
# disk. Needs Benchmarks/.inputs/photo-baseline.jpg (run Benchmarks/thumbnails.sh once) and vips.
grid="$inputs/grid-1280"
if [ ! -d "$grid" ] && [ -f "$inputs/photo-baseline.jpg" ]; then
  mkdir -p "$grid"
  for i in $(seq 0 99); do
    vips crop "$inputs/photo-baseline.jpg" "$grid/tmp.v" $(( (i % 10) * 400 )) $(( (i / 10) * 280 )) 1280 960
    vips copy "$grid/tmp.v" "$grid/$(printf %03d $i).jpg[Q=85]"
  done
  rm -f "$grid/tmp.v"
fi
if [ -d "$grid" ]; then
  cache=$(mktemp -d); "$bin" "$runs" grid "$grid" "$cache"; rm -rf "$cache"
  # The .circle grid (results with alpha) from renditions in each candidate format.
  cache=$(mktemp -d); "$bin" "$runs" alpha "$grid" "$cache"; rm -rf "$cache"
fi
"$pillow" - "$runs" "$photo" <<'PY'
import sys, time, subprocess, tempfile, os
from PIL import Image, ImageFilter, ImageOps, ImageDraw
runs = int(sys.argv[1]); side = 512
im = Image.new("RGB", (side, side))
im.putdata([((x * 37 + y * 11) & 255, (x ^ y) & 255, ((x * y) >> 10) & 255) for y in range(side) for x in range(side)])
def best(f):
    t = []
    for _ in range(runs):
        s = time.perf_counter(); f(); t.append((time.perf_counter() - s) * 1000)
    return min(t)
def circle():
    out = ImageOps.fit(im, (side, side)); mask = Image.new("L", (side * 4, side * 4), 0)
    ImageDraw.Draw(mask).ellipse((0, 0, side * 4, side * 4), fill=255)
    out.putalpha(mask.resize((side, side), Image.LANCZOS)); return out
print("| Pillow %s (512x512) | ms |" % __import__("PIL").__version__); print("|---|---:|")
print("| ImageOps.fit + 4x ellipse mask (circle) | %.2f |" % best(circle))
print("| convert('L') (grayscale) | %.2f |" % best(lambda: im.convert("L")))
for r in (1, 2, 3, 5, 8, 20):
    print("| GaussianBlur(%d) | %.2f |" % (r, best(lambda: im.filter(ImageFilter.GaussianBlur(r)))))
d = tempfile.mkdtemp(); src = os.path.join(d, "in.v"); im.save(os.path.join(d, "in.png"))
subprocess.run(["vips", "copy", os.path.join(d, "in.png"), src], check=True)
for r in (2, 8, 20):
    # The whole vips process (start-up included), so an upper bound on its blur time.
    ms = best(lambda: subprocess.run(["vips", "gaussblur", src, os.path.join(d, "out.v"), str(r)], check=True))
    print("| vips gaussblur sigma %d (process, incl. start-up) | %.2f |" % (r, ms))
# vips sharpen beside `vips copy` of the same file: the copy is the process's start-up and I/O,
# so the difference estimates the sharpening itself.
for name, path in (("synthetic", src), ("photo", sys.argv[2])):
    copy = best(lambda: subprocess.run(["vips", "copy", path, os.path.join(d, "out.v")], check=True))
    print("| vips copy, %s (process: start-up and I/O) | %.2f |" % (name, copy))
    for s in ("0.5", "1", "2.5"):
        ms = best(lambda: subprocess.run(["vips", "sharpen", path, os.path.join(d, "out.v"), "--sigma", s], check=True))
        print("| vips sharpen sigma %s, %s (process; minus copy %.2f) | %.2f |" % (s, name, ms - copy, ms))
# The colour adjustments' references: Pillow's enhancers (made and applied, as a caller does),
# a point table for the offset, and vips gamma / ImageMagick's -modulate hue as whole processes.
from PIL import ImageEnhance
def chain():
    out = ImageEnhance.Brightness(im).enhance(1.1)
    out = ImageEnhance.Contrast(out).enhance(1.4)
    return ImageEnhance.Color(out).enhance(0.7)
offset = [min(255, v + 40) for v in range(256)] * 3
print("| ImageEnhance.Brightness(im).enhance(1.3) | %.2f |" % best(lambda: ImageEnhance.Brightness(im).enhance(1.3)))
print("| im.point(table) (offset 40) | %.2f |" % best(lambda: im.point(offset)))
print("| ImageEnhance.Contrast(im).enhance(1.5) | %.2f |" % best(lambda: ImageEnhance.Contrast(im).enhance(1.5)))
print("| ImageEnhance.Color(im).enhance(1.6) | %.2f |" % best(lambda: ImageEnhance.Color(im).enhance(1.6)))
print("| Brightness 1.1, Contrast 1.4, Color 0.7 chained | %.2f |" % best(chain))
print("| vips gamma --exponent 2.2 (process, incl. start-up) | %.2f |"
      % best(lambda: subprocess.run(["vips", "gamma", src, os.path.join(d, "out.v"), "--exponent", "2.2"], check=True)))
png, out = os.path.join(d, "in.png"), os.path.join(d, "out.png")
convert = "/usr/bin/convert" if os.path.exists("/usr/bin/convert") else "convert"
print("| convert -modulate 100,100,116.67, hue 30 (process, incl. start-up, PNG in and out) | %.2f |"
      % best(lambda: subprocess.run([convert, png, "-modulate", "100,100,116.66666666666667", out], check=True)))
print("| convert in.png out.png, the same process without -modulate | %.2f |"
      % best(lambda: subprocess.run([convert, png, out], check=True)))
PY
