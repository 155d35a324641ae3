"""Loader for the Alibaba cluster-trace-gpu-v2023 (``openb``) node and pod lists.

Files (CSV with a header row):

- ``openb_node_list_all_node.csv``: ``sn, cpu_milli, memory_mib, gpu, model``
- ``openb_pod_list_default.csv``: ``name, cpu_milli, memory_mib, num_gpu, gpu_milli,
  gpu_spec, qos, pod_phase, creation_time, deletion_time, scheduled_time``

Nodes become :class:`Node` objects with one hostname each (the trace publishes no
topology, so there are no wider levels) and the label ``gangsched.io/gpu-model``. Every
pod becomes a single-pod unit arriving at ``creation_time`` (seconds). Its run time is
``deletion_time - scheduled_time`` (``- creation_time`` for pods the real cluster never
scheduled), at least one second; a pod still present when the trace was taken (its
deletion time is the largest in the file) is a service that runs to the end. The trace is
replayed in its own time (about 149 days for the default list, most pods in the last
month and short-lived), so time-averaged allocation over the whole horizon is low.

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

import csv
from dataclasses import dataclass
from pathlib import Path

from gangsched.api.errors import InputError
from gangsched.api.types import Node, NodeRequirements, NodeSelectorTerm, Pod, Requirement
from gangsched.cluster.topology import HOSTNAME
from gangsched.gang import PodSet
from gangsched.model import Workload
from gangsched.sim.trace import TraceItem

NODE_FILE = "openb_node_list_all_node.csv"
POD_FILE = "openb_pod_list_default.csv"
GPU = "nvidia.com/gpu"
GPU_MILLI = "gangsched.io/gpu-milli"
MODEL_LABEL = "gangsched.io/gpu-model"
MiB = 1 << 20
PODS_PER_NODE = 110
NAMESPACE = "openb"

_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
                "creation_time", "deletion_time", "scheduled_time")


@dataclass
class AlibabaTrace:
    nodes: list[Node]
    items: list[TraceItem]
    horizon: float  # the last deletion time (seconds)


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    try:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or ())]
            if missing:
                raise InputError(f"missing column(s) {', '.join(missing)}", file=str(path),
                                 field="header")
            return [(i, row) for i, row in enumerate(reader, start=2)]
    except FileNotFoundError:
        raise InputError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise InputError(f"cannot read file: {err}", file=str(path)) from None


def _int(path: Path, line: int, row: dict[str, str], col: str, default: int | None = None
         ) -> int:
    text = (row.get(col) or "").strip()
    if not text and default is not None:
        return default
    try:
        v = int(float(text))
    except ValueError:
        raise InputError(f"must be a number, got {text!r}", file=f"{path}:{line}",
                         field=col) from None
    if v < 0:
        raise InputError(f"must be >= 0, got {v}", file=f"{path}:{line}", field=col)
    return v


def load_nodes(path: Path) -> list[Node]:
    nodes = []
    for line, row in _rows(path, _NODE_COLUMNS):
        name = (row["sn"] or "").strip()
        if not name:
            raise InputError("is empty", file=f"{path}:{line}", field="sn")
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
        return NodeRequirements()
    term = NodeSelectorTerm(match_expressions=(Requirement(MODEL_LABEL, "In", models),))
    return NodeRequirements(affinity=(term,))


def load_pods(path: Path, limit: int | None = None) -> tuple[list[TraceItem], float]:
    rows = _rows(path, _POD_COLUMNS)
    end = 0
    parsed = []
    for line, row in rows:
        created = _int(path, line, row, "creation_time")
        deleted = _int(path, line, row, "deletion_time", created)
        sched_text = (row.get("scheduled_time") or "").strip()
        start = _int(path, line, row, "scheduled_time") if sched_text else created
        end = max(end, deleted)
        parsed.append((line, row, created, deleted, start))
    if limit is not None:
        parsed = parsed[:limit]
    items = []
    for line, row, created, deleted, start in parsed:
        name = (row["name"] or "").strip()
        if not name:
            raise InputError("is empty", file=f"{path}:{line}", field="name")
        req = pod_requests(_int(path, line, row, "num_gpu", 0), _int(path, line, row,
                           "gpu_milli", 0), _int(path, line, row, "cpu_milli"),
                           _int(path, line, row, "memory_mib"))
        reqs = _requirements(row.get("gpu_spec") or "")
        pod = Pod(name, NAMESPACE, scheduler_name="gangsched", requests=req, requirements=reqs)
        ps = PodSet(name, pod.key, (pod.key,), req, reqs, min_pods=1)
        duration = None if deleted >= end else float(max(1, deleted - start))
        wl = Workload(pod.key, "Pod", ps, {pod.key: pod})
        items.append(TraceItem(wl, float(created), duration, "pod", f"{path}:{line}"))
    items.sort(key=lambda it: it.arrival)
    return items, float(end)


def load_alibaba(directory: str | Path, limit: int | None = None) -> AlibabaTrace:
    """Nodes and pods of the trace in ``directory`` (``limit``: the first pods only)."""
    d = Path(directory)
    if not d.is_dir():
        raise InputError("not a directory", file=str(directory), field="--alibaba")
    nodes = load_nodes(d / NODE_FILE)
    items, end = load_pods(d / POD_FILE, limit)
    horizon = max([end] + [it.arrival + (it.duration or 0.0) for it in items])
    return AlibabaTrace(nodes, items, horizon)
