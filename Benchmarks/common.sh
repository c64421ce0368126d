# Shared by the benchmark drivers (Benchmarks/*.sh), sourced, never run:
#
#   source "$(dirname "$0")/common.sh"
#
# Leaves the shell in the repository's root and sets
#   root     the repository (absolute)
#   inputs   Benchmarks/.inputs, where the drivers keep the inputs they make (gitignored)
#   runs     $RUNS, or the default the driver passes as `bench_runs N` (see below)
#   pillow   the Python that has Pillow (Debian's python3-pil): /usr/bin/python3
# and defines the functions below. The drivers keep their own tables; these are the pieces
# they all had: set-up, the release builds, the inputs, and the minimum-of-N timing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)
inputs="$root/Benchmarks/.inputs"
pillow=/usr/bin/python3

# bench_runs N: $runs is $RUNS, else N.
bench_runs() { runs=${RUNS:-$1}; }

# bench_bootstrap [PACKAGE...]: scripts/bootstrap (the project's Debian packages, Swift on PATH)
# with the extra Debian packages this driver's peers need; installs only what is missing.
bench_bootstrap() {
    source "$root/scripts/bootstrap" "$@"
}

# require_tools TOOL...: fails with the driver's name when a tool is not on PATH.
require_tools() {
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "$(basename "$0"): needs $tool (run scripts/bootstrap first)" >&2; exit 1; }
    done
}

# bench_build PRODUCT...: builds these products of the benchmark package (Benchmarks/Package.swift,
# which has the library by path, so its `imgpipe` too) in release, the log on stderr (errors and
# warnings only when BENCH_QUIET_BUILD is set); prints the folder that holds the executables.
bench_build() {
    local product
    for product in "$@"; do
        # A failed build must stop the driver (command substitution does not inherit `set -e`):
        # an older binary left in .build would otherwise be measured.
        if [ -n "${BENCH_QUIET_BUILD:-}" ]; then
            local log
            log=$(swift build -c release --package-path "$root/Benchmarks" --product "$product" 2>&1) || { echo "$log" | grep -E "error" >&2; return 1; }
            echo "$log" | grep -E "warning:" >&2 || true
        else
            swift build -c release --package-path "$root/Benchmarks" --product "$product" >&2 || return 1
        fi
    done
    swift build -c release --package-path "$root/Benchmarks" --show-bin-path
}

