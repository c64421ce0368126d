#!/usr/bin/env bash
# Face-keeping crops (issue 40): for each picture and fill shape, how many of the faces OpenCV
# finds in the whole picture each tool's crop keeps: `imgpipe thumb --smartcrop faces`,
# `vipsthumbnail --smartcrop attention` and thumbor 7.8 with its face detector (PyPI `thumbor`
# with `opencv-python-headless`, a loopback server this script starts: `/WxH/smart/`), with the
# centre crop beside them; then the time of a batch of these pictures, and of the ten 2560x1600
# photographs Benchmarks/smartcrop.sh uses: imgpipe --fill (centre), --smartcrop attention,
# --smartcrop faces, one process each, minimum of $RUNS runs (default 5).
#
# Pictures: opencv-doc's messi5.jpg (548x342) and basketball1.png (640x480, grey), scikit-image's
# astronaut.png (512x512, public domain; from its PyPI wheel, `pip download scikit-image==0.26.0
# --no-deps`, unzipped), and crops of each that put its largest face near the left, right, top or
# bottom edge (a quarter of the face's width from it). Shapes: 1:1, 1:2 and 16:9 fills at scale
# 0.7 of the picture (so faces of 40 pixels stay above the cascade's 20-pixel window).
#
# The faces judged by: OpenCV's cascade (the venv's cv2, haarcascade_frontalface_alt.xml from
# opencv-data, scale 1.1, 3 neighbours, histogram-equalised: imgpipe's parameters, another
# OpenCV build) on the whole picture. A face is kept when its box lies inside the tool's window,
# one output pixel of slack; "fit" counts the faces whose box alone fits in the window. Each
# window is found by least difference of the tool's crop in the same tool's uncropped
# cover-size output (as Benchmarks/smartcrop.sh does), so it is what the tool chose.
# Needs libvips-tools and opencv-doc/opencv-data (scripts/bootstrap), PyPI through scripts/python-venv.
source "$(dirname "$0")/common.sh"
bench_runs 5
bench_bootstrap libvips-tools curl
require_tools vipsthumbnail curl
bin="$(bench_build imgpipe)/imgpipe"
# imgpipe opens OpenCV at the first face search, from the FaceDetectionOpenCV plugin: built here
# by the root package (its product) from the same sources, and named to imgpipe by its variable.
swift build -c release --package-path "$root" --product FaceDetectionOpenCV >&2
export IMGPIPE_FACE_PLUGIN="$root/.build/release/libFaceDetectionOpenCV.so"
python=$("$root/scripts/python-venv" thumbor-faces "thumbor==7.8.0" "opencv-python-headless==4.14.0.94")
venv=$(dirname "$(dirname "$python")")
examples=/usr/share/doc/opencv-doc/examples/data
cascade=/usr/share/opencv4/haarcascades/haarcascade_frontalface_alt.xml

astronaut="$inputs/astronaut.png"
if [ ! -f "$astronaut" ]; then
  mkdir -p "$inputs/skimage-wheel"
  "$venv/bin/pip" download --quiet --no-deps --only-binary :all: -d "$inputs/skimage-wheel" "scikit-image==0.26.0"
  "$python" -c 'import glob, sys, zipfile; open(sys.argv[1], "wb").write(zipfile.ZipFile(glob.glob(sys.argv[2] + "/*.whl")[0]).read("skimage/data/astronaut.png"))' \
    "$astronaut" "$inputs/skimage-wheel"
fi

