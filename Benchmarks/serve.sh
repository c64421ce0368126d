#!/usr/bin/env bash
# Image servers under wrk (issue 37's "Measure"): `imgpipe serve` beside thumbor 7.x (PyPI, its
# default PIL engine) and nginx's image_filter (Debian's libnginx-mod-http-image-filter), in the
# same run on the same machine, on the workload of imgproxy's image-servers-benchmark: ~2K-pixel
# photos resized to fit 512×512, the output in the source's format (JPEG, PNG, WebP, AVIF).
#
# Sources: the 30 wallpapers of Debian's plasma-workspace-wallpapers (photographs and renderings),
# the largest size of each scaled by vips to 2000 px on the long side (2000×1125 to 2000×1250),
# JPEG q90, made once into Benchmarks/.inputs/serve-2000; the PNG, WebP and AVIF sources are those
# JPEGs through `vips copy` as imgproxy's harness makes them (PNG; WebP at vips's Q75; AVIF Q65
# effort 0). Every server reads them from its LOCAL filesystem (no HTTP origin), one folder for all:
#   imgpipe  IMGPIPE_LOCAL_FILESYSTEM_ROOT, /insecure/rs:fit:512:512/plain/local:///<name>@<ext>
#   thumbor  file_loader, /unsafe/fit-in/512x512/filters:format(<format>)/<name>
#   nginx    `image_filter resize 512 512` on a `root` (it writes the source's format; no AVIF)
# Each photo is hard-linked under `copies` names (p<photo>-<k>.<ext>), so a phase can ask
# distinct URLs (no cache can answer them) of the same 30 files, which the page cache holds.
#
# Per server and format, a fresh server process (empty caches), then with wrk (2 threads,
# $CONNECTIONS connections, default 4: two per core) and Benchmarks/serve.lua:
#   cold   every distinct 512 URL once (30 × copies)
#   warm   the same names at 511×511 (the sources were read, the results are not cached; 511 keeps
#          the JPEG decoders' shrink-on-load at the scale 512 uses)
#   hot    the 30 k=0 URLs of `cold`, asked once more by curl, then round and round for
#          $HOT_SECONDS (a server's result cache answers; nginx has none and resizes again)
#   ttfb   one hot URL, 30 requests one after another: curl's time to the first byte (the
#          server's time for a hot request plus loopback), min and median; for imgpipe also the
#          time its access log gives each (imgpipe writes its access log, to a file; the peers
#          log nothing per request: thumbor at --log-level error, nginx access_log off)
#   one    (JPEG) one new URL asked by 16 connections at once, for $HOT_SECONDS
# and the peak memory of the server's process tree (thumbor's and nginx's workers included):
# the sum of each process's VmHWM, and the largest sum of Pss seen (sampled every 250 ms).
#
# thumbor runs with $THUMBOR_PROCESSES processes (default 2, one per core), its storage (source
# cache) and result storage OFF for cold and warm, and, for hot, ttfb and one, a second instance
# with its file result storage ON (RESULT_STORAGE_STORES_UNSAFE). Quality 80 where a server has
# a setting (thumbor's default; nginx's image_filter_jpeg/webp_quality);
# thumbor's AVIF speed $AVIF_SPEED (default 8: the libaom speed `imgpipe serve` encodes at).
#
# Usage: Benchmarks/serve.sh [-q]       -q: a quick run (1 copy, 3 s hot phases)
# RUNS=N (default 1) measures every server and format N times, each with fresh servers, and
# prints each phase's run with the most requests/s (ttfb: the least), the memory's largest peak.
# SERVERS="imgpipe thumbor nginx" and FORMATS="jpg png webp avif" choose rows; COPIES (default 10)
# and HOT_SECONDS (default 10) size the phases; IMGPIPE_EXTRA="--memory-cache-mb 32" adds flags
# to `imgpipe serve`. Until `imgpipe serve` exists, its rows print
# "imgpipe serve: not built yet". Binds 127.0.0.1 only; stops every server it started on exit.
source "$(dirname "$0")/common.sh"

