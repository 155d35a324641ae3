"""A small keep-alive HTTP/1.1 client for the API calls on one object.

Binding is one short request per pod. ``urllib3`` (under the official client) spends
~0.2 ms of CPU on each: a ``Retry`` object, header dictionaries, the ``email`` parser for
the response headers. This client keeps a pool of open connections (one per concurrent
caller, reused LIFO) and writes and reads the bytes itself: a request line, a handful of
headers, a ``Content-Length`` body; the response's status line, headers, and a body of
``Content-Length`` bytes or chunks.

It speaks plain HTTP and TLS (the caller passes an :class:`ssl.SSLContext`); it does not
do proxies, redirects, compression or ``Expect: 100-continue`` (the caller uses the
official client when a proxy is configured). A connection that fails while idle in the
pool (the server closed it: an ordinary keep-alive race) is replaced and the request
sent once more, when nothing came back on it; any other failure is an :class:`OSError`
or :class:`HTTPError` for the caller, who treats it as a request that may have applied.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import BinaryIO

MAX_HEADER_LINE = 65536
MAX_HEADERS = 200


class HTTPError(Exception):
    """A response that cannot be read as HTTP/1.1 (or a connection closed mid-way)."""


@dataclass(frozen=True)
class Response:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; a repeated header keeps the last value
    body: bytes


class _Conn:
    __slots__ = ("reader", "sock", "used")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader: BinaryIO = sock.makefile("rb")
        self.used = False  # has carried a request (an idle one may have been closed)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.reader.close()
        with contextlib.suppress(OSError):
            self.sock.close()


class _Stale(Exception):
    """A reused connection was found closed before any byte of the response came."""


class Pool:
    """Kept-alive connections to one ``host:port``; thread safe."""

    def __init__(self, host: str, port: int, *, tls: ssl.SSLContext | None = None,
                 server_hostname: str | None = None, connect_timeout: float = 10.0,
                 timeout: float = 30.0, max_idle: int = 64) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.server_hostname = server_hostname or host
        self.connect_timeout = connect_timeout
        self.timeout = timeout
        self.max_idle = max_idle
        self.host_header = host if ":" not in host else f"[{host}]"
        default = 443 if tls is not None else 80
        if port != default:
            self.host_header += f":{port}"
        self._idle: list[_Conn] = []
        self._lock = threading.Lock()
        self.opened = 0  # connections made (tests, metrics)

    def _connect(self) -> _Conn:
        sock = socket.create_connection((self.host, self.port), self.connect_timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.tls is not None:
                sock = self.tls.wrap_socket(sock, server_hostname=self.server_hostname)
            sock.settimeout(self.timeout)
        except BaseException:
            sock.close()
            raise
        self.opened += 1
        return _Conn(sock)

    def _get(self) -> _Conn:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._connect()

    def _put(self, conn: _Conn) -> None:
        with self._lock:
            if len(self._idle) < self.max_idle:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def request(self, method: str, target: str, headers: dict[str, str],
                body: bytes | None = None) -> Response:
        """Send one request (``target``: the path and query, already quoted) and read
        the whole response."""
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.host_header}"]
        lines.extend(f"{k}: {v}" for k, v in headers.items())
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        data = head + body if body else head
        for _ in range(2):
            conn = self._get()
            try:
                resp, keep = self._exchange(conn, data, method)
            except _Stale:
                conn.close()
                continue  # the server closed it while it was idle: once more, afresh
            except BaseException:
                conn.close()
                raise
            if keep:
                self._put(conn)
            else:
                conn.close()
            return resp
        raise HTTPError("the server closed two connections without answering")

    def _exchange(self, conn: _Conn, data: bytes, method: str) -> tuple[Response, bool]:
        reused = conn.used
        conn.used = True
        try:
            conn.sock.sendall(data)
            line = conn.reader.readline(MAX_HEADER_LINE + 1)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            if reused:
                raise _Stale() from None
            raise
        if not line:
            if reused:
                raise _Stale()
            raise HTTPError("the connection was closed before a response came")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise HTTPError(f"not an HTTP/1.1 status line: {line[:80]!r}")
        headers = self._headers(conn.reader)
        status = int(code)
        keep = headers.get("connection", "").lower() != "close" and version != "HTTP/1.0"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = self._chunked(conn.reader)
        elif "content-length" in headers:
            try:
                length = int(headers["content-length"])
            except ValueError:
                raise HTTPError("invalid Content-Length") from None
            body = conn.reader.read(length)
            if len(body) != length:
                raise HTTPError("the connection was closed mid-body")
        else:  # the body ends when the connection does
            body = conn.reader.read()
            keep = False
        return Response(status, reason, headers, body), keep

    @staticmethod
    def _headers(reader: BinaryIO) -> dict[str, str]:
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADERS):
            line = reader.readline(MAX_HEADER_LINE + 1)
            if not line:
                raise HTTPError("the connection was closed in the headers")
            if line in (b"\r\n", b"\n"):
                return headers
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise HTTPError(f"malformed header line {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        raise HTTPError("too many headers")

    @staticmethod
    def _chunked(reader: BinaryIO) -> bytes:
        parts: list[bytes] = []
        while True:
            line = reader.readline(MAX_HEADER_LINE + 1)
            try:
                size = int(line.split(b";")[0].strip(), 16)
            except ValueError:
                raise HTTPError(f"invalid chunk size {line[:40]!r}") from None
            if size == 0:
                while reader.readline(MAX_HEADER_LINE + 1) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            chunk = reader.read(size)
            if len(chunk) != size:
                raise HTTPError("the connection was closed mid-chunk")
            parts.append(chunk)
            reader.readline(3)
