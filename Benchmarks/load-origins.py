#!/usr/bin/env python3
"""The slow and hostile origins of Benchmarks/load.sh, on 127.0.0.1 only; exits by itself.

    load-origins.py SLOW_PORTS BOMB_PORT [RATE] [LIFETIME]

SLOW_PORTS (comma-separated): each a "host" that answers every request with a 200 and a
1 MB PNG body sent at RATE bytes per second (default 512: above HTTPDataLoader's low-speed
limit, so only a deadline ends it). BOMB_PORT: every request gets a gzip bomb (a PNG
signature and 64 MB of zeros, 64 KB compressed, `Content-Encoding: gzip`). Prints `ready`
once listening; exits after LIFETIME seconds (default 900).
"""
import asyncio
import gzip
import os
import sys
import threading

slow_ports = [int(p) for p in sys.argv[1].split(",")]
bomb_port = int(sys.argv[2])
rate = int(sys.argv[3]) if len(sys.argv) > 3 else 512
lifetime = float(sys.argv[4]) if len(sys.argv) > 4 else 900
threading.Timer(lifetime, lambda: os._exit(0)).start()

SIGNATURE = b"\x89PNG\r\n\x1a\n"
BOMB = gzip.compress(SIGNATURE + bytes(64 << 20), 9)


async def read_request(reader):
    """Reads one request's head; False when the client closed."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
        return False
    return bool(head)


async def slow(reader, writer):
    try:
        while await read_request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 1000000\r\n\r\n" + SIGNATURE)
            await writer.drain()
            sent = len(SIGNATURE)
            chunk = max(1, rate // 10)
            while sent < 1000000:
                await asyncio.sleep(0.1)
                writer.write(bytes(chunk))
                await writer.drain()
                sent += chunk
    except ConnectionError:
        pass
    finally:
        writer.close()


async def bomb(reader, writer):
    try:
        while await read_request(reader):
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Encoding: gzip\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(BOMB) + BOMB)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main():
    servers = [await asyncio.start_server(slow, "127.0.0.1", port, backlog=1024) for port in slow_ports]
    servers.append(await asyncio.start_server(bomb, "127.0.0.1", bomb_port, backlog=1024))
    print("ready", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


asyncio.run(main())