quick=""
[ "${1:-}" = "-q" ] && quick=1
copies=${COPIES:-$([ -n "$quick" ] && echo 1 || echo 10)}
hot_seconds=${HOT_SECONDS:-$([ -n "$quick" ] && echo 3 || echo 10)}
connections=${CONNECTIONS:-4}
servers=${SERVERS:-imgpipe thumbor nginx}
formats=${FORMATS:-jpg png webp avif}
thumbor_processes=${THUMBOR_PROCESSES:-2}
thumbor_threads=${THUMBOR_THREADS:-0}
avif_speed=${AVIF_SPEED:-8}
threads=2
photos=30
bench_runs 1

bench_bootstrap libvips-tools wrk nginx-light libnginx-mod-http-image-filter python3-venv
require_tools wrk vips nginx curl
filter_module=/usr/lib/nginx/modules/ngx_http_image_filter_module.so
[ -f "$filter_module" ] || { echo "serve.sh: $filter_module is absent (libnginx-mod-http-image-filter)" >&2; exit 1; }

work="$(mktemp -d /tmp/serve-bench.XXXXXX)"
chmod 755 "$work"  # nginx workers run as an unprivileged user
mkdir -p "$work/logs" "$work/tmp" "$work/out" "$work/nginx/logs" "$work/nginx/tmp"
started=()    # every server process this script started (their descendants are found at stop)
sampler=""
descendants() {
  local pid child
  for pid in "$@"; do
    for child in $(pgrep -P "$pid" 2>/dev/null); do echo "$child"; descendants "$child"; done
  done
}
stop_tree() {
  local pids pid
  pids="$1 $(descendants "$1")"
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=""
    for pid in $pids; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ -z "$alive" ] && break
    sleep 0.1
  done
  for pid in $pids; do kill -9 "$pid" 2>/dev/null || true; done
  wait "$1" 2>/dev/null || true
}
cleanup() {
  local pid
  for pid in "${started[@]}"; do kill -0 "$pid" 2>/dev/null && stop_tree "$pid"; done
  [ -n "$sampler" ] && kill "$sampler" 2>/dev/null
  if [ -n "${KEEP:-}" ]; then echo "serve.sh: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# ---- inputs --------------------------------------------------------------------------------
sources="$inputs/serve-2000"
if [ "$(ls "$sources"/avif/*.avif 2>/dev/null | wc -l)" -ne "$photos" ]; then
  echo "serve.sh: making $photos 2000-px sources in $sources" >&2
  rm -rf "$sources"; mkdir -p "$sources"/{jpg,png,webp,avif}
  i=0
  for dir in "$(wallpapers)"/*/; do
    largest=$(ls "$dir/contents/images/" | sort -t x -k1,1n | tail -1)
    name=$(printf p%02d $i)
    vips thumbnail "$dir/contents/images/$largest" "$sources/jpg/$name.jpg[Q=90,strip]" 2000
    vips copy "$sources/jpg/$name.jpg" "$sources/png/$name.png"
    vips copy "$sources/jpg/$name.jpg" "$sources/webp/$name.webp"
    vips copy "$sources/jpg/$name.jpg" "$sources/avif/$name.avif[Q=65,effort=0]"
    i=$((i + 1))
  done
  [ "$i" -eq "$photos" ] || { echo "serve.sh: expected $photos wallpapers, found $i" >&2; exit 1; }
fi
# The served folder: every source under `copies` names (hard links) and one more for `one`.
served="$work/src"
mkdir -p "$served"
for format in $formats; do
  for file in "$sources/$format"/*."$format"; do
    base=$(basename "$file" ".$format")
    cp "$file" "$served/$base-0.$format"
    for k in $(seq 1 $((copies - 1))); do ln "$served/$base-0.$format" "$served/$base-$k.$format"; done
  done
  ln "$served/p00-0.$format" "$served/one.$format"
done
chmod -R a+rX "$served"

# ---- servers -------------------------------------------------------------------------------
imgpipe=""
imgpipe_serve_available() {
  [ -n "$imgpipe" ] && "$imgpipe" serve --help >/dev/null 2>&1
}
if [[ " $servers " == *" imgpipe "* ]]; then
  (cd "$root" && swift build -c release --product imgpipe >&2)
  imgpipe="$root/$(cd "$root" && swift build -c release --show-bin-path | sed "s|^$root/||")/imgpipe"
fi

thumbor_venv="$root/Benchmarks/.venv-thumbor"
if [[ " $servers " == *" thumbor "* ]]; then
  if [ ! -x "$thumbor_venv/bin/thumbor" ] || ! "$thumbor_venv/bin/python" -c "import thumbor" 2>/dev/null; then
    /usr/bin/python3 -m venv "$thumbor_venv"
    "$thumbor_venv/bin/pip" install --quiet "thumbor>=7.8,<8"
  fi
fi

# thumbor_conf RESULTS: thumbor's configuration; RESULTS is "on" for its file result storage.
thumbor_conf() {
  cat <<CONF
LOADER = 'thumbor.loaders.file_loader'
FILE_LOADER_ROOT_PATH = '$served'
STORAGE = 'thumbor.storages.no_storage'
ENGINE_THREADPOOL_SIZE = $thumbor_threads
QUALITY = 80
AVIF_SPEED = $avif_speed
CONF
  if [ "$1" = on ]; then
    cat <<CONF
RESULT_STORAGE = 'thumbor.result_storages.file_storage'
RESULT_STORAGE_FILE_STORAGE_ROOT_PATH = '$work/thumbor-results'
RESULT_STORAGE_STORES_UNSAFE = True
CONF
  else
    echo "RESULT_STORAGE = None"
  fi
}

nginx_conf() {
  echo "load_module $filter_module;"
  nginx_head "$work/nginx" 2
  cat <<CONF
  access_log off;
  keepalive_requests 100000; keepalive_timeout 60;
  server {
    listen 127.0.0.1:$1;
    image_filter_buffer 32M;
    image_filter_jpeg_quality 80;
    image_filter_webp_quality 80;
    location /r512/ { alias $served/; image_filter resize 512 512; }
    location /r511/ { alias $served/; image_filter resize 511 511; }
  }
}
CONF
}

# start SERVER VARIANT: a fresh server on a free loopback port; sets port and pid, starts the
# memory sampler on its process tree. VARIANT is thumbor's result storage (on/off).
port=""
pid=""
start() {
  local server=$1 variant=${2:-off}
  port=$(free_port)
  case $server in
    imgpipe)
      local cache
      cache=$(mktemp -d "$work/imgpipe-cache.XXXXXX")
      # shellcheck disable=SC2086 # IMGPIPE_EXTRA is a list of flags
      IMGPIPE_LOCAL_FILESYSTEM_ROOT="$served" IMGPIPE_CACHE_DIR="$cache" \
        "$imgpipe" serve --bind "127.0.0.1:$port" ${IMGPIPE_EXTRA:-} >>"$work/logs/imgpipe.log" 2>&1 &
      ;;
    thumbor)
      rm -rf "$work/thumbor-results"
      thumbor_conf "$variant" >"$work/thumbor.conf"
      "$thumbor_venv/bin/thumbor" --ip 127.0.0.1 --port "$port" --conf "$work/thumbor.conf" \
        --processes "$thumbor_processes" --log-level error >>"$work/logs/thumbor.log" 2>&1 &
      ;;
    nginx)
      nginx_conf "$port" >"$work/nginx/nginx.conf"
      nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" >>"$work/logs/nginx.log" 2>&1 &
      ;;
  esac
  pid=$!
  started+=("$pid")
  local ready=""
  for _ in $(seq 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ready=1; break; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$ready" ]; then
    echo "serve.sh: $server did not listen on 127.0.0.1:$port within 30 s; its log:" >&2
    tail -n 20 "$work/logs/$server.log" >&2
    exit 1
  fi
  "$pillow" "$work/sampler.py" "$pid" "$work/out/memory-$server-$format-$variant-$run" &
  sampler=$!
}

stop() {
  sleep 0.5  # a last sample of the idle tree
  stop_tree "$pid"
  kill "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  sampler=""
}

cat >"$work/sampler.py" <<'PY'
# sampler.py PID OUT: every 250 ms, PID's process tree: writes "ΣVmHWM maxΣRss maxΣPss" (KiB) to OUT.
import os, sys, time
root, out = int(sys.argv[1]), sys.argv[2]
hwm, peak_rss, peak_pss = {}, 0, 0
def tree():
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open("/proc/%s/stat" % entry).read()
                children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
            except (OSError, ValueError, IndexError):
                pass
    found = [root]
    for pid in found:
        found.extend(children.get(pid, []))
    return found
while os.path.exists("/proc/%d" % root):
    rss = pss = 0
    for pid in tree():
        try:
            for line in open("/proc/%d/status" % pid):
                if line.startswith("VmHWM:"):
                    hwm[pid] = max(hwm.get(pid, 0), int(line.split()[1]))
            for line in open("/proc/%d/smaps_rollup" % pid):
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except (OSError, ValueError):
            pass
    peak_rss, peak_pss = max(peak_rss, rss), max(peak_pss, pss)
    with open(out + ".tmp", "w") as f:
        f.write("%d %d %d\n" % (sum(hwm.values()), peak_rss, peak_pss))
    os.replace(out + ".tmp", out)
    time.sleep(0.25)
PY

# url SERVER SIZE NAME FORMAT: the path of one request.
url() {
  local server=$1 size=$2 name=$3 format=$4
  case $server in
    imgpipe) echo "/insecure/rs:fit:$size:$size/plain/local:///$name@$format" ;;
    thumbor) echo "/unsafe/fit-in/${size}x${size}/filters:format($([ "$format" = jpg ] && echo jpeg || echo "$format"))/$name" ;;
    nginx) echo "/r$size/$name" ;;
  esac
}

# url_list SERVER SIZE FORMAT COPIES FILE: the paths of every photo's first COPIES names, k-major.
url_list() {
  local server=$1 size=$2 format=$3 count=$4 file=$5 k i
  : >"$file"
  for k in $(seq 0 $((count - 1))); do
    for i in $(seq 0 $((photos - 1))); do url "$server" "$size" "$(printf p%02d-%d.%s "$i" "$k" "$format")" "$format" >>"$file"; done
  done
}

# check SERVER FORMAT: one request; prints nothing when it answered 200 with a picture of the format
# no larger than 512×512, else why not.
check() {
  local status
  status=$(curl -s -o "$work/check.bin" -w '%{http_code}' "http://127.0.0.1:$port$(url "$1" 512 p00-0."$2" "$2")")
  if [ "$status" != 200 ]; then  # the status and the start of the body, tags and spaces squeezed out
    echo "HTTP $status $(head -c 300 "$work/check.bin" | tr -c '[:print:]' ' ' | sed 's/<[^>]*>/ /g; s/  */ /g' | cut -c 1-60)"
    return
  fi
  "$pillow" - "$work/check.bin" "$2" <<'PY'
import subprocess, sys
path, want = sys.argv[1], {"jpg": "JPEG", "png": "PNG", "webp": "WEBP", "avif": "AVIF"}[sys.argv[2]]
head = open(path, "rb").read(32)
kind = ("JPEG" if head[:3] == b"\xff\xd8\xff" else "PNG" if head[:8] == b"\x89PNG\r\n\x1a\n"
        else "WEBP" if head[:4] == b"RIFF" and head[8:12] == b"WEBP"
        else "AVIF" if head[4:8] == b"ftyp" and head[8:12] in (b"avif", b"avis") else "other")
if kind != want:
    print("answered %s, not %s" % (kind, want))
else:
    size = [int(subprocess.run(["vipsheader", "-f", field, path], capture_output=True, text=True).stdout or 0)
            for field in ("width", "height")]
    if max(size) != 512:
        print("answered %d×%d, not 512 on the long side" % tuple(size))
PY
}

