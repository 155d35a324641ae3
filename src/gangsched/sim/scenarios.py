"""Built-in scenarios: a cluster, a workload trace and a horizon, as a function of a seed
and a load factor.

Every scenario is a steady stream: workloads arrive as a Poisson process and leave after
a finite run time, so allocation settles; the first ``warmup`` seconds are left out of
the metrics. The arrival rate is *calibrated*: at ``load = 1.0`` the GPU-hours the
arriving workloads ask for (every replica they desire, for their whole run time) equal
the cluster's GPU-hours over the same time, i.e. 100% of capacity is offered (measured
on a large fixed sample of the scenario's own workload mix, so the same for every seed).
``--load 0.7`` offers 70%, ``--load 1.1`` 110% (more than fits: queues grow).

- ``disagg`` (default): 256 nodes (2 zones x 8 blocks x 8 racks x 2 hosts, 8 GPUs each),
  disaggregated inference deployments (prefill and decode roles of multi-pod replicas,
  minimum replicas below desired, rack/block/zone constraints, a CPU-only frontend role)
  mixed with lower-priority training gangs in rack slices.
- ``training``: 256 nodes in racks of 8, training gangs of 8-512 GPUs made of rack
  slices, 10% at high priority.
- ``perf-parity``: the shapes of the upstream kube-scheduler gang/topology performance
  tests: 5,000 CPU nodes (4 cores each) in racks of 100; 4-pod gangs each inside one rack
  and a few 1,000-pod gangs, all submitted at once. No GPUs: its "GPU" metrics measure
  CPU cores.

Every scenario takes keyword knobs (cluster size, hours) so tests can run small
versions; the knobs and their values are recorded in the result's parameters.
:func:`check_knobs` checks them against :data:`KNOBS` (their types and ranges) before a
scenario is built: an unknown knob, a wrong type, a value out of range, a cluster of more
than a million nodes or a stream of more than :data:`MAX_ARRIVALS` workloads is a
one-line error naming the knob.
"""

from __future__ import annotations

import functools
import inspect
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gangsched.api.errors import InputError
from gangsched.api.objects import parse_node
from gangsched.api.types import Node
from gangsched.cluster.generate import MAX_NODES, generate_nodes, level_key
from gangsched.sim.trace import RoleSpec, Topology, TraceItem, WorkloadSpec, build

GPU = "nvidia.com/gpu"
GiB = 1 << 30
MiB = 1 << 20
HOUR = 3600.0
GPU_NODE = {"cpu": "128", "memory": "1Ti", GPU: "8", "pods": "110"}


@dataclass
class Scenario:
    name: str
    description: str
    nodes: list[Node]
    levels: list[str]  # topology label keys, widest first
    items: list[TraceItem]
    horizon: float  # simulated seconds
    parameters: dict[str, Any] = field(default_factory=dict)
    specs: list[WorkloadSpec] = field(default_factory=list)  # role-form items, for --save
    gpu_resource: str = GPU  # what "GPU" means in the metrics
    gpu_scale: float = 1.0  # units of gpu_resource per GPU
    sample_interval: float = 60.0
    warmup: float = 0.0  # simulated seconds before the metrics start
    warnings: list[str] = field(default_factory=list)  # about the inputs, for the user


def cluster(levels: list[tuple[str, int]], node: dict[str, str]) -> tuple[list[Node], list[str]]:
    """Nodes of a generated topology and its level keys (widest first, without hosts)."""
    nodes = [parse_node(d) for d in generate_nodes(levels, node)]
    keys = [level_key(n) for n, _ in levels if level_key(n) != "kubernetes.io/hostname"]
    return nodes, keys


def _items(specs: list[WorkloadSpec]) -> list[TraceItem]:
    specs.sort(key=lambda s: s.arrival)
    return [build(s) for s in specs]


def _lifetime(rng: random.Random, mean_hours: float, low: float, high: float) -> float:
    """Log-normal duration in seconds with the given mean, clipped to [low, high] hours."""
    sigma = 0.8
    mu = math.log(mean_hours) - sigma * sigma / 2
    return round(min(high, max(low, rng.lognormvariate(mu, sigma))) * HOUR, 1)


# -- calibrated arrivals ---------------------------------------------------------------

Draw = Callable[[random.Random, str, float], WorkloadSpec]
CALIBRATION = 4000  # workloads drawn to measure the mix's mean demand
CALIBRATION_SEED = 20_251_123


