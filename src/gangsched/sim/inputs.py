"""What a simulation runs on, as a value that any process can rebuild: a
:class:`ScenarioRequest` (a built-in scenario, a seed and a load factor, or a trace file,
a cluster file or spec, or one of the Alibaba traces) and :func:`build_scenario`.

A worker process (or a Ray task) gets the request, not the scenario: the scenario is
rebuilt where it runs, deterministically, and cached per process.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gangsched.api.errors import InputError
from gangsched.api.objects import parse_node
from gangsched.api.types import Node
from gangsched.cluster.generate import generate_nodes, level_key, parse_levels_spec, parse_node_spec
from gangsched.cluster.topology import HOSTNAME, derive_levels
from gangsched.frontends import load
from gangsched.gang import constraint_keys, walk
from gangsched.sim.scenarios import SCENARIOS, Scenario, check_knobs, make_scenario
from gangsched.sim.trace import MAX_SECONDS, TraceItem, check, load_trace

DEFAULT_NODE = "cpu=128,memory=1Ti,nvidia.com/gpu=8,pods=110"
SAMPLES = 1440  # at most this many samples per policy (the interval grows for long runs)


@dataclass(frozen=True)
class ScenarioRequest:
    """Everything that decides a scenario (hashable: rebuilt once per process)."""

    scenario: str = "disagg"
    seed: int = 0
    load: float = 1.0
    knobs: tuple[tuple[str, Any], ...] = ()  # scenario keyword knobs (--param)
    trace: str | None = None  # JSON Lines workloads (replaces the scenario's)
    cluster: str | None = None  # YAML Node objects (replaces the scenario's cluster)
    cluster_spec: str | None = None  # generated cluster, e.g. zone=4,block=8,rack=8,host=2
    alibaba: str | None = None  # directory of an Alibaba trace (gpu-v2023 or v2025)
    alibaba_limit: int | None = None
    horizon: float | None = None  # simulated seconds (None: the scenario's)

    def with_seed(self, seed: int) -> ScenarioRequest:
        return replace(self, seed=seed)


def parse_params(items: list[str]) -> tuple[tuple[str, Any], ...]:
    """``KEY=VALUE`` scenario knobs; numbers become int or float."""
    knobs: dict[str, Any] = {}
    for item in items:
        key, sep, text = (s.strip() for s in item.partition("="))
        if not sep or not key or not text:
            raise InputError(f"expected KEY=VALUE, got {item!r}", field="--param")
        if key == "load":
            raise InputError("the load is set with --load (a factor of the scenario's "
                             "calibrated arrival rate)", field="--param")
        value: Any
        try:
            value = int(text)
        except ValueError:
            try:
                value = float(text)
            except ValueError:
                value = text
        knobs[key] = value
    return tuple(sorted(knobs.items()))


MAX_SEED = 2**63 - 1


def check_request(req: ScenarioRequest) -> None:
    """Problems a user can make with the options, as one-line errors."""
    if not 0 <= req.seed <= MAX_SEED:
        raise InputError(f"must be >= 0 and <= {MAX_SEED}, got {req.seed}", field="--seed")
    if not math.isfinite(req.load) or req.load <= 0 or req.load > 100:
        raise InputError(f"must be a positive factor (1.0 = the scenario's calibrated load), "
                         f"got {req.load}", field="--load")
    if req.cluster is not None and req.cluster_spec is not None:
        raise InputError("give --cluster or --cluster-spec, not both", field="--cluster-spec")
    if req.horizon is not None and (not math.isfinite(req.horizon) or req.horizon <= 0):
        raise InputError(f"must be a positive number of seconds, got {req.horizon}",
                         field="--horizon")
    if req.horizon is not None and req.horizon > MAX_SECONDS:
        raise InputError(f"must be at most {MAX_SECONDS:.0f} seconds (ten years), got "
                         f"{req.horizon:g}", field="--horizon")
    v2025 = disagg_2025_dir(req)
    if req.alibaba_limit is not None:
        if req.alibaba is None:
            raise InputError("only with --alibaba", field="--alibaba-limit")
        if v2025 is not None:
            raise InputError("only for the Alibaba v2023 trace; the v2025 one is cut with "
                             "-P scale=F or -P days=D", field="--alibaba-limit")
        if req.alibaba_limit < 1:
            raise InputError(f"must be >= 1, got {req.alibaba_limit}", field="--alibaba-limit")
    if req.alibaba is not None and (req.trace is not None or req.cluster is not None
                                    or req.cluster_spec is not None):
        raise InputError("--alibaba brings its own cluster and pods; drop --trace, "
                         "--cluster and --cluster-spec", field="--alibaba")
    if v2025 is not None:  # the alibaba-disagg-2025 scenario, from these files
        check_knobs(DISAGG_2025, dict(req.knobs), req.seed, req.load)
    elif req.knobs and (req.alibaba is not None or req.trace is not None):
        raise InputError("sets a built-in scenario's knobs: not with "
                         f"{'--alibaba' if req.alibaba is not None else '--trace'}",
                         field="--param")
    if req.alibaba is None and req.trace is None:
        if req.scenario not in SCENARIOS:
            raise InputError(f"unknown scenario {req.scenario!r}; choose from "
                             f"{', '.join(SCENARIOS)}", field="--scenario")
        check_knobs(req.scenario, dict(req.knobs), req.seed, req.load)


DISAGG_2025 = "alibaba-disagg-2025"


def disagg_2025_dir(req: ScenarioRequest) -> Path | None:
    """The ``--alibaba`` directory when it holds the v2025 trace's published files, or
    the directory of the instance file ``--alibaba`` names (the ``alibaba-disagg-2025``
    scenario is built from them), else None."""
    if req.alibaba is None:
        return None
    from gangsched.sim.disagg2025 import INSTANCE_FILE, trace_files

    d = Path(req.alibaba)
    if d.name in (INSTANCE_FILE, f"{INSTANCE_FILE}.gz") and d.is_file():
        d = d.parent
    return d if d.is_dir() and trace_files(d) is not None else None


@functools.lru_cache(maxsize=8)
def build_scenario(req: ScenarioRequest) -> Scenario:
    """The scenario a request describes (cached: the same request, the same object)."""
    check_request(req)
    v2025 = disagg_2025_dir(req)
    if v2025 is not None:
        from gangsched.sim.disagg2025 import disagg2025

        sc = disagg2025(req.seed, load=req.load, source=v2025, **dict(req.knobs))
    elif req.alibaba is not None:
        from gangsched.sim.alibaba import alibaba_scenario

        sc = alibaba_scenario(Path(req.alibaba), req.seed, req.load, req.alibaba_limit)
    else:
        sc = _scenario(req)
    if req.horizon is not None:
        sc.horizon = req.horizon
        sc.warmup = min(sc.warmup, req.horizon / 4)
        sc.sample_interval = max(sc.sample_interval, req.horizon / SAMPLES)
    return sc


def _scenario(req: ScenarioRequest) -> Scenario:
    if req.trace is None:
        try:
            sc = make_scenario(req.scenario, req.seed, load=req.load, **dict(req.knobs))
        except TypeError as e:
            raise InputError(f"bad scenario knob for {req.scenario}: {e}",
                             field="--param") from None
    else:
        sc = Scenario(name="trace", description="", nodes=[], levels=[], items=[],
                      horizon=3600.0)
    levels: list[str] | None = sc.levels
    if req.cluster is not None or req.cluster_spec is not None:
        sc.nodes, levels = (load_cluster(Path(req.cluster)) if req.cluster is not None
                            else spec_cluster(req.cluster_spec or ""))
        sc.parameters["cluster"] = req.cluster if req.cluster is not None else req.cluster_spec
    if req.trace is not None:
        path = Path(req.trace)
        items = load_trace(path)
        sc = Scenario(
            name=path.stem, nodes=sc.nodes, levels=[], items=items,
            horizon=trace_horizon(items), parameters={"trace": req.trace, **(
                {"cluster": sc.parameters["cluster"]} if "cluster" in sc.parameters else {})},
            description=f"{len(items):,} workloads from {path} on {len(sc.nodes):,} nodes",
        )
        sc.sample_interval = max(60.0, sc.horizon / SAMPLES)
    if not sc.nodes:
        raise InputError("the cluster has no nodes (give --cluster or --cluster-spec)",
                         field="--cluster")
    _check_labels(req, sc)
    keys = constraint_keys(it.workload.tree for it in sc.items)
    # the simulator's metrics add the host level themselves
    sc.levels = [k for k in derive_levels(sc.nodes, keys, levels) if k != HOSTNAME]
    for it in sc.items:
        check(it, sc.levels)
    return sc


def _check_labels(req: ScenarioRequest, sc: Scenario) -> None:
    """A required topology on a label no node carries would leave its workload waiting
    for ever: a mistake (a trace or scenario meant for another cluster). A preferred one
    would turn its locality off: a warning, once per label."""
    carried = {k for n in sc.nodes for k in n.labels} | {HOSTNAME}
    unknown_preferred: dict[str, str] = {}
    for it in sc.items:
        tree = it.workload.tree
        for node in walk(tree) if tree is not None else ():
            for c in node.topology:
                if c.key in carried:
                    continue
                where = it.topology_field(node.path)
                if c.mode != "required":
                    unknown_preferred.setdefault(c.key, f"{it.source or it.workload.name}: "
                                                 f"{it.workload.name}"
                                                 + (f": {where}.preferred" if where else ""))
                    continue
                if it.source:
                    raise InputError(f"{node.path} requires topology {c.key!r}, a label no "
                                     "node of the cluster has", file=it.source,
                                     obj=it.workload.name,
                                     field=f"{where}.required" if where else None)
                raise InputError(
                    f"no node has the label {c.key!r} that the {sc.name} scenario's "
                    f"workloads require (the first: {it.workload.name})", file=req.cluster,
                    field="--cluster" if req.cluster is not None else "--cluster-spec")
    sc.warnings.extend(f"{first}: prefers topology {key!r}, a label no node of the cluster "
                       "has: no locality for it (the first of its workloads)"
                       for key, first in unknown_preferred.items())


def trace_horizon(items: list[TraceItem]) -> float:
    """The end of the last finite job, and at least an hour after the last arrival."""
    if not items:
        return 3600.0
    last = max(it.arrival for it in items) + 3600.0
    return max([last] + [it.arrival + it.duration for it in items if it.duration is not None])


def load_cluster(path: Path) -> tuple[list[Node], list[str] | None]:
    """Nodes of a YAML file, and its Topology object's levels (None without one)."""
    inputs = load([path])
    if not inputs.nodes:
        raise InputError("no Node objects in the file", file=str(path))
    levels = inputs.topology_levels
    return inputs.nodes, list(levels) if levels is not None else None


def spec_cluster(spec: str) -> tuple[list[Node], list[str] | None]:
    try:
        levels = parse_levels_spec(spec)
        nodes = [parse_node(d) for d in generate_nodes(levels, parse_node_spec(DEFAULT_NODE))]
    except InputError as e:
        raise InputError(e.message, field="--cluster-spec") from None
    keys = [level_key(n) for n, _ in levels if level_key(n) != HOSTNAME]
    return nodes, keys
