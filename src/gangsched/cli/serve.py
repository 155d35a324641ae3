"""``gangsched serve``: run as a secondary scheduler in a Kubernetes cluster.

Register with ``app.command("serve")(serve_cmd)`` on the top-level
:class:`~gangsched.cli.common.App`. ``kubernetes`` is imported only when the command
runs, so ``gangsched --help`` works without the ``k8s`` extra.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

import typer

from gangsched.api import names
from gangsched.api.errors import GangschedError
from gangsched.cli.common import TopologyOption, VerboseOption, parse_topology_option

INSTALL_HINT = "gangsched serve needs the Kubernetes client: pip install 'gangsched[k8s]'"


LOG_LEVELS = ("debug", "info", "warning", "error")


def check_flags(*, scheduler_name: str, lease_name: str, lease_namespace: str,
                identity: str | None, metrics_port: int, events_qps: float,
                log_level: str) -> None:
    """One line for the first flag a cluster would refuse or that cannot work, before
    anything connects: the names as the API server validates them (a pod's
    spec.schedulerName and a Lease's name are DNS-1123 subdomains, its namespace a
    DNS-1123 label), a TCP port, a positive finite write rate, a known log level."""
    for flag, value, check in (
            ("--scheduler-name", scheduler_name, names.dns1123_subdomain),
            ("--lease-name", lease_name, names.dns1123_subdomain),
            ("--lease-namespace", lease_namespace, names.dns1123_label)):
        problems = check(value) if value else ("must not be empty",)
        if problems:
            raise GangschedError(f"{flag} {value!r}: {names.first(problems)}")
    if identity is not None and (not identity or not identity.isprintable()):
        raise GangschedError(f"--identity {identity!r}: must be a non-empty line of "
                             "printable characters")
    if not -1 <= metrics_port <= 65535:
        raise GangschedError(f"--metrics-port {metrics_port}: must be a TCP port "
                             "(0-65535; 0: any free port, -1: none)")
    if not (math.isfinite(events_qps) and events_qps > 0):
        raise GangschedError(f"--events-qps {events_qps}: must be a positive number")
    for source, level in (("--log-level", log_level),
                          ("GANGSCHED_LOG_LEVEL", os.environ.get("GANGSCHED_LOG_LEVEL"))):
        if level is not None and level.lower() not in LOG_LEVELS:
            raise GangschedError(f"{source} {level!r}: must be one of "
                                 f"{', '.join(LOG_LEVELS)}")


def serve_cmd(
    kubeconfig: Annotated[
        Path | None,
        typer.Option("--kubeconfig", help="Kubeconfig file (default: in-cluster when running "
                     "in a pod, else $KUBECONFIG or ~/.kube/config).", show_default=False),
    ] = None,
    context: Annotated[
        str | None,
        typer.Option("--context", help="Kubeconfig context to use.", show_default=False),
    ] = None,
    scheduler_name: Annotated[
        str, typer.Option("--scheduler-name", help="Schedule pods whose spec.schedulerName "
                          "is this; other pods only consume capacity.")
    ] = "gangsched",
    leader_elect: Annotated[
        bool, typer.Option("--leader-elect/--no-leader-elect",
                           help="Elect a leader through a Lease (run 2+ replicas).")
    ] = True,
    lease_name: Annotated[str, typer.Option("--lease-name", help="Lease name.")] = "gangsched",
    lease_namespace: Annotated[
        str, typer.Option("--lease-namespace", help="Namespace of the Lease.")
    ] = "kube-system",
    identity: Annotated[
        str | None,
        typer.Option("--identity", help="Holder identity in the Lease "
                     "(default: <hostname>_<uuid>).", show_default=False),
    ] = None,
    lease_duration: Annotated[
        float, typer.Option("--lease-duration", help="Seconds a standby waits for a silent "
                            "leader.")
    ] = 15.0,
    renew_deadline: Annotated[
        float, typer.Option("--renew-deadline", help="Seconds a leader keeps leading "
                            "without renewing.")
    ] = 10.0,
    retry_period: Annotated[
        float, typer.Option("--retry-period", help="Seconds between lease attempts.")
    ] = 2.0,
    metrics_port: Annotated[
        int, typer.Option("--metrics-port", "--secure-port",
                          help="Port of /healthz, /readyz and /metrics (and /dashboard), "
                          "HTTPS (0: any free port, -1: none).")
    ] = 10259,
    metrics_host: Annotated[
        str | None, typer.Option("--bind-address", "--metrics-host",
                                 help="Address the secure port listens on (default: "
                                 "0.0.0.0 in a cluster, 127.0.0.1 outside one).",
                                 show_default=False)
    ] = None,
    tls_cert_file: Annotated[
        Path | None, typer.Option("--tls-cert-file", help="PEM certificate of the secure "
                                  "port (default: self-signed).", show_default=False)
    ] = None,
    tls_key_file: Annotated[
        Path | None, typer.Option("--tls-private-key-file", help="PEM key of "
                                  "--tls-cert-file.", show_default=False)
    ] = None,
    cert_dir: Annotated[
        Path | None, typer.Option("--cert-dir", help="Where the self-signed certificate "
                                  "is written (default: a temporary directory).",
                                  show_default=False)
    ] = None,
    authenticate: Annotated[
        bool | None, typer.Option("--authenticate/--no-authenticate",
                                  help="Check bearer tokens with the API server "
                                  "(TokenReview, SubjectAccessReview) on /metrics and "
                                  "/dashboard (default: in a cluster).", show_default=False)
    ] = None,
    insecure: Annotated[
        bool, typer.Option("--insecure-http", help="Plain HTTP on the secure port (local "
                           "debugging only).")
    ] = False,
    dashboard: Annotated[
        bool, typer.Option("--dashboard", help="Serve the live view (topology and gangs) "
                           "at /dashboard on the secure port.")
    ] = False,
    topology: TopologyOption = None,
    events_qps: Annotated[
        float, typer.Option("--events-qps", help="Events and status writes per second.")
    ] = 50.0,
    log_level: Annotated[
        str, typer.Option("--log-level", help="debug, info, warning or error.")
    ] = "info",
    verbose: VerboseOption = 0,
) -> None:
    """Schedule every pod whose schedulerName is ours, whole gangs at a time.

    It reads Volcano PodGroups as Kthena creates them, HyperNodes and the Workload API, and
    runs beside the default scheduler. Logs are JSON lines on stderr; SIGTERM shuts down
    gracefully."""
    if verbose:
        log_level = "debug"  # -v: as --log-level debug
    levels = parse_topology_option(topology) if topology is not None else None
    if (tls_cert_file is None) != (tls_key_file is None):
        raise GangschedError("--tls-cert-file and --tls-private-key-file go together")
    check_flags(scheduler_name=scheduler_name, lease_name=lease_name,
                lease_namespace=lease_namespace, identity=identity,
                metrics_port=metrics_port, events_qps=events_qps, log_level=log_level)
    try:
        from gangsched.k8s.leader import LeaseConfig
        from gangsched.k8s.serve import ServeConfig, serve
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise GangschedError(INSTALL_HINT) from err
    try:
        LeaseConfig(identity=identity or "-", lease_duration=lease_duration,
                    renew_deadline=renew_deadline, retry_period=retry_period)
    except ValueError as err:
        raise GangschedError(f"lease timings: {err}") from None
    config = ServeConfig(
        kubeconfig=str(kubeconfig) if kubeconfig is not None else None,
        context=context,
        scheduler_name=scheduler_name,
        leader_elect=leader_elect,
        lease_name=lease_name,
        lease_namespace=lease_namespace,
        identity=identity or "",
        lease_duration=lease_duration,
        renew_deadline=renew_deadline,
        retry_period=retry_period,
        metrics_host=metrics_host,
        metrics_port=None if metrics_port < 0 else metrics_port,
        secure=not insecure,
        cert_file=str(tls_cert_file) if tls_cert_file is not None else None,
        key_file=str(tls_key_file) if tls_key_file is not None else None,
        cert_dir=str(cert_dir) if cert_dir is not None else None,
        authenticate=authenticate,
        dashboard=dashboard,
        topology=levels,
        events_qps=events_qps,
    )
    try:
        code = serve(config, log_level=log_level)
    except ImportError as err:  # kubernetes is imported when connecting
        if "kubernetes" in str(err) or "gangsched[k8s]" in str(err):
            raise GangschedError(INSTALL_HINT) from None
        raise
    if code:
        raise typer.Exit(code)
