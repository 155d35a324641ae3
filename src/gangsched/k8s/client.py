"""The :class:`~gangsched.k8s.api.KubeAPI` on the official ``kubernetes`` client.

Authentication is the client's own: in-cluster (the pod's service account, when
``KUBERNETES_SERVICE_HOST`` is set and no kubeconfig is given) or a kubeconfig file
(``--kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``).

Lists, watches and discovery go through the client's generated methods; calls on one
object (bind, get, create, replace, patch, delete: the hot path of binding) are made on
the client's connection pool directly (see :meth:`Kube._request`). Every call passes
``_preload_content=False`` and decodes the JSON itself: objects stay
plain dicts (what the loader parses), a list of 10,000 pods is not turned into models,
and the ``Status`` an API server answers to a successful ``pods/binding`` is not
deserialized as a ``V1Binding`` (which raises in the client although the bind worked).
Non-2xx replies still raise ``ApiException`` in the client; they become
:class:`~gangsched.k8s.api.KubeError` with the status code and the server's message.

This is the only module that imports ``kubernetes``.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import ssl
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import yaml

from gangsched.api.errors import GangschedError
from gangsched.k8s import keepalive
from gangsched.k8s.api import PODS, Kind, KubeError, Obj, Resources

try:
    import urllib3
    from kubernetes import client as k8s_client  # type: ignore[import-untyped,unused-ignore]
    from kubernetes import config as k8s_config  # type: ignore[import-untyped,unused-ignore]
    from kubernetes.client.exceptions import ApiException  # type: ignore[import-untyped,unused-ignore]
except ImportError as _err:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "gangsched serve needs the Kubernetes client: pip install 'gangsched[k8s]'"
    ) from _err

MERGE_PATCH = "application/merge-patch+json"
CONNECT_TIMEOUT = 10.0
AUTH_TTL = 10.0  # seconds the authentication headers are reused (a 401 drops them)
POOL_SIZE = 64  # kept-alive connections to the API server
WATCH_READ_GRACE = 30.0  # seconds beyond the server-side watch timeout before giving up


def _error(err: BaseException) -> KubeError:
    """A :class:`KubeError` for anything the client raised on the wire."""
    if isinstance(err, ApiException):
        body = err.body
        if isinstance(body, str):
            body = body.encode("utf-8")
        headers = {str(k).lower(): v for k, v in (err.headers or {}).items()}
        return _status_error(int(err.status) if err.status else None, err.reason,
                             body or None, headers)
    return KubeError(None, f"{type(err).__name__}: {err}")


def _status_error(status: int | None, reason: str | None, body: bytes | None,
                  headers: Any) -> KubeError:
    """A :class:`KubeError` for a non-2xx reply: the Status object's message and reason
    when the body is one, and the Retry-After header (``headers`` keyed in lower case)."""
    message, why, retry_after = str(reason or ""), "", None
    text = body.decode("utf-8", "replace") if body else ""
    if text:
        try:
            decoded = json.loads(text)
        except ValueError:
            message = text.strip()[:500] or message
        else:
            if isinstance(decoded, dict):
                message = str(decoded.get("message") or message)
                why = str(decoded.get("reason") or "")
    raw_retry = headers.get("retry-after") if headers is not None else None
    with contextlib.suppress(TypeError, ValueError):
        retry_after = float(raw_retry) if raw_retry else None
    return KubeError(status, message, reason=why, retry_after=retry_after)


_WIRE_ERRORS: tuple[type[BaseException], ...] = (
    ApiException, urllib3.exceptions.HTTPError, OSError, http.client.HTTPException)


def _json(resp: Any) -> Obj:
    """Read and decode a raw response, returning the connection to the pool."""
    try:
        data = resp.data
    finally:
        with contextlib.suppress(Exception):
            resp.release_conn()
    if not data:
        return {}
    out = json.loads(data)
    return out if isinstance(out, dict) else {"items": out}


class _Watch:
    """A watch response read as JSON lines."""

    def __init__(self, resp: Any) -> None:
        self._resp = resp
        self._closed = False

    def __iter__(self) -> Iterator[Obj]:
        buf = b""
        try:
            for chunk in self._resp.stream(65536, decode_content=True):
                buf += chunk
                while True:
                    line, sep, rest = buf.partition(b"\n")
                    if not sep:
                        break
                    buf = rest
                    if line.strip():
                        yield json.loads(line)
            if buf.strip():
                yield json.loads(buf)
        except Exception as err:
            if self._closed:  # closed from another thread: urllib3 may fail in odd ways
                return
            if isinstance(err, _WIRE_ERRORS):
                raise _error(err) from None
            if isinstance(err, ValueError):
                raise KubeError(None, f"undecodable watch event: {err}") from None
            raise
        finally:
            self.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        shutdown = getattr(self._resp, "shutdown", None)  # urllib3 >= 2.3 unblocks a read
        with contextlib.suppress(Exception):
            if shutdown is not None:
                shutdown()
        with contextlib.suppress(Exception):
            self._resp.close()
        with contextlib.suppress(Exception):
            self._resp.release_conn()


class Kube:
    """:class:`~gangsched.k8s.api.KubeAPI` over a ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: Any, *, request_timeout: float = 30.0) -> None:
        self.api_client = api_client
        self.core = k8s_client.CoreV1Api(api_client)
        self.custom = k8s_client.CustomObjectsApi(api_client)
        self.request_timeout = request_timeout
        self.host = str(api_client.configuration.host).rstrip("/")
        self._prefix = urlsplit(self.host).path  # a server URL may carry a path
        self._pool = api_client.rest_client.pool_manager
        self._retries = api_client.configuration.retries
        self._timeout = urllib3.Timeout(connect=CONNECT_TIMEOUT, read=request_timeout)
        self._fast = _keepalive_pool(api_client.configuration, request_timeout)
        self._auth_cache: dict[str, str] = {}
        self._auth_at = -AUTH_TTL

    # -- plumbing -------------------------------------------------------------------------

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Obj:
        kwargs.setdefault("_request_timeout", (CONNECT_TIMEOUT, self.request_timeout))
        try:
            return _json(fn(*args, _preload_content=False, **kwargs))
        except _WIRE_ERRORS as err:
            raise _error(err) from None

    def _request(self, method: str, path: str, body: Obj | None = None,
                 content_type: str = "application/json") -> Obj:
        """One request for one object, straight on the client's connection pool.

        The generated methods cost ~0.3 ms of CPU per call (argument validation,
        serialization, proxy lookups in the environment) before a byte is sent; the
        object calls (bind, get, create, patch, delete) are on the hot path of binding,
        so they are made here, on the same pool (kept-alive connections, the client's
        TLS settings) with the client's own authentication headers."""
        headers = dict(self._auth_headers())
        if content_type:
            headers["Content-Type"] = content_type
        data = json.dumps(body, separators=(",", ":")).encode() if body is not None else None
        if self._fast is not None:
            try:
                fast = self._fast.request(method, self._prefix + quote(path), headers, data)
            except (OSError, keepalive.HTTPError) as err:
                raise KubeError(None, f"{type(err).__name__}: {err}") from None
            status, reason, raw, reply_headers = (fast.status, fast.reason, fast.body,
                                                  fast.headers)
        else:
            try:
                resp = self._pool.request(method, self.host + quote(path), body=data,
                                          headers=headers, timeout=self._timeout,
                                          retries=self._retries, preload_content=False,
                                          redirect=False)
            except _WIRE_ERRORS as err:
                raise _error(err) from None
            try:
                raw = resp.data
            except _WIRE_ERRORS as err:
                raise _error(err) from None
            finally:
                with contextlib.suppress(Exception):
                    resp.release_conn()
            status, reason, reply_headers = resp.status, resp.reason, {
                k.lower(): v for k, v in resp.headers.items()}
        if status == 401:
            self._auth_at = -AUTH_TTL  # a token that expired: fetch a fresh one next time
        if not 200 <= status < 300:
            raise _status_error(status, reason, raw, reply_headers)
        if not raw:
            return {}
        try:
            out = json.loads(raw)
        except ValueError:
            raise KubeError(status, f"undecodable reply: {raw[:200]!r}") from None
        return out if isinstance(out, dict) else {"items": out}

    def _auth_headers(self) -> dict[str, str]:
        """The headers of every request, authentication included. The client's token
        hooks (a kubeconfig's, the in-cluster token file's) rebuild the whole
        configuration on each call (~0.5 ms, most of it scanning the environment for
        proxies): the result is kept for ``AUTH_TTL`` seconds, or until a 401."""
        now = time.monotonic()
        if now - self._auth_at >= AUTH_TTL:
            headers = {"Accept": "application/json",
                       "User-Agent": str(self.api_client.user_agent or "gangsched")}
            self.api_client.update_params_for_auth(headers, [], ["BearerToken"], "", "", None)
            self._auth_cache, self._auth_at = headers, now
        return self._auth_cache

    def _core(self, verb: str, kind: Kind, namespace: str | None) -> Callable[..., Any]:
        """The CoreV1Api method for ``verb`` (``list``, ``read``, ``create``, ``replace``,
        ``patch``, ``delete``) of a core kind, e.g. ``read_namespaced_pod``."""
        singular = {"Node": "node", "Pod": "pod", "Event": "event", "Namespace": "namespace"}
        name = singular.get(kind.kind)
        if name is None:
            raise ValueError(f"no core API methods for {kind}")
        if verb == "list":
            method = f"list_{name}" if not kind.namespaced else f"list_{name}_for_all_namespaces"
        elif kind.namespaced:
            method = f"{verb}_namespaced_{name}"
        else:
            method = f"{verb}_{name}"
        fn: Callable[..., Any] = getattr(self.core, method)
        return fn

    # -- reading --------------------------------------------------------------------------

    def list(self, kind: Kind, *, limit: int | None = None, continue_: str | None = None,
             field_selector: str | None = None) -> Obj:
        params: dict[str, Any] = {}
        if limit:
            params["limit"] = limit
        if continue_:
            params["_continue"] = continue_
        if field_selector:
            params["field_selector"] = field_selector
        if not kind.group:
            return self._call(self._core("list", kind, None), **params)
        return self._call(self.custom.list_cluster_custom_object, kind.group, kind.version,
                          kind.plural, **params)

    def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int,
              field_selector: str | None = None) -> _Watch:
        params: dict[str, Any] = {
            "watch": True, "allow_watch_bookmarks": True, "resource_version": resource_version,
            "timeout_seconds": timeout_seconds,
            "_request_timeout": (CONNECT_TIMEOUT, timeout_seconds + WATCH_READ_GRACE)}
        if field_selector:
            params["field_selector"] = field_selector
        try:
            if not kind.group:
                resp = self._core("list", kind, None)(_preload_content=False, **params)
            else:
                resp = self.custom.list_cluster_custom_object(
                    kind.group, kind.version, kind.plural, _preload_content=False, **params)
        except _WIRE_ERRORS as err:
            raise _error(err) from None
        return _Watch(resp)

    def resources(self, group: str, version: str) -> Resources | None:
        try:
            if not group:
                data = self._call(self.core.get_api_resources)
            else:
                data = self._call(self.custom.get_api_resources, group, version)
        except KubeError as err:
            if err.status == 404:
                return None
            raise
        return [r for r in data.get("resources") or []
                if isinstance(r, dict) and "/" not in str(r.get("name"))]

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        return self._request("GET", self._path(kind, namespace, name), content_type="")

    @staticmethod
    def _path(kind: Kind, namespace: str | None, name: str | None = None,
              subresource: str | None = None) -> str:
        if kind.namespaced and not namespace:
            raise ValueError(f"{kind} needs a namespace")
        return kind.path(namespace if kind.namespaced else None, name, subresource)

    # -- writing --------------------------------------------------------------------------

    def create(self, kind: Kind, namespace: str | None, body: Obj) -> Obj:
        return self._request("POST", self._path(kind, namespace), body)

    def replace(self, kind: Kind, namespace: str | None, name: str, body: Obj) -> Obj:
        return self._request("PUT", self._path(kind, namespace, name), body)

    def merge_patch(self, kind: Kind, namespace: str | None, name: str, body: Obj,
                    subresource: str | None = None) -> Obj:
        return self._request("PATCH", self._path(kind, namespace, name, subresource), body,
                             MERGE_PATCH)

    def bind(self, namespace: str, name: str, node: str, uid: str | None) -> None:
        meta: Obj = {"name": name, "namespace": namespace}
        if uid:
            meta["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        reply = self._request("POST", self._path(PODS, namespace, name, "binding"), body)
        # The reply is a Status (kube-apiserver) or the Binding (some servers): either is
        # success; a Status that says otherwise is not.
        if reply.get("kind") == "Status" and reply.get("status") not in (None, "Success"):
            raise KubeError(int(reply.get("code") or 500), str(reply.get("message") or reply),
                            reason=str(reply.get("reason") or ""))

    def delete(self, kind: Kind, namespace: str | None, name: str,
               uid: str | None = None) -> None:
        body: Obj = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            body["preconditions"] = {"uid": uid}
        self._request("DELETE", self._path(kind, namespace, name), body)


def _keepalive_pool(cfg: Any, timeout: float) -> keepalive.Pool | None:
    """The keep-alive pool for ``cfg``'s server, with its TLS settings; None when a
    proxy is configured (the official client's pool is used then)."""
    if getattr(cfg, "proxy", None):
        return None
    url = urlsplit(str(cfg.host))
    if url.scheme not in ("http", "https") or not url.hostname:
        return None
    tls: ssl.SSLContext | None = None
    if url.scheme == "https":
        if cfg.verify_ssl:
            tls = ssl.create_default_context(cafile=cfg.ssl_ca_cert or None)
            if getattr(cfg, "ca_cert_data", None):
                data = cfg.ca_cert_data
                tls.load_verify_locations(cadata=data.decode() if isinstance(data, bytes)
                                          else data)
            if getattr(cfg, "assert_hostname", None) is False:
                tls.check_hostname = False
        else:
            tls = ssl.create_default_context()
            tls.check_hostname = False
            tls.verify_mode = ssl.CERT_NONE
        if cfg.cert_file:
            tls.load_cert_chain(cfg.cert_file, cfg.key_file or None)
    port = url.port or (443 if tls is not None else 80)
    return keepalive.Pool(url.hostname, port, tls=tls,
                          server_hostname=getattr(cfg, "tls_server_name", None) or None,
                          connect_timeout=CONNECT_TIMEOUT, timeout=timeout,
                          max_idle=POOL_SIZE)


def connect(kubeconfig: str | None = None, *, context: str | None = None,
            request_timeout: float = 30.0) -> Kube:
    """A client from ``kubeconfig``; without one, in-cluster when running in a pod,
    else ``$KUBECONFIG`` or ``~/.kube/config``."""
    cfg = k8s_client.Configuration()
    try:
        if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            k8s_config.load_incluster_config(client_configuration=cfg)
        else:
            k8s_config.load_kube_config(config_file=kubeconfig, context=context,
                                        client_configuration=cfg)
    except (k8s_config.ConfigException, OSError, ValueError, TypeError, AttributeError,
            RecursionError, yaml.YAMLError) as err:
        # the official loader reads the file with yaml.safe_load and walks what it got: a
        # file nested too deep, not YAML, or of the wrong shape fails inside it
        where = kubeconfig or os.environ.get("KUBECONFIG") or "~/.kube/config"
        problem = str(err).splitlines()[0] if str(err) else type(err).__name__
        if isinstance(err, RecursionError):
            problem = "nested too deep"
        elif isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
            mark = err.problem_mark
            problem = f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: " \
                f"{err.problem}"
        elif isinstance(err, (TypeError, AttributeError)):
            problem = f"not a kubeconfig file ({problem})"
        raise GangschedError(f"cannot load Kubernetes configuration ({where}): {problem}") \
            from None
    # urllib3 would retry GET/PUT/DELETE on 429/503 by itself, sleeping for Retry-After
    # and re-sending a write that may have applied: every retry is ours to decide. Only
    # connections that could not be made are retried here (nothing was sent).
    cfg.retries = urllib3.util.Retry(total=None, connect=2, read=0, redirect=2, status=0,
                                     other=0, respect_retry_after_header=False,
                                     raise_on_status=False, raise_on_redirect=False)
    # Binds run concurrently (serve's bind workers) next to a dozen long-lived watches:
    # the pool keeps a connection per concurrent request alive instead of opening and
    # discarding one per request once it is full.
    cfg.connection_pool_maxsize = max(int(cfg.connection_pool_maxsize or 0), POOL_SIZE)
    api = k8s_client.ApiClient(cfg)
    api.user_agent = "gangsched"
    return Kube(api, request_timeout=request_timeout)
