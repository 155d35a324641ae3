"""The HTTP side of the test API server: routing, content negotiation, watches as chunked
JSON lines, fault injection, and :class:`TestAPIServer` to run it in a thread.

Served paths: ``/api``, ``/api/v1``, ``/apis``, ``/apis/<group>[/<version>]``, ``/version``,
``/healthz`` ``/readyz`` ``/livez``, every resource in
:data:`~gangsched.testing.apiserver.resources.RESOURCES` (namespaced, all-namespaces and
cluster-scoped collections, objects and their ``status``/``binding`` subresources, plus the
legacy ``/api/v1/namespaces/<ns>/bindings`` and ``/watch/`` paths), ``/_faults`` (fault
injection settings, JSON) and ``/_stats``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import ipaddress
import json
import logging
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

from gangsched.testing.apiserver import openapi, protobuf, tables
from gangsched.testing.apiserver.errors import (
    INJECTABLE,
    ApiError,
    bad_request,
    method_not_allowed,
    path_not_found,
    success_status,
    unsupported_media_type,
)
from gangsched.testing.apiserver.faults import FaultConfig, Faults
from gangsched.testing.apiserver.resources import (
    SERVER_VERSION,
    Resource,
    api_group,
    api_group_list,
    api_resource_list,
    api_versions,
)
from gangsched.testing.apiserver.selectors import FieldSelector, LabelSelector, predicate
from gangsched.testing.apiserver.store import (
    APPLY_PATCH,
    DEFAULT_HISTORY,
    Store,
    Stored,
    Watcher,
)

log = logging.getLogger("gangsched.testing.apiserver")

JSON = "application/json"
POLL = 0.2  # seconds a watch loop waits for an event before checking its timers
DEFAULT_BOOKMARK_INTERVAL = 1.0
TRUE = ("true", "1", "True", "yes")
MAX_BODY = 3 * 1024 * 1024
"""Largest request body accepted (kube-apiserver's limit is 3 MiB): 413 beyond."""


@dataclass(frozen=True)
class Target:
    """What a resource URL names."""

    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None
    watch: bool = False  # the legacy /watch/ path prefix
    bindings: bool = False  # the legacy /api/v1/namespaces/<ns>/bindings collection

    @property
    def label(self) -> str:
        """``pods`` or ``pods/binding``, as fault injection matches resources."""
        if self.bindings:
            return "bindings"
        return f"{self.resource.plural}/{self.subresource}" if self.subresource else \
            self.resource.plural


class _App:
    """State shared by the request handlers of one server."""

    def __init__(self, store: Store, faults: Faults, bookmark_interval: float,
                 log_requests: bool, *, control: bool = True,
                 max_body: int = MAX_BODY) -> None:
        self.store = store
        self.faults = faults
        self.control = control  # serve /_faults and /_stats
        self.max_body = max_body
        self.bookmark_interval = bookmark_interval
        self.log_requests = log_requests
        self.stopping = threading.Event()
        self.watchers: set[Watcher] = set()
        self.lock = threading.Lock()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: _App, ipv6: bool) -> None:
        if ipv6:
            self.address_family = socket.AF_INET6
        self.app = app
        self.connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conn_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away is normal (a dropped keep-alive connection); anything
        else is logged, never printed."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        log.error("test API server: error handling a request from %s", client_address,
                  exc_info=True)

    def close_connections(self) -> None:
        with self._conn_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


def _first(query: Mapping[str, list[str]], key: str, default: str | None = None) -> str | None:
    values = query.get(key)
    return values[-1] if values else default


def _accept(header: str) -> str:
    """``Table``, ``PartialObjectMetadata`` or ``json`` from an Accept header."""
    for part in header.split(","):
        params = {k.strip(): v.strip() for k, _, v in
                  (p.partition("=") for p in part.split(";")[1:])}
        wanted = params.get("as", "")
        if wanted == "Table" and params.get("g", "meta.k8s.io") == "meta.k8s.io":
            return "Table"
        if wanted in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return "PartialObjectMetadata"
        media = part.split(";")[0].strip()
        if not wanted and media in (JSON, "*/*", "application/*", "application/yaml"):
            return "json"
    return "json"


