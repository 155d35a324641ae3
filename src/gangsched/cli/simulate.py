"""``gangsched simulate``: replay a workload trace on a cluster over simulated time under
several scheduling policies, print a comparison table and write a report.

Register with ``app.command("simulate")(simulate_cmd)`` on the top-level
:class:`~gangsched.cli.common.App` (one-line errors, no tracebacks).

Inputs, in order of precedence: ``--alibaba DIR`` (cluster and pods of the Alibaba
GPU trace), else a ``--trace`` file, else the built-in ``--scenario``; the cluster is
``--cluster`` (Node manifests) or ``--cluster-spec`` (a generator spec), else the
scenario's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from gangsched.api.errors import InputError
from gangsched.api.objects import parse_node
from gangsched.api.types import Node
from gangsched.cli.common import err, load_inputs, out
from gangsched.cluster.generate import (
    generate_nodes,
    level_key,
    parse_levels_spec,
    parse_node_spec,
)
from gangsched.cluster.topology import HOSTNAME, derive_levels
from gangsched.gang import constraint_keys
from gangsched.sim.alibaba import GPU_MILLI, load_alibaba
from gangsched.sim.policies import POLICIES, make_policy
from gangsched.sim.result import SimResult
from gangsched.sim.runner import RunConfig, sim_scheduler_config, simulate
from gangsched.sim.scenarios import DEFAULT, SCENARIOS, Scenario, make_scenario
from gangsched.sim.trace import TraceItem, check, load_trace, write_trace

DEFAULT_NODE = "cpu=128,memory=1Ti,nvidia.com/gpu=8,pods=110"
SAMPLES = 1440  # at most this many samples per policy (interval grows for long horizons)


def simulate_cmd(
    scenario: Annotated[str, typer.Option("--scenario", "-s",
                                          help="Built-in scenario (see --list).")] = DEFAULT,
    list_: Annotated[bool, typer.Option("--list", help="List scenarios and policies, "
                                        "then exit.")] = False,
    policy: Annotated[list[str] | None, typer.Option(
        "--policy", "-p", help="Policy to run (repeatable; default: all).",
        show_default=False)] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="JSON Lines workload trace (replaces the scenario's workloads).",
        show_default=False)] = None,
    cluster: Annotated[Path | None, typer.Option(
        "--cluster", help="YAML file with Node objects (replaces the scenario's cluster).",
        show_default=False)] = None,
    cluster_spec: Annotated[str | None, typer.Option(
        "--cluster-spec", help="Generated cluster, e.g. zone=4,block=8,rack=8,host=2 "
        f"(nodes: {DEFAULT_NODE}).", show_default=False)] = None,
    seed: Annotated[int, typer.Option("--seed", help="Random seed of the scenario.")] = 0,
    horizon: Annotated[float | None, typer.Option(
        "--horizon", help="Simulated seconds (default: the scenario's, or the trace's end).",
        show_default=False)] = None,
    out_dir: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Report directory (default ./gangsched-out/<scenario>).",
        show_default=False)] = None,
    alibaba: Annotated[Path | None, typer.Option(
        "--alibaba", help="Directory with the Alibaba cluster-trace-gpu-v2023 openb CSVs "
        "(cluster and pods).", show_default=False)] = None,
    alibaba_limit: Annotated[int | None, typer.Option(
        "--alibaba-limit", help="Replay only the first N pods of the Alibaba trace.",
        show_default=False)] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-P", help="Scenario knob KEY=VALUE, e.g. -P load=2 -P hours=6 "
        "(repeatable).", show_default=False)] = None,
    save_trace: Annotated[Path | None, typer.Option(
        "--save-trace", help="Also write the scenario's workloads as a JSON Lines trace.",
        show_default=False)] = None,
    no_report: Annotated[bool, typer.Option(
        "--no-report", help="Print the table only; write no files.")] = False,
) -> None:
    """Compare gangsched with emulations of other gang schedulers on a simulated cluster.

    With no options, runs the built-in ``disagg`` scenario under every policy and writes
    summary.json, units.csv, timeseries.csv, plots and report.html."""
    if list_:
        print_list()
        return
    names = policy or list(POLICIES)
    for name in names:
        if name not in POLICIES:
            raise InputError(f"unknown policy {name!r}; choose from {', '.join(POLICIES)}",
                             field="--policy")
    if cluster is not None and cluster_spec is not None:
        raise InputError("give --cluster or --cluster-spec, not both", field="--cluster-spec")
    sc = prepare(scenario, seed, trace, cluster, cluster_spec, alibaba, alibaba_limit,
                 parse_params(param or []))
    if horizon is not None:
        if not math.isfinite(horizon) or horizon <= 0:
            raise InputError(f"must be a positive number of seconds, got {horizon}",
                             field="--horizon")
        sc.horizon = horizon
        sc.sample_interval = max(sc.sample_interval, horizon / SAMPLES)
    if save_trace is not None:
        if not sc.specs:
            raise InputError("only built-in scenarios can be saved as a trace",
                             field="--save-trace")
        write_trace(sc.specs, save_trace)
        err().print(f"wrote {len(sc.specs):,} workloads to {save_trace}")
    result = run(sc, seed, names)
    summary = result.summary()
    console = out()
    from gangsched.sim.report import comparison_table

    console.print(comparison_table(result, summary))
    if no_report:
        return
    target = out_dir if out_dir is not None else Path("gangsched-out") / sc.name
    written = write_files(result, target)
    console.print(f"wrote {len(written)} files to {escape(str(target))}"
                  + (f" (open {escape(str(target / 'report.html'))})"
                     if any(p.name == "report.html" for p in written) else ""))


def write_files(result: SimResult, target: Path) -> list[Path]:
    try:
        from gangsched.sim.report import write_report
    except ImportError:  # the report module is optional: write the summary at least
        target.mkdir(parents=True, exist_ok=True)
        path = target / "summary.json"
        path.write_text(json.dumps(result.summary(), indent=2, sort_keys=True) + "\n",
                        encoding="utf-8")
        return [path]
    return write_report(result, target)


# -- inputs -------------------------------------------------------------------------------


def parse_params(items: list[str]) -> dict[str, Any]:
    knobs: dict[str, Any] = {}
    for item in items:
        key, sep, text = (s.strip() for s in item.partition("="))
        if not sep or not key or not text:
            raise InputError(f"expected KEY=VALUE, got {item!r}", field="--param")
        value: Any
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                value = text
        knobs[key] = value
    return knobs


def prepare(scenario: str, seed: int, trace: Path | None, cluster: Path | None,
            cluster_spec: str | None, alibaba: Path | None, alibaba_limit: int | None,
            knobs: dict[str, Any]) -> Scenario:
    """The scenario to run: built-in, or assembled from the options."""
    if alibaba is not None:
        if trace is not None or cluster is not None or cluster_spec is not None:
            raise InputError("--alibaba brings its own cluster and pods; drop --trace, "
                             "--cluster and --cluster-spec", field="--alibaba")
        ali = load_alibaba(alibaba, alibaba_limit)
        return Scenario(
            name="alibaba", nodes=ali.nodes, levels=[], items=ali.items,
            horizon=ali.horizon, gpu_resource=GPU_MILLI, gpu_scale=1000.0,
            sample_interval=max(60.0, ali.horizon / SAMPLES),
            description=(f"Alibaba cluster-trace-gpu-v2023: {len(ali.nodes):,} nodes, "
                         f"{len(ali.items):,} pods (fractional GPUs in milli-GPUs)"),
            parameters={"source": str(alibaba), "pods": len(ali.items)},
        )
    if scenario not in SCENARIOS:
        raise InputError(f"unknown scenario {scenario!r}; choose from "
                         f"{', '.join(SCENARIOS)}", field="--scenario")
    try:
        sc = make_scenario(scenario, seed, **knobs)
    except TypeError as e:
        raise InputError(f"bad scenario knob for {scenario}: {e}", field="--param") from None
    levels: list[str] | None = sc.levels
    if cluster is not None or cluster_spec is not None:
        sc.nodes, levels = (load_cluster(cluster) if cluster is not None
                            else spec_cluster(cluster_spec or ""))
        sc.parameters["cluster"] = str(cluster) if cluster is not None else cluster_spec
    if trace is not None:
        items = load_trace(trace)
        sc = Scenario(
            name=trace.stem, nodes=sc.nodes, levels=[], items=items,
            horizon=trace_horizon(items), parameters={"trace": str(trace), **(
                {"cluster": sc.parameters["cluster"]} if "cluster" in sc.parameters else {})},
            description=f"{len(items):,} workloads from {trace} on {len(sc.nodes):,} nodes",
        )
        sc.sample_interval = max(60.0, sc.horizon / SAMPLES)
    if not sc.nodes:
        raise InputError("the cluster has no nodes", field="--cluster")
    keys = constraint_keys(it.workload.tree for it in sc.items)
    # the simulator's metrics add the host level themselves
    sc.levels = [k for k in derive_levels(sc.nodes, keys, levels) if k != HOSTNAME]
    for it in sc.items:
        check(it, sc.levels)
    return sc


def trace_horizon(items: list[TraceItem]) -> float:
    """The end of the last finite job, and at least an hour after the last arrival."""
    if not items:
        return 3600.0
    last = max(it.arrival for it in items) + 3600.0
    return max([last] + [it.arrival + it.duration for it in items if it.duration is not None])


def load_cluster(path: Path) -> tuple[list[Node], list[str] | None]:
    """Nodes of a YAML file, and its Topology object's levels (None without one)."""
    inputs = load_inputs([path])
    if not inputs.nodes:
        raise InputError("no Node objects in the file", file=str(path))
    levels = inputs.topology_levels
    return inputs.nodes, list(levels) if levels is not None else None