# all_done: every wrk thread has written its marker (builtins only: polled every 20 ms beside the
# servers being measured, through `read -t` on a FIFO nobody writes to, a sleep without a process).
mkfifo "$work/tick"
exec 9<>"$work/tick"
all_done() {
  local i
  for ((i = 0; i < threads; i++)); do [ -e "$work/done/done-$i" ] || return 1; done
}

# bench SERVER FORMAT PHASE LIST MODE SECONDS CONNECTIONS: one wrk run; appends a result line.
bench() {
  local server=$1 format=$2 phase=$3 list=$4 mode=$5 seconds=$6 conns=$7 out
  out="$work/out/wrk-$server-$format-$phase.txt"
  rm -rf "$work/done"; mkdir -p "$work/done"
  wrk -t"$threads" -c"$conns" -d"${seconds}s" --timeout 60s --latency -s "$root/Benchmarks/serve.lua" \
    "http://127.0.0.1:$port" -- "$list" "$threads" "$mode" "$work/done" >"$out" 2>&1 &
  local wrk_pid=$!
  if [ "$mode" = once ]; then  # every thread has had its answers: end the run (serve.lua)
    while kill -0 "$wrk_pid" 2>/dev/null && ! all_done; do read -r -t 0.02 -u 9 || true; done
    kill -INT "$wrk_pid" 2>/dev/null || true
  fi
  wait "$wrk_pid" || true
  awk -v server="$server" -v format="$format" -v phase="$phase" '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /^ +50%/ { p50 = ms($2) } /^ +99%/ { p99 = ms($2) }
    /requests in/ { requests = $1 }
    /Requests\/sec:/ { rps = $2 }
    /Non-2xx/ { errors += $NF }
    /Socket errors/ { gsub(",", ""); errors += $4 + $6 + $8 + $10 }
    END { printf "%s %s %s %.2f %.2f %.2f %d %d\n", server, format, phase, rps, p50, p99, errors, requests }
  ' "$out" >>"$work/results"
}

