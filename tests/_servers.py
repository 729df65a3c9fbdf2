"""A threaded, fault-injecting HTTP server on 127.0.0.1 for adapter tests.

Usage::

    with FaultServer([Reply(status=429, headers={"Retry-After": "0"}),
                      Reply.png(image)]) as server:
        adapter = resolve_model(server.url + "/generate", options)
        ...
        assert len(server.requests) == 2

Replies are taken, in order, from the script; then from ``routes`` (a
``{path: Reply or callable}`` mapping consulted first for every request),
``handler(recorded) -> Reply``, or ``default``. A reply can be delayed,
drop the connection without answering, or send a truncated body. The
server binds port 0 (a free port), serves each connection in its own daemon
thread, records every request and the peak number of requests in flight,
and can cap how many requests it serves at once (``capacity``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import sys
import threading
import time
import zlib
from collections import Counter, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import quote, quote_plus

import numpy as np

from pytest_violin.imaging import encode_png

__all__ = ["FaultServer", "Recorded", "Reply", "png_bytes", "bomb_png", "solid", "secret_forms",
           "sample_key"]


def solid(width: int, height: int, rgb=(217, 180, 81)) -> np.ndarray:
    """An RGB uint8 image of one color."""
    img = np.empty((height, width, 3), dtype=np.uint8)
    img[:] = rgb
    return img


def png_bytes(image) -> bytes:
    """PNG bytes of an image (anything ``as_rgb8`` accepts, or an RGBA/gray array)."""
    if isinstance(image, np.ndarray) and (image.ndim == 2 or image.shape[2] in (1, 4)):
        from PIL import Image

        import io

        buf = io.BytesIO()
        Image.fromarray(image.squeeze() if image.ndim == 3 and image.shape[2] == 1 else image).save(
            buf, format="PNG"
        )
        return buf.getvalue()
    return encode_png(image)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(side: int = 16384) -> bytes:
    """A valid, tiny PNG (1-bit gray, all black) of ``side`` x ``side`` pixels."""
    row = b"\x00" + b"\x00" * ((side + 7) // 8)
    comp = zlib.compressobj(9)
    data = b"".join(comp.compress(row) for _ in range(side)) + comp.flush()
    ihdr = struct.pack(">IIBBBBB", side, side, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", data) + _chunk(b"IEND", b"")


@dataclass
class Reply:
    """One scripted answer.

    Parameters
    ----------
    status : int
    body : bytes, str, dict or list
        dict/list bodies are sent as JSON.
    headers : dict
    content_type : str, optional
        Defaults from the body: JSON, ``text/plain`` or
        ``application/octet-stream``.
    delay : float
        Seconds to wait before answering.
    drop : bool
        Close the connection without any answer.
    truncate : int, optional
        Announce the full Content-Length but send only this many body bytes,
        then close.
    stream : callable, optional
        ``stream() -> iterable of bytes``: the body is sent piece by piece
        (``body`` is ignored) and the connection closed at the end; with
        ``length`` the Content-Length announced, else none (read until
        close). The server stops when the client goes away.
    interval : float
        Seconds between two pieces of ``stream`` (waited on the server's
        stop event, not slept).
    length : int, optional
        Content-Length announced for ``stream``.
    """

    status: int = 200
    body: Any = b""
    headers: dict = field(default_factory=dict)
    content_type: str | None = None
    delay: float = 0.0
    drop: bool = False
    truncate: int | None = None
    stream: Callable | None = None
    interval: float = 0.0
    length: int | None = None

    @classmethod
    def json(cls, obj, status: int = 200, **kw) -> "Reply":
        return cls(status=status, body=obj, **kw)

    @classmethod
    def png(cls, image, status: int = 200, **kw) -> "Reply":
        kw.setdefault("content_type", "image/png")
        return cls(status=status, body=png_bytes(image), **kw)

    def encoded(self) -> tuple[bytes, str]:
        body = self.body
        if isinstance(body, (dict, list)):
            return json.dumps(body).encode(), self.content_type or "application/json"
        if isinstance(body, str):
            return body.encode("utf-8"), self.content_type or "text/plain; charset=utf-8"
        return bytes(body), self.content_type or "application/octet-stream"


@dataclass
class Recorded:
    """A request the server received."""

    method: str
    path: str
    headers: dict
    body: bytes
    started: float = 0.0

    def json(self):
        return json.loads(self.body.decode("utf-8"))


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server for the fakes that lets a client hang up.

    A client that goes away mid-answer (a run that stops, a cancelled sample) is no error of the
    fake: socketserver would print its traceback from the server's thread, and on Python 3.11 a
    traceback printed while another thread parses source (pytest formatting a report) can end in
    CPython's "AST constructor recursion depth mismatch" SystemError (python/cpython#106905).
    """

    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], ConnectionError):  # broken pipe, reset, aborted
            return
        super().handle_error(request, client_address)


