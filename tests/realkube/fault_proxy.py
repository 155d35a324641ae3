"""A fault-injecting HTTP proxy on loopback in front of a real kube-apiserver.

Clients talk plain HTTP to the proxy (their bearer token passes through); the proxy talks
HTTPS to the API server. Faults, drawn from a seeded RNG:

* a share of non-watch requests answered ``500``, ``503`` or ``429`` (with
  ``Retry-After``) without reaching the server;
* a share of those errors sent *after* the request was applied (the write happened, the
  client hears a failure), as when a reply is lost;
* watches cut at a random moment (the connection closed mid-stream, no final chunk).

Bounded: it serves until :meth:`FaultProxy.stop`, loopback only.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import random
import socket
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-connection", "content-length", "host", "accept-encoding"}


@dataclass
class FaultStats:
    requests: int = 0
    watches: int = 0
    injected: int = 0
    injected_after_apply: int = 0
    cut_watches: int = 0
    by_code: dict[int, int] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    proxy: FaultProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        return  # a connection we cut, or a client that went away


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def do_GET(self) -> None:
        self.server.proxy.handle(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET


class FaultProxy:
    def __init__(self, upstream: str, ca_file: str, *, error_rate: float = 0.1,
                 after_apply: float = 0.3, codes: tuple[int, ...] = (500, 503, 429),
                 watch_cut_probability: float = 0.5, watch_cut_after: tuple[float, float]
                 = (0.5, 6.0), seed: int = 0) -> None:
        parts = urlsplit(upstream)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 443
        self.ssl = ssl.create_default_context(cafile=ca_file)
        self.error_rate = error_rate
        self.after_apply = after_apply
        self.codes = codes
        self.watch_cut_probability = watch_cut_probability
        self.watch_cut_after = watch_cut_after
        self.enabled = False
        self.stats = FaultStats()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.proxy = self
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True,
                                        name="fault-proxy")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    # -- one request ----------------------------------------------------------------------

    def _draw(self) -> float:
        with self._lock:
            return self._rng.random()

    def _count(self, **inc: int) -> None:
        with self._lock:
            for k, v in inc.items():
                setattr(self.stats, k, getattr(self.stats, k) + v)

    def handle(self, h: _Handler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        query = parse_qs(urlsplit(h.path).query)
        watch = query.get("watch", [""])[0] in ("true", "1")
        self._count(requests=1, watches=int(watch))
        fault = self.enabled and not watch and self._draw() < self.error_rate
        after = fault and h.command != "GET" and self._draw() < self.after_apply
        if fault and not after:
            self._error(h)
            return
        headers = {k: v for k, v in h.headers.items() if k.lower() not in HOP_BY_HOP}
        conn = http.client.HTTPSConnection(self.host, self.port, context=self.ssl,
                                           timeout=None if watch else 60)
        try:
            conn.request(h.command, h.path, body=body, headers=headers)
            resp = conn.getresponse()
            if after:
                resp.read()
                self._count(injected_after_apply=1)
                self._error(h)
                return
            self._relay(h, conn, resp, watch)
        except (OSError, http.client.HTTPException):
            h.close_connection = True
        finally:
            conn.close()

    def _error(self, h: _Handler) -> None:
        with self._lock:
            code = self._rng.choice(self.codes)
            self.stats.injected += 1
            self.stats.by_code[code] = self.stats.by_code.get(code, 0) + 1
        reason = {429: "TooManyRequests", 503: "ServiceUnavailable"}.get(code, "InternalError")
        payload = json.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": f"injected by the fault proxy: {code}",
                              "reason": reason, "code": code}).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        if code == 429:
            h.send_header("Retry-After", "1")
        h.end_headers()
        h.wfile.write(payload)

    def _relay(self, h: _Handler, conn: http.client.HTTPSConnection,
               resp: http.client.HTTPResponse, watch: bool) -> None:
        h.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in HOP_BY_HOP:
                h.send_header(k, v)
        if not watch:
            data = resp.read()
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.flush()
        cut = threading.Event()
        timer: threading.Timer | None = None
        if self.enabled and self._draw() < self.watch_cut_probability:
            with self._lock:
                cut_at = self._rng.uniform(*self.watch_cut_after)

            def cut_now() -> None:
                cut.set()
                for sock in (h.connection, conn.sock):
                    with contextlib.suppress(OSError, AttributeError):
                        sock.shutdown(socket.SHUT_RDWR)

            timer = threading.Timer(cut_at, cut_now)
            timer.daemon = True
            timer.start()
        try:
            while True:
                chunk = resp.read1(65536)
                if not chunk:
                    break
                h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                h.wfile.flush()
            if not cut.is_set():
                h.wfile.write(b"0\r\n\r\n")
                h.wfile.flush()
        except (OSError, ValueError, http.client.HTTPException):
            h.close_connection = True
        finally:
            if timer is not None:
                timer.cancel()
        if cut.is_set():
            self._count(cut_watches=1)
            h.close_connection = True
