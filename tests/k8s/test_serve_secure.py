"""The secure port (HTTPS, a self-signed or given certificate, bearer tokens checked by
TokenReview and SubjectAccessReview, the bind address), and the dev cluster's limits
(/_faults only when asked for, request bodies bounded, kubectl's protobuf read)."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from gangsched.k8s.api import Obj
from gangsched.k8s.metrics import HealthServer, Metrics
from gangsched.testing.apiserver import TestAPIServer
from gangsched.testing.apiserver.protobuf import MAGIC, _field, decode_object

pytest.importorskip("cryptography", reason="the secure port needs the k8s extra")

from gangsched.k8s.secure import DelegatedAuth, self_signed, server_context


class Reviews:
    """An API that answers TokenReviews and SubjectAccessReviews like kube-apiserver."""

    def __init__(self) -> None:
        self.tokens = {"good": ("alice", ["readers"]), "weak": ("bob", [])}
        self.calls: list[str] = []

    def create(self, kind: Any, namespace: str | None, body: Obj) -> Obj:
        self.calls.append(kind.kind)
        spec = body["spec"]
        if kind.kind == "TokenReview":
            user = self.tokens.get(spec["token"])
            status: Obj = {"authenticated": user is not None}
            if user:
                status["user"] = {"username": user[0], "groups": user[1]}
            return {**body, "status": status}
        allowed = "readers" in spec["groups"] and spec["nonResourceAttributes"] == {
            "path": "/metrics", "verb": "get"}
        return {**body, "status": {"allowed": allowed}}


def _get(url: str, token: str | None = None, cafile: Path | None = None) -> tuple[int, str]:
    if cafile is not None:
        ctx = ssl.create_default_context(cafile=str(cafile))
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10, context=ctx) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_https_with_delegated_authentication(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    api = Reviews()
    srv = HealthServer(Metrics(), port=0, ssl_context=server_context(cert, key),
                       auth=DelegatedAuth(api).check).start()
    try:
        base = f"https://localhost:{srv.port}"
        # the certificate is valid for localhost: verified against itself
        assert _get(base + "/healthz", cafile=cert) == (200, "ok\n")
        assert _get(base + "/readyz")[0] == 200  # always allowed, no token
        assert _get(base + "/metrics")[0] == 401
        assert _get(base + "/metrics", "bad")[0] == 401
        assert _get(base + "/metrics", "weak")[0] == 403
        code, text = _get(base + "/metrics", "good")
        assert code == 200 and "scheduler_schedule_attempts_total" in text
        before = len(api.calls)
        _get(base + "/metrics", "good")
        assert len(api.calls) == before  # reviews are cached
        with pytest.raises(OSError):  # plain HTTP is not served
            urllib.request.urlopen(f"http://localhost:{srv.port}/healthz", timeout=5)
    finally:
        srv.stop()


def test_bind_address_defaults_to_loopback_outside_a_cluster(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from gangsched.k8s.serve import ServeConfig, Server

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)

    class NoAPI:
        def resources(self, group: str, version: str) -> None:
            return None

    server = Server(ServeConfig(metrics_port=0, cert_dir=str(tmp_path)), api=NoAPI())  # type: ignore[arg-type]
    assert server.health is not None
    try:
        assert server.health._httpd.server_address[0] == "127.0.0.1"
        assert server.health.scheme == "https" and server.health.auth is None
        assert (tmp_path / "gangsched.crt").exists()
    finally:
        server.health._httpd.server_close()


def test_dev_cluster_faults_endpoint_only_when_asked_and_bodies_bounded() -> None:
    with TestAPIServer(port=0, control_endpoints=False, max_body=1024) as srv:
        assert _http(srv.url + "/_faults")[0] == 404
        code, body = _http(srv.url + "/api/v1/namespaces", method="POST",
                           data=json.dumps({"metadata": {"name": "x" * 2000}}).encode())
        assert code == 413 and "larger than 1024 bytes" in body
    with TestAPIServer(port=0) as srv:
        assert _http(srv.url + "/_faults")[0] == 200


def _http(url: str, method: str = "GET", data: bytes | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, method=method, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_protobuf_namespace_as_kubectl_sends_it() -> None:
    meta = _field(1, "ml") + _field(11, _field(1, "team") + _field(2, "a"))
    body = MAGIC + _field(1, _field(1, "v1") + _field(2, "Namespace")) + _field(
        2, _field(1, meta))
    assert decode_object(body) == {"apiVersion": "v1", "kind": "Namespace",
                                   "metadata": {"name": "ml", "labels": {"team": "a"}}}