def offered_gpu_seconds(spec: WorkloadSpec, gpu: str = GPU) -> float:
    """GPU-seconds a workload asks for: every desired pod, for its whole run time."""
    per_run = 0
    for r in spec.roles:
        pods = r.replicas * r.pods_per_replica
        per_run += pods * r.requests.get(gpu, 0)
        if r.entry_requests is not None:
            per_run += r.replicas * (r.entry_requests.get(gpu, 0) - r.requests.get(gpu, 0))
    return per_run * (spec.duration or 0.0)


@functools.lru_cache(maxsize=32)
def _mean_offered(draw: Draw, gpu: str) -> float:
    rng = random.Random(CALIBRATION_SEED)
    total = sum(offered_gpu_seconds(draw(rng, f"c-{i}", 0.0), gpu) for i in range(CALIBRATION))
    return total / CALIBRATION


def arrival_rate(draw: Draw, gpus: int, load: float, gpu: str = GPU) -> float:
    """Arrivals per second that offer ``load`` x the cluster's GPUs (see the module doc)."""
    return load * gpus / _mean_offered(draw, gpu)


MAX_ARRIVALS = 200_000  # workloads a scenario's stream may hold


def poisson(rng: random.Random, rate: float, until: float) -> list[float]:
    """Arrival times of a Poisson process of ``rate`` per second over [0, until)."""
    expected = rate * until
    if expected > MAX_ARRIVALS:
        raise InputError(f"about {expected:,.0f} workloads would arrive; at most "
                         f"{MAX_ARRIVALS:,} (lower --load or the hours)", field="--param")
    out: list[float] = []
    t = rng.expovariate(rate)
    while t < until:
        out.append(round(t, 1))
        t += rng.expovariate(rate)
    return out


def stream(draw: Draw, rng: random.Random, prefix: str, rate: float,
           until: float) -> list[WorkloadSpec]:
    return [draw(rng, f"{prefix}-{i:05d}", t) for i, t in enumerate(poisson(rng, rate, until))]


# -- disagg -------------------------------------------------------------------------------


def _res(cpu: int, mem_gib: int, gpu: int = 0) -> dict[str, int]:
    out = {"cpu": cpu * 1000, "memory": mem_gib * GiB}
    if gpu:
        out[GPU] = gpu
    return out


def inference(rng: random.Random, name: str, arrival: float, wide: str) -> WorkloadSpec:
    """A disaggregated inference deployment: prefill, decode, frontend."""
    size = rng.choices(("small", "medium", "large"), weights=(5, 3, 2))[0]
    frontend = RoleSpec("frontend", replicas=2, min_replicas=1, requests=_res(4, 8))
    if size == "small":
        pr = rng.randint(1, 3)
        dr = rng.randint(1, 4)
        roles = [
            RoleSpec("prefill", replicas=pr, min_replicas=1, requests=_res(16, 128, 8)),
            RoleSpec("decode", replicas=dr, min_replicas=1, requests=_res(8, 64, 4),
                     max_pods_per_node=2, topology=Topology(preferred=level_key("rack"))),
            frontend,
        ]
        topo = Topology(required=level_key("block"))
    elif size == "medium":
        pr = rng.randint(2, 3)
        dr = rng.randint(2, 5)
        roles = [
            RoleSpec("prefill", replicas=pr, min_replicas=1, pods_per_replica=2,
                     requests=_res(16, 128, 8), entry_requests=_res(24, 160, 8),
                     replica_topology=Topology(required=level_key("rack"))),
            RoleSpec("decode", replicas=dr, min_replicas=2, requests=_res(8, 64, 4),
                     max_pods_per_node=2, topology=Topology(preferred=level_key("rack"))),
            frontend,
        ]
        topo = Topology(required=level_key("block"))
    else:
        pr = rng.randint(2, 4)
        dr = rng.randint(2, 4)
        roles = [
            RoleSpec("prefill", replicas=pr, min_replicas=1, pods_per_replica=2,
                     requests=_res(16, 128, 8),
                     replica_topology=Topology(required=level_key("rack")),
                     topology=Topology(preferred=level_key("block"))),
            RoleSpec("decode", replicas=dr, min_replicas=1, pods_per_replica=2,
                     requests=_res(16, 128, 8),
                     replica_topology=Topology(required=level_key("rack")),
                     topology=Topology(preferred=level_key("block"))),
            frontend,
        ]
        topo = Topology(required=wide)
    return WorkloadSpec(
        name=name, arrival=arrival, roles=roles, priority=10, topology=topo,
        duration=_lifetime(rng, 3.0, 0.5, 12.0), kind="inference",
    )


