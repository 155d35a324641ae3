"""Built-in scenarios: a cluster, a workload trace and a horizon, as a function of a seed.

- ``disagg`` (default): 512 nodes (4 zones x 8 blocks x 8 racks x 2 hosts, 8 GPUs each),
  a day of disaggregated inference deployments (prefill and decode roles of multi-pod
  replicas, minimum replicas below desired, rack/block/zone constraints, a CPU-only
  frontend role) arriving and leaving, mixed with lower-priority training gangs.
- ``training``: 512 nodes in racks of 8, a day of training gangs of 8-1,024 GPUs made of
  rack slices.
- ``perf-parity``: the shapes of the upstream kube-scheduler gang/topology performance
  tests: 5,000 CPU nodes in racks of 100; 4-pod gangs each inside one rack, and a few
  1,000-pod gangs, all submitted at once.

Every scenario takes keyword knobs (cluster size, hours, load) so tests can run small
versions; the knobs and their values are recorded in the result's parameters.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gangsched.api.objects import parse_node
from gangsched.api.types import Node
from gangsched.cluster.generate import generate_nodes, level_key
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


def cluster(levels: list[tuple[str, int]], node: dict[str, str]) -> tuple[list[Node], list[str]]:
    """Nodes of a generated topology and its level keys (widest first, without hosts)."""
    nodes = [parse_node(d) for d in generate_nodes(levels, node)]
    keys = [level_key(n) for n, _ in levels if level_key(n) != "kubernetes.io/hostname"]
    return nodes, keys


def _items(specs: list[WorkloadSpec]) -> list[TraceItem]:
    specs.sort(key=lambda s: s.arrival)
    return [build(s) for s in specs]


def _arrivals(rng: random.Random, n: int, until: float) -> list[float]:
    return sorted(round(rng.uniform(0.0, until), 1) for _ in range(n))


def _lifetime(rng: random.Random, mean_hours: float, low: float, high: float) -> float:
    """Log-normal duration in seconds with the given mean, clipped to [low, high] hours."""
    sigma = 0.8
    mu = math.log(mean_hours) - sigma * sigma / 2
    return round(min(high, max(low, rng.lognormvariate(mu, sigma))) * HOUR, 1)


# -- disagg -------------------------------------------------------------------------------


def _res(cpu: int, mem_gib: int, gpu: int = 0) -> dict[str, int]:
    out = {"cpu": cpu * 1000, "memory": mem_gib * GiB}
    if gpu:
        out[GPU] = gpu
    return out


def inference(rng: random.Random, name: str, arrival: float, wide: str,
              services: float = 0.3) -> WorkloadSpec:
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
    service = rng.random() < services
    return WorkloadSpec(
        name=name, arrival=arrival, roles=roles, priority=10, topology=topo,
        duration=None if service else _lifetime(rng, 6.0, 0.5, 20.0), kind="inference",
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
                        topology=topo, duration=_lifetime(rng, 3.0, 0.25, 12.0),
                        kind="training")


def disagg(seed: int = 0, *, zones: int = 4, blocks: int = 8, racks: int = 8, hosts: int = 2,
           hours: float = 24.0, load: float = 1.4, services: float = 0.3) -> Scenario:
    """``load`` scales the arrival rate; at 1.4 the cluster is busy enough that gangs
    queue (mean GPU allocation about 75%) without the backlog growing all day.
    ``services``: the share of inference deployments that never leave (they accumulate
    over runs longer than a day; lower it for multi-day runs)."""
    levels = [("zone", zones), ("block", blocks), ("rack", racks), ("host", hosts)]
    nodes, keys = cluster(levels, GPU_NODE)
    rng = random.Random(seed)
    horizon = hours * HOUR
    scale = load * len(nodes) / 512 * hours / 24
    n_inf, n_train = max(1, round(110 * scale)), max(1, round(140 * scale))
    until = horizon * 0.9
    block_pods = racks * hosts  # one 8-GPU pod per node
    specs = [inference(rng, f"infer-{i:04d}", t, level_key("zone"), services)
             for i, t in enumerate(_arrivals(rng, n_inf, until))]
    specs += [training_job(rng, f"train-{i:04d}", t, max_pods=min(32, block_pods),
                           slice_pods=hosts, narrow=level_key("block"),
                           wide=level_key("zone"), narrow_pods=block_pods)
              for i, t in enumerate(_arrivals(rng, n_train, until))]
    return Scenario(
        name="disagg",
        description=(
            f"{len(nodes)} nodes ({zones} zones x {blocks} blocks x {racks} racks x {hosts} "
            f"hosts, 8 GPUs each), {hours:g} h: {n_inf} disaggregated inference "
            f"deployments (prefill/decode/frontend, priority 10, {services:.0%} services) and "
            f"{n_train} "
            "training gangs in rack slices (priority 0)"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=horizon,
        parameters={"zones": zones, "blocks": blocks, "racks": racks, "hosts": hosts,
                    "hours": hours, "load": load, "services": services, "inference": n_inf,
                    "training": n_train},
    )


# -- training -----------------------------------------------------------------------------


def training(seed: int = 0, *, zones: int = 2, blocks: int = 4, racks: int = 8, hosts: int = 8,
             hours: float = 24.0, load: float = 1.0) -> Scenario:
    levels = [("zone", zones), ("block", blocks), ("rack", racks), ("host", hosts)]
    nodes, keys = cluster(levels, GPU_NODE)
    rng = random.Random(seed)
    horizon = hours * HOUR
    n = max(1, round(160 * load * len(nodes) / 512 * hours / 24))
    zone_pods = blocks * racks * hosts
    specs = [
        training_job(rng, f"train-{i:04d}", t, max_pods=min(128, zone_pods), slice_pods=hosts,
                     narrow=level_key("block"), wide=level_key("zone"),
                     narrow_pods=racks * hosts, priority=10 if rng.random() < 0.1 else 0)
        for i, t in enumerate(_arrivals(rng, n, horizon * 0.9))
    ]
    return Scenario(
        name="training",
        description=(
            f"{len(nodes)} nodes ({zones} zones x {blocks} blocks x {racks} racks x {hosts} "
            f"hosts, 8 GPUs each), {hours:g} h: {n} training gangs of 8-1,024 GPUs in rack "
            f"slices of {hosts} pods, 10% at high priority"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=horizon,
        parameters={"zones": zones, "blocks": blocks, "racks": racks, "hosts": hosts,
                    "hours": hours, "load": load, "jobs": n},
    )


# -- perf-parity --------------------------------------------------------------------------


def perf_parity(seed: int = 0, *, racks: int = 50, hosts: int = 100, small: int = 1500,
                large: int = 6, large_pods: int = 1000) -> Scenario:
    nodes, keys = cluster([("rack", racks), ("host", hosts)],
                          {"cpu": "4", "memory": "32Gi", "pods": "110"})
    rng = random.Random(seed)
    req = {"cpu": 100, "memory": 100 * MiB}
    specs = [
        WorkloadSpec(f"gang-{i:05d}", 0.0, [RoleSpec("w", replicas=4, requests=req)],
                     topology=Topology(required=level_key("rack")), kind="gang-4")
        for i in range(small)
    ]
    specs += [WorkloadSpec(f"big-{i:02d}", 0.0, [RoleSpec("w", replicas=large_pods,
                                                           requests=req)], kind="gang-1000")
              for i in range(large)]
    rng.shuffle(specs)
    for k, s in enumerate(specs):
        s.arrival = round(k * 0.001, 3)  # submitted in a burst, in a seeded order
    return Scenario(
        name="perf-parity",
        description=(
            f"{len(nodes)} nodes of 4 CPU / 32Gi / 110 pods in {racks} racks of {hosts}: "
            f"{small} gangs of 4 pods (100m, 100Mi) each inside one rack and {large} gangs of "
            f"{large_pods} pods, submitted at once (the upstream kube-scheduler gang and "
            "topology performance-test shapes)"
        ),
        nodes=nodes, levels=keys, items=_items(specs), specs=specs, horizon=600.0,
        parameters={"racks": racks, "hosts": hosts, "small": small, "large": large,
                    "large_pods": large_pods},
        sample_interval=10.0,
    )


SCENARIOS: dict[str, tuple[Callable[..., Scenario], str]] = {
    "disagg": (disagg, "512 GPU nodes, a day of disaggregated inference mixed with training "
                       "(default)"),
    "training": (training, "512 GPU nodes, a day of training gangs of 8-1,024 GPUs in rack "
                           "slices"),
    "perf-parity": (perf_parity, "5,000 CPU nodes, the kube-scheduler gang/topology "
                                 "performance-test shapes"),
}
DEFAULT = "disagg"


def make_scenario(name: str, seed: int = 0, **knobs: Any) -> Scenario:
    """Build a built-in scenario; raises KeyError for an unknown name."""
    fn, _ = SCENARIOS[name]
    return fn(seed, **knobs)
