#!/usr/bin/env python3
"""A loopback "CDN" over a folder of pictures, for ./scripts/demo and its test (stdlib only).

    scripts/cdn-fixture.py --root Samples --imgpipe .build/release/imgpipe --counts DIR/requests.json

Listens on 127.0.0.1 on an ephemeral port and prints "PORT <n>" on stdout once ready.

  GET /<name>         the file <name> of --root (no sub-folders), with Content-Type,
                      Cache-Control: public, max-age=<--max-age> (explicit freshness, so a second
                      process answers from its disk cache without asking), ETag, Last-Modified
  GET /<name>?w=N     the same picture fit in N x N pixels, in its own format, made once by
                      `imgpipe thumb` (--imgpipe); a GIF is sent as it is (as many CDNs do)
  GET /_counts        the counts below as JSON (not counted)

Every other request is counted, per path with its query ("/rings.png?w=160"), before its
answer is sent; with --counts FILE the counts are also written to FILE (atomically, as
{"total": n, "paths": {...}}) before each answer, so a client reads them as soon as its
request ends.

It stops by itself: on SIGTERM or SIGINT, when its parent process ends (it is re-parented;
--parent PID names the parent when a launcher runs in between), when its stdin closes (with
--stdin), and after --idle-timeout seconds without a request.
"""
import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TYPES = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png", ".webp": "image/webp",
         ".gif": "image/gif", ".avif": "image/avif", ".heic": "image/heic"}
RESIZABLE = {".jpg", ".jpeg", ".png", ".webp"}


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.counts = {}
        self.total = 0
        self.last_request = time.monotonic()
        self.resized = {}  # (name, width) -> bytes
        self.resize_locks = {}
        self.work = tempfile.mkdtemp(prefix="cdn-fixture-")

    def count(self, path):
        with self.lock:
            self.last_request = time.monotonic()
            self.total += 1
            self.counts[path] = self.counts.get(path, 0) + 1
            self.write_counts()

    def write_counts(self):
        """The counts to --counts, atomically (the caller holds the lock, or no thread runs yet)."""
        if self.args.counts:
            temporary = self.args.counts + ".tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(self.snapshot(), f, sort_keys=True)
            os.replace(temporary, self.args.counts)

    def snapshot(self):
        return {"total": self.total, "paths": dict(self.counts)}

    def resized_bytes(self, name, width):
        """`name` fit in width x width by `imgpipe thumb`, made once per (name, width)."""
        key = (name, width)
        with self.lock:
            if key in self.resized:
                return self.resized[key]
            lock = self.resize_locks.setdefault(key, threading.Lock())
        with lock:
            with self.lock:
                if key in self.resized:
                    return self.resized[key]
            extension = os.path.splitext(name)[1].lower()
            output = os.path.join(self.work, "%d-%s%s" % (width, hashlib.sha1(name.encode()).hexdigest(), extension))
            subprocess.run([self.args.imgpipe, "thumb", os.path.join(self.args.root, name), "--size", str(width),
                            "--out", output], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(output, "rb") as f:
                data = f.read()
            with self.lock:
                self.resized[key] = data
            return data


def make_handler(state):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def reply(self, status, body, content_type, headers=()):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            parts = urlsplit(self.path)
            if parts.path == "/_counts":
                with state.lock:
                    body = json.dumps(state.snapshot(), sort_keys=True).encode()
                return self.reply(200, body, "application/json")
            state.count(self.path)
            name = parts.path.lstrip("/")
            file = os.path.join(state.args.root, name)
            extension = os.path.splitext(name)[1].lower()
            if "/" in name or name.startswith(".") or not os.path.isfile(file) or extension not in TYPES:
                return self.reply(404, b"not found\n", "text/plain")
            width = parse_qs(parts.query).get("w", [None])[0]
            try:
                if width is not None and extension in RESIZABLE and state.args.imgpipe:
                    if not width.isdigit() or not 0 < int(width) <= 4096:
                        return self.reply(400, b"w must be 1 to 4096\n", "text/plain")
                    body = state.resized_bytes(name, int(width))
                else:
                    with open(file, "rb") as f:
                        body = f.read()
            except (OSError, subprocess.CalledProcessError) as error:
                return self.reply(500, ("cannot make it: %s\n" % error).encode(), "text/plain")
            modified = formatdate(os.path.getmtime(file), usegmt=True)
            etag = '"%s"' % hashlib.sha1(body).hexdigest()[:16]
            if self.headers.get("If-None-Match") == etag:
                self.send_response(304)
                self.send_header("ETag", etag)
                self.send_header("Cache-Control", "public, max-age=%d" % state.args.max_age)
                self.end_headers()
                return
            self.reply(200, body, TYPES[extension], [("Cache-Control", "public, max-age=%d" % state.args.max_age),
                                                     ("ETag", etag), ("Last-Modified", modified)])

    return Handler


def main():
    parser = argparse.ArgumentParser(description="A loopback CDN over a folder of pictures.")
    parser.add_argument("--root", required=True, help="the folder served")
    parser.add_argument("--imgpipe", help="the imgpipe binary that makes ?w=N sizes (without it, originals)")
    parser.add_argument("--counts", help="a JSON file the request counts are written to")
    parser.add_argument("--max-age", type=int, default=3600, help="Cache-Control max-age in seconds (3600)")
    parser.add_argument("--idle-timeout", type=float, default=120, help="exit after this many seconds without a request")
    parser.add_argument("--stdin", action="store_true", help="also exit when stdin closes")
    parser.add_argument("--parent", type=int, help="exit when this process (default: the parent) is no longer the parent")
    args = parser.parse_args()
    state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(state))
    server.daemon_threads = True

    def stop(*_):
        # Straight out: a handler thread may be mid-answer, and nothing needs flushing.
        try:
            for name in os.listdir(state.work):
                os.remove(os.path.join(state.work, name))
            os.rmdir(state.work)
        except OSError:
            pass
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # The parent to outlive: --parent (a launcher such as pyenv's shim may run in between), else
    # the one at start. A parent gone before this line ran is caught too: the parent is then init.
    parent = args.parent or os.getppid()

    def watch():
        while True:
            time.sleep(0.2)
            with state.lock:
                idle = time.monotonic() - state.last_request
            if os.getppid() != parent or idle > args.idle_timeout:
                stop()

    threading.Thread(target=watch, daemon=True).start()
    if args.stdin:
        threading.Thread(target=lambda: (sys.stdin.read(), stop()), daemon=True).start()
    state.write_counts()  # zero requests, before anyone can ask
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