def training_job(rng: random.Random, name: str, arrival: float, max_pods: int,
                 slice_pods: int, narrow: str, wide: str, narrow_pods: int,
                 priority: int = 0) -> WorkloadSpec:
    """A training gang of 8-GPU pods in rack slices (all slices required)."""
    sizes = [s for s in (1, 2, 4, 8, 16, 32, 64, 128) if s <= max_pods]
    pods = rng.choices(sizes, weights=[6, 6, 5, 4, 3, 2, 1, 1][: len(sizes)])[0]
    per = min(slice_pods, pods)
    role = RoleSpec(
        "worker", replicas=pods // per, pods_per_replica=per, requests=_res(96, 800, 8),
        replica_topology=Topology(required=level_key("rack")) if per > 1 else Topology(),
    )
    topo = Topology(required=narrow if pods <= narrow_pods else wide)
    return WorkloadSpec(name=name, arrival=arrival, roles=[role], priority=priority,
                        topology=topo, duration=_lifetime(rng, 2.0, 0.25, 8.0),
                        kind="training")


@dataclass(frozen=True)
class _DisaggMix:
    """A disagg workload: inference with probability ``share``, else a training gang."""

    share: float
    block_pods: int
    hosts: int

    def __call__(self, rng: random.Random, name: str, arrival: float) -> WorkloadSpec:
        if rng.random() < self.share:
            return inference(rng, f"infer-{name}", arrival, level_key("zone"))
        return training_job(rng, f"train-{name}", arrival, max_pods=min(32, self.block_pods),
                            slice_pods=self.hosts, narrow=level_key("block"),
                            wide=level_key("zone"), narrow_pods=self.block_pods)


