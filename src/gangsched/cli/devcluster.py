"""``gangsched dev-cluster``: a Kubernetes API server on this machine, holding the objects
of a cluster file, for ``gangsched serve`` and ``kubectl`` without a real cluster.

The objects are checked by the same loader as every other command, then stored as written
(so a Node keeps its status and allocatable). The server is the test API server of
:mod:`gangsched.testing.apiserver`: no authentication, so it listens on loopback only
unless ``--allow-remote``.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from gangsched.api.errors import GangschedError, InputError
from gangsched.cli.common import (
    FilesOption,
    IgnoreUnknownOption,
    PathsArgument,
    RecursiveOption,
    VerboseOption,
    input_files,
    load_inputs,
    out,
    warn,
)

if TYPE_CHECKING:  # the API server is imported where used: `gangsched --help` stays light
    from gangsched.testing.apiserver import TestAPIServer


MAX_LATENCY_MS = 3_600_000.0  # an hour per request: more is a typo, and time.sleep overflows


def check_port(port: int, field: str) -> None:
    """A TCP port (0: any free one); others would fail deep in bind() with a traceback."""
    if not 0 <= port <= 65535:
        raise InputError(f"must be between 0 and 65535, got {port}", field=field)


def build_server(
    files: Sequence[Path],
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    error_rate: float = 0.0,
    latency_ms: float = 0.0,
    seed: int = 0,
    kubelet: bool = True,
    allow_remote: bool = False,
    ignore_unknown: bool = False,
    log_requests: bool = False,
    fault_endpoint: bool = False,
) -> tuple[TestAPIServer, Counter[str]]:
    """A test API server (not started) holding the objects of ``files``, and how many of
    each kind it holds."""
    from gangsched.testing.apiserver import ApiError, FaultConfig, TestAPIServer, is_loopback

    check_port(port, "--port")
    if not math.isfinite(latency_ms) or latency_ms > MAX_LATENCY_MS:
        raise InputError(f"must be a finite number of milliseconds, at most "
                         f"{MAX_LATENCY_MS:,.0f}, got {latency_ms:g}", field="--latency-ms")
    if not allow_remote and not is_loopback(host):
        raise GangschedError(f"refusing to listen on {host}: the dev cluster has no "
                             "authentication; use a loopback address or --allow-remote")
    try:
        faults = FaultConfig(error_rate=error_rate, latency_ms=latency_ms, seed=seed)
    except ValueError as e:
        raise InputError(str(e).replace("error_rate", "--error-rate")
                         .replace("latency_ms", "--latency-ms")) from None
    srv = TestAPIServer(host, port, seed=seed, faults=faults, kubelet=kubelet,
                        allow_remote=allow_remote, log_requests=log_requests,
                        control_endpoints=fault_endpoint)
    kinds: Counter[str] = Counter()
    if files:
        inputs = load_inputs(files, ignore_unknown)
        for doc in inputs.documents:
            if srv.store.resources.for_object(doc.api_version, doc.kind) is None:
                warn(f"{doc.where} {doc.label}: the dev cluster does not serve "
                     f"{doc.api_version} {doc.kind}; skipped")
                continue
            obj = dict(doc.obj)
            if doc.kind == "Pod" and doc.api_version == "v1" and not obj.get("status"):
                obj["status"] = {"phase": "Pending"}  # as the API server would start it
            try:
                srv.store.create(obj)
            except ApiError as e:
                raise doc.error(e.message) from None
            kinds[doc.kind] += 1
    return srv, kinds


def start_dashboard(srv: TestAPIServer, host: str, port: int) -> Any:
    """The live view of the dev cluster's objects on its own port (plain HTTP: the dev
    cluster is on loopback), started; returns the page server."""
    from gangsched.k8s.dashboard import ObjectsDashboard
    from gangsched.k8s.metrics import HealthServer, Metrics

    store = srv.store

    def objects() -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in store.resources:
            if r.plural in ("events", "leases", "namespaces"):
                continue
            if store.storage_of(r) is not r:  # one storage: each object once
                continue
            out.extend(store.list(r))
        return out

    view = ObjectsDashboard(objects)
    return HealthServer(Metrics(), host=host, port=port, pages=view.pages()).start()


def default_kubeconfig(port: int) -> Path:
    return Path(tempfile.gettempdir()) / f"gangsched-dev-{port}.kubeconfig"


def _summary(kinds: Counter[str]) -> str:
    if not kinds:
        return "no objects"
    return ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in kinds.most_common())


def serve(srv: TestAPIServer, stop: threading.Event) -> None:
    """Block until ``stop`` is set, Ctrl-C or SIGTERM; then stop the server."""
    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        srv.stop()


def dev_cluster_cmd(
    paths: PathsArgument = None,
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    port: Annotated[int, typer.Option("--port", help="Port to listen on (0: any free one).")]
    = 8080,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="Write the kubeconfig here (default: a file in "
                     "the temporary directory, removed on exit).", show_default=False),
    ] = None,
    error_rate: Annotated[
        float, typer.Option("--error-rate", help="Fraction of mutating requests answered "
                            "500 (fault injection; more through the /_faults endpoint).")
    ] = 0.0,
    latency_ms: Annotated[
        float, typer.Option("--latency-ms", help="Latency added to every API request.")
    ] = 0.0,
    seed: Annotated[int, typer.Option("--seed", help="Seed of fault injection and uids.")] = 0,
    kubelet: Annotated[
        bool, typer.Option("--kubelet/--no-kubelet",
                           help="Mark pods Running once bound, like a kubelet.")
    ] = True,
    allow_remote: Annotated[
        bool, typer.Option("--allow-remote",
                           help="Allow a non-loopback --host (there is no authentication).")
    ] = False,
    log_requests: Annotated[
        bool, typer.Option("--log-requests", help="Log every request on stderr (as -v).")
    ] = False,
    fault_endpoint: Annotated[
        bool, typer.Option("--fault-endpoint", help="Serve /_faults (change fault "
                           "injection at run time) and /_stats; off by default.")
    ] = False,
    dashboard: Annotated[
        bool, typer.Option("--dashboard", help="Serve the live view of the topology and "
                           "gangs (http, loopback) on --dashboard-port.")
    ] = False,
    dashboard_port: Annotated[
        int, typer.Option("--dashboard-port", help="Port of the live view (0: any free).")
    ] = 0,
    ignore_unknown: IgnoreUnknownOption = False,
    verbose: VerboseOption = 0,
) -> None:
    """Run a local Kubernetes API server with the objects of the input files.

    It holds the Nodes (and other objects) for [bold]gangsched serve[/] and kubectl,
    until Ctrl-C."""
    check_port(dashboard_port, "--dashboard-port")
    chosen = input_files(paths, files, recursive) if paths or files else []
    log_requests = log_requests or verbose > 0
    srv, kinds = build_server(chosen, host=host, port=port, error_rate=error_rate,
                              latency_ms=latency_ms, seed=seed, kubelet=kubelet,
                              allow_remote=allow_remote, ignore_unknown=ignore_unknown,
                              log_requests=log_requests, fault_endpoint=fault_endpoint)
    if log_requests:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        srv.start()
    except OSError as e:
        raise GangschedError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    stop = threading.Event()
    view = None
    if dashboard:
        try:
            view = start_dashboard(srv, host, dashboard_port)
        except (OSError, ImportError) as e:
            srv.stop()
            raise GangschedError(f"cannot serve the dashboard: {e}") from None
    try:
        path = kubeconfig or default_kubeconfig(srv.port)
        written = srv.kubeconfig(path)
        console = out()
        console.print(f"dev cluster at [bold]{srv.url}[/] ({escape(_summary(kinds))})",
                      soft_wrap=True)
        console.print(f"kubeconfig: {escape(str(written))}", soft_wrap=True)
        console.print(f"try: kubectl --kubeconfig {escape(str(written))} get nodes",
                      soft_wrap=True)
        if error_rate or latency_ms:
            where = f" (change them at {srv.url}/_faults)" if fault_endpoint else ""
            console.print(f"faults: error rate {error_rate:g} on mutating requests, "
                          f"latency {latency_ms:g} ms{where}", soft_wrap=True)
        if view is not None:
            console.print(f"dashboard: http://{host}:{view.port}/dashboard", soft_wrap=True)
        console.print("Ctrl-C to stop")
        sys.stdout.flush()
    except BaseException:
        srv.stop()
        raise
    try:
        serve(srv, stop)
    finally:
        if view is not None:
            view.stop()
        if kubeconfig is None:
            with contextlib.suppress(OSError):
                written.unlink()
    out().print("stopped")
