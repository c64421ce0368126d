#!/usr/bin/env bash
# The load benchmark (issue 22): one pipeline under many requests at once against slow and hostile
# loopback peers, printing peak RSS beside the configured budgets, a healthy host's latency while
# the load runs, and the typed errors seen. LoadBenchmark (Benchmarks/Sources/LoadBenchmark) does
# the requests; this driver starts, on 127.0.0.1 only,
#
#   nginx            the healthy host: `count` distinct 16×16 PNGs, colour (i & 255, i >> 8 & 255, 7)
#   load-origins.py  four slow hosts (1 MB bodies at 512 B/s) and a host of gzip bombs
#   fakeredis.py     a Redis that answers one byte per 10 ms (../shared/hostile/tools)
#   redis-server     a real Redis, for the poisoning run
#
# and runs: N slow requests + the healthy host's for N = 10,000 and 100,000; 48 gzip bombs at once;
# the healthy host through the shared tier over the trickling Redis; an attacker's values planted in
# Redis, then a replica's answers, then (after FLUSHALL) a second replica on the same disk.
#
# No peer runs this load on Linux (Nuke and Kingfisher do not build there); the comparison is the
# library before issue 22's points 3–9, with this same benchmark (Benchmarks/README.md).
#
# Usage: Benchmarks/load.sh [count] [timeout]    (200 healthy URLs; 10 s HTTP total timeout)
# LOADS="10000 100000" sets the numbers of slow requests, SLOW_HOSTS="4" the numbers of slow hosts
# they are spread over (issue 41's fairness runs: SLOW_HOSTS="24 64" LOADS="24 20000"), and
# ONLY_SLOW_HOSTS=1 skips the bomb, tier and poisoning runs.
source "$(dirname "$0")/common.sh"
count="${1:-200}"
timeout="${2:-10}"
loads="${LOADS:-10000 100000}"
hostile="$root/../shared/hostile"
[ -f "$hostile/tools/fakeredis.py" ] || { echo "load.sh: $hostile/tools is absent" >&2; exit 1; }

bench_bootstrap nginx-light redis-server

bench_workdir load-bench

mkdir -p "$work/www" "$work/logs" "$work/tmp"
chmod 755 "$work"  # nginx workers run as an unprivileged user
"$pillow" - "$work/www" "$count" <<'PY'
import sys
from PIL import Image
folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    Image.new("RGB", (16, 16), (i & 255, (i >> 8) & 255, 7)).save("%s/%d.png" % (folder, i))
PY

port="$(free_port)"
{ nginx_head "$work" 1; cat <<CONF
  access_log off;
  keepalive_requests 100000;
  server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
} > "$work/nginx.conf"
nginx -c "$work/nginx.conf" -p "$work" &
pids+=($!)

slow_hosts="${SLOW_HOSTS:-4}"
most_hosts="$(tr ' ' '\n' <<< "$slow_hosts" | sort -n | tail -1)"
mapfile -t ports < <(free_ports "$((most_hosts + 2))")  # the slow hosts, the bombs, the trickling Redis
slow_ports=("${ports[@]:0:$most_hosts}") slow_bases=()
for p in "${slow_ports[@]}"; do slow_bases+=("http://127.0.0.1:$p"); done
bomb_port="${ports[$most_hosts]}"
python3 "$root/Benchmarks/load-origins.py" "$(IFS=,; echo "${slow_ports[*]}")" "$bomb_port" 512 1800 > "$work/logs/origins.log" &
pids+=($!)
trickle_port="${ports[$((most_hosts + 1))]}"
python3 "$hostile/tools/fakeredis.py" "$trickle_port" trickle 0.01 > "$work/logs/fakeredis.log" &
pids+=($!)
redis_port="$(free_port)"
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/logs/redis.log" &
pids+=($!)
for _ in $(seq 100); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/0.png" && redis-cli -p "$redis_port" ping >/dev/null 2>&1 \
    && grep -q ready "$work/logs/origins.log" && grep -q ready "$work/logs/fakeredis.log" && break
  sleep 0.1
done

# LOAD_BENCHMARK=path runs a LoadBenchmark built elsewhere (the library before a change).
binary="${LOAD_BENCHMARK:-$(BENCH_QUIET_BUILD=1 bench_build LoadBenchmark)/LoadBenchmark}"
healthy="http://127.0.0.1:$port"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); healthy host: nginx, $count PNGs; HTTP total timeout ${timeout} s"

for hosts in $slow_hosts; do
  for n in $loads; do
    echo
    echo "== $n requests to $hosts slow hosts, then $count to a healthy one"
    "$binary" baseline "$n" 2>/dev/null || echo "harness: (this binary has no baseline mode)"
    "$binary" origin "$healthy" "$(IFS=,; echo "${slow_bases[*]:0:$hosts}")" "$n" "$count" "$timeout"
  done
done
[ -n "${ONLY_SLOW_HOSTS:-}" ] && exit 0

echo
echo "== 48 gzip bombs at once (64 MB inflated each)"
"$binary" bombs "http://127.0.0.1:$bomb_port" 48

echo
echo "== the healthy host through the shared tier, over a Redis that answers a byte per 10 ms"
"$binary" tier "$healthy" "$trickle_port" "$count" "$work/trickle-cache"

echo
echo "== a poisoning Redis: an attacker's values for every URL, then two replicas"
"$binary" plant "$healthy" "$redis_port" "$count"
"$binary" victim "$healthy" "$redis_port" "$count" "$work/victim-cache"
redis-cli -p "$redis_port" flushall >/dev/null
echo "(after FLUSHALL, a new process on the same local disk cache)"
"$binary" victim "$healthy" "$redis_port" "$count" "$work/victim-cache"
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
