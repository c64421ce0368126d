#!/usr/bin/env python3
"""A fault-injecting HTTP/1.1 fixture server for the HTTP loader tests (LoaderHTTPTests).

Listens on 127.0.0.1 on an ephemeral port and prints "PORT <n>" on stdout once ready; with
"--tls CERT KEY" it speaks HTTPS with that certificate. Exits
when its stdin closes, so a test process that dies never leaves it behind.

Endpoints (the query string selects behaviour; counters are kept per path, query excluded):
  /image/<name>?size=N&maxage=S&maxage304=T&answer=C
                                  test-image bytes, ETag and Last-Modified; 304 on a match
                                  (with max-age T when given); status C instead of 200
  /status/<code>?retry_after=S    that status with a small body
  /delay/<name>?ms=N              waits N ms before the headers, then an image
  /slow/<name>?chunks=N&interval_ms=M&chunk=B   a body sent in timed chunks
  /steps/<name>?chunks=N&chunk=B  Content-Length N*B and the first chunk of B bytes; chunk i
                                  (i >= 1) only after /release/<name>.<i> (at most 60 s each):
                                  the test decides when each piece of the body arrives
      both with file=P&type=T: the body is file P's bytes (Content-Type T, default
      image/jpeg) in pieces of B bytes, or for /steps cut at the offsets cuts=a,b,... 
  /hold/<name>                    waits until /release/<name> (at most 60 s: a guard for a test that never releases; a starved machine can outlast 10 s), then an image
  /release/<name>                 releases the holds of <name> (not counted)
  /truncated/<name>               Content-Length 2000, 500 bytes, then close
  /reset/<name>                   closes the connection with a TCP reset, no response
  /redirect/<n>                   302 to /redirect/<n-1>; /redirect/0 is an image
  /loop/<name>                    302 to itself
  /goto/<name>?url=U&status=S     S (302) to U (e.g. from the HTTPS server to the HTTP one); U is
                                  sent as given, so percent-encode it twice to send "%" in it
  /huge/<name>                    Content-Length 10 GB, then a trickle
  /chunked/<name>?size=N          an image sent chunked, without Content-Length
  /html/<name>                    200 text/html
  /flaky/<name>?fail=N&status=S   status S (or a reset for S=0) N times, then an image
  /auth/<name>?token=T            401 unless "Authorization: Bearer T"
  /header/<name>?name=H&value=V   400 unless header H is V
  /partial/<name>                 206 with the first half of an image (and a Content-Range)
  /empty/<name>?length=0|none     200 with no body: Content-Length 0, or none and the connection closed
  /encoded/<name>?encoding=E&corrupt=1&size=N
                                  an image of N bytes (2000) with Content-Encoding E (gzip,
                                  deflate: compressed; anything else: sent as is); corrupt=1
                                  sends it uncompressed
  /cutheaders/<name>              a status line and two headers, then the connection closes
  /pngjunk/<name>                 200 image/png: the PNG signature, then random bytes
  /trickle/<name>?interval_ms=M&size=N
                                  headers, then the body one byte per M ms
  /slowheaders/<name>?interval_ms=M&lines=N
                                  a status line, then one header line per M ms, then an image
  /flip/<name>?then=junk|partial|empty
                                  first an image (max-age=0, ETag), then that broken answer,
                                  whatever the validators
  /version/<name>?maxage=S        an image whose bytes, ETag ("<name>-v<N>") and Last-Modified change
                                  with its version N (from 1); 304 when the request's validator is
                                  the current version's
  /bump/<name>?junk=1             the next version of /version/<name> (not counted); with junk=1 it
                                  is bytes no decoder accepts
  /headers/<name>                 an image; the request's headers are kept in /stats ("headers")
  /flood/<name>?kind=continue|lines|longline
                                  endless "100 Continue" answers, or a 200 with endless header
                                  lines (up to 8 MB, or until the client goes away), or one
                                  header line of 200 KB
  /lastmodified/<name>?age=S      an image with Date and Last-Modified only (S seconds before the
                                  first request of <name>; default 30 days), as Python's
                                  http.server sends files; a bare 304 (Date only) when
                                  If-Modified-Since is not older
  /awaithits/?path=P&count=N      waits until path P was asked for N times (at most 60 s), then
                                  answers its count as text (not counted): a test waits for a
                                  request to reach the origin without polling
  /stats                          JSON: hits per path, statuses, arrival log, client ports,
                                  most requests in progress at once, slow-body disconnect times
"""
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LAST_MODIFIED = "Sat, 01 Jan 2022 00:00:00 GMT"
LOCK = threading.Lock()
HIT = threading.Condition(LOCK)  # notified on every counted request
HOLDS = {}
VERSIONS = {}
MODIFIED = {}
STATS = {"hits": {}, "statuses": {}, "log": [], "disconnects": {}, "sent": {}, "ports": [],
         "active": 0, "max_active": 0, "accept_encoding": {}, "headers": {}}


