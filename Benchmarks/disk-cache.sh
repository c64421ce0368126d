#!/usr/bin/env bash
# Disk-cache benchmark, old beside new: DiskCacheBenchmark (Benchmarks/Sources/DiskCacheBenchmark,
# public API only) built in release for this checkout ("new") and for the pinned revision
# $OLD_REV ("old", default f15fef5: the flat folder with an in-memory index built by a scan at
# every open), both from this checkout's benchmark source, and run at each entry count (default
# 100000 and 1000000, 1 KiB each). Prints one markdown table per count: fill rate, open → first
# hit and → complete index, hit and miss latency beside the peers Data(contentsOf:) and stat(2)
# of the same files, resident memory per entry, bytes on disk per entry, the most names in one
# folder, a lost index (index.sqlite* deleted), two processes at once, and an eviction pass of
# 10% with the hits issued while it runs. See the comment at the top of main.swift.
#
# Usage: Benchmarks/disk-cache.sh [entries...]   (OLD_REV=<revision> measures another old one;
# TMPDIR chooses where the cache folders go: each needs about 5 KiB per entry, removed after)
#
# The old revision is checked out with `git worktree add` into a temporary folder, built there
# (its own .build: a first build of the library, minutes) and removed at the end.
source "$(dirname "$0")/common.sh"
old_rev=${OLD_REV:-f15fef5}
if [ "$#" -gt 0 ]; then counts=("$@"); else counts=(100000 1000000); fi

bench_bootstrap
bench_workdir disk-cache
old_tree="$work/old"
remove_old_tree() {
    git -C "$root" worktree remove --force "$old_tree" 2>/dev/null || true
    bench_cleanup
}
trap remove_old_tree EXIT

new_name="$(git -C "$root" rev-parse --short HEAD)"
git -C "$root" diff --quiet HEAD -- Sources Package.swift || new_name+="+changes"
old_name="$(git -C "$root" rev-parse --short "$old_rev")"

echo "building DiskCacheBenchmark for this checkout ($new_name)" >&2
new_bin="$(bench_build DiskCacheBenchmark)/DiskCacheBenchmark"
echo "building DiskCacheBenchmark for $old_name in $old_tree" >&2
git -C "$root" worktree add --detach "$old_tree" "$old_rev" >&2
rm -rf "$old_tree/Benchmarks/Sources/DiskCacheBenchmark"
cp -R "$root/Benchmarks/Sources/DiskCacheBenchmark" "$old_tree/Benchmarks/Sources/"
old_log=$(swift build -c release --package-path "$old_tree/Benchmarks" --product DiskCacheBenchmark 2>&1) \
    || { echo "$old_log" | grep -E "error" >&2; exit 1; }
old_bin="$(swift build -c release --package-path "$old_tree/Benchmarks" --show-bin-path)/DiskCacheBenchmark"

# Room for one cache folder at a time: about 5 KiB per entry (a 4 KiB block, folders, the index),
# with the workers' 60,000 entries, and a margin of 1 GiB.
has_room() {
    local need_kib=$(( ($1 + 60000) * 6 + 1048576 )) free_kib
    free_kib=$(df -Pk "${TMPDIR:-/tmp}" | awk 'NR == 2 { print $4 }')
    [ "$free_kib" -ge "$need_kib" ] || { echo "disk-cache.sh: $1 entries need $(mib "$need_kib") MiB in ${TMPDIR:-/tmp}, $(mib "$free_kib") free: skipped" >&2; return 1; }
}

for count in "${counts[@]}"; do
    for side in old new; do
        has_room "$count" || continue 2
        bin=$old_bin; [ "$side" = new ] && bin=$new_bin
        echo "$side: $count entries" >&2
        # Its cache folder goes in a folder of its own, removed here once no process holds it
        # (a background task of the cache may still write while the benchmark removes it).
        mkdir -p "$work/tmp-$side"
        TMPDIR="$work/tmp-$side" "$bin" "$count" >"$work/$side-$count.txt"
        rm -rf "$work/tmp-$side"
    done
    echo
    echo "### $(awk -F '\t' '$1 == "entries" { print $2 }' "$work/new-$count.txt") entries of 1 KiB"
    echo
    echo "| measure | old ($old_name) | new ($new_name) |"
    echo "| --- | --- | --- |"
    # The rows in the new run's order, each with the old run's value of the same label.
    awk -F '\t' 'NR == FNR { old[$1] = $2; next }
        $1 != "entries" { printf "| %s | %s | %s |\n", $1, ($1 in old ? old[$1] : "—"), $2 }' \
        "$work/old-$count.txt" "$work/new-$count.txt"
done
