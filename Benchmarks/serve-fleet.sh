#!/usr/bin/env bash
# A fleet of `imgpipe serve` replicas on an existing engine: `replicas` servers (release build),
# each with its own disk cache, sharing one redis-server (IMGPIPE_REDIS_URL, no persistence),
# behind nginx (an upstream of the replicas, round robin, keep-alive) on loopback. The origin is a
# second nginx serving `sources` distinct photographs (1024×768 JPEGs made here); its access log
# counts origin fetches.
#
#   shared   every source asked at 3 sizes (fit 160, 320, 640, as WebP), all URLs shuffled and
#            16 at a time through the front nginx: origin fetches (goal: one per source) and the
#            replicas' answers
#   killed   every source asked at 3 new sizes the same way; once half are answered one replica
#            is killed (SIGKILL): how many answers failed (nginx passes a request whose replica
#            died before answering to another: `proxy_next_upstream error`), and origin fetches
#            (the sources are in Redis by then: none expected)
#
# Usage: Benchmarks/serve-fleet.sh [sources] [replicas]    (60 3). Leaves nothing running.
source "$(dirname "$0")/common.sh"
sources="${1:-60}"
replicas="${2:-3}"

bench_bootstrap nginx-light redis-server
require_tools nginx redis-server redis-cli curl

bench_workdir serve-fleet
mkdir -p "$work/www/img" "$work/logs" "$work/tmp" "$work/front/logs" "$work/front/tmp"
chmod 755 "$work"

# `sources` distinct 1024×768 photographs-like JPEGs (smooth gradients and noise, seeded).
"$pillow" - "$work/www/img" "$sources" <<'PY'
import random, sys
from PIL import Image, ImageFilter
folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    rng = random.Random(i)
    small = Image.new("RGB", (32, 24))
    small.putdata([(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(32 * 24)])
    picture = small.resize((1024, 768), Image.BICUBIC).filter(ImageFilter.GaussianBlur(2))
    picture.save(f"{folder}/{i}.jpg", quality=88)
PY

origin_port="$(free_port)"
front_port="$(free_port)"
redis_port="$(free_port)"
{ nginx_head "$work" 1; cat <<CONF
  log_format uri '\$request_uri';
  access_log $work/logs/access.log uri;
  server {
    listen 127.0.0.1:$origin_port;
    root $work/www;
    etag on;
    add_header Cache-Control "max-age=3600";
  }
}
CONF
} > "$work/origin.conf"
nginx -c "$work/origin.conf" -p "$work" &
pids+=($!)
redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" --logfile "$work/logs/redis.log" &
pids+=($!)

binary="$(BENCH_QUIET_BUILD=1 bench_build imgpipe)/imgpipe"
secret="$(openssl rand -hex 32)"
replica_ports=()
replica_pids=()
for i in $(seq 0 $((replicas - 1))); do
  port="$(free_port)"
  replica_ports+=("$port")
  IMGPIPE_BIND="127.0.0.1:$port" IMGPIPE_CACHE_DIR="$work/cache-$i" IMGPIPE_REDIS_URL="redis://127.0.0.1:$redis_port" \
    IMGPIPE_REDIS_SECRET="$secret" IMGPIPE_ALLOW_LOOPBACK_SOURCE_ADDRESSES=true IMGPIPE_WORKERS=4 \
    "$binary" serve > "$work/logs/replica-$i.log" 2>&1 &
  pids+=($!)
  replica_pids+=($!)
done

{ nginx_head "$work/front" 1; cat <<CONF
  access_log off;
  upstream replicas {
$(for port in "${replica_ports[@]}"; do echo "    server 127.0.0.1:$port max_fails=1 fail_timeout=5s;"; done)
    keepalive 32;
  }
  server {
    listen 127.0.0.1:$front_port;
    location / {
      proxy_pass http://replicas;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_next_upstream error timeout;
    }
  }
}
CONF
} > "$work/front.conf"
nginx -c "$work/front.conf" -p "$work/front" &
pids+=($!)

for _ in $(seq 100); do
  ready=1
  curl -sf -o /dev/null "http://127.0.0.1:$origin_port/img/0.jpg" || ready=0
  redis-cli -p "$redis_port" ping >/dev/null 2>&1 || ready=0
  for port in "${replica_ports[@]}"; do curl -sf -o /dev/null "http://127.0.0.1:$port/health" || ready=0; done
  [ "$ready" = 1 ] && break
  sleep 0.1
done
[ "$ready" = 1 ] || { echo "serve-fleet: the servers did not start" >&2; tail -n 5 "$work"/logs/*.log >&2; exit 1; }

origin_fetches() { grep -c '^/img/' "$work/logs/access.log" || true; }

# urls SIZE...: every source at each size, shuffled, as front-nginx URLs.
urls() {
  for size in "$@"; do
    for i in $(seq 0 $((sources - 1))); do
      echo "http://127.0.0.1:$front_port/insecure/rs:fit:$size:$size/plain/http://127.0.0.1:$origin_port/img/$i.jpg@webp"
    done
  done | shuf --random-source=<(yes)
}

# ask FILE OUT: every URL of FILE, 16 at a time; one status a line into OUT.
ask() { xargs -P 16 -n 1 curl -s -o /dev/null -w '%{http_code}\n' < "$1" > "$2"; }

echo "$sources sources (1024×768 JPEG) from nginx; $replicas replicas of imgpipe serve behind nginx; redis-server $(redis-server --version | sed 's/.*v=\([^ ]*\).*/\1/')"
urls 160 320 640 > "$work/shared.txt"
before="$(origin_fetches)"
start=$EPOCHREALTIME
ask "$work/shared.txt" "$work/shared.out"
seconds=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.2f", e - s }')
shared_origin=$(( $(origin_fetches) - before ))
shared_ok=$(grep -c '^200$' "$work/shared.out" || true)
echo "shared: $(wc -l < "$work/shared.txt") requests in $seconds s, $shared_ok answered 200; origin fetches: $shared_origin (one per source: $sources)"
for i in $(seq 0 $((replicas - 1))); do
  echo "  replica $i answered $(grep -c 'GET /insecure/.* 200 ' "$work/logs/replica-$i.log" || true)"
done

urls 200 400 800 > "$work/killed.txt"
total=$(wc -l < "$work/killed.txt")
before="$(origin_fetches)"
: > "$work/killed.out"
ask "$work/killed.txt" "$work/killed.out" &
asking=$!
while [ "$(wc -l < "$work/killed.out" 2>/dev/null || echo 0)" -lt $((total / 2)) ] && kill -0 "$asking" 2>/dev/null; do sleep 0.02; done
answered_before_kill=$(wc -l < "$work/killed.out")
kill -9 "${replica_pids[1]}"
wait "${replica_pids[1]}" 2>/dev/null || true
wait "$asking" || true
killed_ok=$(grep -c '^200$' "$work/killed.out" || true)
echo "killed: replica 1 killed after $answered_before_kill of $total answers; $killed_ok of $total answered 200, $((total - killed_ok)) failed ($(grep -v '^200$' "$work/killed.out" | sort | uniq -c | tr '\n' ' ')); origin fetches: $(( $(origin_fetches) - before ))"
