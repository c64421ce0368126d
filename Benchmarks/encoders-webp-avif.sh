#!/usr/bin/env bash
# Encoder quality against the peers: for the same 256-px thumbnails, our WebP q80 against
# `vips webpsave --Q 80`, and our AVIF (HEIFEncoder.avif at its defaults: quality 50, effort 4)
# against `avifenc` at the same libaom settings (all-intra, constant quality cq-level 32 =
# round((100 - 50) * 63 / 100), speed 5, tune ssim, 4:2:0, 8 bits, full range). Prints, per
# picture and in total, the bytes and the quality of each file against the thumbnail it was
# made from: SSIMULACRA2 (PyPI `ssimulacra2`, higher is better, 90 ≈ visually lossless) and
# PSNR over RGB. Files are decoded by the reference tools (`dwebp`, `avifdec`), not by us.
#
# Inputs: the twelve 2560x1600 JPEG photos of Debian's plasma-workspace-wallpapers, made into
# 256-px PNG thumbnails with vipsthumbnail once (Benchmarks/.inputs/encoders-256, gitignored);
# every encoder reads those PNGs, so all get the same pixels. Our files are written by the
# EncoderBenchmark executable (PNGDecoder → WebPEncoder/HEIFEncoder), not by imgpipe.
#
# Result here (Debian 12: libwebp 1.2.4, vips 8.14.1, libheif 1.15.1, libaom 3.6.0, avifenc
# 0.11.1): WebP 77,938 B against 80,482 (0.968×) at the same SSIMULACRA2 68.02 and PSNR 35.88 dB:
# the VP8 bitstreams are identical, vips adds a VP8X and a 186-byte EXIF chunk even with
# --strip; AVIF 44,599 B against 44,753 (0.997×), SSIMULACRA2 66.76 against 66.56, PSNR 35.01
# against 34.98 dB. (The SSIMULACRA2 scores come from the PyPI Python port, not libjxl's tool.)
#
# Idempotent: installs missing peers with scripts/bootstrap (libvips-tools, libavif-bin, webp,
# python3-venv) and a venv with ssimulacra2 in Benchmarks/.venv. Encoding is deterministic, so
# one run suffices.
source "$(dirname "$0")/common.sh"
thumbs="$inputs/encoders-256"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench_bootstrap libvips-tools libavif-bin webp python3-venv
scorer="$(ssimulacra2_python)"

if [ ! -d "$thumbs" ]; then
  mkdir -p "$thumbs.partial"
  for photo in "$(wallpapers)"/*/contents/images/2560x1600.jpg; do
    name=$(basename "$(dirname "$(dirname "$(dirname "$photo")")")")
    vipsthumbnail "$photo" -s 256 -o "$thumbs.partial/$name.png[strip]"
  done
  mv "$thumbs.partial" "$thumbs"
fi

bench="$(bench_build EncoderBenchmark)/EncoderBenchmark"

mkdir -p "$out/ours-webp" "$out/vips-webp" "$out/ours-avif" "$out/avifenc-avif" "$out/png"
"$bench" webp --quality 80 --out-dir "$out/ours-webp" "$thumbs"/*.png >/dev/null
"$bench" avif --out-dir "$out/ours-avif" "$thumbs"/*.png >/dev/null
for thumb in "$thumbs"/*.png; do
  name=$(basename "$thumb" .png)
  vips webpsave "$thumb" "$out/vips-webp/$name.webp" --Q 80 --strip
  avifenc -s 5 -y 420 -d 8 -r full --min 0 --max 63 -a end-usage=q -a cq-level=32 -a tune=ssim \
    --ignore-icc --ignore-exif --ignore-xmp "$thumb" "$out/avifenc-avif/$name.avif" >/dev/null
  for tool in ours-webp vips-webp; do dwebp -quiet "$out/$tool/$name.webp" -o "$out/png/$tool-$name.png"; done
  for tool in ours-avif avifenc-avif; do avifdec "$out/$tool/$name.avif" "$out/png/$tool-$name.png" >/dev/null; done
done

"$scorer" - "$thumbs" "$out" <<'PY'
import sys
from pathlib import Path

import numpy as np
from PIL import Image
from ssimulacra2 import compute_ssimulacra2

thumbs, out = Path(sys.argv[1]), Path(sys.argv[2])
pairs = [("webp", "ours-webp", "vips-webp"), ("avif", "ours-avif", "avifenc-avif")]

def chunks(path):
    """A WebP file's RIFF chunks, fourcc → payload."""
    data, found, at = path.read_bytes(), {}, 12
    while at + 8 <= len(data):
        size = int.from_bytes(data[at + 4:at + 8], "little")
        found[data[at:at + 4].decode("latin-1")] = data[at + 8:at + 8 + size]
        at += 8 + size + (size & 1)
    return found

def psnr(a, b):
    x = np.asarray(Image.open(a).convert("RGB"), dtype=np.float64)
    y = np.asarray(Image.open(b).convert("RGB"), dtype=np.float64)
    return 10 * np.log10(255 ** 2 / np.mean((x - y) ** 2))

for ext, ours, peer in pairs:
    print(f"\n{ext}: {ours} against {peer}")
    print(f"{'picture':<14} {'ours B':>7} {'peer B':>7} {'ratio':>6} {'ours S2':>8} {'peer S2':>8} {'ours dB':>8} {'peer dB':>8}")
    totals = {ours: [0, [], []], peer: [0, [], []]}
    for thumb in sorted(thumbs.glob("*.png")):
        row = {}
        for tool in (ours, peer):
            size = (out / tool / f"{thumb.stem}.{ext}").stat().st_size
            decoded = out / "png" / f"{tool}-{thumb.stem}.png"
            score = compute_ssimulacra2(str(thumb), str(decoded))
            db = psnr(thumb, decoded)
            row[tool] = (size, score, db)
            totals[tool][0] += size
            totals[tool][1].append(score)
            totals[tool][2].append(db)
        (ob, os_, od), (pb, ps, pd) = row[ours], row[peer]
        print(f"{thumb.stem:<14} {ob:>7} {pb:>7} {ob / pb:>6.3f} {os_:>8.2f} {ps:>8.2f} {od:>8.2f} {pd:>8.2f}")
    if ext == "webp":
        same = sum(chunks(out / ours / f"{t.stem}.webp").get("VP8 ") == chunks(out / peer / f"{t.stem}.webp").get("VP8 ")
                   for t in thumbs.glob("*.png"))
        extra = sorted({", ".join(k for k in chunks(out / peer / f"{t.stem}.webp") if k != "VP8 ") for t in thumbs.glob("*.png")})
        print(f"identical VP8 bitstreams: {same} of {len(list(thumbs.glob('*.png')))}; the peer's other chunks: {extra}")
    ob, pb = totals[ours][0], totals[peer][0]
    print(f"{'total/mean':<14} {ob:>7} {pb:>7} {ob / pb:>6.3f} {np.mean(totals[ours][1]):>8.2f} {np.mean(totals[peer][1]):>8.2f}"
          f" {np.mean(totals[ours][2]):>8.2f} {np.mean(totals[peer][2]):>8.2f}")
PY
