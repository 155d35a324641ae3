"""Serve's secure port, as kube-scheduler's 10259: HTTPS with a given or self-signed
certificate, and bearer tokens checked by the API server.

* :func:`self_signed`: a key and a certificate for ``localhost``, ``127.0.0.1``, ``::1``
  and the host's name, valid a year, written to a directory (kube-scheduler does the same
  when given no ``--tls-cert-file``);
* :func:`server_context`: the TLS context of the health, metrics and dashboard server;
* :class:`DelegatedAuth`: a request's ``Authorization: Bearer`` token is authenticated by
  a ``TokenReview`` and the user authorized by a ``SubjectAccessReview`` on the
  non-resource path and verb (``get /metrics``), as kube-scheduler's delegated
  authentication and authorization do; answers are cached briefly. ``/healthz``,
  ``/readyz`` and ``/livez`` are always allowed (kube-scheduler's
  ``--authorization-always-allow-paths``).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gangsched.k8s.api import Kind, KubeAPI, KubeError

log = logging.getLogger("gangsched.k8s.secure")

TOKEN_REVIEWS = Kind("authentication.k8s.io", "v1", "tokenreviews", "TokenReview",
                     namespaced=False)
ACCESS_REVIEWS = Kind("authorization.k8s.io", "v1", "subjectaccessreviews",
                      "SubjectAccessReview", namespaced=False)
ALWAYS_ALLOWED = ("/healthz", "/readyz", "/livez")


def in_cluster() -> bool:
    """Running in a pod (the service account's API server address is set)."""
    return bool(os.environ.get("KUBERNETES_SERVICE_HOST"))


def self_signed(directory: Path, name: str = "gangsched") -> tuple[Path, Path]:
    """Write ``<name>.crt`` and ``<name>.key`` (a new P-256 key, self-signed) into
    ``directory``; returns their paths. Needs the ``cryptography`` package (the k8s
    extra)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    host = socket.gethostname()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{host}@{int(time.time())}")])
    now = dt.datetime.now(dt.UTC)
    alt = [x509.DNSName("localhost"), x509.DNSName(host),
           x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
           x509.IPAddress(ipaddress.ip_address("::1"))]
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


def server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """TLS 1.2+ server context for the certificate and key (PEM files)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(str(cert_file), str(key_file))
    return ctx


class DelegatedAuth:
    """Bearer tokens authenticated and authorized by the API server (see the module
    docstring). :meth:`check` returns ``None`` when the request may go on, else the HTTP
    status and message to answer."""

    def __init__(self, api: KubeAPI, *, ttl: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.api = api
        self.ttl = ttl
        self.clock = clock
        self._users: dict[str, tuple[float, tuple[str, list[str], str] | None]] = {}
        self._allowed: dict[tuple[str, str, str], tuple[float, bool]] = {}
        self._lock = threading.Lock()

    def check(self, authorization: str | None, path: str, verb: str = "get"
              ) -> tuple[int, str] | None:
        if path in ALWAYS_ALLOWED:
            return None
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return 401, "Unauthorized: a bearer token is required"
        try:
            user = self._authenticate(token.strip())
            if user is None:
                return 401, "Unauthorized: the token was not accepted by the API server"
            if not self._authorize(user, path, verb):
                return 403, (f'Forbidden: user "{user[0]}" cannot {verb} path "{path}"')
        except KubeError as err:
            log.warning("delegated authentication failed: %s", err)
            return 503, "Service Unavailable: cannot reach the API server to check the token"
        return None

    def _authenticate(self, token: str) -> tuple[str, list[str], str] | None:
        now = self.clock()
        with self._lock:
            cached = self._users.get(token)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = self.api.create(TOKEN_REVIEWS, None, {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        status = review.get("status") or {}
        user = None
        if status.get("authenticated"):
            info = status.get("user") or {}
            user = (str(info.get("username") or ""), list(info.get("groups") or []),
                    str(info.get("uid") or ""))
        with self._lock:
            if len(self._users) > 1000:
                self._users.clear()
            self._users[token] = (now + self.ttl, user)
        return user

    def _authorize(self, user: tuple[str, list[str], str], path: str, verb: str) -> bool:
        now = self.clock()
        key = (user[0], path, verb)
        with self._lock:
            cached = self._allowed.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = self.api.create(ACCESS_REVIEWS, None, {
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user[0], "groups": user[1], "uid": user[2],
                     "nonResourceAttributes": {"path": path, "verb": verb}}})
        allowed = bool((review.get("status") or {}).get("allowed"))
        with self._lock:
            if len(self._allowed) > 1000:
                self._allowed.clear()
            self._allowed[key] = (now + self.ttl, allowed)
        return allowed