def spec_cluster(spec: str) -> tuple[list[Node], list[str] | None]:
    try:
        levels = parse_levels_spec(spec)
    except InputError as e:
        raise InputError(e.message, field="--cluster-spec") from None
    nodes = [parse_node(d) for d in generate_nodes(levels, parse_node_spec(DEFAULT_NODE))]
    keys = [level_key(n) for n, _ in levels if level_key(n) != "kubernetes.io/hostname"]
    return nodes, keys


# -- running ------------------------------------------------------------------------------


def run(sc: Scenario, seed: int, names: list[str]) -> SimResult:
    config = RunConfig(
        horizon=sc.horizon, sample_interval=sc.sample_interval,
        gpu_resource=sc.gpu_resource, gpu_scale=sc.gpu_scale,
        scheduler=sim_scheduler_config(sc.levels), seed=seed,
    )
    policies = [make_policy(n) for n in names]
    params = {**sc.parameters, "description": sc.description,
              "workloads": len(sc.items), "sample_interval": sc.sample_interval}
    console = err()
    with Progress(TextColumn("{task.description:<11}"), BarColumn(),
                  TextColumn("{task.percentage:>5.1f}% simulated"), TimeElapsedColumn(),
                  console=console, transient=False, disable=not console.is_terminal) as bar:
        tasks = {n: bar.add_task(n, total=sc.horizon) for n in names}

        def progress(name: str, t: float, horizon: float) -> None:
            bar.update(tasks[name], completed=min(t, horizon))

        return simulate(sc.name, seed, sc.nodes, sc.levels, sc.items, policies, config,
                        params, progress)


def print_list() -> None:
    console = out()
    table = Table(title="scenarios", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("what")
    for name, (_, what) in SCENARIOS.items():
        table.add_row(name, what)
    console.print(table)
    table = Table(title="policies", title_justify="left")
    table.add_column("name", no_wrap=True)
    table.add_column("emulates")
    for name in POLICIES:
        text = make_policy(name).description
        table.add_row(name, escape(text.split(". ")[0].rstrip(".") + "."))
    console.print(table)
