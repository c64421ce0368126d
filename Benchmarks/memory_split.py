"""Where a process's resident memory is at its peak: runs COMMAND, reads /proc/PID/smaps every
few milliseconds, and at the sample with the most resident memory splits it by mapping:

  libraries   file-backed mappings of shared objects (*.so*): the code and data pages touched
  executable  the program's own file
  files       other file-backed mappings (an input read by mmap, locale archives, caches)
  heap        [heap]: glibc's main malloc arena (brk)
  arenas      glibc's other malloc arenas: anonymous mappings at a 64 MiB boundary (HEAP_MAX_SIZE)
              whose reservation continues as an inaccessible (---p) mapping
  stacks      [stack] and threads' stacks: anonymous mappings right above a small inaccessible
              guard mapping (glibc's pthread stacks; Swift's and Dispatch's threads are pthreads)
  blocks      every other anonymous mapping: mmap'ed allocations above glibc's mmap threshold
              (a picture's bitmaps, a codec's planes and coefficient buffers) and the like

Usage: memory_split.py [--libraries N] COMMAND...   Prints one line "peak_kib sampled_kib libraries executable
files heap arenas stacks blocks threads" (KiB; threads is the thread count at that sample):
peak_kib is the kernel's VmHWM read at the process's exit (through its parent's wait4 rusage),
sampled_kib the largest sum seen (sampling can miss a short peak; the split is of that sample).
With --libraries N, then the N shared objects with the most resident memory at that sample,
one "KiB name" line each.
"""

import os
import re
import shutil
import sys
import time

MAPPING = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$")
ARENA = 64 << 20


def sample(pid, executable):
    """The split of one reading of /proc/PID/smaps, or None when the process is gone."""
    try:
        with open(f"/proc/{pid}/smaps") as smaps:
            text = smaps.read()
        with open(f"/proc/{pid}/status") as status:
            threads = next((int(line.split()[1]) for line in status if line.startswith("Threads:")), 0)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    mappings = []
    for line in text.splitlines():
        match = MAPPING.match(line)
        if match:
            start, end, perms, path = int(match[1], 16), int(match[2], 16), match[3], match[4].strip()
            mappings.append([start, end, perms, path, 0])
        elif line.startswith("Rss:") and mappings:
            mappings[-1][4] = int(line.split()[1])
    split = dict(libraries=0, executable=0, files=0, heap=0, arenas=0, stacks=0, blocks=0)
    libraries = {}
    for i, (start, end, perms, path, rss) in enumerate(mappings):
        previous = mappings[i - 1] if i > 0 else None
        following = mappings[i + 1] if i + 1 < len(mappings) else None
        if path == "[heap]":
            kind = "heap"
        elif path == "[stack]":
            kind = "stacks"
        elif path.startswith("["):
            kind = "files"  # [vdso], [vvar]
        elif path:
            real = os.path.realpath(path) if os.path.exists(path) else path
            kind = "executable" if real == executable else "libraries" if ".so" in os.path.basename(path) else "files"
        elif start % ARENA == 0 and following and following[0] == end and following[2].startswith("---") and not following[3]:
            kind = "arenas"
        elif previous and previous[1] == start and previous[2].startswith("---") and not previous[3] \
                and previous[1] - previous[0] <= 1 << 20:
            kind = "stacks"
        else:
            kind = "blocks"
        split[kind] += rss
        if kind == "libraries":
            name = os.path.basename(path)
            libraries[name] = libraries.get(name, 0) + rss
    return split, threads, libraries


def main(argv):
    command, shown = argv[1:], 0
    if command[:1] == ["--libraries"]:
        shown, command = int(command[1]), command[2:]
    executable = os.path.realpath(shutil.which(command[0]) or command[0])
    devnull = os.open(os.devnull, os.O_WRONLY)
    pid = os.posix_spawnp(command[0], command, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1)])
    best, best_total, best_threads, best_libraries = None, -1, 0, {}
    while True:
        reading = sample(pid, executable)
        # Reaped only after the reading: wait4 gives the child's own peak (ru_maxrss, KiB).
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if reading:
            split, threads, libraries = reading
            total = sum(split.values())
            if total > best_total:
                best, best_total, best_threads, best_libraries = split, total, threads, libraries
        time.sleep(0.002)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"memory_split.py: {command[0]} failed ({os.waitstatus_to_exitcode(status)})")
    peak = usage.ru_maxrss
    best = best or dict(libraries=0, executable=0, files=0, heap=0, arenas=0, stacks=0, blocks=0)
    print(peak, best_total, *best.values(), best_threads)
    for name, rss in sorted(best_libraries.items(), key=lambda item: -item[1])[:shown]:
        print(rss, name)


main(sys.argv)
