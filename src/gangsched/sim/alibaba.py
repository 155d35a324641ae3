"""Loader for the Alibaba cluster-trace-gpu-v2023 (``openb``) node and pod lists.

Files (CSV with a header row):

- ``openb_node_list_all_node.csv``: ``sn, cpu_milli, memory_mib, gpu, model``
- ``openb_pod_list_default.csv``: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli,
  gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``

The published data has 18 more pod lists beside the default one, sampled from it or
augmented (``openb_pod_list_cpu050.csv``, ``..._gpushare40.csv``, ``..._gpuspec33.csv``,
``..._multigpu50.csv``, ...), and a node list of the GPU nodes alone
(``openb_node_list_gpu_node.csv``). ``--alibaba`` takes a directory (the default list, or
its only pod list; a ``csv/`` folder of a checkout of the data is looked in too) or one pod
list file; the node list is the one beside it (every node, else the GPU nodes).

Nodes become :class:`Node` objects with one hostname each (the trace publishes no
topology, so there are no wider levels) and the label ``gangsched.io/gpu-model``. Every
pod becomes a single-pod unit arriving at ``creation_time`` (seconds). Its run time is
``deletion_time - scheduled_time`` (``- creation_time`` for pods the real cluster never
scheduled), at least one second; a pod still present when the trace was taken (its
deletion time is the largest in the file) is a service that runs to the end. The trace is
replayed in its own time (about 149 days for the default list, most pods in the last
month and short-lived), so time-averaged allocation over the whole horizon is low.

**Lists without times.** The ``multigpu`` lists have no time columns (``name, cpu_milli,
memory_mib, num_gpu, gpu_milli``): the trace's own simulator submits their pods one by
one in a shuffled order and none finishes: how full the cluster gets is the measure.
They are replayed that way: every pod is submitted at the start, in the order seed k
shuffles the list to (the queue takes them in that order), and runs to the end.

**Fractional GPUs.** About a third of the pods ask for part of one GPU (``num_gpu = 1``,
``gpu_milli < 1000``; GPU sharing). The gang tree has no notion of devices, so GPUs are
modelled in two resources:

- every node offers ``gangsched.io/gpu-milli = 1000 x gpu`` next to ``nvidia.com/gpu``;
- a whole-GPU pod (``gpu_milli = 1000``) requests ``nvidia.com/gpu: num_gpu`` *and*
  ``gangsched.io/gpu-milli: 1000 x num_gpu``;
- a fractional pod requests only ``gangsched.io/gpu-milli: gpu_milli``.

Milli-GPUs are therefore the binding GPU resource: a whole-GPU pod does not fit where
fractional pods already use the capacity it would need. The model is optimistic in one
way: it assumes the node's GPU-sharing layer packs fractions onto devices perfectly
(0.6 + 0.6 would really need two devices; here it uses 1.2 GPUs' worth of milli). GPU
allocation in reports is counted in milli-GPUs / 1000 for this trace. ``gpu_spec`` (a
GPU model list such as ``V100M16|V100M32``, empty in the published default list) becomes
required node affinity on the model label.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from gangsched.api.errors import InputError
from gangsched.api.types import (
    NO_REQUIREMENTS,
    Node,
    NodeRequirements,
    NodeSelectorTerm,
    Pod,
    Requirement,
)
from gangsched.cluster.topology import HOSTNAME
from gangsched.gang import PodSet, podsets
from gangsched.model import Workload
from gangsched.sim import csvrows
from gangsched.sim.scenarios import Scenario
from gangsched.sim.trace import MAX_SECONDS, TraceItem

NODE_FILE = "openb_node_list_all_node.csv"
GPU_NODE_FILE = "openb_node_list_gpu_node.csv"  # the GPU nodes alone
POD_FILE = "openb_pod_list_default.csv"
POD_LISTS = "openb_pod_list_*.csv"
GPU = "nvidia.com/gpu"
GPU_MILLI = "gangsched.io/gpu-milli"
MODEL_LABEL = "gangsched.io/gpu-model"
MiB = 1 << 20
PODS_PER_NODE = 110
NAMESPACE = "openb"

_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
_TIME_COLUMNS = ("creation_time", "deletion_time", "scheduled_time")  # none, or all three


# the largest value a column may hold (larger ones are mistakes, not machines)
LIMITS: dict[str, float] = {
    "cpu_milli": 10**9,  # a million cores
    "memory_mib": 2**30,  # a pebibyte
    "gpu": 1024,
    "num_gpu": 1024,
    "gpu_milli": 1000,  # thousandths of one GPU
    "creation_time": MAX_SECONDS,
    "deletion_time": MAX_SECONDS,
    "scheduled_time": MAX_SECONDS,
}


@dataclass
class AlibabaTrace:
    nodes: list[Node]
    items: list[TraceItem]
    horizon: float  # the last deletion time (seconds); for a list without times, its pods
    timed: bool = True  # False: a list without times (its items arrive 0, 1, 2, ... s)
    source: str = ""  # the pod list read


def _int(path: Path, line: int, row: dict[str, str], col: str, default: int | None = None
         ) -> int:
    """A whole number in [0, the column's limit]."""
    return csvrows.integer(path, line, row, col, 0, LIMITS.get(col, math.inf), default)


def load_nodes(path: Path) -> list[Node]:
    nodes = []
    seen: dict[str, int] = {}
    for line, row in csvrows.rows(path, _NODE_COLUMNS, "nodes"):
        name = csvrows.name(path, line, row, "sn", seen)
        gpus = _int(path, line, row, "gpu", 0)
        model = (row.get("model") or "").strip() or "none"
        nodes.append(Node(
            name=name,
            labels={HOSTNAME: name, MODEL_LABEL: model},
            allocatable={
                "cpu": _int(path, line, row, "cpu_milli"),
                "memory": _int(path, line, row, "memory_mib") * MiB,
                GPU: gpus,
                GPU_MILLI: gpus * 1000,
                "pods": PODS_PER_NODE,
            },
        ))
    return nodes


def pod_requests(num_gpu: int, gpu_milli: int, cpu_milli: int, memory_mib: int
                 ) -> dict[str, int]:
    """The requests of one trace pod under the fractional-GPU model above."""
    req = {"cpu": cpu_milli, "memory": memory_mib * MiB, "pods": 1}
    if num_gpu > 0 and gpu_milli >= 1000:
        req[GPU] = num_gpu
        req[GPU_MILLI] = 1000 * num_gpu
    elif num_gpu > 0 and gpu_milli > 0:
        req[GPU_MILLI] = gpu_milli * num_gpu
    return req


def _requirements(spec: str) -> NodeRequirements:
    models = tuple(m.strip() for m in spec.split("|") if m.strip())
    if not models:
        return NO_REQUIREMENTS
    term = NodeSelectorTerm(match_expressions=(Requirement(MODEL_LABEL, "In", models),))
    return NodeRequirements(affinity=(term,))


def load_pods(path: Path, limit: int | None = None) -> tuple[list[TraceItem], float, bool]:
    """The pods of a pod list in arrival order, the trace's end, and whether the list has
    times (without them, the pods arrive at 0, 1, 2, ... s in the file's order and run to
    the end; the end is their number)."""
    rows = csvrows.rows(path, _POD_COLUMNS, "pods")
    header = rows[0][1]
    absent = [c for c in _TIME_COLUMNS if c not in header]
    if 0 < len(absent) < len(_TIME_COLUMNS):
        raise InputError(f"missing column(s) {', '.join(absent)} (a list with times has "
                         f"all of {', '.join(_TIME_COLUMNS)})", file=str(path), field="header")
    timed = not absent
    end = 0
    parsed: list[tuple[int, dict[str, str], str, int, int | None, int]] = []
    seen: dict[str, int] = {}
    for i, (line, row) in enumerate(rows):
        name = csvrows.name(path, line, row, "name", seen)
        if not timed:
            parsed.append((line, row, name, i, None, i))
            continue
        created = _int(path, line, row, "creation_time")
        deleted = _int(path, line, row, "deletion_time", created)
        sched_text = (row.get("scheduled_time") or "").strip()
        start = _int(path, line, row, "scheduled_time") if sched_text else created
        if start < created:
            raise InputError(f"{start} is before creation_time {created}",
                             file=f"{path}:{line}", field="scheduled_time")
        if deleted < start:
            raise InputError(f"{deleted} is before "
                             f"{'scheduled_time' if sched_text else 'creation_time'} {start}",
                             file=f"{path}:{line}", field="deletion_time")
        end = max(end, deleted)
        parsed.append((line, row, name, created, deleted, start))
    if limit is not None:
        parsed = parsed[:limit]
    if not timed:
        end = len(parsed)
    items = []
    for line, row, name, arrival, deletion, began in parsed:
        req = pod_requests(_int(path, line, row, "num_gpu", 0), _int(path, line, row,
                           "gpu_milli", 0), _int(path, line, row, "cpu_milli"),
                           _int(path, line, row, "memory_mib"))
        reqs = _requirements(row.get("gpu_spec") or "")
        pod = Pod(name, NAMESPACE, scheduler_name="gangsched", requests=req, requirements=reqs)
        ps = PodSet(name, pod.key, (pod.key,), req, reqs, min_pods=1)
        duration = (None if deletion is None or deletion >= end
                    else float(max(1, deletion - began)))
        wl = Workload(pod.key, "Pod", ps, {pod.key: pod})
        items.append(TraceItem(wl, float(arrival), duration, "pod", f"{path}:{line}"))
    items.sort(key=lambda it: it.arrival)
    return items, float(end), timed


def trace_paths(path: str | Path) -> tuple[Path, Path]:
    """The node list and the pod list ``--alibaba`` names: a pod list file and the node
    list beside it, or a directory (or its ``csv/`` folder) with the default pod list or
    a single one."""
    given = Path(path)
    if given.is_file() or given.suffix in (".csv", ".gz"):
        pods = _readable(given)
        return _node_list(given.parent, pods), pods
    if not given.is_dir():
        raise InputError("not a directory or a pod list file", file=str(path),
                         field="--alibaba")
    d = given
    if not _pod_lists(d) and not _exists(d / NODE_FILE) and (d / "csv").is_dir():
        d = d / "csv"  # a checkout of the published data
    lists = _pod_lists(d)
    if not lists and _exists(d / NODE_FILE):
        raise InputError(f"has a node list but no pod list ({POD_FILE} or another "
                         f"{POD_LISTS})", file=str(path), field="--alibaba")
    if not lists:
        raise InputError(f"holds neither the Alibaba gpu-v2023 trace ({NODE_FILE}, "
                         f"{POD_FILE}) nor the v2025 one (disaggregated_DLRM_trace.csv, "
                         "node_info_df.csv)", file=str(path), field="--alibaba")
    default = [p for p in lists if p.name.startswith(POD_FILE)]
    if default:
        pods = default[0]
    elif len(lists) == 1:
        pods = lists[0]
    else:
        shown = ", ".join(p.name for p in lists[:4]) + (", ..." if len(lists) > 4 else "")
        raise InputError(f"holds {len(lists)} pod lists and no {POD_FILE} ({shown}): name "
                         "one, --alibaba DIR/openb_pod_list_NAME.csv", file=str(path),
                         field="--alibaba")
    return _node_list(d, pods), pods


def _exists(path: Path) -> bool:
    return path.exists() or path.with_name(path.name + ".gz").exists()


def _pod_lists(d: Path) -> list[Path]:
    """The pod lists in ``d``: each published name, or that name with ``.gz``."""
    found = sorted({*d.glob(POD_LISTS), *d.glob(POD_LISTS + ".gz")})
    plain = {p.name for p in found}
    return [p for p in found if not (p.suffix == ".gz" and p.stem in plain)]


def _node_list(d: Path, pods: Path) -> Path:
    for name in (NODE_FILE, GPU_NODE_FILE):
        for candidate in (d / name, d / f"{name}.gz"):
            if candidate.exists():
                return candidate
    raise InputError(f"no node list beside it ({NODE_FILE} or {GPU_NODE_FILE} in "
                     f"{d})", file=str(pods), field="--alibaba")


def _readable(path: Path) -> Path:
    if not path.is_file():
        raise InputError("file not found" if not path.exists() else "not a regular file",
                         file=str(path), field="--alibaba")
    return path


def load_alibaba(path: str | Path, limit: int | None = None) -> AlibabaTrace:
    """Nodes and pods of the trace ``path`` names (``limit``: the first pods only)."""
    node_file, pod_file = trace_paths(path)
    nodes = load_nodes(node_file)
    items, end, timed = load_pods(pod_file, limit)
    horizon = max([end] + [it.arrival + (it.duration or 0.0) for it in items])
    return AlibabaTrace(nodes, items, horizon, timed, str(pod_file))


WINDOW = 24 * 3600.0  # one replayed window
STEP = 6 * 3600.0  # window starts considered


def busiest_windows(items: list[TraceItem], resource: str, window: float = WINDOW,
                    step: float = STEP) -> list[float]:
    """Window starts ordered by the mean demand of ``resource`` of the pods alive in the
    window, busiest first (ties: earlier first)."""
    if not items:
        return [0.0]
    end = max(it.arrival + (it.duration or 0.0) for it in items)
    starts = np.arange(0.0, max(step, end - window + step), step)
    grid = np.arange(0.0, end + step, step / 6)
    demand = np.zeros(len(grid))
    for it in items:
        tree = it.workload.tree
        amount = sum(ps.requests.get(resource, 0) * ps.size for ps in podsets(tree)) \
            if tree is not None else 0
        if not amount:
            continue
        stop = it.arrival + it.duration if it.duration is not None else end
        lo, hi = np.searchsorted(grid, [it.arrival, stop])
        demand[lo:hi] += amount
    means = [float(demand[(grid >= s) & (grid < s + window)].mean()) for s in starts]
    order = sorted(range(len(starts)), key=lambda i: (-means[i], i))
    return [float(starts[i]) for i in order]


def window_items(items: list[TraceItem], start: float, window: float, load: float,
                 rng: random.Random) -> list[TraceItem]:
    """The pods of [start, start + window), shifted to begin at 0: those already running
    at ``start`` arrive at once with their remaining run time. ``load`` thins (below 1) or
    repeats (above 1) every pod, at random."""
    out: list[TraceItem] = []
    for it in items:
        stop = it.arrival + it.duration if it.duration is not None else None
        if it.arrival >= start + window or (stop is not None and stop <= start):
            continue
        arrival = max(0.0, it.arrival - start)
        duration = None if stop is None else max(1.0, stop - max(it.arrival, start))
        copies = int(load) + (1 if rng.random() < load - int(load) else 0)
        out.extend(_copy(it, arrival, duration, k) for k in range(copies))
    out.sort(key=lambda x: x.arrival)
    return out


def _copy(it: TraceItem, arrival: float, duration: float | None, k: int) -> TraceItem:
    wl = it.workload
    if k == 0:
        return TraceItem(wl, arrival, duration, it.kind, it.source)
    (pod,) = wl.pods.values()
    name = f"{pod.name}-x{k}"
    new = replace(pod, name=name)
    tree = wl.tree
    assert isinstance(tree, PodSet)
    ps = replace(tree, name=name, path=new.key, pods=(new.key,))
    return TraceItem(Workload(new.key, "Pod", ps, {new.key: new}), arrival, duration, it.kind,
                     it.source)


def alibaba_scenario(path: Path, seed: int, load: float, limit: int | None = None
                     ) -> Scenario:
    """The trace replayed over one of its busiest days: seed k takes the k-th busiest
    24-hour window (by requested milli-GPUs of the pods alive in it). A pod list without
    times is submitted over one day in the order seed k shuffles it to."""
    trace = load_alibaba(path, limit)
    rng = random.Random(seed)
    if trace.timed:
        starts = busiest_windows(trace.items, GPU_MILLI)
        start = starts[seed % len(starts)]
        items = window_items(trace.items, start, WINDOW, load, rng)
        what = (f"the {seed % len(starts) + 1}. busiest day (from hour {start / 3600:g} of "
                "the trace)")
        where: dict[str, float] = {"window_start_hours": start / 3600}
        warmup = WINDOW / 6
    else:
        items = submitted_items(trace.items, load, rng)
        what = "a list without times, all submitted at the start in a shuffled order"
        where = {}
        warmup = 0.0  # every pod arrives at the start: each one counts
    return Scenario(
        name="alibaba-gpu-2023", nodes=trace.nodes, levels=[], items=items, horizon=WINDOW,
        gpu_resource=GPU_MILLI, gpu_scale=1000.0, sample_interval=120.0, warmup=warmup,
        description=(f"Alibaba cluster-trace-gpu-v2023 ({Path(trace.source).name}): "
                     f"{len(trace.nodes):,} nodes, {what}: {len(items):,} pods, each its own "
                     "unit (the trace has no gangs), fractional GPUs in milli-GPUs"),
        parameters={"source": str(path), "pod_list": trace.source, **where,
                    "pods": len(items), "load": load},
    )


def submitted_items(items: list[TraceItem], load: float, rng: random.Random
                    ) -> list[TraceItem]:
    """The pods of a list without times, all submitted at the start in a shuffled order
    (the queue takes them in that order) and running to the end; ``load`` thins or
    repeats them as in :func:`window_items`."""
    order = list(items)
    rng.shuffle(order)
    out: list[TraceItem] = []
    for it in order:
        copies = int(load) + (1 if rng.random() < load - int(load) else 0)
        out.extend(_copy(it, 0.0, None, k) for k in range(copies))
    return out
