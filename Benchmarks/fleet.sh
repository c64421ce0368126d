#!/usr/bin/env bash
# The fleet benchmark for the shared Redis tier (CacheRedis). Starts redis-server on a free
# loopback port (no persistence) and nginx on loopback serving `count` small distinct PNGs
# (64×64, `Cache-Control: max-age=3600`, ETag; the access log counts origin requests), then per run:
#
#   plain  `replicas` FleetBenchmark processes at once, each with its own fresh DiskCache and a
#          plain HTTPDataLoader, each requesting every URL in its own order, `concurrency` at a
#          time (default 6: HTTPDataLoader's connections per host), then a second pass (memory cache cleared: local disk hits)
#   tier   the same with SharedTierLoader + TieredDataCache over one RedisCache (Redis flushed first)
#   quiet  one replica, one request at a time: plain (origin, then disk), tier against the
#          Redis the fleet filled (shared-tier hits, then disk), and tier against an empty Redis
#          (origin fetches through the tier, then disk): latencies without contention
#   parts  the pieces of a shared-tier hit, timed one at a time (FleetBenchmark parts)
#
# and prints origin requests and p50/p99 of every `pipeline.image(for:)` call by what answered
# it: min / median / max over the runs. Installs nginx-light when missing; leaves nothing running.
#
# Usage: Benchmarks/fleet.sh [count] [replicas] [concurrency] [runs]    (500 4 6 3)
# POLL_MS sets SharedTierLoader's poll interval (default 10, the library's default).
# ORDER=same gives every replica the same order (a burst: every URL asked by all replicas at
# once, so most requests wait on another replica's lease) instead of one shuffle each.
source "$(dirname "$0")/common.sh"
count="${1:-500}"
replicas="${2:-4}"
concurrency="${3:-6}"
runs="${4:-3}"
poll_ms="${POLL_MS:-10}"
order="${ORDER:-shuffled}"

bench_bootstrap nginx-light

work="$(mktemp -d /tmp/fleet-bench.XXXXXX)"
nginx_pid=""
redis_pid=""
cleanup() {
  for pid in $nginx_pid $redis_pid; do
    if kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

# `count` distinct 64×64 RGB PNGs (a gradient and noise seeded by the index): ~12 KB each.
mkdir -p "$work/www/img" "$work/logs" "$work/tmp" "$work/out"
chmod 755 "$work"  # nginx workers run as an unprivileged user
python3 - "$work/www/img" "$count" <<'PY'
import os, random, struct, sys, zlib
folder, count = sys.argv[1], int(sys.argv[2])
def chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
for i in range(count):
    rng = random.Random(i)
    rows = b"".join(b"\0" + bytes(v for x in range(64) for v in
                                  ((x * 4 + i) % 256, (y * 4 + 3 * i) % 256, rng.randrange(256)))
                    for y in range(64))
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)) \
        + chunk(b"IDAT", zlib.compress(rows, 6)) + chunk(b"IEND", b"")
    with open(os.path.join(folder, "%d.png" % i), "wb") as f:
        f.write(png)
PY

port="$(free_port)"
redis_port="$(free_port)"
{ nginx_head "$work" 1; cat <<CONF
  log_format uri '\$request_uri';
  access_log $work/logs/access.log uri;
  sendfile on; keepalive_requests 100000; keepalive_timeout 60;
  server {
    listen 127.0.0.1:$port;
    root $work/www;
    etag on;
    add_header Cache-Control "max-age=3600";
  }
}
CONF
} > "$work/nginx.conf"
nginx -c "$work/nginx.conf" -p "$work" &
nginx_pid=$!
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/logs/redis.log" &
redis_pid=$!
for _ in $(seq 50); do
  curl -sf -o /dev/null "http://127.0.0.1:$port/img/0.png" && redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
  sleep 0.1
done

binary="$(BENCH_QUIET_BUILD=1 bench_build FleetBenchmark)/FleetBenchmark"
base="http://127.0.0.1:$port/img"
bytes="$(du -sb "$work/www/img" | cut -f1)"
echo "$count PNGs (64×64, $((bytes / count)) bytes on average) from nginx; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/'); $replicas replicas × $concurrency concurrent requests; $runs runs; lease poll ${poll_ms} ms; $order orders"

origin_requests() { grep -c '^/img/' "$work/logs/access.log" || true; }
now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }

# fleet MODE RUN: `replicas` processes at once; writes their JSON lines and the origin count.
fleet() {
  local mode="$1" run="$2" before pids=() start_at
  redis-cli -p "$redis_port" flushall >/dev/null
  before="$(origin_requests)"
  start_at=$(( $(now_ms) + 1500 ))  # every replica has started (and opened its cache) by then
  for i in $(seq 0 $((replicas - 1))); do
    local seed=$((run * 100 + i))
    [ "$order" = same ] && seed=$((run * 100))
    "$binary" "$mode" "$base" "$count" "$seed" "$concurrency" "$redis_port" "$start_at" "$poll_ms" \
      > "$work/out/$run-$mode-$i.json" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid"; done
  echo $(( $(origin_requests) - before )) > "$work/out/$run-$mode.origin"
}