def image_bytes(name, size):
    """The test decoder's format: 'TIMG', width, height (u16 BE), one RGBA colour, padding."""
    seed = sum(name.encode()) % 256
    header = b"TIMG" + struct.pack(">HH", 4, 3) + bytes([seed, 255 - seed, 7, 255])
    length = max(0, size - len(header))
    cycle = bytes(range(seed, 256)) + bytes(range(seed))  # byte i is (seed + i) % 256
    return header + (cycle * (length // 256 + 1))[:length]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def record(self, status):
        with LOCK:
            STATS["statuses"].setdefault(self.route, []).append(status)

    def reply(self, status, body=b"", content_type="application/octet-stream", headers=None):
        self.record(status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if body and self.command != "HEAD" and status not in (204, 304):
            self.wfile.write(body)

    def not_modified(self, headers):
        """A 304 with `headers` and no body."""
        self.record(304)
        self.send_response(304)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def image(self, name, extra=None, status=None):
        size = int(self.query.get("size", ["2000"])[0])
        maxage = self.query.get("maxage", ["60"])[0]
        etag = '"%s-%d"' % (name, size)
        headers = {"ETag": etag, "Last-Modified": LAST_MODIFIED, "Cache-Control": "max-age=" + maxage}
        headers.update(extra or {})
        if self.headers.get("If-None-Match") == etag or self.headers.get("If-Modified-Since") == LAST_MODIFIED:
            if "maxage304" in self.query:
                headers["Cache-Control"] = "max-age=" + self.query["maxage304"][0]
            return self.not_modified(headers)
        self.reply(status or int(self.query.get("answer", ["200"])[0]), image_bytes(name, size), "image/x-test", headers)

    def do_GET(self):
        parts = urlsplit(self.path)
        self.route = parts.path
        self.query = parse_qs(parts.query)
        segments = [s for s in parts.path.split("/") if s]
        kind = segments[0] if segments else ""
        name = segments[1] if len(segments) > 1 else ""
        if kind in ("stats", "release", "bump", "awaithits"):
            return getattr(self, "route_" + kind)(name)
        with LOCK:
            STATS["hits"][self.route] = STATS["hits"].get(self.route, 0) + 1
            STATS["log"].append(self.route)
            STATS["ports"].append(self.client_address[1])
            STATS["accept_encoding"][self.route] = self.headers.get("Accept-Encoding", "")
            STATS["headers"][self.route] = {name.lower(): value for name, value in self.headers.items()}
            STATS["active"] += 1
            STATS["max_active"] = max(STATS["max_active"], STATS["active"])
            HIT.notify_all()
        try:
            getattr(self, "route_" + kind, self.route_missing)(name)
        finally:
            with LOCK:
                STATS["active"] -= 1

    def route_missing(self, name):
        self.reply(404, b"no such endpoint")

    def route_stats(self, name):
        with LOCK:
            body = json.dumps(STATS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route_hold(self, name):
        with LOCK:
            event = HOLDS.setdefault(name, threading.Event())
        event.wait(60)
        self.image(name)

    def route_awaithits(self, name):
        path, count = self.query.get("path", [""])[0], int(self.query.get("count", ["1"])[0])
        with HIT:
            HIT.wait_for(lambda: STATS["hits"].get(path, 0) >= count, timeout=60)
            hits = STATS["hits"].get(path, 0)
        body = str(hits).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route_release(self, name):
        with LOCK:
            HOLDS.setdefault(name, threading.Event()).set()
        self.reply(204)

    def route_bump(self, name):
        with LOCK:
            version, _ = VERSIONS.get(name, (1, False))
            VERSIONS[name] = (version + 1, "junk" in self.query)
        self.reply(204)

    def route_version(self, name):
        with LOCK:
            version, junk = VERSIONS.get(name, (1, False))
        etag = '"%s-v%d"' % (name, version)
        modified = "Sat, %02d Jan 2022 00:00:00 GMT" % version
        headers = {"ETag": etag, "Last-Modified": modified,
                   "Cache-Control": "max-age=" + self.query.get("maxage", ["60"])[0]}
        if self.headers.get("If-None-Match") == etag or (
                "If-None-Match" not in self.headers and self.headers.get("If-Modified-Since") == modified):
            return self.not_modified(headers)
        body = b"not an image, version %d" % version if junk else image_bytes("%s-v%d" % (name, version), 2000)
        self.reply(200, body, "image/x-test", headers)

    def route_lastmodified(self, name):
        from email.utils import formatdate, parsedate_to_datetime
        with LOCK:
            modified = MODIFIED.setdefault(name, int(time.time()) - int(self.query.get("age", ["2592000"])[0]))
        since = self.headers.get("If-Modified-Since")
        if since:
            try:
                if parsedate_to_datetime(since).timestamp() >= modified:
                    return self.not_modified({})
            except (TypeError, ValueError):
                pass
        self.reply(200, image_bytes(name, 2000), "image/x-test",
                   {"Last-Modified": formatdate(modified, usegmt=True)})

    def route_image(self, name):
        self.image(name)

    def route_status(self, name):
        headers = {}
        if "retry_after" in self.query:
            headers["Retry-After"] = self.query["retry_after"][0]
        self.reply(int(name), b"status body", "text/plain", headers)

    def route_delay(self, name):
        time.sleep(int(self.query.get("ms", ["100"])[0]) / 1000)
        self.image(name)

    def file_pieces(self, chunk):
        """With `file=P`: P's bytes cut in pieces of `chunk` bytes, or at `cuts=a,b,...`, and
        the content type (`type=T`, default image/jpeg); otherwise `None`."""
        if "file" not in self.query:
            return None
        with open(self.query["file"][0], "rb") as handle:
            body = handle.read()
        if "cuts" in self.query:
            cuts = [0] + [int(c) for c in self.query["cuts"][0].split(",") if c] + [len(body)]
        else:
            cuts = list(range(0, len(body), chunk)) + [len(body)]
        pieces = [body[a:b] for a, b in zip(cuts, cuts[1:]) if b > a]
        return pieces, self.query.get("type", ["image/jpeg"])[0]

    def route_slow(self, name):
        chunks = int(self.query.get("chunks", ["100"])[0])
        interval = int(self.query.get("interval_ms", ["20"])[0]) / 1000
        chunk = int(self.query.get("chunk", ["1000"])[0])
        body = image_bytes(name, chunks * chunk)
        content_type = "image/x-test"
        from_file = self.file_pieces(chunk)
        if from_file:
            pieces, content_type = from_file
            body, chunks = b"".join(pieces), len(pieces)
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        sock = self.connection
        sent = 0
        for index in range(chunks):
            try:
                sock.sendall(body[index * chunk:(index + 1) * chunk])
                sent += chunk
                with LOCK:
                    STATS["sent"][self.route] = sent
                if index == chunks - 1:
                    break
                # Wait for the next chunk, but notice at once if the client closes.
                readable = select_readable(sock, interval)
                if readable and sock.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionResetError("client closed")
            except OSError:
                with LOCK:
                    STATS["disconnects"][self.route] = time.time()
                self.close_connection = True
                return

    def route_steps(self, name):
        chunks = int(self.query.get("chunks", ["4"])[0])
        chunk = int(self.query.get("chunk", ["1000"])[0])
        body = image_bytes(name, chunks * chunk)
        pieces = [body[index * chunk:(index + 1) * chunk] for index in range(chunks)]
        content_type = "image/x-test"
        from_file = self.file_pieces(chunk)
        if from_file:
            pieces, content_type = from_file
            body, chunks = b"".join(pieces), len(pieces)
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "max-age=600")
        self.end_headers()
        try:
            for index in range(chunks):
                if index > 0:
                    with LOCK:
                        event = HOLDS.setdefault("%s.%d" % (name, index), threading.Event())
                    event.wait(60)
                self.wfile.write(pieces[index])
                self.wfile.flush()
        except OSError:
            with LOCK:
                STATS["disconnects"][self.route] = time.time()
            self.close_connection = True

    def route_truncated(self, name):
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "image/x-test")
        self.send_header("Content-Length", "2000")
        self.end_headers()
        self.wfile.write(image_bytes(name, 500))
        self.wfile.flush()
        self.close_connection = True

    def route_reset(self, name):
        self.record(0)
        reset(self.connection)
        self.close_connection = True

    def route_redirect(self, name):
        remaining = int(name)
        if remaining <= 0:
            self.image("redirected")
        else:
            self.reply(302, b"", "text/plain", {"Location": "/redirect/%d" % (remaining - 1)})

    def route_headers(self, name):
        self.image(name)

    def route_flood(self, name):
        self.record(100)
        kind = self.query.get("kind", ["continue"])[0]
        try:
            if kind == "longline":  # one header line of 200 KB, over libcurl's own 100 KB
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 200000 + b"\r\n\r\n")
                self.wfile.flush()
                return
            if kind == "lines":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/x-test\r\n")
                piece = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"x" * 100) for i in range(100))
            else:
                piece = b"HTTP/1.1 100 Continue\r\n\r\n" * 400
            for _ in range(8 * 1024 * 1024 // len(piece)):
                self.wfile.write(piece)
            self.wfile.flush()
        except OSError:
            pass
        self.close_connection = True

    def route_goto(self, name):
        status = int(self.query.get("status", ["302"])[0])
        self.reply(status, b"", "text/plain", {"Location": self.query["url"][0]})

    def route_loop(self, name):
        self.reply(302, b"", "text/plain", {"Location": "/loop/" + name})

    def route_huge(self, name):
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "image/x-test")
        self.send_header("Content-Length", str(10 * 1024 ** 3))
        self.end_headers()
        try:
            for _ in range(50):
                self.wfile.write(b"\0" * 1000)
                self.wfile.flush()
                time.sleep(0.02)
        except OSError:
            pass
        self.close_connection = True

    def route_chunked(self, name):
        size = int(self.query.get("size", ["10000"])[0])
        body = image_bytes(name, size)
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "image/x-test")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for start in range(0, len(body), 1000):
                piece = body[start:start + 1000]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            trailer = b"".join(b"%s\r\n" % line.encode() for line in self.query.get("trailer", []))
            self.wfile.write(b"0\r\n" + trailer + b"\r\n")
        except OSError:
            self.close_connection = True

    def route_html(self, name):
        self.reply(200, b"<html><body>Sorry, not an image</body></html>", "text/html; charset=utf-8")

    def route_flaky(self, name):
        fail = int(self.query.get("fail", ["1"])[0])
        status = int(self.query.get("status", ["503"])[0])
        with LOCK:
            count = STATS["hits"][self.route]
        if count <= fail:
            if status == 0:
                self.route_reset(name)
            else:
                headers = {}
                if "retry_after" in self.query:
                    headers["Retry-After"] = self.query["retry_after"][0]
                self.reply(status, b"try again", "text/plain", headers)
        else:
            self.image(name)

    def route_oddheader(self, name):
        """An image whose headers include a line that starts like a status line ("HTTP/...")
        with a code too long for any integer; a header, not a status line."""
        self.image(name, {"HTTP/1.1 99999999999999999999999999": "not a status line",
                          "HTTP/2 404": "not a status line either"})

    def route_auth(self, name):
        token = self.query.get("token", ["secret"])[0]
        if self.headers.get("Authorization") == "Bearer " + token:
            self.image(name)
        else:
            self.reply(401, b"who are you", "text/plain")

    def route_header(self, name):
        header = self.query.get("name", ["X-Test"])[0]
        if self.headers.get(header) == self.query.get("value", [""])[0]:
            self.image(name)
        else:
            self.reply(400, b"missing header", "text/plain")

    def route_partial(self, name):
        body = image_bytes(name, 2000)[:1000]
        self.reply(206, body, "image/x-test", {"Content-Range": "bytes 0-999/2000", "Cache-Control": "max-age=600"})

    def route_empty(self, name):
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "image/x-test")
        self.send_header("Cache-Control", "max-age=600")
        if self.query.get("length", ["0"])[0] == "none":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", "0")
        self.end_headers()

    def route_encoded(self, name):
        import gzip
        import zlib
        encoding = self.query.get("encoding", ["gzip"])[0]
        body = image_bytes(name, int(self.query.get("size", ["2000"])[0]))
        if "corrupt" not in self.query:
            if encoding == "gzip":
                body = gzip.compress(body)
            elif encoding == "deflate":
                body = zlib.compress(body)
        self.reply(200, body, "image/x-test", {"Content-Encoding": encoding, "Cache-Control": "max-age=600"})

    def route_cutheaders(self, name):
        self.record(200)
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/x-test\r\nCache-Control: max-age=600\r\n")
        self.wfile.flush()
        self.close_connection = True

    def route_pngjunk(self, name):
        import random
        junk = bytes(random.Random(name).randrange(256) for _ in range(2000))
        self.reply(200, b"\x89PNG\r\n\x1a\n" + junk, "image/png", {"Cache-Control": "max-age=600"})

    def route_trickle(self, name):
        interval = int(self.query.get("interval_ms", ["100"])[0]) / 1000
        body = image_bytes(name, int(self.query.get("size", ["2000"])[0]))
        self.record(200)
        self.send_response(200)
        self.send_header("Content-Type", "image/x-test")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.flush()
        self.trickle([body[i:i + 1] for i in range(len(body))], interval)

    def route_slowheaders(self, name):
        interval = int(self.query.get("interval_ms", ["100"])[0]) / 1000
        lines = int(self.query.get("lines", ["1000"])[0])
        body = image_bytes(name, 2000)
        self.record(200)
        pieces = [b"HTTP/1.1 200 OK\r\n"] + [b"X-Slow-%d: %d\r\n" % (i, i) for i in range(lines)]
        pieces.append(b"Content-Type: image/x-test\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        self.trickle(pieces, interval)

    def trickle(self, pieces, interval):
        """Sends `pieces` one per `interval`, stopping as soon as the client closes."""
        sock = self.connection
        try:
            for index, piece in enumerate(pieces):
                sock.sendall(piece)
                if index == len(pieces) - 1:
                    break
                if select_readable(sock, interval) and sock.recv(1, socket.MSG_PEEK) == b"":
                    raise ConnectionResetError("client closed")
        except OSError:
            with LOCK:
                STATS["disconnects"][self.route] = time.time()
        self.close_connection = True

    def route_flip(self, name):
        with LOCK:
            count = STATS["hits"][self.route]
        if count <= 1:
            return self.image(name, {"Cache-Control": "max-age=0"})
        then = self.query.get("then", ["junk"])[0]
        if then == "partial":
            return self.route_partial(name)
        if then == "empty":
            return self.route_empty(name)
        # Starts like a picture (so it sniffs as one) but is too short to decode.
        self.reply(200, b"TIMG\x00\x04", "image/x-test", {"Cache-Control": "max-age=600", "ETag": '"junk"'})


def select_readable(sock, timeout):
    import select
    readable, _, _ = select.select([sock], [], [], timeout)
    return bool(readable)


def reset(sock):
    """Closes `sock` with a TCP RST instead of a FIN (SO_LINGER with a zero timeout)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def main():
    # A deep accept queue: one server may take the whole failure matrix at once (the default
    # of 5 drops SYNs, and a dropped SYN costs the client a 1 s retransmit).
    ThreadingHTTPServer.request_queue_size = 128
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if len(sys.argv) == 4 and sys.argv[1] == "--tls":  # --tls CERT KEY: serve HTTPS
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # resets and cut bodies are on purpose
    print("PORT %d" % server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sys.stdin.read()  # until the test process closes our stdin or dies


if __name__ == "__main__":
    main()
