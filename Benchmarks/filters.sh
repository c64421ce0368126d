#!/usr/bin/env bash
# Resampling filters: `imgpipe thumb --filter area` and `--filter lanczos3` beside vipsthumbnail
# (Lanczos-3 after shrink-on-load), each compared by PSNR with a full-resolution reference:
# Pillow's `Image.resize(size, Image.LANCZOS)` of the whole decoded picture, at the size our
# thumbnail has. Also PSNR of each of ours against vipsthumbnail's output, the time of each
# (minimum of $RUNS whole-process runs, default 5; only for the 6000x4000 inputs) and, for
# the rings pictures, moiré: the standard deviation of luma (0-255) where the rings are finer
# than the thumbnail can show, so a perfect filter gives flat grey (std 0).
#
# Inputs: the 6000x4000 photo-baseline.jpg and photo-rgb.png of Benchmarks/thumbnails.sh
# (made by it into Benchmarks/.inputs when missing), a few corpus pictures (../shared/corpus),
# Samples/rings.png, Samples/glass-alpha.png and rings-6000x4000.png (SampleMaker's rings formula
# rendered at 6000x4000 with 4x4 supersampling, made once into Benchmarks/.inputs).
source "$(dirname "$0")/common.sh"
corpus="$root/../shared/corpus"
bench_runs 5

bench_bootstrap libvips-tools python3-pil python3-numpy
photo_inputs
imgpipe="$(bench_build imgpipe)/imgpipe"

if [ ! -f "$inputs/rings-6000x4000.png" ]; then
  "$pillow" - "$inputs/rings-6000x4000.png" <<'EOF'
import sys
import numpy as np
from PIL import Image
# scripts/SampleMaker's rings: v = 0.5 + 0.5 cos(600 d^2), d = hypot((x - 0.5) * 1.5, y - 0.5),
# mixed from (0.05, 0.10, 0.20) to (0.95, 0.90, 0.80); 4x4 samples a pixel.
w, h, ss = 6000, 4000, 4
out = np.zeros((h, w, 3))
lo, hi = np.array([0.05, 0.10, 0.20]), np.array([0.95, 0.90, 0.80])
for sy in range(ss):
    for sx in range(ss):
        x = (np.arange(w) + (sx + 0.5) / ss) / w
        y = (np.arange(h) + (sy + 0.5) / ss) / h
        d2 = ((x[None, :] - 0.5) * 1.5) ** 2 + (y[:, None] - 0.5) ** 2
        v = 0.5 + 0.5 * np.cos(d2 * 600)
        out += lo + (hi - lo) * v[..., None]
Image.fromarray(np.clip(out / (ss * ss) * 255 + 0.5, 0, 255).astype(np.uint8)).save(sys.argv[1], compress_level=1)
EOF
fi

"$pillow" - "$imgpipe" "$runs" "$inputs" "$corpus" "$root/Samples" <<'EOF'
import math, os, subprocess, sys, tempfile, time
import numpy as np
from PIL import Image

imgpipe, runs, inputs, corpus, samples = sys.argv[1], int(sys.argv[2]), *sys.argv[3:]
tmp = tempfile.mkdtemp()

# (label, path, size, timed, rings) -- rings: (width, height) of the synthetic rings picture
cases = [
    ("photo-baseline.jpg 6000x4000", f"{inputs}/photo-baseline.jpg", 256, True, None),
    ("photo-rgb.png 6000x4000", f"{inputs}/photo-rgb.png", 256, True, None),
    ("rings 6000x4000 (png)", f"{inputs}/rings-6000x4000.png", 256, True, (6000, 4000)),
    ("Samples/rings.png 360x240", f"{samples}/rings.png", 120, False, (360, 240)),
    ("Samples/glass-alpha.png RGBA", f"{samples}/glass-alpha.png", 160, False, None),
    ("exif Landscape_1.jpg 1800x1200", f"{corpus}/exif-orientation/Landscape_1.jpg", 256, False, None),
    ("icc AdobeRGB1998 sRGB png 640x400", f"{corpus}/icc/AdobeRGB1998.jpg.srgb.png", 256, False, None),
    ("jpeg testorig.jpg 227x149", f"{corpus}/jpeg/testorig.jpg", 64, False, None),
]

