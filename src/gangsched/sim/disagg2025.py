"""The Alibaba cluster-trace-v2025 disaggregated DLRM serving trace as a scenario
(``--scenario alibaba-disagg-2025``).

The trace (alibaba/clusterdata, cluster-trace-v2025; shipped gzipped in
``gangsched/data``, unchanged, under that repository's terms: cite it when you describe
results; or read from a directory holding the published ``disaggregated_DLRM_trace.csv``
and ``node_info_df.csv``, each perhaps gzip-compressed, every value checked) lists
23,871 instances of 156 recommendation-serving apps over about 31 days. Every app has
two roles that are only useful together: ``CN`` (CPU nodes, 48-96 cores, no GPU) and
``HN`` (heterogeneous GPU nodes, one GPU and 8-12 cores), each instance asking for
cores, memory, disk, RDMA and a cap of the role's instances on one node
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

import math
import random
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from gangsched.api.errors import InputError
from gangsched.api.types import Node
from gangsched.cluster.topology import HOSTNAME
from gangsched.sim import csvrows
from gangsched.sim.csvrows import integer, number, rows
from gangsched.sim.scenarios import Scenario
from gangsched.sim.trace import MAX_SECONDS, RoleSpec, WorkloadSpec, build

_T = TypeVar("_T")

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


INSTANCE_FILE = "disaggregated_DLRM_trace.csv"  # the published names, in a directory
NODE_FILE = "node_info_df.csv"
_INSTANCE_COLUMNS = ("instance_sn", "role", "app_name", "cpu_request", "gpu_request",
                     "rdma_request", "memory_request", "max_instance_per_node",
                     "creation_time", "deletion_time")
_NODE_COLUMNS = ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name")
MAX_CORES = 1_000_000  # larger values are mistakes, not machines
MAX_GPUS = 1024
MAX_GIB = 1 << 20  # a pebibyte
MAX_RDMA = 1_000_000
MAX_CAP = 1_000_000  # instances of a role on one node


def trace_files(directory: Path) -> tuple[Path, Path] | None:
    """The instance and node files of the trace in ``directory`` (each under its published
    name, or that name with ``.gz``); None when it holds no instance file."""
    found = []
    for name in (INSTANCE_FILE, NODE_FILE):
        plain, packed = directory / name, directory / f"{name}.gz"
        found.append(packed if packed.exists() and not plain.exists() else plain)
    return (found[0], found[1]) if found[0].exists() else None


def _packaged(name: str, read: Callable[[Path], _T]) -> _T:
    with resources.as_file(resources.files("gangsched.data").joinpath(name)) as path:
        return read(path)


def instances(path: Path | None = None) -> list[Instance]:
    """The trace's instances, from ``path`` (the published CSV, gzip-compressed or not) or
    the packaged copy."""
    if path is None:
        return _packaged(INSTANCES, instances)
    out = []
    seen: dict[str, int] = {}
    for line, row in rows(path, _INSTANCE_COLUMNS, "instances"):
        csvrows.name(path, line, row, "instance_sn", seen)
        created = number(path, line, row, "creation_time", 0, MAX_SECONDS, -1.0)
        deleted = number(path, line, row, "deletion_time", 0, MAX_SECONDS, -1.0)
        if 0 <= deleted < created:
            raise InputError(f"{deleted:g} is before creation_time {created:g}",
                             file=f"{path}:{line}", field="deletion_time")
        out.append(Instance(
            csvrows.name(path, line, row, "app_name"), csvrows.name(path, line, row, "role"),
            math.ceil(number(path, line, row, "cpu_request", 0, MAX_CORES)),
            integer(path, line, row, "gpu_request", 0, MAX_GPUS),
            integer(path, line, row, "rdma_request", 0, MAX_RDMA),
            number(path, line, row, "memory_request", 0, MAX_GIB),
            integer(path, line, row, "max_instance_per_node", -1, MAX_CAP),
            None if created < 0 else created, None if deleted < 0 else deleted))
    return out


def nodes(path: Path | None = None) -> list[Node]:
    """The trace's nodes, from ``path`` (the published CSV, gzip-compressed or not) or
    the packaged copy."""
    if path is None:
        return _packaged(NODES, nodes)
    out = []
    seen: dict[str, int] = {}
    for line, row in rows(path, _NODE_COLUMNS, "nodes"):
        name = f"node-{csvrows.name(path, line, row, 'node_name', seen)}"
        cores = integer(path, line, row, "cpu_num", 1, MAX_CORES)
        gpus = integer(path, line, row, "gpu_capacity_num", 0, MAX_GPUS)
        model = (row.get("gpu_model") or "").strip() or "none"
        out.append(Node(name, {HOSTNAME: name, MODEL_LABEL: model},
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
               load: float = 1.0, scale: float = 1.0, source: Path | None = None
               ) -> Scenario:
    """The scenario above; ``source``: a directory with the published CSV files (see
    :func:`trace_files`) instead of the packaged copy."""
    start, end = seed * days * DAY, (seed + 1) * days * DAY
    rng = random.Random(seed)
    if source is None:
        all_nodes, every = nodes(), instances()
    else:
        files = trace_files(source)
        if files is None:
            raise InputError(f"holds no {INSTANCE_FILE}", file=str(source))
        every, all_nodes = instances(files[0]), nodes(files[1])
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
    params: dict[str, Any] = {**({"source": str(source)} if source is not None else {}),
                              "days": days, "window_start_days": start / DAY,
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
