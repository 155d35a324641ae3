"""How long it takes to read a cluster: YAML loading vs building the ClusterState arrays."""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gangsched.api.errors import InputError
from gangsched.cluster.generate import generate_yaml, level_key
from gangsched.cluster.state import ClusterState
from gangsched.frontends import load

MAX_BENCH_NODES = 500_000
NODE = {"cpu": "128", "memory": "1Ti", "nvidia.com/gpu": "8", "pods": "110"}
PER_ZONE = (("block", 8), ("rack", 16), ("host", 8))  # 1,024 nodes per zone


@dataclass(frozen=True)
class LoadResult:
    nodes: int
    file_bytes: int
    repeat: int
    generate_s: float  # generate_yaml
    load_s: float  # gangsched.frontends.load (best of repeat)
    state_s: float  # ClusterState.from_nodes (best of repeat)

    @property
    def total_s(self) -> float:
        return self.load_s + self.state_s

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": "load", **asdict(self), "total_s": self.total_s}


def bench_levels(nodes: int) -> list[tuple[str, int]]:
    """zone x block=8 x rack=16 x host=8, with enough zones for ``nodes``."""
    return [("zone", math.ceil(nodes / 1024)), *PER_ZONE]


def run_load_bench(nodes: int = 15_000, repeat: int = 1) -> LoadResult:
    """Generate ``nodes`` nodes into a temp file, then time loading and state building."""
    if not 1 <= nodes <= MAX_BENCH_NODES:
        raise InputError(f"must be between 1 and {MAX_BENCH_NODES:,}, got {nodes}",
                         field="--nodes")
    if repeat < 1:
        raise InputError(f"must be at least 1, got {repeat}", field="--repeat")
    levels = bench_levels(nodes)
    keys = [level_key(name) for name, _ in levels]
    t0 = time.perf_counter()
    text = generate_yaml(levels, dict(NODE), limit=nodes)
    generate_s = time.perf_counter() - t0
    load_s = state_s = math.inf
    with tempfile.TemporaryDirectory(prefix="gangsched-bench-") as tmp:
        path = Path(tmp) / "cluster.yaml"
        path.write_text(text, encoding="utf-8")
        for _ in range(repeat):
            t0 = time.perf_counter()
            inputs = load([path])
            t1 = time.perf_counter()
            state = ClusterState.from_nodes(inputs.nodes, keys, inputs.pods)
            t2 = time.perf_counter()
            load_s, state_s = min(load_s, t1 - t0), min(state_s, t2 - t1)
    if state.n_nodes != nodes:
        raise RuntimeError(f"loaded {state.n_nodes} nodes, generated {nodes}")
    return LoadResult(nodes, len(text.encode()), repeat, generate_s, load_s, state_s)