# wallpapers: Debian's plasma-workspace-wallpapers (2560x1600 photographs and drawings), fetched
# once with `apt-get download` into Benchmarks/.inputs/wallpapers; prints the folder of the
# wallpapers (`<name>/contents/images/2560x1600.jpg` ...).
wallpapers() {
    local folder="$inputs/wallpapers"
    if [ ! -d "$folder/usr/share/wallpapers" ]; then
        mkdir -p "$folder"
        (cd "$folder" && apt-get download plasma-workspace-wallpapers >/dev/null && dpkg-deb -x ./*.deb . && rm -f ./*.deb)
    fi
    echo "$folder/usr/share/wallpapers"
}

# photo_inputs: the 6000x4000 photos (photo-baseline.jpg, photo-progressive.jpg, photo-rgb.png,
# photo-rgba.png) tiled from four wallpapers by make_inputs.py, made once into $inputs.
photo_inputs() {
    [ -f "$inputs/photo-rgba.png" ] || "$pillow" "$root/Benchmarks/make_inputs.py" "$(wallpapers)" "$inputs"
}

# ssimulacra2_python: a venv in Benchmarks/.venv with PyPI's ssimulacra2 (the Python port),
# Pillow and numpy, made once; prints its python.
ssimulacra2_python() {
    local venv="$root/Benchmarks/.venv"
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import ssimulacra2, PIL, numpy" 2>/dev/null; then
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet ssimulacra2 Pillow numpy
    fi
    echo "$venv/bin/python"
}

# mib KIB: KiB as MiB with one decimal.
mib() { awk -v kb="$1" 'BEGIN { printf "%.1f", kb / 1024 }'; }

# timed_run COMMAND...: runs it once under /usr/bin/time, its output discarded, and sets
# run_seconds (wall, from $EPOCHREALTIME), run_cpu (user + sys seconds) and run_kib (peak RSS);
# on failure prints its stderr and returns 1.
timed_run() {
    local start end rusage
    rusage=$(mktemp)
    start=$EPOCHREALTIME
    if ! /usr/bin/time -o "$rusage" -f "%U %S %M" "$@" >/dev/null 2>"$rusage.err"; then
        cat "$rusage.err" >&2
        rm -f "$rusage" "$rusage.err"
        return 1
    fi
    end=$EPOCHREALTIME
    read -r run_seconds run_cpu run_kib < <(tail -n 1 "$rusage" | awk -v s="$start" -v e="$end" '{ printf "%.6f %.2f %d\n", e - s, $1 + $2, $3 }')
    rm -f "$rusage" "$rusage.err"
}

# measure COMMAND...: $runs runs of it; prints "milliseconds KiB", the fastest wall time and the
# smallest peak RSS, or "failed". A driver that defines `before_each_run` has it called before
# every run (outside the timing), e.g. to empty an output folder.
measure() {
    local best_ms="" best_kb="" ms
    for _ in $(seq "$runs"); do
        if declare -F before_each_run >/dev/null; then before_each_run; fi
        timed_run "$@" || { echo "failed"; return; }
        ms=$(awk -v s="$run_seconds" 'BEGIN { printf "%.0f", s * 1000 }')
        if [ -z "$best_ms" ] || [ "$ms" -lt "$best_ms" ]; then best_ms=$ms; fi
        if [ -z "$best_kb" ] || [ "$run_kib" -lt "$best_kb" ]; then best_kb=$run_kib; fi
    done
    echo "$best_ms $best_kb"
}

# row LABEL TOOL COMMAND...: measures COMMAND and prints one line of the driver's table:
# label, tool, milliseconds and peak MiB in $row_format (a printf format for those four, e.g.
# "%-22s %-14s %8s %10s"), then what the driver's `row_note` prints, if it defines one. Leaves
# the numbers in row_ms and row_kib ("failed" and empty when the command failed).
row() {
    local label=$1 tool=$2
    shift 2
    read -r row_ms row_kib <<<"$(measure "$@")"
    printf "$row_format" "$label" "$tool" "$row_ms" "$(mib "${row_kib:-0}")"
    if declare -F row_note >/dev/null; then row_note; fi
    echo
}

# best COMMAND...: the least wall time of $runs runs, in ms (output discarded).
best() {
  local best=999999 t0 t1 ms
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 )); [ "$ms" -lt "$best" ] && best=$ms
  done
  echo "$best"
}

# free_port: a free TCP port on 127.0.0.1.
free_port() { free_ports 1; }
# free_ports N: N distinct free loopback ports, one a line (held together while chosen, so never one twice).
free_ports() {
    python3 -c 'import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in held))' "$1"
}

# nginx_head DIR WORKERS: the start of an nginx configuration for a server on loopback whose
# files are all under DIR (pid, error log in DIR/logs, temporary files in DIR/tmp), in the
# foreground; it ends inside the `http {` block, which the driver goes on with and closes.
nginx_head() {
    cat <<CONF
worker_processes $2;
pid $1/nginx.pid;
error_log $1/logs/error.log warn;
daemon off;
events { worker_connections 1024; }
http {
  include /etc/nginx/mime.types;
  client_body_temp_path $1/tmp; proxy_temp_path $1/tmp; fastcgi_temp_path $1/tmp;
  uwsgi_temp_path $1/tmp; scgi_temp_path $1/tmp;
CONF
}

# bench_workdir NAME: sets `work` to a new folder /tmp/NAME.XXXXXX and `pids` to an empty list; on
# exit every process in `pids` still running is stopped (SIGTERM, then waited for) and the folder
# is removed. A driver appends what it starts: `pids+=($!)`.
bench_workdir() {
    work="$(mktemp -d "/tmp/$1.XXXXXX")"
    pids=()
    trap bench_cleanup EXIT
}

bench_cleanup() {
    local pid
    for pid in "${pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then kill "$pid"; wait "$pid" 2>/dev/null || true; fi
    done
    rm -rf "$work"
}
