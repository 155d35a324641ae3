"""The Alibaba cluster-trace-v2025 disaggregated DLRM serving trace as a scenario
(``--scenario alibaba-disagg-2025``).

The trace (alibaba/clusterdata, cluster-trace-v2025; shipped gzipped in
``gangsched/data``, unchanged, under that repository's terms: cite it when you describe
results) lists 23,871 instances of 156 recommendation-serving apps over about 31 days.
Every app has two roles that are only useful together: ``CN`` (CPU nodes, 48-96 cores,
no GPU) and ``HN`` (heterogeneous GPU nodes, one GPU and 8-12 cores), each instance
asking for cores, memory, disk, RDMA and a cap of the role's instances on one node
(``max_instance_per_node``, -1 for none). The node list gives GPU model and count and
cores for 4,278 nodes.

How it becomes a gang workload:

- **Windows.** Seed k replays days [k x days, (k+1) x days) of the trace (default: 2 days
  per window), so several seeds are several stretches of the real trace.
- **Apps at the window's start.** The instances alive at its start form, per app, one
  deployment arriving at time 0: a root that needs every role present, each role all of
  its instances (a rollout under a gang scheduler: the configured counts, all or
  nothing). It stays for the window (few apps leave: deletions of these instances inside
  the window are not replayed).
- **Scale-ups.** Instances created inside the window arrive at their creation time,
  grouped per app and creation second (one scale-up step, all or nothing), and leave at
  their last deletion time (or stay).
- ``--load F`` replays each scale-up step F times on average (thinned or repeated at
  random); the deployments at the start are always replayed once.

What the trace does not give, and what is assumed here: **memory** 8 GiB per core (1 TiB
for the 128-core nodes, 1.5 TiB for the 192-core ones; the instances ask for 40-480 GiB);
**RDMA** 100 units per node (``gangsched.io/rdma``; the instances ask for 1, 25, 51 or
100: read as percent of one NIC); **disk** is not modelled; 110 pods per node; no
topology (no rack or block is published), so every node is its own domain. ``scale``
keeps a random share of the nodes and of the apps (the same share of each), for quick
runs. CPU cores, not GPUs, are what this trace's pods compete for (the peak asks for two
thirds of the cores and a third of the GPUs), so the report's "GPU" metrics count cores
here.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import random
from collections import defaultdict
from dataclasses import dataclass
from importlib import resources
from typing import Any

from gangsched.api.types import Node
from gangsched.cluster.topology import HOSTNAME
from gangsched.sim.scenarios import Scenario
from gangsched.sim.trace import RoleSpec, WorkloadSpec, build

DAY = 86400.0
GiB = 1 << 30
GPU = "nvidia.com/gpu"
RDMA = "gangsched.io/rdma"
MODEL_LABEL = "gangsched.io/gpu-model"
MEMORY_PER_CORE = 8 * GiB
RDMA_PER_NODE = 100
INSTANCES = "alibaba-disagg-2025-instances.csv.gz"
NODES = "alibaba-disagg-2025-nodes.csv.gz"
ROLE_NAMES = {"CN": "cn", "HN": "hn"}


@dataclass(frozen=True)
class Instance:
    app: str
    role: str  # CN or HN
    cpu: int  # cores
    gpu: int
    rdma: int
    memory_gib: float
    cap: int  # max instances of its role on one node, -1: none
    created: float | None  # None: present when the trace starts
    deleted: float | None  # None: never deleted within the trace


def _rows(name: str) -> list[dict[str, str]]:
    data = resources.files("gangsched.data").joinpath(name).read_bytes()
    with gzip.open(io.BytesIO(data), "rt", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _time(text: str) -> float | None:
    return float(text) if text.strip() else None


def instances() -> list[Instance]:
    return [Instance(r["app_name"], r["role"], math.ceil(float(r["cpu_request"])),
                     int(float(r["gpu_request"])), int(float(r["rdma_request"])),
                     float(r["memory_request"]), int(float(r["max_instance_per_node"])),
                     _time(r["creation_time"]), _time(r["deletion_time"]))
            for r in _rows(INSTANCES)]


def nodes() -> list[Node]:
    out = []
    for r in _rows(NODES):
        name = f"node-{r['node_name']}"
        cores = int(r["cpu_num"])
        gpus = int(r["gpu_capacity_num"])
        out.append(Node(name, {HOSTNAME: name, MODEL_LABEL: r["gpu_model"]},
                        allocatable={"cpu": cores * 1000, "memory": cores * MEMORY_PER_CORE,
                                     GPU: gpus, RDMA: RDMA_PER_NODE, "pods": 110}))
    return out


def _roles(group: list[Instance]) -> list[RoleSpec]:
    by_role: dict[str, list[Instance]] = defaultdict(list)
    for inst in group:
        by_role[inst.role].append(inst)
    out = []
    for role in sorted(by_role):
        members = by_role[role]
        first = members[0]
        req: dict[str, int] = {"cpu": first.cpu * 1000,
                               "memory": math.ceil(first.memory_gib * GiB)}
        if first.gpu:
            req[GPU] = first.gpu
        if first.rdma:
            req[RDMA] = first.rdma
        cap = max(m.cap for m in members)
        out.append(RoleSpec(ROLE_NAMES.get(role, role.lower()), replicas=len(members),
                            requests=req, max_pods_per_node=cap if cap > 0 else None))
    return out


def _slug(app: str) -> str:
    return app.replace("_", "-").lower()


def disagg2025(seed: int = 0, *, days: float = 2.0, warmup_hours: float = 6.0,
               load: float = 1.0, scale: float = 1.0) -> Scenario:
    start, end = seed * days * DAY, (seed + 1) * days * DAY
    rng = random.Random(seed)
    all_nodes = nodes()
    every = instances()
    apps = sorted({i.app for i in every})
    if scale < 1.0:
        keep = random.Random(12_345)
        all_nodes = [n for n in all_nodes if keep.random() < scale]
        apps = [a for a in apps if keep.random() < scale]
    chosen = set(apps)
    alive: dict[str, list[Instance]] = defaultdict(list)
    steps: dict[tuple[str, float], list[Instance]] = defaultdict(list)
    for inst in every:
        if inst.app not in chosen:
            continue
        created = inst.created if inst.created is not None else -1.0
        if created <= start and (inst.deleted is None or inst.deleted > start):
            alive[inst.app].append(inst)
        elif start < created < end:
            steps[(inst.app, created)].append(inst)
    specs: list[WorkloadSpec] = []
    for app in sorted(alive):
        specs.append(WorkloadSpec(f"{_slug(app)}-base", 0.0, _roles(alive[app]),
                                  kind="deployment"))
    for (app, created), group in sorted(steps.items()):
        stops = [i.deleted for i in group]
        last = None if any(d is None for d in stops) else max(d for d in stops if d is not None)
        duration = None if last is None else max(1.0, last - created)
        copies = int(load) + (1 if rng.random() < load - int(load) else 0)
        for k in range(copies):
            specs.append(WorkloadSpec(f"{_slug(app)}-up-{int(created)}" + (f"-x{k}" if k else ""),
                                      round(created - start, 1), _roles(group),
                                      duration=duration, kind="scale-up"))
    specs.sort(key=lambda s: (s.arrival, s.name))
    items = [build(s) for s in specs]
    params: dict[str, Any] = {"days": days, "window_start_days": start / DAY,
                              "warmup_hours": warmup_hours, "load": load, "scale": scale,
                              "apps": len(alive), "scale_ups": len(specs) - len(alive),
                              "memory_per_core_gib": MEMORY_PER_CORE // GiB,
                              "rdma_per_node": RDMA_PER_NODE}
    return Scenario(
        name="alibaba-disagg-2025",
        description=(
            f"Alibaba cluster-trace-v2025 disaggregated DLRM serving, days "
            f"{start / DAY:g}-{end / DAY:g}: {len(all_nodes):,} nodes, {len(alive)} app "
            f"deployments (CN and HN roles, every instance required) at the start and "
            f"{len(specs) - len(alive)} scale-up steps; memory 8 GiB per core and 100 RDMA "
            "units per node assumed (not in the trace); the GPU metrics count CPU cores, "
            "the resource these pods compete for"),
        nodes=all_nodes, levels=[], items=items, horizon=days * DAY,
        parameters=params, specs=specs, warmup=warmup_hours * 3600.0,
        sample_interval=max(60.0, days * DAY / 1440),
        gpu_resource="cpu", gpu_scale=1000.0,  # cores bind here, not GPUs: measure them
    )
