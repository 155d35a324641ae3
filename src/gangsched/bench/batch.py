"""``bench batch``: how close ``place`` packs a batch of gangs to the exact optimum.

Instances (deterministic per seed): 512, 1,024 or 2,048 nodes of 8 GPUs (64 CPUs, 512Gi),
racks of 16 nodes, blocks of 8 racks; 0-40% of the GPUs already busy, spread unevenly
over nodes (most running jobs hold whole nodes, some part of one); then gangs whose pods
all ask for the same number of GPUs (1, 2, 4 or 8, each GPU with 1 CPU), three in four
required inside one rack (1 to 8 nodes' worth of GPUs), the others inside one block (8
to 40 nodes' worth), until they ask for about 1.2x the free GPUs, in a random arrival
order. Every gang is all-or-nothing.

Three answers per instance:

- **optimum**: an exact MILP (HiGHS via :func:`scipy.optimize.milp`) maximising the pods
  placed, and separately the GPUs placed. GPUs are a count, and pod sizes 1, 2, 4 and 8
  divide each other, so pods fit a set of nodes exactly when, for every size ``k``, the
  GPUs of pods of size >= k are at most the sum over nodes of ``k * floor(free / k)``
  (placing the largest first never strands room a smaller pod needs). With CPUs never
  binding (8 GPUs of pods ask for 8 of a node's 64 CPUs), the model per rack is exact:
  a binary per gang and domain, pods per gang and rack for block gangs, and one capacity
  row per rack and size;
- **gangsched**: ``place``'s batch (:func:`gangsched.batch.place_plan`) on the same state;
- **best-fit**: a plain topology-aware best-fit in arrival order: each gang into the
  fitting domain with the fewest free GPUs, each pod onto the fitting node with the
  fewest free GPUs.

Reported per instance and summed: pods and GPUs placed, each as a ratio to its optimum
(the MILP's proven optimum, or its bound when the time limit stops it first).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from gangsched.api.types import Node, Pod
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet
from gangsched.model import Plan, Workload

GPU = "nvidia.com/gpu"
BLOCK = "gangsched.io/block"
RACK = "gangsched.io/rack"
HOST = "kubernetes.io/hostname"
GPUS_PER_NODE = 8
NODES_PER_RACK = 16
RACKS_PER_BLOCK = 8
SIZES = (1, 2, 4, 8)
NODE_COUNTS = (512, 1024, 2048)
OVERSUBSCRIBE = 1.2


@dataclass(frozen=True)
class Gang:
    name: str
    level: str  # "rack" | "block"
    pods: int
    gpus: int  # per pod

    @property
    def total(self) -> int:
        return self.pods * self.gpus


@dataclass(frozen=True)
class Instance:
    seed: int
    busy: float  # fraction of GPUs in use before the batch
    free: tuple[int, ...]  # free GPUs per node, nodes rack by rack
    gangs: tuple[Gang, ...]  # in arrival order

    @property
    def n_nodes(self) -> int:
        return len(self.free)

    @property
    def n_racks(self) -> int:
        return self.n_nodes // NODES_PER_RACK


def make_instance(seed: int, n_nodes: int | None = None) -> Instance:
    """The instance of ``seed`` (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n = int(n_nodes if n_nodes is not None else rng.choice(NODE_COUNTS))
    if n % (NODES_PER_RACK * RACKS_PER_BLOCK):
        raise ValueError(f"nodes must be a multiple of {NODES_PER_RACK * RACKS_PER_BLOCK}")
    busy = float(rng.uniform(0.0, 0.4))
    # running jobs: most hold whole nodes, some part of one (about ``busy`` of the GPUs)
    u = rng.random(n)
    used = np.where(u < 0.7 * busy, GPUS_PER_NODE,
                    np.where(u < 1.3 * busy, rng.integers(1, GPUS_PER_NODE, size=n), 0))
    free = GPUS_PER_NODE - used
    target = OVERSUBSCRIBE * int(free.sum())
    gangs: list[Gang] = []
    asked = 0
    while asked < target:
        gpus = int(rng.choice(SIZES, p=(0.1, 0.15, 0.25, 0.5)))
        if rng.random() < 0.75:  # rack gang: 1 to 8 nodes' worth of GPUs
            level, total = "rack", int(rng.integers(1, 9)) * GPUS_PER_NODE
        else:  # block gang: 8 to 40 nodes' worth
            level, total = "block", int(rng.integers(8, 41)) * GPUS_PER_NODE
        g = Gang(f"g{len(gangs)}", level, total // gpus, gpus)
        gangs.append(g)
        asked += g.total
    return Instance(seed, busy, tuple(int(x) for x in free), tuple(gangs))


def _labels(j: int) -> dict[str, str]:
    r = j // NODES_PER_RACK
    b = r // RACKS_PER_BLOCK
    return {BLOCK: f"b{b}", RACK: f"b{b}-r{r}", HOST: f"n{j}"}


def state_of(inst: Instance) -> ClusterState:
    """The cluster with every node's busy GPUs taken by a running pod."""
    alloc = {"cpu": 64_000, "memory": 512 << 30, GPU: GPUS_PER_NODE, "pods": 110}
    nodes = [Node(f"n{j}", _labels(j), allocatable=dict(alloc)) for j in range(inst.n_nodes)]
    busy = [Pod(f"busy-{j}", namespace="default", requests={GPU: GPUS_PER_NODE - f,
                                                            "cpu": 1000 * (GPUS_PER_NODE - f)},
                node_name=f"n{j}")
            for j, f in enumerate(inst.free) if f < GPUS_PER_NODE]
    return ClusterState.from_nodes(nodes, [BLOCK, RACK], pods=busy)


def plan_of(inst: Instance) -> Plan:
    """The batch as workloads, one all-or-nothing gang each, in arrival order."""
    workloads = []
    for g in inst.gangs:
        key = RACK if g.level == "rack" else BLOCK
        ps = PodSet(name="workers", path=f"default/{g.name}/workers",
                    pods=tuple(f"default/{g.name}-{i}" for i in range(g.pods)),
                    requests={GPU: g.gpus, "cpu": 1000 * g.gpus, "pods": 1},
                    min_pods=g.pods)
        tree = Group(name=g.name, path=f"default/{g.name}", children=[ps], min_groups=1,
                     min_pods=g.pods, topology=(Constraint(key, "required"),))
        workloads.append(Workload(f"default/{g.name}", "PodGroup", tree))
    return Plan(workloads, [], [BLOCK, RACK], [])


# -- the exact optimum ------------------------------------------------------------------


def _class_capacity(free: np.ndarray) -> np.ndarray:
    """[rack, size class]: sum over the rack's nodes of k * floor(free / k)."""
    racks = free.reshape(-1, NODES_PER_RACK)
    return np.stack([(k * (racks // k)).sum(axis=1) for k in SIZES], axis=1)


@dataclass
class Optimum:
    gpus: int  # of the best placement found
    pods: int  # of that placement
    gpus_bound: int  # proven upper bound on the GPUs (== gpus when optimal)
    seconds: float
    optimal: bool


def optimum(inst: Instance, time_limit: float = 60.0) -> Optimum:
    """The placement with the most GPUs and, among those, the most pods (one MILP)."""
    t0 = time.perf_counter()
    weight = 1 + sum(g.pods for g in inst.gangs)  # a GPU outweighs every pod
    admitted, bound = _solve(inst, lambda g: g.total * weight + g.pods, time_limit)
    gpus = sum(g.total for g, a in zip(inst.gangs, admitted, strict=True) if a)
    pods = sum(g.pods for g, a in zip(inst.gangs, admitted, strict=True) if a)
    return Optimum(gpus, pods, max(gpus, bound // weight), time.perf_counter() - t0,
                   bound // weight == gpus)


def _solve(inst: Instance, value: Callable[[Gang], int], time_limit: float
           ) -> tuple[list[bool], int]:
    """Which gangs the best placement found admits, and a proven bound on its value."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import coo_matrix

    cap = _class_capacity(np.asarray(inst.free))  # [rack, class]
    n_racks = inst.n_racks
    n_blocks = n_racks // RACKS_PER_BLOCK
    cols: list[tuple[float, float, float, bool]] = []  # (objective, lb, ub, integer)
    rows: list[tuple[list[tuple[int, float]], float, float]] = []
    load: dict[tuple[int, int], list[tuple[int, float]]] = {}  # (rack, class) -> terms

    def var(obj: float, ub: float) -> int:
        cols.append((obj, 0.0, ub, True))
        return len(cols) - 1

    # who each counting variable admits: identical rack gangs are one type, counted per
    # rack (no symmetric copies for the solver to tell apart); a block gang is its own
    owner: dict[int, list[int]] = {}  # variable -> the gangs it counts, in arrival order

    def choice(gangs: list[int], obj: float) -> int:
        z = var(obj, len(gangs))
        owner[z] = gangs
        return z

    types: dict[tuple[int, int], list[int]] = {}
    for i, g in enumerate(inst.gangs):
        if g.level == "rack":
            types.setdefault((g.pods, g.gpus), []).append(i)
    for (_, gpus), members in types.items():
        g = inst.gangs[members[0]]
        cls = SIZES.index(gpus)
        zs = [(r, choice(members, -value(g))) for r in range(n_racks)
              if cap[r, cls] >= g.total]
        if zs:  # at most every gang of the type, each in one rack
            rows.append(([(z, 1.0) for _, z in zs], 0.0, float(len(members))))
        for r, z in zs:  # whole gangs in rack r
            for k in range(cls + 1):
                load.setdefault((r, k), []).append((z, float(g.total)))
    for i, g in enumerate(inst.gangs):
        if g.level == "rack":
            continue
        cls = SIZES.index(g.gpus)
        blocks = []
        for b in range(n_blocks):
            racks = range(b * RACKS_PER_BLOCK, (b + 1) * RACKS_PER_BLOCK)
            if sum(int(cap[r, cls]) for r in racks) < g.total:
                continue
            z = choice([i], -value(g))
            blocks.append(z)
            xs = [(r, var(0.0, g.pods)) for r in racks if cap[r, cls] >= g.gpus]
            # pods in the block's racks: all of them when z, none otherwise
            rows.append(([(x, 1.0) for _, x in xs] + [(z, -float(g.pods))], 0.0, 0.0))
            for r, x in xs:
                for k in range(cls + 1):
                    load.setdefault((r, k), []).append((x, float(g.gpus)))
        if blocks:
            rows.append(([(z, 1.0) for z in blocks], 0.0, 1.0))
    for (r, k), terms in load.items():
        rows.append((terms, 0.0, float(cap[r, k])))
    if not cols:
        return [False] * len(inst.gangs), 0
    c = np.array([x[0] for x in cols])
    data, ri, ci = [], [], []
    for i, (terms, _, _) in enumerate(rows):
        for j, a in terms:
            ri.append(i)
            ci.append(j)
            data.append(a)
    a = coo_matrix((data, (ri, ci)), shape=(len(rows), len(cols)))
    res = milp(c, integrality=np.ones(len(cols)),
               bounds=Bounds(np.zeros(len(cols)), np.array([x[2] for x in cols])),
               constraints=LinearConstraint(a, [r[1] for r in rows], [r[2] for r in rows]),
               options={"time_limit": time_limit, "disp": False})
    admitted = [False] * len(inst.gangs)
    if res.x is not None:
        counted: dict[int, int] = {}
        for j, gangs in owner.items():
            key = gangs[0]
            counted[key] = counted.get(key, 0) + round(float(res.x[j]))
        for gangs in owner.values():
            for i in gangs[: counted.pop(gangs[0], 0)]:
                admitted[i] = True
    best = round(-float(res.fun)) if res.x is not None else 0
    bound = best
    dual = getattr(res, "mip_dual_bound", None)
    if res.status != 0 and dual is not None and np.isfinite(dual):
        bound = max(best, int(np.floor(-float(dual) + 1e-6)))
    return admitted, bound


# -- the answers -----------------------------------------------------------------------


def best_fit(inst: Instance) -> list[bool]:
    """Which gangs a plain topology-aware best-fit admits, in arrival order."""
    free = np.array(inst.free, dtype=np.int64)
    span = {"rack": NODES_PER_RACK, "block": NODES_PER_RACK * RACKS_PER_BLOCK}
    out = []
    for g in inst.gangs:
        width = span[g.level]
        best: tuple[int, int] | None = None  # (free GPUs, domain)
        for d in range(inst.n_nodes // width):
            part = free[d * width:(d + 1) * width]
            if int((part // g.gpus).sum()) < g.pods:
                continue
            room = int(part.sum())
            if best is None or room < best[0]:
                best = (room, d)
        if best is None:
            out.append(False)
            continue
        part = free[best[1] * width:(best[1] + 1) * width]  # a view: updated in place
        for _ in range(g.pods):
            ok = np.flatnonzero(part >= g.gpus)
            j = ok[np.argmin(part[ok])]
            part[j] -= g.gpus
        out.append(True)
    return out


def gangsched_admitted(inst: Instance) -> tuple[list[bool], float]:
    """Which gangs ``place`` admits for the batch, and its CPU seconds."""
    from gangsched.batch import place_plan

    state = state_of(inst)
    plan = plan_of(inst)
    t0 = time.process_time()
    outcomes = place_plan(plan, state)
    return [o.admitted for o in outcomes], time.process_time() - t0


@dataclass
class Row:
    seed: int
    nodes: int
    busy: float
    gangs: int
    free_gpus: int
    optimum_gpus: int
    optimum_pods: int
    optimum_gpus_bound: int
    optimal: bool
    milp_s: float
    gangsched_gpus: int
    gangsched_pods: int
    gangsched_cpu_s: float
    best_fit_gpus: int
    best_fit_pods: int

    @property
    def ratios(self) -> dict[str, float]:
        """GPUs and pods placed over the optimum's (GPUs also over the proven bound)."""
        def r(x: int, opt: int) -> float:
            return x / opt if opt else 1.0

        return {
            "gangsched_gpus": r(self.gangsched_gpus, self.optimum_gpus),
            "gangsched_gpus_of_bound": r(self.gangsched_gpus, self.optimum_gpus_bound),
            "gangsched_pods": r(self.gangsched_pods, self.optimum_pods),
            "best_fit_gpus": r(self.best_fit_gpus, self.optimum_gpus),
            "best_fit_gpus_of_bound": r(self.best_fit_gpus, self.optimum_gpus_bound),
            "best_fit_pods": r(self.best_fit_pods, self.optimum_pods),
        }


@dataclass
class BatchResult:
    rows: list[Row] = field(default_factory=list)

    def totals(self) -> dict[str, float]:
        """Ratios of the sums over all instances, and the worst instance's."""
        def s(name: str) -> int:
            return sum(getattr(r, name) for r in self.rows)

        def ratio(x: str, opt: str) -> float:
            return s(x) / s(opt) if s(opt) else 1.0

        out = {}
        for who in ("gangsched", "best_fit"):
            out[f"{who}_gpus"] = ratio(f"{who}_gpus", "optimum_gpus")
            out[f"{who}_gpus_of_bound"] = ratio(f"{who}_gpus", "optimum_gpus_bound")
            out[f"{who}_pods"] = ratio(f"{who}_pods", "optimum_pods")
        for key in list(out):
            out[f"worst_{key}"] = min((r.ratios[key] for r in self.rows), default=1.0)
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"benchmark": "batch",
                "instances": [{**asdict(r), "ratios": r.ratios} for r in self.rows],
                "totals": self.totals()}


def _sum(inst: Instance, admitted: Sequence[bool], what: Callable[[Gang], int]) -> int:
    return sum(what(g) for g, a in zip(inst.gangs, admitted, strict=True) if a)


def run_batch_bench(seeds: Sequence[int], time_limit: float = 60.0,
                    n_nodes: int | None = None,
                    progress: Callable[[str], None] | None = None) -> BatchResult:
    """Every instance of ``seeds``: the optimum, gangsched and best-fit, side by side."""
    result = BatchResult()
    for seed in seeds:
        inst = make_instance(seed, n_nodes)
        opt = optimum(inst, time_limit)
        gs, cpu = gangsched_admitted(inst)
        bf = best_fit(inst)
        row = Row(seed, inst.n_nodes, round(inst.busy, 3), len(inst.gangs), sum(inst.free),
                  opt.gpus, opt.pods, opt.gpus_bound, opt.optimal, round(opt.seconds, 2),
                  _sum(inst, gs, lambda g: g.total), _sum(inst, gs, lambda g: g.pods),
                  round(cpu, 3), _sum(inst, bf, lambda g: g.total),
                  _sum(inst, bf, lambda g: g.pods))
        result.rows.append(row)
        if progress is not None:
            rt = row.ratios
            progress(f"seed {seed}: {inst.n_nodes} nodes, {len(inst.gangs)} gangs: "
                     f"gangsched {rt['gangsched_gpus']:.4f} GPUs / {rt['gangsched_pods']:.4f} "
                     f"pods, best-fit {rt['best_fit_gpus']:.4f} / {rt['best_fit_pods']:.4f} "
                     f"of the optimum{'' if opt.optimal else ' found (not proven)'}")
    return result
