#!/usr/bin/env python3
"""Makes the 6000x4000 benchmark inputs from four real 2560x1600 photographs (the
first four JPEG wallpapers by name: the PNG ones are drawings).

Usage: make_inputs.py WALLPAPER_DIR OUT_DIR

Each photo is centre-cropped to 3:2 (2400x1600) and scaled by 1.25 to 3000x2000; the four
fill a 2x2 grid. Writes photo-baseline.jpg and photo-progressive.jpg (quality 90, 4:2:0),
photo-rgb.png and photo-rgba.png (zlib level 6, Pillow's default; the alpha channel is a
smooth diagonal ramp from 255 to 48 so every pixel needs premultiplying).
"""
import sys
from pathlib import Path

from PIL import Image


def main() -> None:
    source, out = Path(sys.argv[1]), Path(sys.argv[2])
    photos = sorted(p for p in source.rglob("2560x1600.*") if p.suffix.lower() in (".jpg", ".jpeg"))
    if len(photos) < 4:
        sys.exit(f"make_inputs: need four 2560x1600 photos under {source}, found {len(photos)}")
    canvas = Image.new("RGB", (6000, 4000))
    for index, path in enumerate(photos[:4]):
        photo = Image.open(path).convert("RGB")
        left = (photo.width - 2400) // 2
        tile = photo.crop((left, 0, left + 2400, 1600)).resize((3000, 2000), Image.LANCZOS)
        canvas.paste(tile, ((index % 2) * 3000, (index // 2) * 2000))
        print(f"make_inputs: tile {index}: {path.parents[2].name}")
    out.mkdir(parents=True, exist_ok=True)
    canvas.save(out / "photo-baseline.jpg", quality=90)
    canvas.save(out / "photo-progressive.jpg", quality=90, progressive=True)
    canvas.save(out / "photo-rgb.png")
    ramp = Image.linear_gradient("L").resize((6000, 4000)).point(lambda v: 255 - v * 207 // 255)
    rgba = canvas.copy()
    rgba.putalpha(ramp)
    rgba.save(out / "photo-rgba.png")


if __name__ == "__main__":
    main()