def load(path):
    """Premultiplied float RGBA and whether the picture has alpha."""
    im = Image.open(path)
    alpha = im.mode in ("RGBA", "LA", "PA") or "transparency" in im.info
    a = np.asarray(im.convert("RGBA"), dtype=np.float64)
    a[..., :3] *= a[..., 3:4] / 255
    return a, alpha

def psnr(x, y, alpha):
    if x.shape != y.shape:
        return float("nan")
    channels = 4 if alpha else 3
    mse = np.mean((x[..., :channels] - y[..., :channels]) ** 2)
    return float("inf") if mse == 0 else 10 * math.log10(255 ** 2 / mse)

def run(cmd, timed):
    best = None
    for _ in range(runs if timed else 1):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ms = (time.perf_counter() - start) * 1000
        best = ms if best is None else min(best, ms)
    return best

def moire(img, rings, size):
    """Luma standard deviation where the rings are finer than the output's Nyquist frequency
    but still represented in the source (so the ideal output there is flat)."""
    h, w = img.shape[:2]
    rw, rh = rings
    x = (np.arange(w) + 0.5) / w
    y = (np.arange(h) + 0.5) / h
    d = np.hypot((x[None, :] - 0.5) * 1.5, y[:, None] - 0.5)
    # Local frequency of cos(600 d^2) along d: 1200 d / (2 pi) cycles per unit of picture height.
    cycles_per_out_px = 1200 * d / (2 * math.pi * h)
    cycles_per_src_px = 1200 * d / (2 * math.pi * rh)
    mask = (cycles_per_out_px > 0.6) & (cycles_per_src_px < 0.45)
    luma = img[..., 0] * 0.299 + img[..., 1] * 0.587 + img[..., 2] * 0.114
    return float(luma[mask].std()) if mask.any() else float("nan")

print(f"PSNR in dB (higher is closer); reference: Pillow Image.resize(LANCZOS) of the full decode; times: min of {runs} runs")
header = f"{'input':34} {'out':>8} | {'area':>6} {'lanczos3':>8} {'vips':>6} | {'area~vips':>9} {'lz3~vips':>8} | {'area ms':>7} {'lz3 ms':>7} {'vips ms':>7} | {'moire area/lz3/vips/ref':>24}"
print(header)
print("-" * len(header))
for label, path, size, timed, rings in cases:
    if not os.path.exists(path):
        print(f"{label:34} missing: {path}")
        continue
    outs, times = {}, {}
    for filt in ("area", "lanczos3"):
        out = f"{tmp}/{filt}.png"
        times[filt] = run([imgpipe, "thumb", path, "--size", str(size), "--filter", filt, "--out", out, "--no-disk-cache"], timed)
        outs[filt] = out
    outs["vips"] = f"{tmp}/vips.png"
    times["vips"] = run(["vipsthumbnail", path, "-s", str(size), "-o", outs["vips"]], timed)
    imgs = {k: load(v) for k, v in outs.items()}
    src = Image.open(path)
    ow, oh = imgs["lanczos3"][0].shape[1], imgs["lanczos3"][0].shape[0]
    full = src.convert("RGBA") if imgs["lanczos3"][1] else src.convert("RGB")
    full.resize((ow, oh), Image.LANCZOS).save(f"{tmp}/ref.png")
    ref, _ = load(f"{tmp}/ref.png")
    alpha = imgs["lanczos3"][1]
    p = {k: psnr(v[0], ref, alpha) for k, v in imgs.items()}
    pv = {k: psnr(imgs[k][0], imgs["vips"][0], alpha) for k in ("area", "lanczos3")}
    t = (lambda k: f"{times[k]:7.0f}") if timed else (lambda k: f"{'':>7}")
    m = ""
    if rings:
        m = "/".join(f"{moire(imgs[k][0], rings, size):.1f}" for k in ("area", "lanczos3", "vips")) + f"/{moire(ref, rings, size):.1f}"
    print(f"{label:34} {f'{ow}x{oh}':>8} | {p['area']:6.2f} {p['lanczos3']:8.2f} {p['vips']:6.2f} | {pv['area']:9.2f} {pv['lanczos3']:8.2f} | {t('area')} {t('lanczos3')} {t('vips')} | {m:>24}")
EOF