def _encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _list_bytes(r: Resource, items: Iterable[bytes], meta: dict[str, Any]) -> bytes:
    head = _encode({"apiVersion": r.api_version, "kind": f"{r.kind}List", "metadata": meta})
    return head[:-1] + b',"items":[' + b",".join(items) + b"]}"


def _continue_token(key: tuple[str, str], rv: int) -> str:
    raw = json.dumps({"rv": rv, "start": list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[str, str]:
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        ns, name = data["start"]
        return str(ns), str(name)
    except (ValueError, KeyError, TypeError, binascii.Error):
        raise bad_request("continue key is not valid: incorrect encoded start "
                          "resourceVersion (version meta.k8s.io/v1)") from None


MAX_HEADER_LINE = 65536
MAX_HEADERS = 100


class _Headers:
    """A request's headers, looked up without regard to case (the first of a repeated
    header wins, as with :class:`email.message.Message`)."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items  # lower-case names

    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name.lower(), default)

    def __getitem__(self, name: str) -> str | None:
        return self._items.get(name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def items(self) -> Iterable[tuple[str, str]]:
        return self._items.items()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else a delayed ACK stalls every response by ~40 ms
    server: _HTTPServer
    server_version = "gangsched-test-apiserver"

    # -- plumbing ----------------------------------------------------------------------------

    def parse_request(self) -> bool:
        """:meth:`BaseHTTPRequestHandler.parse_request`, with the headers read into a
        plain dictionary: the standard one runs them through the ``email`` parser, a
        third of the cost of a small request."""
        self.command = None  # type: ignore[assignment]
        self.request_version = self.default_request_version
        self.close_connection = True
        raw_line: bytes = getattr(self, "raw_requestline", b"")  # set by handle_one_request
        line = str(raw_line, "iso-8859-1").rstrip("\r\n")
        self.requestline = line
        words = line.split()
        if len(words) != 3:
            if words:
                self.send_error(400, f"Bad request syntax ({line!r})")
            return False
        command, path, version = words
        major, dot, minor = version[5:].partition(".")
        if not version.startswith("HTTP/") or not dot or not major.isdigit() \
                or not minor.isdigit() or len(major) > 10 or len(minor) > 10:
            self.send_error(400, f"Bad request version ({version!r})")
            return False
        number = int(major), int(minor)
        if number >= (2, 0):
            self.send_error(505, f"Invalid HTTP version ({version[5:]})")
            return False
        self.close_connection = number < (1, 1)
        self.request_version = version
        self.command, self.path = command, path
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")
        items: dict[str, str] = {}
        last = ""
        for _ in range(MAX_HEADERS + 1):
            raw = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(raw) > MAX_HEADER_LINE:
                self.send_error(431, "Line too long", "header line")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            text = raw.decode("iso-8859-1")
            if text[0] in " \t" and last:  # an obsolete folded continuation line
                items[last] += " " + text.strip()
                continue
            name, sep, value = text.partition(":")
            if not sep:
                continue  # as the email parser does, a malformed line is skipped
            last = name.strip().lower()
            items.setdefault(last, value.strip())
        else:
            self.send_error(431, "Too many headers", f"got more than {MAX_HEADERS} headers")
            return False
        self.headers = _Headers(items)  # type: ignore[assignment]
        conntype = items.get("connection", "").lower()
        if conntype == "close":
            self.close_connection = True
        elif conntype == "keep-alive":
            self.close_connection = False
        if items.get("expect", "").lower() == "100-continue" and number >= (1, 1):
            return bool(self.handle_expect_100())
        return True

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.app.log_requests:
            log.info("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def _read_body(self) -> bytes:
        limit = self.server.app.max_body
        too_large = ApiError(413, "RequestEntityTooLarge",
                             f"the request body is larger than {limit} bytes")
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            total = 0
            while True:
                try:
                    size = int(self.rfile.readline(64).split(b";")[0].strip() or b"0", 16)
                except ValueError:
                    self.close_connection = True
                    raise bad_request("invalid chunked encoding") from None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                total += size
                if total > limit:
                    self.close_connection = True
                    raise too_large
                chunks.append(self.rfile.read(size))
                self.rfile.readline(2)
            return b"".join(chunks)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.close_connection = True
            raise bad_request("invalid Content-Length") from None
        if length > limit:
            self.close_connection = True  # the body is not read: the connection is done
            raise too_large
        return self.rfile.read(length) if length > 0 else b""

    def _send(self, code: int, body: bytes, content_type: str = JSON,
              headers: Mapping[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _send_json(self, code: int, body: Any) -> None:
        self._send(code, body if isinstance(body, bytes) else _encode(body))

    def _send_error(self, err: ApiError) -> None:
        self._send(err.code, _encode(err.status()), headers=err.headers)

    def _json_body(self, raw: bytes) -> Any:
        if not raw.strip():
            raise bad_request("the body of the request is empty")
        try:
            return json.loads(raw)
        except ValueError as e:
            raise bad_request(f"couldn't get version/kind; json parse error: {e}") from None

    # -- dispatch ----------------------------------------------------------------------------

    def _handle(self, method: str) -> None:
        app = self.server.app
        try:
            raw = self._read_body()
            url = urlsplit(self.path)
            query = parse_qs(url.query, keep_blank_values=True)
            path = url.path.rstrip("/") or "/"
            if path in ("/_faults", "/_stats") and app.control:
                self._control(method, path, raw)
                return
            if path in ("/healthz", "/readyz", "/livez"):
                self._send(200, b"ok", "text/plain; charset=utf-8")
                return
            if method == "GET" and self._discovery(path):
                return
            target = self._route(path)
            verb = self._verb(method, target, query)
            body_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            if method in ("POST", "PUT") and body_type == protobuf.PROTOBUF:
                # kubectl's typed clients (kubectl create namespace) send protobuf: read
                # the kinds it sends that way; the reply is JSON, as the client accepts
                try:
                    raw = _encode(protobuf.decode_object(raw))
                except (protobuf.ProtobufError, UnicodeDecodeError) as err:
                    raise unsupported_media_type(body_type, "application/json") from err
            elif method in ("POST", "PUT") and body_type not in ("", JSON, "*/*"):
                raise unsupported_media_type(body_type, "application/json")
            app.faults.sleep()
            decision = app.faults.decide(verb, target.label, target.name)
            if decision.code is not None and not decision.after_apply:
                raise INJECTABLE[decision.code]()
            if verb == "watch":
                self._watch(target, query)
                return
            code, body = self._call(verb, target, query, raw)
            if decision.code is not None:
                raise INJECTABLE[decision.code]()
            self._send_json(code, body)
        except ApiError as e:
            self._send_error(e)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as e:
            log.error("test API server: %s %s failed:\n%s", method, self.path,
                      traceback.format_exc())
            self._send_error(ApiError(500, "InternalError", f"test API server bug: {e!r}"))

    def _control(self, method: str, path: str, raw: bytes) -> None:
        app = self.server.app
        if path == "/_stats":
            if method != "GET":
                raise method_not_allowed()
            store = app.store
            self._send_json(200, {
                "resourceVersion": store.resource_version,
                "objects": {r.qualified + (f"/{r.version}" if r.group else ""): store.count(r)
                            for r in store.resources},
                "watches": store.watch_count,
                "faults": app.faults.snapshot()["stats"]})
            return
        try:
            if method == "PUT":
                app.faults.configure(FaultConfig.from_dict(self._json_body(raw)))
            elif method in ("PATCH", "POST"):
                body = self._json_body(raw)
                if not isinstance(body, dict):
                    raise bad_request("expected a JSON object of fault settings")
                app.faults.configure(**body)
            elif method == "DELETE":
                app.faults.reset()
            elif method != "GET":
                raise method_not_allowed()
        except (ValueError, TypeError) as e:
            raise bad_request(f"bad fault settings: {e}") from None
        self._send_json(200, app.faults.snapshot())

    def _discovery(self, path: str) -> bool:
        """Answer a discovery or version request; False when ``path`` is not one."""
        table = self.server.app.store.resources
        parts = path.strip("/").split("/")
        body: Any = None
        if path == "/version":
            body = SERVER_VERSION
        elif path == "/api":
            host, port = self.server.server_address[:2]
            body = api_versions(f"{host!s}:{port}")
        elif path == "/api/v1":
            body = api_resource_list(table, "", "v1")
            assert body is not None
            body["resources"].insert(0, {"name": "bindings", "singularName": "binding",
                                         "namespaced": True, "kind": "Binding",
                                         "verbs": ["create"]})
        elif path == "/apis":
            body = api_group_list(table)
        elif parts[0] == "apis" and len(parts) == 2:
            body = api_group(table, parts[1])
            if body is None:
                raise path_not_found()
        elif parts[0] == "apis" and len(parts) == 3:
            body = api_resource_list(table, parts[1], parts[2])
            if body is None:
                raise path_not_found()
        elif path == "/openapi/v2":
            kinds = [(r.group, r.version, r.kind) for r in table]
            title, version = "Kubernetes (gangsched test API server)", "v1.37.0"
            if protobuf.OPENAPI_V2_PROTOBUF in (self.headers.get("Accept") or ""):
                self._send(200, protobuf.openapi_v2(kinds, title, version),
                           protobuf.OPENAPI_V2_CONTENT_TYPE)
                return True
            body = protobuf.openapi_v2_json(kinds, title, version)
        elif parts[0] == "openapi":
            body = openapi.document_for(table, path)
            if body is None:
                raise path_not_found()
        else:
            return False
        self._send_json(200, body)
        return True

    def _route(self, path: str) -> Target:
        table = self.server.app.store.resources
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[0] == "apis" and len(parts) >= 4:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise path_not_found()
        watch = bool(rest) and rest[0] == "watch"
        if watch:
            rest = rest[1:]
        namespace = None
        if len(rest) >= 3 and rest[0] == "namespaces":
            inner = table.at(group, version, rest[2])
            if inner is not None and inner.namespaced:
                namespace, rest = rest[1], rest[2:]
            elif not group and rest[2] == "bindings" and len(rest) == 3:
                pods = table.at("", "v1", "pods")
                assert pods is not None
                return Target(pods, rest[1], None, "binding", watch, bindings=True)
            elif group or rest[2] not in ("status", "finalize"):
                raise path_not_found()
        if not rest or len(rest) > 3:
            raise path_not_found()
        r = table.at(group, version, rest[0])
        if r is None:
            raise path_not_found()
        name = rest[1] if len(rest) >= 2 else None
        sub = rest[2] if len(rest) == 3 else None
        if sub is not None and sub not in r.subresources:
            raise path_not_found()
        if (namespace is not None and not r.namespaced) or (
                r.namespaced and namespace is None and name is not None):
            raise path_not_found()
        return Target(r, namespace, name, sub, watch)

    def _verb(self, method: str, t: Target, query: Mapping[str, list[str]]) -> str:
        if t.bindings:
            if method != "POST":
                raise method_not_allowed()
            return "create"
        if method == "GET":
            if t.name is None:
                return "watch" if t.watch or _first(query, "watch", "") in TRUE else "list"
            if t.subresource == "binding":
                raise method_not_allowed()
            return "get"
        if t.watch:
            raise method_not_allowed()
        if method == "POST":
            if t.name is None and t.subresource is None and (
                    t.namespace is not None or not t.resource.namespaced):
                return "create"
            if t.subresource == "binding":
                return "create"
            raise method_not_allowed()
        if t.name is None or t.subresource == "binding":
            if method == "DELETE" and t.name is None:
                return "deletecollection"
            raise method_not_allowed()
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if t.subresource is not None:
            raise method_not_allowed()
        return "delete"

    def _call(self, verb: str, t: Target, query: Mapping[str, list[str]],
              raw: bytes) -> tuple[int, Any]:
        app = self.server.app
        store = app.store
        r = t.resource
        if _first(query, "dryRun"):
            raise bad_request("dryRun is not supported by the test API server")
        if verb == "get":
            return 200, self._render_one(r, store.stored(r, t.namespace, t.name or ""))
        if verb == "list":
            return 200, self._list(t, query)
        if verb == "create" and t.subresource == "binding":
            body = self._json_body(raw)
            name = t.name
            if t.bindings:
                meta = body.get("metadata") if isinstance(body, dict) else None
                name = meta.get("name") if isinstance(meta, dict) else None
                if not name:
                    raise bad_request("a Binding needs metadata.name (the pod's name)")
            return 201, store.bind_in(t.namespace or "default", str(name), body)
        if verb == "create":
            stored = store.create_in(r, self._json_body(raw), t.namespace, api=True)
            return 201, stored.raw()
        if verb == "update":
            existed = store.exists(r, t.namespace, t.name or "")
            stored = store.update_in(r, t.namespace, t.name or "", self._json_body(raw),
                                     t.subresource, api=True)
            return (200 if existed else 201), stored.raw()
        if verb == "patch":
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
            body = self._patch_body(content_type, raw)
            existed = store.exists(r, t.namespace, t.name or "")
            stored = store.patch_in(r, t.namespace, t.name or "", body, content_type,
                                    t.subresource, api=True,
                                    field_manager=_first(query, "fieldManager"))
            return (200 if existed else 201), stored.raw()
        if verb == "delete":
            options = self._json_body(raw) if raw.strip() else {}
            pre = options.get("preconditions") if isinstance(options, dict) else None
            stored, gone = store.delete_in(r, t.namespace, t.name or "", pre)
            if not gone:
                return 202, stored.raw()
            if r.delete_returns_object:
                return 200, stored.raw()
            meta = stored.obj["metadata"]
            return 200, success_status(200, {"name": meta["name"], "group": r.group,
                                             "kind": r.plural, "uid": meta.get("uid")})
        if verb == "deletecollection":
            matches = self._selectors(r, query)
            deleted: list[bytes] = []
            items, _ = store.select(r, t.namespace, matches)
            for s in items:
                meta = s.obj["metadata"]
                with contextlib.suppress(ApiError):  # deleted meanwhile
                    stored, _gone = store.delete_in(r, meta.get("namespace"), meta["name"],
                                                    None)
                    deleted.append(stored.raw())
            rv = store.resource_version
            return 200, _list_bytes(r, deleted, {"resourceVersion": str(rv)})
        raise method_not_allowed()

    def _patch_body(self, content_type: str, raw: bytes) -> Any:
        if content_type == APPLY_PATCH:
            try:
                return yaml.safe_load(raw.decode() or "{}")
            except (yaml.YAMLError, UnicodeDecodeError) as e:
                raise bad_request(f"error decoding YAML: {e}") from None
        return self._json_body(raw)

    # -- rendering -----------------------------------------------------------------------------

    def _render_one(self, r: Resource, stored: Stored) -> Any:
        wanted = _accept(self.headers.get("Accept", ""))
        if wanted == "Table":
            include = _first(parse_qs(urlsplit(self.path).query), "includeObject", "Metadata")
            return tables.table(r, [stored.obj], stored.rv, time.time(), include or "Metadata")
        if wanted == "PartialObjectMetadata":
            return tables.partial_metadata(stored.obj)
        return stored.raw()

    def _selectors(self, r: Resource, query: Mapping[str, list[str]]) -> Any:
        labels = LabelSelector.parse(_first(query, "labelSelector"))
        fields = FieldSelector.parse(_first(query, "fieldSelector"), r.field_selectors)
        return predicate(labels, fields)

    def _list(self, t: Target, query: Mapping[str, list[str]]) -> Any:
        store = self.server.app.store
        r = t.resource
        matches = self._selectors(r, query)
        token = _first(query, "continue")
        start = _decode_continue(token) if token else None
        limit = 0
        limit_text = _first(query, "limit")
        if limit_text:
            try:
                limit = max(0, int(limit_text))
            except ValueError:
                raise bad_request(f"invalid limit {limit_text!r}") from None
        items, rv, more = store.page(r, t.namespace, matches, start, limit)
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if more:
            last = items[-1].obj["metadata"]
            meta["continue"] = _continue_token((last.get("namespace", ""), last["name"]), rv)
            if matches is None:  # as kube-apiserver: no count when selectors were given
                meta["remainingItemCount"] = more
        wanted = _accept(self.headers.get("Accept", ""))
        if wanted == "Table":
            include = _first(query, "includeObject", "Metadata") or "Metadata"
            return tables.table(r, [s.obj for s in items], str(rv), time.time(), include,
                                meta.get("continue", ""))
        if wanted == "PartialObjectMetadata":
            return {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList",
                    "metadata": meta, "items": [tables.partial_metadata(s.obj)
                                                for s in items]}
        return _list_bytes(r, (s.raw() for s in items), meta)

    # -- watch -----------------------------------------------------------------------------------

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", JSON)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _end_stream(self) -> None:
        with contextlib.suppress(OSError):
            self.wfile.write(b"0\r\n\r\n")

    def _abort(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _event_bytes(self, r: Resource, type_: str, stored: Stored, wanted: str,
                     include: str) -> bytes:
        if wanted == "Table":
            body = _encode(tables.table(r, [stored.obj], stored.rv, time.time(), include))
        elif wanted == "PartialObjectMetadata":
            body = _encode(tables.partial_metadata(stored.obj))
        else:
            body = stored.raw()
        return b'{"type":"' + type_.encode() + b'","object":' + body + b"}\n"

    def _bookmark(self, r: Resource, rv: int, initial_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return _encode({"type": "BOOKMARK", "object": {"kind": r.kind,
                                                      "apiVersion": r.api_version,
                                                      "metadata": meta}}) + b"\n"

    def _watch(self, t: Target, query: Mapping[str, list[str]]) -> None:
        app = self.server.app
        r = t.resource
        matches = self._selectors(r, query)
        wanted = _accept(self.headers.get("Accept", ""))
        include = _first(query, "includeObject", "Metadata") or "Metadata"
        bookmarks = _first(query, "allowWatchBookmarks", "") in TRUE and wanted == "json"
        initial = _first(query, "sendInitialEvents", "") in TRUE
        timeout_text = _first(query, "timeoutSeconds")
        try:
            timeout = float(timeout_text) if timeout_text else None
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds {timeout_text!r}") from None
        try:
            watcher = app.store.watch(r, t.namespace, matches, _first(query, "resourceVersion"),
                                      initial or None)
        except ApiError as e:
            if e.code != 410:
                raise
            self._start_stream()  # the real server reports an expired version in the stream
            self._chunk(_encode({"type": "ERROR", "object": e.status()}) + b"\n")
            self._end_stream()
            return
        with app.lock:
            app.watchers.add(watcher)
        started = time.monotonic()
        deadline = started + timeout if timeout else None
        last_mark = started
        sent = 0
        try:
            self._start_stream()
            while not app.stopping.is_set():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                wait = POLL if deadline is None else max(0.0, min(POLL, deadline - now))
                item = watcher.next(wait)
                if item is not None:
                    self._chunk(self._event_bytes(r, item[0], item[1], wanted, include))
                    sent += 1
                    if watcher.initial_events and sent == watcher.initial_events and bookmarks:
                        self._chunk(self._bookmark(r, watcher.start_rv, initial_end=True))
                        last_mark = time.monotonic()
                    if app.faults.drop_watch(sent, started, after_event=True):
                        self._drop()
                        return
                    continue
                if watcher.closed:
                    break  # overflowed: the client must watch again
                if app.faults.drop_watch(sent, started, after_event=False):
                    self._drop()
                    return
                if bookmarks and time.monotonic() - last_mark >= app.bookmark_interval:
                    rv = app.store.bookmark_rv(watcher)
                    if rv is not None:
                        self._chunk(self._bookmark(r, rv))
                    last_mark = time.monotonic()
            self._end_stream()
        except OSError:
            self.close_connection = True
        finally:
            watcher.close()
            with app.lock:
                app.watchers.discard(watcher)

    def _drop(self) -> None:
        if self.server.app.faults.drop_mode == "clean":
            self._end_stream()
            self.close_connection = True
        else:
            self._abort()


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class TestAPIServer:
    """A Kubernetes-compatible API server for tests, on a thread of this process.

    ::

        with TestAPIServer(port=0, seed=0) as srv:
            srv.store.create(node)                  # direct setup, no HTTP
            cfg = srv.kubeconfig(tmp_path / "kubeconfig")
            ...                                     # kubernetes client / kubectl at srv.url
            srv.faults.configure(error_rate=0.1)    # or PATCH /_faults

    ``faults`` is a :class:`FaultConfig` (or a live :class:`Faults`); ``store`` lets a
    restarted server keep the objects of a previous one. ``kubelet=True`` runs a fake
    kubelet that marks pods Running once bound (after ``kubelet_delay`` seconds).
    Bookmarks go to watches that allow them every ``bookmark_interval`` seconds.
    Only loopback hosts unless ``allow_remote``. ``control_endpoints``: serve ``/_faults``
    and ``/_stats`` (``gangsched dev-cluster`` only with ``--fault-endpoint``); request
    bodies above ``max_body`` bytes are answered 413.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        seed: int | None = 0,
        store: Store | None = None,
        faults: FaultConfig | Faults | None = None,
        history: int = DEFAULT_HISTORY,
        bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
        kubelet: bool = False,
        kubelet_delay: float = 0.0,
        allow_remote: bool = False,
        log_requests: bool = False,
        control_endpoints: bool = True,
        max_body: int = MAX_BODY,
    ) -> None:
        if not allow_remote and not is_loopback(host):
            raise ValueError(f"refusing to listen on non-loopback host {host!r} "
                             "(the test API server has no authentication)")
        self.host = host
        self._requested_port = port
        self.store = store or Store(history=history, seed=seed)
        if isinstance(faults, Faults):
            self.faults = faults
        else:
            self.faults = Faults(faults or FaultConfig(seed=seed))
        self._app = _App(self.store, self.faults, bookmark_interval, log_requests,
                         control=control_endpoints, max_body=max_body)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._kubelet_enabled = kubelet
        self._kubelet_delay = kubelet_delay
        self._kubelet: Any = None
        self._temp_files: list[Path] = []

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> TestAPIServer:
        """Listen and serve on a daemon thread (``OSError`` if the port is taken)."""
        if self._httpd is not None:
            return self
        ipv6 = ":" in self.host.strip("[]")
        self._app.stopping.clear()
        self._httpd = _HTTPServer((self.host.strip("[]"), self._requested_port), self._app,
                                  ipv6)
        self._thread = threading.Thread(target=self._httpd.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name=f"test-apiserver:{self.port}", daemon=True)
        self._thread.start()
        if self._kubelet_enabled:
            from gangsched.testing.apiserver.kubelet import FakeKubelet

            self._kubelet = FakeKubelet(self.store, delay=self._kubelet_delay).start()
        return self

    def stop(self) -> None:
        """Stop serving: end watches, close connections, free the port."""
        if self._kubelet is not None:
            self._kubelet.stop()
            self._kubelet = None
        httpd = self._httpd
        if httpd is None:
            return
        self._app.stopping.set()
        with self._app.lock:
            watchers = list(self._app.watchers)
        for w in watchers:
            w.close()
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None
        for path in self._temp_files:
            with contextlib.suppress(OSError):
                path.unlink()
        self._temp_files.clear()

    def __enter__(self) -> TestAPIServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # -- where it is ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the test API server is not running")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>`` (brackets around an IPv6 host)."""
        host = self.host.strip("[]")
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self.port}"

    def kubeconfig(self, path: str | os.PathLike[str] | None = None, *,
                   name: str = "gangsched-test", namespace: str = "default") -> Path:
        """Write a kubeconfig pointing at this server (for ``kubectl --kubeconfig`` and
        ``kubernetes.config.load_kube_config``); a temporary file, removed on stop, when no
        path is given. Returns the path."""
        if path is None:
            fd, temp = tempfile.mkstemp(prefix="gangsched-kubeconfig-", suffix=".yaml")
            os.close(fd)
            target = Path(temp)
            self._temp_files.append(target)
        else:
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": self.url}}],
            "users": [{"name": name, "user": {"token": "gangsched-test"}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name,
                                                    "namespace": namespace}}],
            "current-context": name,
            "preferences": {},
        }
        target.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        return target