# ttfb SERVER FORMAT PATH: 30 requests one after another; appends "min median" ms of curl's TTFB.
ttfb() {
  local server=$1 format=$2 path=$3
  for _ in $(seq 30); do curl -s -o /dev/null -w '%{time_starttransfer}\n' "http://127.0.0.1:$port$path"; done |
    sort -n | awk -v server="$server" -v format="$format" '{ t[NR] = $1 * 1000 } END { printf "%s %s ttfb %.2f %.2f 0 0 0\n", server, format, t[1], t[int((NR + 1) / 2)] }' \
      >>"$work/results"
  if [ "$server" = imgpipe ]; then  # its access log's time of each: "… 200 24704B 0.3ms"
    sleep 0.2
    tail -n 30 "$work/logs/imgpipe.log" | awk '$NF ~ /[0-9](ms|µs|us|s)$/ {
        v = $NF; if (v ~ /ms$/) v += 0; else if (v ~ /(µs|us)$/) v = v / 1000; else v = v * 1000; print v }' |
      sort -n | awk -v format="$format" '{ t[NR] = $1 } END { if (NR) printf "imgpipe %s server %.2f %.2f 0 0 0\n", format, t[1], t[int((NR + 1) / 2)] }' \
        >>"$work/results"
  fi
}

prime() {  # prime LIST: each path once, one after another
  local path
  while read -r path; do curl -s -o /dev/null "http://127.0.0.1:$port$path"; done <"$1"
}