class _Server(QuietServer):
    block_on_close = False
    request_queue_size = 128


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - stdlib signature
        pass

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _handle(self):
        owner: FaultServer = self.server.owner
        body = self._read_body()
        rec = Recorded(self.command, self.path, dict(self.headers.items()), body, time.monotonic())
        reply = owner._next_reply(rec)
        with owner._capacity:
            owner._enter()
            try:
                self._answer(owner, reply)
            finally:
                owner._leave()

    def _answer(self, owner: "FaultServer", reply: Reply):
        if reply.delay and owner._stopping.wait(reply.delay):
            reply = Reply(drop=True)
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply.stream is not None:
            self._stream(owner, reply)
            return
        data, ctype = reply.encoded()
        self.send_response(reply.status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        if reply.truncate is not None:
            self.wfile.write(data[: reply.truncate])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        try:
            self.wfile.write(data)
        except OSError:  # the client went away (a refused answer)
            self.close_connection = True

    def _stream(self, owner: "FaultServer", reply: Reply):
        self.close_connection = True
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type or "application/octet-stream")
        if reply.length is not None:
            self.send_header("Content-Length", str(reply.length))
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        try:
            for piece in reply.stream():
                if reply.interval and owner._stopping.wait(reply.interval):
                    return
                self.wfile.write(piece)
                self.wfile.flush()
                with owner._lock:
                    owner.bytes_sent += len(piece)
        except OSError:  # the client went away (a refused or timed-out answer)
            pass

    do_GET = do_POST = do_PUT = _handle


class FaultServer:
    """The server (a context manager). See the module docstring.

    Parameters
    ----------
    script : iterable of Reply
        Answers for the next requests, in order.
    handler : callable, optional
        ``handler(recorded) -> Reply`` once the script is used up.
    default : Reply, optional
        Answer once the script is used up and there is no handler
        (default: 500 "no scripted reply").
    routes : dict, optional
        ``{path: Reply or callable(recorded) -> Reply}``, checked first.
    capacity : int, optional
        Requests served at once; more wait (like a server with N workers).
    """

    def __init__(self, script=(), *, handler: Callable | None = None, default: Reply | None = None,
                 routes: dict | None = None, capacity: int | None = None):
        self._script = deque(script)
        self.handler = handler
        self.default = default
        self.routes = dict(routes or {})
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._capacity = threading.BoundedSemaphore(capacity) if capacity else _NoLimit()
        self._in_flight = 0
        self.peak_in_flight = 0
        self.bytes_sent = 0  # body bytes sent by ``stream`` replies
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self._lock:
            self._script.extend(replies)

    def _next_reply(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            path = rec.path.split("?", 1)[0]
            if path in self.routes:
                route = self.routes[path]
                return route(rec) if callable(route) else route
            if self._script:
                return self._script.popleft()
        if self.handler is not None:
            return self.handler(rec)
        return self.default or Reply(status=500, body="no scripted reply")

    def _enter(self):
        with self._lock:
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    def _leave(self):
        with self._lock:
            self._in_flight -= 1

    # -- lifecycle --------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FaultServer":
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class RoutedFake:
    """A fake service on a :class:`FaultServer` that answers every request with
    ``handle(recorded) -> Reply`` and counts the routes it saw in ``calls`` (``count(route)``);
    ``PREFIX`` is the API's base path, part of :attr:`url` (``with fake: ...``)."""

    PREFIX = ""

    def __init__(self):
        self.lock = threading.Lock()
        self.calls: Counter = Counter()
        self.server = FaultServer(handler=self.handle)

    def handle(self, rec: Recorded) -> Reply:
        raise NotImplementedError

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.stop()

    @property
    def url(self) -> str:
        return self.server.url + self.PREFIX

    def count(self, route: str) -> int:
        with self.lock:
            return self.calls[route]


class _NoLimit:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def secret_forms(secret: str) -> set[str]:
    """A planted secret as it could show up: raw, URL-encoded, base64 (with/without padding)."""
    raw = secret.encode()
    out = {secret, quote(secret, safe=""), quote_plus(secret)}
    for enc in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        out |= {enc.decode(), enc.decode().rstrip("=")}
    return out


def sample_key(prompt, pngs) -> tuple:
    """A request's identity: prompts repeat across samples, input images tell them apart."""
    return (prompt, tuple(hashlib.sha256(p).hexdigest() for p in pngs))
