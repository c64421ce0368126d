#!/usr/bin/env bash
# Issue 23's second launch against an origin that says nothing about freshness: Python's
# `http.server` (which sends only `Date` and `Last-Modified`, the file's mtime) serves N
# pictures (default 40); `imgpipe fetch --cache-dir` loads them twice, once for files last
# modified a month ago and once for files modified just now. For each, prints the requests the
# server saw during the second launch (304s) and that launch's wall time. Files modified just
# now get a heuristic lifetime of nothing, so they show what every file cost before the
# heuristic: one revalidation each.
#
# Usage: Benchmarks/second-launch.sh [count]   (IMGPIPE=path runs that binary instead of
# building the release one, e.g. IMGPIPE=.build/debug/imgpipe)
source "$(dirname "$0")/common.sh"
count="${1:-40}"
if [ -n "${IMGPIPE:-}" ]; then imgpipe="$IMGPIPE"; else imgpipe="$(bench_build imgpipe)/imgpipe"; fi

work="$(mktemp -d /tmp/second-launch.XXXXXX)"
server_pid=""
trap '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

mkdir -p "$work/www"
samples=(Samples/mandelbrot.jpg Samples/glass-alpha.png Samples/moon-gray.jpg Samples/rings.png)
for i in $(seq 0 $((count - 1))); do
  source_file="${samples[$((i % ${#samples[@]}))]}"
  cp "$source_file" "$work/www/old-$i.${source_file##*.}"
  touch -d "30 days ago" "$work/www/old-$i.${source_file##*.}"
  cp "$source_file" "$work/www/new-$i.${source_file##*.}"
done

port="$(free_port)"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" 2>"$work/requests.log" >/dev/null &
server_pid=$!
until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; do sleep 0.1; done

requests() { grep -c '"GET ' "$work/requests.log" || true; }
echo "| files last modified | first launch: requests | second launch: requests (304s) | second launch: wall ms |"
echo "|---|---:|---:|---:|"
for kind in old new; do
  urls=()
  for file in "$work"/www/"$kind"-*; do urls+=("http://127.0.0.1:$port/$(basename "$file")"); done
  cache="$work/cache-$kind"
  # "Just now" is just before the first launch: a tenth of that age is over before the second.
  if [ "$kind" = new ]; then touch "$work"/www/new-*; fi
  before=$(requests)
  "$imgpipe" fetch "${urls[@]}" --cache-dir "$cache" >/dev/null 2>&1
  first=$(( $(requests) - before ))
  before=$(requests)
  start=$(date +%s%N)
  "$imgpipe" fetch "${urls[@]}" --cache-dir "$cache" >/dev/null 2>&1
  end=$(date +%s%N)
  second=$(( $(requests) - before ))
  not_modified=$(tail -n "$second" "$work/requests.log" | grep -c '" 304 ' || true)
  label=$([ "$kind" = old ] && echo "30 days ago" || echo "just now")
  echo "| $label | $first | $second ($not_modified) | $(( (end - start) / 1000000 )) |"
done