# measure_server SERVER FORMAT
measure_server() {
  local server=$1 format=$2 problem
  echo "== $server, $format" >&2
  if [ "$server" = imgpipe ] && ! imgpipe_serve_available; then
    echo "imgpipe $format unavailable imgpipe serve: not built yet" >>"$work/results"
    return
  fi
  start "$server" off
  problem=$(check "$server" "$format")
  if [ -n "$problem" ]; then
    stop
    echo "$server $format unavailable $problem" >>"$work/results"
    return
  fi
  url_list "$server" 512 "$format" "$copies" "$work/cold.txt"
  url_list "$server" 511 "$format" "$copies" "$work/warm.txt"
  url_list "$server" 512 "$format" 1 "$work/hot.txt"
  bench "$server" "$format" cold "$work/cold.txt" once 600 "$connections"
  bench "$server" "$format" warm "$work/warm.txt" once 600 "$connections"
  if [ "$server" = thumbor ]; then  # hot: thumbor with its result storage on
    stop
    start thumbor on
  fi
  prime "$work/hot.txt"
  bench "$server" "$format" hot "$work/hot.txt" cycle "$hot_seconds" "$connections"
  ttfb "$server" "$format" "$(head -n 1 "$work/hot.txt")"
  if [ "$format" = jpg ]; then
    url "$server" 512 one.jpg jpg >"$work/one.txt"
    bench "$server" "$format" one "$work/one.txt" cycle "$hot_seconds" 16
  fi
  stop
}

