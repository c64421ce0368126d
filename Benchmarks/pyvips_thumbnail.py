"""pyvips (PyPI `pyvips` + `pyvips-binary`, libvips 8.18) as a peer, measured in-process so
that Python's own start-up is not counted against it. Run by thumbnails.sh and batch.sh with
the venv's python (scripts/python-venv pyvips ...); prints one line of numbers.

What each mode counts:

  time RUNS SIZE OUT FILE
      One process: `import pyvips`, the operation cache off (`cache_set_max(0)`, or a repeated
      call would be a cache hit), one untimed warm-up thumbnail (the first call's one-time
      costs: libvips's thread pool, a loader's first use), then RUNS timed thumbnails
      `pyvips.Image.thumbnail(FILE, SIZE).write_to_file(OUT)`: vipsthumbnail's defaults
      (`-s SIZE` is `thumbnail(FILE, SIZE)`: size both, no crop, auto-rotate, no linear, no
      profiles), written with keep="none" (no metadata: vipsthumbnail 8.14 writes none either).
      Prints "best_ms first_ms": the fastest timed call and the warm-up call, in milliseconds.

  rss SIZE OUT FILE
      A fresh process doing one thumbnail. Prints "before_kib after_kib peak_kib": VmRSS just
      before `import pyvips` (the interpreter alone), VmRSS right after it, and VmHWM (peak RSS)
      after the thumbnail. The peer's peak is peak - before: the Python interpreter is left
      out, libvips and its libraries' pages (what vipsthumbnail's own peak also holds) and the
      picture's buffers are counted; peak - after is the picture's share alone.

  batch THREADS SIZE OUTDIR SUFFIX FILE...
      One process: `import pyvips`, the cache off, then (timed) every FILE thumbnailed by a
      `concurrent.futures.ThreadPoolExecutor(THREADS)` (cffi releases the GIL in libvips calls,
      so THREADS pictures are in flight at once, each with libvips's own pool) and written to
      OUTDIR/<name>.<SUFFIX> (SUFFIX may carry save options, e.g. "jpg[Q=80]"). Prints
      "seconds cpu_seconds peak_kib": the wall time of the whole batch, the user + sys CPU of
      the process during it, and VmHWM - VmRSS before `import pyvips`, as in `rss`.
"""

import os
import resource
import sys
import time


def status_kib(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


before_import = status_kib("VmRSS")
import pyvips  # noqa: E402  (after the interpreter's RSS is read)

after_import = status_kib("VmRSS")
pyvips.cache_set_max(0)


def thumbnail(source, size, target):
    # vipsthumbnail 8.14 writes no metadata chunk here; without keep="none" 8.18 adds an eXIf.
    pyvips.Image.thumbnail(source, size).write_to_file(target, keep="none")


def main(argv):
    mode = argv[1]
    if mode == "time":
        runs, size, out, source = int(argv[2]), int(argv[3]), argv[4], argv[5]
        start = time.perf_counter()
        thumbnail(source, size, out)
        first = time.perf_counter() - start
        best = None
        for _ in range(runs):
            start = time.perf_counter()
            thumbnail(source, size, out)
            elapsed = time.perf_counter() - start
            best = elapsed if best is None else min(best, elapsed)
        print(f"{best * 1000:.0f} {first * 1000:.0f}")
    elif mode == "rss":
        size, out, source = int(argv[2]), argv[3], argv[4]
        thumbnail(source, size, out)
        print(f"{before_import} {after_import} {status_kib('VmHWM')}")
    elif mode == "batch":
        from concurrent.futures import ThreadPoolExecutor

        threads, size, outdir, suffix = int(argv[2]), int(argv[3]), argv[4], argv[5]
        jobs = [(f, os.path.join(outdir, os.path.splitext(os.path.basename(f))[0] + "." + suffix)) for f in argv[6:]]
        cpu0, start = cpu_seconds(), time.perf_counter()
        with ThreadPoolExecutor(threads) as pool:
            for _ in pool.map(lambda job: thumbnail(job[0], size, job[1]), jobs):
                pass
        elapsed, cpu = time.perf_counter() - start, cpu_seconds() - cpu0
        print(f"{elapsed:.3f} {cpu:.2f} {status_kib('VmHWM') - before_import}")
    else:
        sys.exit(f"pyvips_thumbnail.py: unknown mode {mode}")


main(sys.argv)