def disagg(seed: int = 0, *, zones: int = 2, blocks: int = 8, racks: int = 8, hosts: int = 2,
           hours: float = 24.0, warmup_hours: float = 6.0, load: float = 1.0,
           inference_share: float = 0.45) -> Scenario:
    """``inference_share`` of the arriving workloads are inference deployments (priority
    10), the rest training gangs (priority 0)."""
    levels = [("zone", zones), ("block", blocks), ("rack", racks), ("host", hosts)]
    nodes, keys = cluster(levels, GPU_NODE)
    rng = random.Random(seed)
    horizon = hours * HOUR
    mix = _DisaggMix(inference_share, racks * hosts, hosts)
    rate = arrival_rate(mix, 8 * len(nodes), load)
    specs = stream(mix, rng, "w", rate, horizon)
    n_inf = sum(1 for x in specs if x.kind == "inference")
    return Scenario(
        name="disagg",
        description=(
            f"{len(nodes)} nodes ({zones} zones x {blocks} blocks x {racks} racks x {hosts} "
            f"hosts, 8 GPUs each), {hours:g} h at {load:.0%} of GPU capacity offered "
            f"(first {warmup_hours:g} h warm-up): {n_inf} disaggregated inference "
            f"deployments (prefill/decode/frontend, priority 10) and {len(specs) - n_inf} "
            "training gangs in rack slices (priority 0)"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=horizon,
        warmup=warmup_hours * HOUR,
        parameters={"zones": zones, "blocks": blocks, "racks": racks, "hosts": hosts,
                    "hours": hours, "warmup_hours": warmup_hours, "load": load,
                    "inference_share": inference_share, "inference": n_inf,
                    "training": len(specs) - n_inf,
                    "arrivals_per_hour": round(rate * HOUR, 3)},
    )


# -- training -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _TrainingMix:
    zone_pods: int
    rack_pods: int
    hosts: int

    def __call__(self, rng: random.Random, name: str, arrival: float) -> WorkloadSpec:
        return training_job(rng, f"train-{name}", arrival, max_pods=min(64, self.zone_pods),
                            slice_pods=self.hosts, narrow=level_key("block"),
                            wide=level_key("zone"), narrow_pods=self.rack_pods,
                            priority=10 if rng.random() < 0.1 else 0)


def training(seed: int = 0, *, zones: int = 2, blocks: int = 4, racks: int = 4,
             hosts: int = 8, hours: float = 24.0, warmup_hours: float = 6.0,
             load: float = 1.0) -> Scenario:
    levels = [("zone", zones), ("block", blocks), ("rack", racks), ("host", hosts)]
    nodes, keys = cluster(levels, GPU_NODE)
    rng = random.Random(seed)
    horizon = hours * HOUR
    mix = _TrainingMix(blocks * racks * hosts, racks * hosts, hosts)
    rate = arrival_rate(mix, 8 * len(nodes), load)
    specs = stream(mix, rng, "w", rate, horizon)
    return Scenario(
        name="training",
        description=(
            f"{len(nodes)} nodes ({zones} zones x {blocks} blocks x {racks} racks x {hosts} "
            f"hosts, 8 GPUs each), {hours:g} h at {load:.0%} of GPU capacity offered "
            f"(first {warmup_hours:g} h warm-up): {len(specs)} training gangs of 8-512 GPUs "
            f"in rack slices of {hosts} pods, 10% at high priority"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=horizon,
        warmup=warmup_hours * HOUR,
        parameters={"zones": zones, "blocks": blocks, "racks": racks, "hosts": hosts,
                    "hours": hours, "warmup_hours": warmup_hours, "load": load,
                    "jobs": len(specs), "arrivals_per_hour": round(rate * HOUR, 3)},
    )


# -- perf-parity --------------------------------------------------------------------------


def perf_parity(seed: int = 0, *, racks: int = 50, hosts: int = 100, small: int = 1500,
                large: int = 6, large_pods: int = 1000, load: float = 1.0) -> Scenario:
    """``load`` scales the number of gangs (a burst: there is no arrival rate)."""
    nodes, keys = cluster([("rack", racks), ("host", hosts)],
                          {"cpu": "4", "memory": "32Gi", "pods": "110"})
    rng = random.Random(seed)
    req = {"cpu": 100, "memory": 100 * MiB}
    n_small, n_large = max(1, round(small * load)), max(0, round(large * load))
    specs = [
        WorkloadSpec(f"gang-{i:05d}", 0.0, [RoleSpec("w", replicas=4, requests=req)],
                     topology=Topology(required=level_key("rack")), kind="gang-4")
        for i in range(n_small)
    ]
    specs += [WorkloadSpec(f"big-{i:02d}", 0.0, [RoleSpec("w", replicas=large_pods,
                                                           requests=req)], kind="gang-1000")
              for i in range(n_large)]
    rng.shuffle(specs)
    for k, s in enumerate(specs):
        s.arrival = round(k * 0.001, 3)  # submitted in a burst, in a seeded order
    return Scenario(
        name="perf-parity",
        description=(
            f"{len(nodes)} nodes of 4 CPU / 32Gi / 110 pods in {racks} racks of {hosts}: "
            f"{n_small} gangs of 4 pods (100m, 100Mi) each inside one rack and {n_large} "
            f"gangs of {large_pods} pods, submitted at once (the upstream kube-scheduler "
            "gang and topology performance-test shapes); no GPUs: the GPU metrics count "
            "CPU cores"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=600.0,
        parameters={"racks": racks, "hosts": hosts, "small": n_small, "large": n_large,
                    "large_pods": large_pods, "load": load},
        gpu_resource="cpu", gpu_scale=1000.0, sample_interval=10.0,
    )


SCENARIOS: dict[str, tuple[Callable[..., Scenario], str]] = {
    "disagg": (disagg, "256 GPU nodes, disaggregated inference mixed with training, "
                       "steady load (default)"),
    "training": (training, "256 GPU nodes, training gangs of 8-512 GPUs in rack slices, "
                           "steady load"),
    "perf-parity": (perf_parity, "5,000 CPU nodes, the kube-scheduler gang/topology "
                                 "performance-test shapes"),
}
DEFAULT = "disagg"


def _alibaba_disagg(seed: int = 0, *, days: float = 2.0, warmup_hours: float = 6.0,
                    load: float = 1.0, scale: float = 1.0) -> Scenario:
    from gangsched.sim.disagg2025 import disagg2025

    return disagg2025(seed, days=days, warmup_hours=warmup_hours, load=load, scale=scale)


SCENARIOS["alibaba-disagg-2025"] = (
    _alibaba_disagg, "the Alibaba v2025 disaggregated DLRM trace (4,278 nodes, CN and HN "
                     "roles of 156 apps), 2 real days per seed")


# -- knobs --------------------------------------------------------------------------------

MAX_HOURS = 366 * 24.0  # a simulated year
TRACE_DAYS = 31.0  # the span of the Alibaba v2025 trace (its last event: day 30.99)
MAX_SCENARIO_PODS = 1_000_000


@dataclass(frozen=True)
class Knob:
    """A scenario knob's type and range (``low_open``: ``low`` itself is not allowed)."""

    kind: type[int] | type[float]
    low: float
    high: float
    low_open: bool = False


_LEVEL = Knob(int, 1, MAX_NODES)
_HOURS = Knob(float, 0, MAX_HOURS, low_open=True)
_WARMUP = Knob(float, 0, MAX_HOURS)
KNOBS: dict[str, dict[str, Knob]] = {
    "disagg": {"zones": _LEVEL, "blocks": _LEVEL, "racks": _LEVEL, "hosts": _LEVEL,
               "hours": _HOURS, "warmup_hours": _WARMUP, "inference_share": Knob(float, 0, 1)},
    "training": {"zones": _LEVEL, "blocks": _LEVEL, "racks": _LEVEL, "hosts": _LEVEL,
                 "hours": _HOURS, "warmup_hours": _WARMUP},
    "perf-parity": {"racks": _LEVEL, "hosts": _LEVEL, "small": Knob(int, 0, MAX_SCENARIO_PODS),
                    "large": Knob(int, 0, MAX_SCENARIO_PODS),
                    "large_pods": Knob(int, 1, MAX_SCENARIO_PODS)},
    "alibaba-disagg-2025": {"days": Knob(float, 0, TRACE_DAYS, low_open=True),
                            "warmup_hours": Knob(float, 0, TRACE_DAYS * 24),
                            "scale": Knob(float, 0, 1, low_open=True)},
}


def _knob_value(key: str, value: object, knob: Knob) -> float:
    def bad(message: str) -> InputError:
        return InputError(f"{key}: {message}", field="--param")

    if knob.kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise bad(f"must be an integer, got {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value):
        raise bad(f"must be a finite number, got {value!r}")
    if value < knob.low or (knob.low_open and value == knob.low):
        raise bad(f"must be {'>' if knob.low_open else '>='} {knob.low:g}, got {value:g}")
    if value > knob.high:
        raise bad(f"must be at most {knob.high:g}, got {value:g}")
    return float(value)


def check_knobs(name: str, knobs: dict[str, Any], seed: int = 0, load: float = 1.0) -> None:
    """The scenario's knobs checked (types, ranges, and what they add up to), before the
    scenario is built; every mistake is an :class:`InputError` on ``--param``."""
    table = KNOBS.get(name)
    if table is None:
        return
    for key, value in knobs.items():
        if key not in table:
            hint = " (set with --seed)" if key == "seed" else ""
            raise InputError(f"unknown knob {key!r} for scenario {name}{hint}; its knobs: "
                             f"{', '.join(table)}", field="--param")
        _knob_value(key, value, table[key])
    fn, _ = SCENARIOS[name]
    v = {k: p.default for k, p in inspect.signature(fn).parameters.items()
         if p.default is not inspect.Parameter.empty} | knobs
    levels = [k for k in ("zones", "blocks", "racks", "hosts") if k in table]
    nodes = math.prod(v[k] for k in levels)
    if nodes > MAX_NODES:
        raise InputError(f"{' x '.join(f'{k}={v[k]}' for k in levels)} makes {nodes:,} nodes; "
                         f"at most {MAX_NODES:,}", field="--param")
    hours = v["days"] * 24 if "days" in table else v.get("hours")
    if hours is not None and v.get("warmup_hours", 0) >= hours:
        span = f"days={v['days']:g}" if "days" in table else f"hours={hours:g}"
        raise InputError(f"warmup_hours: must be shorter than the run ({span}), got "
                         f"{v['warmup_hours']:g}", field="--param")
    if name == "perf-parity":
        pods = 4 * max(1, round(v["small"] * load)) + round(v["large"] * load) * v["large_pods"]
        if pods > MAX_SCENARIO_PODS:
            raise InputError(f"small, large and large_pods make {pods:,} pods; at most "
                             f"{MAX_SCENARIO_PODS:,}", field="--param")
    if name == "alibaba-disagg-2025" and seed * v["days"] >= TRACE_DAYS:
        last = math.ceil(TRACE_DAYS / v["days"]) - 1
        raise InputError(f"seed {seed} would replay days {seed * v['days']:g}-"
                         f"{(seed + 1) * v['days']:g}, after the end of the trace "
                         f"({TRACE_DAYS:g} days: seeds 0-{last} with days={v['days']:g})",
                         field="--seed")


def make_scenario(name: str, seed: int = 0, **knobs: Any) -> Scenario:
    """Build a built-in scenario; raises KeyError for an unknown name."""
    fn, _ = SCENARIOS[name]
    return fn(seed, **knobs)