echo "serve.sh: $photos photos × $copies names, formats: $formats; servers: $servers; $connections connections; $runs runs; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
: >"$work/results"
for run in $(seq "$runs"); do
  for format in $formats; do
    for server in $servers; do measure_server "$server" "$format"; done
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

"$pillow" - "$work/results" "$work/out" "$servers" "$formats" "$connections" <<'PY'
import glob, os, sys
results, out, servers, formats, connections = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5]
rows, unavailable = {}, {}
for line in open(results):
    parts = line.split()
    if parts[2] == "unavailable":
        unavailable[(parts[0], parts[1])] = " ".join(parts[3:])
    else:
        key, row = (parts[0], parts[1], parts[2]), parts[3:]
        if key not in rows:
            rows[key] = row
        elif parts[2] in ("ttfb", "server"):  # the least of each
            rows[key] = [min(a, b, key=float) for a, b in zip(rows[key], row)]
        elif float(row[0]) > float(rows[key][0]):  # the run with the most requests/s
            rows[key] = row
def memory(server, fmt):
    best = None
    for path in glob.glob(os.path.join(out, "memory-%s-%s-*" % (server, fmt))):
        hwm, rss, pss = (int(v) for v in open(path).read().split())
        best = (hwm, pss) if best is None else (max(best[0], hwm), max(best[1], pss))
    return "%.0f / %.0f MiB" % (best[0] / 1024, best[1] / 1024) if best else "–"
names = {"jpg": "JPEG", "png": "PNG", "webp": "WebP", "avif": "AVIF"}
phases = [("cold", "cold, distinct URLs"), ("warm", "warm sources (511×511)"), ("hot", "hot (result cache)"),
          ("ttfb", "a hot request, TTFB min / median"), ("one", "one URL, 16 connections")]
print()
print("| output | phase | " + " | ".join(servers) + " |")
print("| --- | --- |" + " --- |" * len(servers))
for fmt in formats:
    for phase, label in phases + [("memory", "peak memory: ΣVmHWM / ΣPss")]:
        cells = []
        for server in servers:
            if (server, fmt) in unavailable:
                cells.append(unavailable[(server, fmt)] if phase == "cold" else "")
            elif phase == "memory":
                cells.append(memory(server, fmt))
            elif (server, fmt, phase) not in rows:
                cells.append("")
            elif phase == "ttfb":
                low, median = rows[(server, fmt, phase)][:2]
                cell = "%s / %s ms" % (low, median)
                if (server, fmt, "server") in rows:
                    cell += " (its log: %s / %s ms)" % tuple(rows[(server, fmt, "server")][:2])
                cells.append(cell)
            else:
                rps, p50, p99, errors, requests = rows[(server, fmt, phase)]
                cell = "%s/s, p50 %s, p99 %s ms" % (rps, p50, p99)
                if int(errors):
                    cell += " (%s errors of %s)" % (errors, requests)
                cells.append(cell)
        if fmt == "jpg" or phase != "one":
            print("| %s | %s | %s |" % (names[fmt], label, " | ".join(cells)))
PY
