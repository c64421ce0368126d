#!/usr/bin/env bash
# Fetches 1,000 files of about 30 KB from nginx on loopback with HTTPDataLoader (libcurl multi),
# with a URLSession loader and with `curl -Z --parallel-max 6`, in one run, and prints the
# throughput of each. Installs nginx (and hyperfine) when missing; leaves nothing running.
#
# Usage: Benchmarks/http.sh [count] [connections-per-host] [rounds]
set -euo pipefail
cd "$(dirname "$0")/.."
count="${1:-1000}"
per_host="${2:-6}"
rounds="${3:-5}"

source scripts/bootstrap nginx-light hyperfine

work="$(mktemp -d /tmp/http-bench.XXXXXX)"
nginx_pid=""
cleanup() {
  if [ -n "$nginx_pid" ] && kill -0 "$nginx_pid" 2>/dev/null; then kill "$nginx_pid"; wait "$nginx_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# Files: ~30 KB of random bytes each (sizes vary ±2 KB), named 0000.jpg … so nginx sends image/jpeg.
mkdir -p "$work/www/f" "$work/logs"
chmod 755 "$work"  # nginx workers run as an unprivileged user
python3 - "$work/www/f" "$count" <<'PY'
import os, random, sys
folder, count = sys.argv[1], int(sys.argv[2])
random.seed(1)
for i in range(count):
    with open(os.path.join(folder, "%04d.jpg" % i), "wb") as f:
        f.write(b"\xff\xd8\xff" + os.urandom(30 * 1024 + random.randint(-2048, 2048)))
PY

# A free loopback port, then nginx in the foreground (we own its pid) with its own config.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat > "$work/nginx.conf" <<CONF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/logs/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  client_body_temp_path $work/tmp; proxy_temp_path $work/tmp; fastcgi_temp_path $work/tmp;
  uwsgi_temp_path $work/tmp; scgi_temp_path $work/tmp;
  sendfile on; tcp_nopush on; keepalive_requests 100000; keepalive_timeout 60;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    etag on;
    expires 1d;
  }
}
CONF
mkdir -p "$work/tmp"
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/f/0000.jpg" && break; sleep 0.1; done

base="http://127.0.0.1:$port/f"
echo "nginx on 127.0.0.1:$port, $count files, $(du -sh "$work/www/f" | cut -f1), $per_host connections per host, median of $rounds rounds"

swift build -c release --product HTTPBenchmark 2>&1 | grep -E "error|warning:" || true
.build/release/HTTPBenchmark "$base" "$count" "$per_host" "$rounds"

# curl: one process for all files (start-up included), to /dev/null.
{
  for i in $(seq 0 $((count - 1))); do printf 'url = "%s/%04d.jpg"\noutput = "/dev/null"\n' "$base" "$i"; done
} > "$work/curl.cfg"
curl_ms=()
for _ in $(seq 0 "$rounds"); do
  start=$(date +%s%N)
  curl -s --no-progress-meter -Z --parallel-max "$per_host" -K "$work/curl.cfg" 2>/dev/null
  curl_ms+=($(( ($(date +%s%N) - start) / 1000 )))
done
median_us=$(printf '%s\n' "${curl_ms[@]:1}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
awk -v n="$count" -v us="$median_us" -v bytes="$(du -sb "$work/www/f" | cut -f1)" 'BEGIN {
  s = us / 1e6
  printf "%-24s %5d files  %7.1f MB  median %7.1f ms  %8.0f files/s  %7.1f MB/s\n", "curl -Z --parallel-max", n, bytes / 1e6, s * 1000, n / s, bytes / 1e6 / s
}'
if command -v hyperfine >/dev/null; then
  hyperfine -N -w 1 -r "$rounds" "curl -s --no-progress-meter -Z --parallel-max $per_host -K $work/curl.cfg" 2>/dev/null | grep -E "Time|Range" || true
fi