# quiet MODE RUN [NAME]: one replica, one request at a time (tier mode uses what is in Redis).
quiet() {
  local mode="$1" run="$2" name="${3:-$1}" before
  before="$(origin_requests)"
  "$binary" "$mode" "$base" "$count" $((run * 100 + 99)) 1 "$redis_port" 0 "$poll_ms" > "$work/out/$run-quiet-$name-0.json"
  echo $(( $(origin_requests) - before )) > "$work/out/$run-quiet-$name.origin"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  fleet plain "$run"
  fleet tier "$run"
  quiet plain "$run"
  quiet tier "$run"
  "$binary" parts "$base" "$count" $((run * 100 + 98)) 1 "$redis_port" 0 > "$work/out/$run-parts.json"
  redis-cli -p "$redis_port" flushall >/dev/null
  quiet tier "$run" tier-cold
  echo "run $run: origin requests plain $(cat "$work/out/$run-plain.origin"), tier $(cat "$work/out/$run-tier.origin")" >&2
done

echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work/out" "$runs" "$count" "$replicas" <<'PY'
import glob, json, os, statistics, sys
out, runs, count, replicas = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])

def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * len(values) + 0.5)) - 1))]

def spread(values, fmt="{:.2f}"):
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    return " / ".join(fmt.format(v) for v in (min(values), statistics.median(values), max(values)))

labels = {"origin": "origin fetch", "lease": "waited on a lease, Redis answered", "tier": "shared-tier hit (local miss, Redis)",
          "disk": "local disk hit (2nd pass)"}
rows, origins, errors, redis, walls = {}, {}, [], {}, {}
for run in range(1, runs + 1):
    for setup in ("plain", "tier", "quiet-plain", "quiet-tier", "quiet-tier-cold"):
        merged = {}
        for path in sorted(glob.glob(os.path.join(out, "%d-%s-[0-9]*.json" % (run, setup)))):
            report = json.load(open(path))
            errors += report["errors"]
            for kind, values in report["latencies"].items():
                merged.setdefault(kind, []).extend(values)
            for key, value in report["redis"].items():
                redis.setdefault(setup, {}).setdefault(key, 0)
                redis[setup][key] += value
            walls.setdefault(setup, {}).setdefault(run, []).append(report["pass1_seconds"])
            if report.get("start_late_ms", 0) > 100:
                print("warning: a %s replica of run %d started %.0f ms late" % (setup, run, report["start_late_ms"]))
        origins.setdefault(setup, []).append(int(open(os.path.join(out, "%d-%s.origin" % (run, setup))).read()))
        for kind, values in merged.items():
            row = rows.setdefault((setup, kind), {"n": [], "p50": [], "p99": []})
            row["n"].append(len(values))
            row["p50"].append(pct(values, 50) / 1000)
            row["p99"].append(pct(values, 99) / 1000)

print()
print("origin requests (nginx access log), min / median / max of %d runs:" % runs)
print("  %d replicas × %d URLs without the tier: %s" % (replicas, count, spread(origins["plain"], "{:.0f}")))
print("  %d replicas × %d URLs with the tier:    %s" % (replicas, count, spread(origins["tier"], "{:.0f}")))
print("  slowest replica's first pass, s: plain %s, tier %s" % (
    spread([max(v) for v in walls["plain"].values()]), spread([max(v) for v in walls["tier"].values()])))
print()
print("latency of pipeline.image(for:), ms, min / median / max of the runs' percentiles:")
print("%-16s %-38s %8s %22s %22s" % ("setup", "answered by", "n/run", "p50", "p99"))
order = ["origin", "lease", "tier", "disk"]
for setup in ("plain", "tier", "quiet-plain", "quiet-tier", "quiet-tier-cold"):
    kinds = sorted({k for s, k in rows if s == setup}, key=lambda k: order.index(k) if k in order else 99)
    for kind in kinds:
        row = rows[(setup, kind)]
        print("%-16s %-38s %8.0f %22s %22s" % (setup, labels.get(kind, kind), statistics.median(row["n"]),
                                              spread(row["p50"]), spread(row["p99"])))
print()
parts = {}
for run in range(1, runs + 1):
    for name, values in json.load(open(os.path.join(out, "%d-parts.json" % run)))["parts"].items():
        parts.setdefault(name, {"p50": [], "p99": []})
        parts[name]["p50"].append(pct(values, 50))
        parts[name]["p99"].append(pct(values, 99))
print("%-40s %22s %22s" % ("one operation, one at a time (µs)", "p50", "p99"))
for name in ("disk miss", "disk hit", "disk store", "redis EXISTS", "redis GET hit", "tiered read, Redis hit"):
    if name in parts:
        print("%-40s %22s %22s" % (name, spread(parts[name]["p50"], "{:.0f}"), spread(parts[name]["p99"], "{:.0f}")))
print()
for setup, counters in redis.items():
    if "tier" in setup:
        print("Redis statistics (%s, all runs): %s" % (setup, ", ".join("%s %d" % kv for kv in sorted(counters.items()))))
if errors:
    print("%d failed requests, e.g. %s" % (len(errors), errors[:3]))
PY
