#!/usr/bin/env bash
# JPEG encoder quality and size beside vips: for each photo, our 256-px thumbnail is written
# once as a lossless PNG (JPEGEncoderBenchmark, release build); our JPEGEncoder and
# `vips jpegsave --Q $Q` (default settings, and with --optimize-coding) then encode exactly
# those pixels, so only the encoder differs. Each JPEG is scored against the PNG with
# SSIMULACRA2 (PyPI `ssimulacra2`, in a venv in Benchmarks/.venv) and PSNR; prints a row
# per photo and the totals/means.
#
# Photos: the 2560x1600 JPEG wallpapers of Debian's plasma-workspace-wallpapers (fetched once
# with `apt-get download` into Benchmarks/.inputs/wallpapers), or the files given as arguments.
# Needs libvips-tools. Q=80 by default; RUNS (default 5) timings of our encode, minimum kept.
source "$(dirname "$0")/common.sh"
q=${Q:-80}
bench_runs 5
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

bench_bootstrap libvips-tools python3-venv
scorer="$(ssimulacra2_python)"

if [ "$#" -gt 0 ]; then
  photos=("$@")
else
  walls="$(wallpapers)"
  mapfile -t photos < <(find "$walls" -path "*/contents/images/2560x1600.jpg" | sort)
fi

bin="$(bench_build JPEGEncoderBenchmark)/JPEGEncoderBenchmark"
"$bin" "$out" "$q" "$runs" "${photos[@]}" > "$out/ours.tsv"
for png in "$out"/[0-9][0-9].png; do
  stem="${png%.png}"
  vips jpegsave "$png" "$stem.vips.jpg" --Q "$q"
  vips jpegsave "$png" "$stem.vipsopt.jpg" --Q "$q" --optimize-coding
done

"$scorer" - "$out" "$q" <<'PY'
import csv, math, os, sys
import numpy as np
from PIL import Image
from ssimulacra2 import compute_ssimulacra2
out, q = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(os.path.join(out, "ours.tsv")), delimiter="\t"))
def psnr(a, b):
    x = np.asarray(Image.open(a).convert("RGB"), dtype=np.float64)
    y = np.asarray(Image.open(b).convert("RGB"), dtype=np.float64)
    mse = ((x - y) ** 2).mean()
    return float("inf") if mse == 0 else 10 * math.log10(255 * 255 / mse)
kinds = [("ours", "ours"), ("vips", f"vips --Q {q}"), ("vipsopt", f"vips --Q {q} --optimize-coding")]
totals = {k: [0, 0.0, 0.0] for k, _ in kinds}
print(f"| photo (256-px thumbnail) | " + " | ".join(f"{label}: bytes / SSIMULACRA2 / PSNR" for _, label in kinds) + " |")
print("|---|" + "---:|" * len(kinds))
for i, row in enumerate(rows):
    png = os.path.join(out, f"{i:02d}.png")
    cells = []
    for kind, _ in kinds:
        jpg = os.path.join(out, f"{i:02d}.{kind}.jpg")
        size = os.path.getsize(jpg); s2 = compute_ssimulacra2(png, jpg); p = psnr(png, jpg)
        t = totals[kind]; t[0] += size; t[1] += s2; t[2] += p
        cells.append(f"{size} / {s2:.2f} / {p:.2f}")
    name = row["photo"].split("/wallpapers/")[-1].split("/")[0]
    print(f"| {name} ({row['thumbnail']}) | " + " | ".join(cells) + " |")
n = len(rows)
print(f"| **total bytes / mean SSIMULACRA2 / mean PSNR** ({n} photos) | " +
      " | ".join(f"{totals[k][0]} / {totals[k][1] / n:.2f} / {totals[k][2] / n:.2f}" for k, _ in kinds) + " |")
ours = totals["ours"][0]
for kind, label in kinds[1:]:
    print(f"ours / {label}: {ours / totals[kind][0]:.3f}x the bytes, "
          f"SSIMULACRA2 {totals['ours'][1] / n - totals[kind][1] / n:+.2f}, PSNR {totals['ours'][2] / n - totals[kind][2] / n:+.2f} dB")
ms = [float(r["our_encode_ms"]) for r in rows]
print(f"our encode time per thumbnail (min of runs): mean {sum(ms) / n:.3f} ms")
PY
