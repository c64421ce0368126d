#!/bin/bash
# Demonstrates ImagePipeline.watchMemoryPressure() on real Linux PSI: MemoryPressureDemo
# watches a scratch cgroup's memory.pressure while a workload thrashes that cgroup's page cache.
#
#   sudo Benchmarks/memory-pressure.sh [seconds] [critical-ms]
#
# critical-ms: the critical trigger's `full` stall in ms per second (default 500); this load
# stalls the cgroup ~5-10% of the time, so pass 100 to see a critical trim too.
#
# Needs root, a cgroup v1 memory hierarchy at /sys/fs/cgroup/memory (for the 256 MiB limit) and
# a cgroup v2 hierarchy at /sys/fs/cgroup/unified (for the cgroup's memory.pressure), as on this
# project's build machines; on a pure cgroup v2 host set memory.max on the v2 group instead.
# The workload stays inside the 256 MiB cgroup: stress-ng (Debian stress-ng) holds 220 MiB of
# anonymous memory and sleeps, and one `cat` re-reads a 100 MiB file through the ~36 MiB left, so
# every read refaults the pages it evicted. Nothing else on the machine is squeezed.
source "$(dirname "$0")/common.sh"
seconds=${1:-30}
critical_ms=${2:-500}
name=imagepipeline-psi-demo-$$
v1=/sys/fs/cgroup/memory/$name
v2=/sys/fs/cgroup/unified/$name
file=/var/tmp/$name.bin
bench_bootstrap stress-ng
demo="$(BENCH_QUIET_BUILD=1 bench_build MemoryPressureDemo)/MemoryPressureDemo"

cleanup() {
    [ -n "${workload:-}" ] && kill -- "-$workload" 2>/dev/null || true
    wait 2>/dev/null || true
    # Killed tasks leave the cgroup a moment after they die.
    for _ in 1 2 3 4 5 6 7 8 9 10; do rmdir "$v1" "$v2" 2>/dev/null && break; sleep 0.5; done
    rm -f "$file"
}
trap cleanup EXIT
mkdir "$v1" "$v2"
echo $((256 << 20)) > "$v1/memory.limit_in_bytes"
dd if=/dev/urandom of="$file" bs=1M count=100 status=none
# Drop the file's pages from the page cache, so that reading it charges the cgroup.
python3 -c "import os; fd = os.open('$file', os.O_RDONLY); os.fsync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)"

echo "watching $v2/memory.pressure (the demo itself runs outside the cgroup)"
"$demo" --cgroup "$v2" --seconds "$seconds" --critical-ms "$critical_ms" &
demo_pid=$!
sleep 1
set -m
(
    echo "$BASHPID" > "$v1/cgroup.procs"
    echo "$BASHPID" > "$v2/cgroup.procs"
    stress-ng --vm 1 --vm-bytes 220M --vm-hang 0 --timeout "${seconds}s" >/dev/null 2>&1 &
    sleep 2
    end=$((SECONDS + seconds))
    while [ $SECONDS -lt $end ]; do cat "$file" >/dev/null; done
) &
workload=$!
set +m
(while sleep 5; do echo "         every 5 s: $(tr '\n' ' ' < "$v2/memory.pressure")"; done) &
printer=$!
wait "$demo_pid"
kill "$printer"
