"""The keep-alive HTTP client serve binds with: connections reused, bodies read by
length or in chunks, a connection the server closed while idle replaced transparently,
over loopback against the standard library's HTTP server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from gangsched.k8s.keepalive import Pool


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: ClassVar[list[tuple[str, str, bytes, str]]] = []

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        self._reply(b"")

    def do_POST(self) -> None:
        self._reply(self._body())

    def _reply(self, body: bytes) -> None:
        _Handler.seen.append((self.command, self.path, body, self.headers.get("Host", "")))
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b'{"a":', b"1}"):
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            return
        out = b'{"echo":"' + body + b'"}' if body else b"{}"
        self.send_response(404 if self.path == "/missing" else 201)
        self.send_header("Content-Length", str(len(out)))
        if self.path == "/retry":
            self.send_header("Retry-After", "2")
        self.end_headers()
        self.wfile.write(out)
        if self.path == "/drop":  # close after answering, without saying so
            self.close_connection = True


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    _Handler.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def _pool(srv: ThreadingHTTPServer) -> Pool:
    host, port = srv.server_address[:2]
    return Pool(str(host), int(port), timeout=30.0)


def test_requests_reuse_one_connection(server: ThreadingHTTPServer) -> None:
    pool = _pool(server)
    for i in range(5):
        resp = pool.request("POST", f"/bind/{i}", {"Accept": "application/json"},
                            f"p{i}".encode())
        assert resp.status == 201
        assert resp.body == f'{{"echo":"p{i}"}}'.encode()
    assert pool.opened == 1
    assert [s[:3] for s in _Handler.seen] == [("POST", f"/bind/{i}", f"p{i}".encode())
                                               for i in range(5)]
    assert _Handler.seen[0][3] == f"127.0.0.1:{server.server_address[1]}"
    pool.close()


def test_chunked_bodies_error_codes_and_headers(server: ThreadingHTTPServer) -> None:
    pool = _pool(server)
    assert pool.request("GET", "/chunked", {}).body == b'{"a":1}'
    missing = pool.request("GET", "/missing", {})
    assert missing.status == 404
    assert pool.request("POST", "/retry", {}, b"x").headers["retry-after"] == "2"
    assert pool.request("GET", "/after", {}).status == 201  # still in step after chunks
    assert pool.opened == 1


def test_a_connection_closed_while_idle_is_replaced(server: ThreadingHTTPServer) -> None:
    pool = _pool(server)
    assert pool.request("POST", "/drop", {}, b"a").status == 201
    # the server closed the connection after answering: the next request finds it
    # closed, and goes once more on a new one
    resp = pool.request("POST", "/bind", {}, b"b")
    assert resp.body == b'{"echo":"b"}'
    assert pool.opened == 2
    assert [s[1] for s in _Handler.seen] == ["/drop", "/bind"]  # sent once each


def test_concurrent_callers_each_get_a_connection(server: ThreadingHTTPServer) -> None:
    pool = _pool(server)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(20):
                body = f"{n}-{i}".encode()
                assert pool.request("POST", "/c", {}, body).body == b'{"echo":"' + body + b'"}'
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert len(_Handler.seen) == 80
    assert pool.opened <= 4