work=$(mktemp -d)
thumbor_pid=""
cleanup() { [ -z "$thumbor_pid" ] || kill "$thumbor_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/src" "$work/out"
cp "$examples/messi5.jpg" "$examples/basketball1.png" "$astronaut" "$work/src/"

# The pictures, their faces and the fills: $work/plan.json, and the crops beside the originals.
"$python" - "$work" "$cascade" <<'PY'
import json, os, sys
import cv2, numpy as np
from PIL import Image
work, cascade = sys.argv[1], cv2.CascadeClassifier(sys.argv[2])
def faces(path):
    grey = cv2.equalizeHist(np.asarray(Image.open(path).convert("L")))
    return [[int(v) for v in box] for box in cascade.detectMultiScale(grey, 1.1, 3)]
plan = []
for name in ("messi5.jpg", "basketball1.png", "astronaut.png"):
    src = f"{work}/src/{name}"
    picture = Image.open(src).convert("RGB")
    w, h = picture.size
    x, y, fw, fh = max(faces(src), key=lambda b: b[2] * b[3])
    m = round(fw / 4)
    stem = os.path.splitext(name)[0]
    variants = [(name, None)] + [(f"{stem}-{edge}.png", box) for edge, box in (
        ("left", (x - m, 0, w, h)), ("right", (0, 0, x + fw + m, h)), ("top", (0, y - m, w, h)), ("bottom", (0, 0, w, y + fh + m)))]
    for file, box in variants:
        if box: picture.crop(box).save(f"{work}/src/{file}")
        size = Image.open(f"{work}/src/{file}").size
        for label, ratio in (("1:1", 1.0), ("1:2", 0.5), ("16:9", 16 / 9)):
            ww, wh = (size[1] * ratio, size[1]) if size[0] / size[1] > ratio else (size[0], size[0] / ratio)
            tw, th = max(1, round(ww * 0.7)), max(1, round(wh * 0.7))
            plan.append({"file": file, "size": size, "shape": label, "target": [tw, th], "faces": faces(f"{work}/src/{file}")})
json.dump(plan, open(f"{work}/plan.json", "w"))
PY

# thumbor on loopback: the file loader over $work/src, its face detector, PNG out.
port=$(free_port)
cat > "$work/thumbor.conf" <<CONF
LOADER = 'thumbor.loaders.file_loader'
FILE_LOADER_ROOT_PATH = '$work/src'
STORAGE = 'thumbor.storages.no_storage'
RESULT_STORAGE = 'thumbor.result_storages.no_storage'
DETECTORS = ['thumbor.detectors.face_detector']
ALLOW_UNSAFE_URL = True
QUALITY = 95
CONF
"$venv/bin/thumbor" --port "$port" --ip 127.0.0.1 --conf "$work/thumbor.conf" --log-level error > "$work/thumbor.log" 2>&1 &
thumbor_pid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null && break; sleep 0.1; done
curl -sf "http://127.0.0.1:$port/healthcheck" >/dev/null || { cat "$work/thumbor.log" >&2; echo "faces.sh: thumbor did not start" >&2; exit 1; }

# Each tool's crop and its cover-size picture (the fill's scale, uncropped) for every row.
"$python" -c 'import json, sys; [print(r["file"], r["target"][0], r["target"][1], r["size"][0], r["size"][1]) for r in json.load(open(sys.argv[1]))]' \
  "$work/plan.json" | while read -r file tw th sw sh; do
  src="$work/src/$file"; tag="$file-${tw}x$th"
  # The cover size bounds the side the fill does not crop: its height when the picture is wider.
  if [ $((sw * th)) -gt $((tw * sh)) ]; then bound=("x$th"); tpath="0x$th"; else bound=("${tw}x"); tpath="${tw}x0"; fi
  "$bin" thumb "$src" -s "${tw}x$th" --smartcrop faces -o "$work/out/$tag-ours.png" --no-disk-cache >/dev/null
  "$bin" thumb "$src" -s "${tw}x$th" --smartcrop centre -o "$work/out/$tag-centre.png" --no-disk-cache >/dev/null
  "$bin" thumb "$src" -s "${bound[0]}" -o "$work/out/$tag-ours-cover.png" --no-disk-cache >/dev/null
  cp "$work/out/$tag-ours-cover.png" "$work/out/$tag-centre-cover.png"
  vipsthumbnail "$src" -s "${tw}x$th" --smartcrop attention -o "$work/out/$tag-vips.png"
  vipsthumbnail "$src" -s "${bound[0]}" -o "$work/out/$tag-vips-cover.png"
  curl -sf -o "$work/out/$tag-thumbor.png" "http://127.0.0.1:$port/unsafe/${tw}x$th/smart/filters:format(png)/$file"
  curl -sf -o "$work/out/$tag-thumbor-cover.png" "http://127.0.0.1:$port/unsafe/$tpath/filters:format(png)/$file"
done

"$python" - "$work" <<'PY'
import json, sys
import numpy as np
from PIL import Image
work = sys.argv[1]
plan = json.load(open(f"{work}/plan.json"))
def load(path): return np.asarray(Image.open(path).convert("RGB"), dtype=np.int32)
def window(tag, tool, size):
    """The tool's window in source pixels: its crop found in its own cover picture."""
    crop, cover = load(f"{work}/out/{tag}-{tool}.png"), load(f"{work}/out/{tag}-{tool}-cover.png")
    ch, cw = crop.shape[:2]
    if cover.shape[1] > cw:
        scores = [np.abs(cover[:ch, x:x + cw] - crop).mean() for x in range(cover.shape[1] - cw + 1)]
        at = (int(np.argmin(scores)), 0)
    else:
        scores = [np.abs(cover[y:y + ch, :cw] - crop).mean() for y in range(cover.shape[0] - ch + 1)]
        at = (0, int(np.argmin(scores)))
    if min(scores) > 6: print(f"  note: {tool} {tag} matches its cover only to {min(scores):.1f} levels", file=sys.stderr)
    k = (cover.shape[1] / size[0], cover.shape[0] / size[1])
    return at[0] / k[0], at[1] / k[1], cw / k[0], ch / k[1], 1 / min(k)
def inside(box, win):
    x, y, w, h = box; wx, wy, ww, wh, slack = win
    return x >= wx - slack and y >= wy - slack and x + w <= wx + ww + slack and y + h <= wy + wh + slack
tools = ("ours", "vips", "thumbor", "centre")
totals = {t: 0 for t in tools}; total_fit = 0; rows = {}
print("faces kept in each fill (of those whose box alone fits in the window):")
print(f"{'picture':<22} {'shape':<5} {'fill':>9} {'faces':>5} {'fit':>3}  {'ours':>4} {'vips':>4} {'thumbor':>7} {'centre':>6}")
for row in plan:
    tag = f"{row['file']}-{row['target'][0]}x{row['target'][1]}"
    wins = {t: window(tag, t, row["size"]) for t in tools}
    fit = [f for f in row["faces"] if f[2] <= wins["ours"][2] + 1 and f[3] <= wins["ours"][3] + 1]
    kept = {t: sum(inside(f, wins[t]) for f in fit) for t in tools}
    total_fit += len(fit)
    for t in tools: totals[t] += kept[t]
    r = rows.setdefault(row["file"], {"fit": 0, **{t: 0 for t in tools}})
    r["fit"] += len(fit)
    for t in tools: r[t] += kept[t]
    print(f"{row['file']:<22} {row['shape']:<5} {row['target'][0]:>4}x{row['target'][1]:<4} {len(row['faces']):>5} {len(fit):>3}"
          f"  {kept['ours']:>4} {kept['vips']:>4} {kept['thumbor']:>7} {kept['centre']:>6}")
print()
print("per picture, the three shapes together (faces kept / faces that fit):")
for file, r in rows.items():
    print(f"{file:<22} " + "  ".join(f"{t} {r[t]}/{r['fit']}" for t in tools))
print("all: " + "  ".join(f"{t} {totals[t]}/{total_fit}" for t in tools))
PY

kill "$thumbor_pid" 2>/dev/null || true; wait "$thumbor_pid" 2>/dev/null || true; thumbor_pid=""
# The time: these pictures, and the ten 2560x1600 photographs Benchmarks/smartcrop.sh crops.
mkdir -p "$work/wallpapers"
for name in Autumn BytheWater ColdRipple ColorfulCups DarkestHour EveningGlow FallenLeaf Grey Kite Path; do
  cp "$(wallpapers)/$name/contents/images/2560x1600.jpg" "$work/wallpapers/$name.jpg"
done
for set in src wallpapers; do
  files=("$work/$set"/*)
  echo
  echo "time for the ${#files[@]} files of $set, 256x256 JPEG out, one imgpipe process (ms, best of $runs):"
  for crop in "--fill 256x256" "-s 256x256 --smartcrop attention" "-s 256x256 --smartcrop faces"; do
    # shellcheck disable=SC2086 # the crop options are words
    printf '%-40s %6s\n' "imgpipe $crop" "$(best "$bin" thumb "${files[@]}" $crop --out-dir "$work/out" --format jpg --no-disk-cache)"
  done
done
