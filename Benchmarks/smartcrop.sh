#!/usr/bin/env bash
# Smart crop beside vipsthumbnail --smartcrop, on the ten 2560x1600 photographs of Debian's
# plasma-workspace-wallpapers: for each picture and strategy (attention, entropy), the window
# each tool keeps in a BOXxBOX fill (default 256x256) and whether they agree (offsets within 15%
# of the slack: the cover picture's excess along the cropped axis), with the centre crop's
# offset beside them; then the time of a batch of all ten: imgpipe --fill (centre), imgpipe
# --smartcrop attention/entropy and vipsthumbnail --smartcrop (the same files, one process each
# for imgpipe, one per file for vipsthumbnail as it is used), minimum of $RUNS runs (default 5).
#
# Where each window is: both tools' outputs are found by exact search in the same tool's own
# cover-size thumbnail (`-s x$BOX`: no crop), so the offset is what that tool chose, not a guess.
# Needs libvips-tools and python3-numpy. Don't run it while other builds share the machine.
source "$(dirname "$0")/common.sh"
bench_runs 5
bench_bootstrap libvips-tools python3-numpy python3-pil
require_tools vipsthumbnail
box=${BOX:-256}
bin="$(bench_build imgpipe)/imgpipe"
photos=(Autumn BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite Path)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
for name in "${photos[@]}"; do cp "$(wallpapers)/$name/contents/images/2560x1600.jpg" "$work/src/$name.jpg"; done

for name in "${photos[@]}"; do
  src="$work/src/$name.jpg"
  vipsthumbnail "$src" -s "x$box" -o "$work/$name-vips-cover.png"
  "$bin" thumb "$src" -s "x$box" -o "$work/$name-ours-cover.png" --no-disk-cache >/dev/null
  for how in attention entropy centre; do
    vipsthumbnail "$src" -s "${box}x$box" --smartcrop "$how" -o "$work/$name-vips-$how.png"
    "$bin" thumb "$src" -s "${box}x$box" --smartcrop "$how" -o "$work/$name-ours-$how.png" --no-disk-cache >/dev/null
  done
done

"$pillow" - "$work" "$box" "${photos[@]}" <<'PY'
import sys
import numpy as np
from PIL import Image
work, box, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def load(path): return np.asarray(Image.open(path).convert("RGB"), dtype=np.int32)
def offset(cover, crop):
    """The offset of `crop` in `cover` along the axis with slack: the position of least difference."""
    if cover.shape[1] > crop.shape[1]:
        scores = [np.abs(cover[:crop.shape[0], x:x + crop.shape[1]] - crop).mean() for x in range(cover.shape[1] - crop.shape[1] + 1)]
        return int(np.argmin(scores)), cover.shape[1] - crop.shape[1], min(scores)
    scores = [np.abs(cover[y:y + crop.shape[0], :crop.shape[1]] - crop).mean() for y in range(cover.shape[0] - crop.shape[0] + 1)]
    return int(np.argmin(scores)), cover.shape[0] - crop.shape[0], min(scores)
print(f"{box}x{box} fill of 2560x1600 photographs: offset of the window along the cropped axis (px of the cover picture)")
print(f"{'photo':<13} {'slack':>5}  {'centre':>6}  {'attention: vips':>15} {'ours':>5} {'same':>4}  {'entropy: vips':>13} {'ours':>5} {'same':>4}")
agree = {"attention": 0, "entropy": 0}; centre_agree = {"attention": 0, "entropy": 0}
for name in names:
    row = {}
    for tool in ("vips", "ours"):
        cover = load(f"{work}/{name}-{tool}-cover.png")
        for how in ("attention", "entropy", "centre"):
            at, slack, residual = offset(cover, load(f"{work}/{name}-{tool}-{how}.png"))
            row[tool, how] = at
            if residual > 2: print(f"  note: {tool} {how} of {name} matches its cover only to {residual:.1f} levels", file=sys.stderr)
    line = f"{name:<13} {slack:>5}  {row['ours', 'centre']:>6}"
    for how in ("attention", "entropy"):
        same = abs(row["vips", how] - row["ours", how]) <= 0.15 * slack
        agree[how] += same
        centre_agree[how] += abs(row["vips", how] - row["ours", "centre"]) <= 0.15 * slack
        line += f"  {row['vips', how]:>{15 if how == 'attention' else 13}} {row['ours', how]:>5} {'yes' if same else 'NO':>4}"
    print(line)
for how in ("attention", "entropy"):
    print(f"{how}: ours keeps vips's window on {agree[how]} of {len(names)}; the centre crop on {centre_agree[how]} of {len(names)}")
PY

vips_batch() { for f in "$work"/src/*.jpg; do vipsthumbnail "$f" -s "${box}x$box" --smartcrop "$1" -o "$work/out/%s.jpg"; done; }
mkdir -p "$work/out"
echo
echo "time for all ten, ${box}x$box JPEG out (ms, best of $runs):"
printf '%-34s %6s\n' "imgpipe --fill (centre)" "$(best "$bin" thumb "$work"/src/*.jpg --fill "${box}x$box" --out-dir "$work/out" --format jpg --no-disk-cache)"
for how in attention entropy; do
  printf '%-34s %6s\n' "imgpipe --smartcrop $how" "$(best "$bin" thumb "$work"/src/*.jpg -s "${box}x$box" --smartcrop "$how" --out-dir "$work/out" --format jpg --no-disk-cache)"
  printf '%-34s %6s\n' "vipsthumbnail --smartcrop $how" "$(best vips_batch "$how")"
done
