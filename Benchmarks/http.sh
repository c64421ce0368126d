#!/usr/bin/env bash
# Fetches 1,000 files of about 30 KB from nginx on loopback with HTTPDataLoader (libcurl multi),
# with a URLSession loader and with `curl -Z --parallel-max 6`, in one run, and prints the
# throughput of each. Installs nginx when missing; leaves nothing running.
#
# Then the same over HTTPS with HTTP/2 (a throw-away self-signed certificate), where curl
# multiplexes the transfers over one connection. URLSession sits that one out: on Linux it
# cannot be told to trust a private CA (FoundationNetworking reads its CA variable on Android only).
#
# Usage: Benchmarks/http.sh [count] [connections-per-host] [rounds]
source "$(dirname "$0")/common.sh"
count="${1:-1000}"
per_host="${2:-6}"
rounds="${3:-5}"

bench_bootstrap nginx-light openssl

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

# Free loopback ports, a certificate, then nginx in the foreground (we own its pid) with its own config.
port="$(free_port)"
tls_port="$(free_port)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$work/key.pem" \
  -out "$work/cert.pem" -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
{ nginx_head "$work" 2; cat <<CONF
  access_log off;
  sendfile on; tcp_nopush on; keepalive_requests 100000; keepalive_timeout 60;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    etag on;
    expires 1d;
  }
  server {
    listen 127.0.0.1:$tls_port ssl http2;
    ssl_certificate $work/cert.pem;
    ssl_certificate_key $work/key.pem;
    http2_max_concurrent_streams 128;
    root $work/www;
    etag on;
    expires 1d;
  }
}
CONF
} > "$work/nginx.conf"
mkdir -p "$work/tmp"
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$port/f/0000.jpg" && break; sleep 0.1; done

benchmark="$(BENCH_QUIET_BUILD=1 bench_build HTTPBenchmark)/HTTPBenchmark"
bytes="$(du -sb "$work/www/f" | cut -f1)"
echo "$count files, $((bytes / 1000)) KB, $per_host connections per host, median of $rounds rounds (after one warm-up)"

# Runs the Swift loaders and curl against base URL $1; extra curl options follow.
run() {
  local base="$1" only="$2"; shift 2
  BENCH_CA="$work/cert.pem" BENCH_ONLY="$only" "$benchmark" "$base" "$count" "$per_host" "$rounds"
  # curl: one process for all files (start-up included), to /dev/null.
  for i in $(seq 0 $((count - 1))); do printf 'url = "%s/%04d.jpg"\noutput = "/dev/null"\n' "$base" "$i"; done > "$work/curl.cfg"
  local times=()
  for _ in $(seq 0 "$rounds"); do
    local start=$(date +%s%N)
    curl -s --no-progress-meter -Z --parallel-max "$per_host" "$@" -K "$work/curl.cfg" 2>/dev/null
    times+=($(( ($(date +%s%N) - start) / 1000 )))
  done
  local median_us=$(printf '%s\n' "${times[@]:1}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  awk -v n="$count" -v us="$median_us" -v bytes="$bytes" 'BEGIN {
    s = us / 1e6
    printf "%-24s %5d files  %7.1f MB  median %7.1f ms  %8.0f files/s  %7.1f MB/s\n", "curl -Z --parallel-max", n, bytes / 1e6, s * 1000, n / s, bytes / 1e6 / s
  }'
}

echo "== HTTP/1.1, nginx on 127.0.0.1:$port"
run "http://127.0.0.1:$port/f" ""
echo "== HTTPS, HTTP/2 offered, nginx on 127.0.0.1:$tls_port"
run "https://127.0.0.1:$tls_port/f" curl --cacert "$work/cert.pem"
