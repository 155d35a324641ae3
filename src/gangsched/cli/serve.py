"""``gangsched serve``: run as a secondary scheduler in a Kubernetes cluster.

Register with ``app.command("serve")(serve_cmd)`` on the top-level
:class:`~gangsched.cli.common.App`. ``kubernetes`` is imported only when the command
runs, so ``gangsched --help`` works without the ``k8s`` extra.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from gangsched.api.errors import GangschedError
from gangsched.cli.common import TopologyOption, VerboseOption, parse_topology_option

INSTALL_HINT = "gangsched serve needs the Kubernetes client: pip install 'gangsched[k8s]'"


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
        int, typer.Option("--metrics-port", help="Port of /healthz, /readyz and /metrics "
                          "(0: any free port, -1: none).")
    ] = 10259,
    metrics_host: Annotated[
        str, typer.Option("--metrics-host", help="Address the metrics server listens on.")
    ] = "0.0.0.0",
    topology: TopologyOption = None,
    events_qps: Annotated[
        float, typer.Option("--events-qps", help="Events and status writes per second.")
    ] = 50.0,
    log_level: Annotated[
        str, typer.Option("--log-level", help="debug, info, warning or error.")
    ] = "info",
    verbose: VerboseOption = 0,
) -> None:
    """Schedule every pod whose schedulerName is ours, whole gangs at a time (Volcano
    PodGroups as Kthena creates them, HyperNodes, the Workload API), beside the default
    scheduler. Logs are JSON lines on stderr; SIGTERM shuts down gracefully."""
    if verbose:
        log_level = "debug"  # -v: as --log-level debug
    levels = parse_topology_option(topology) if topology is not None else None
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
