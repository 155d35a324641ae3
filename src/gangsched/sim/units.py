"""Policy-independent bookkeeping of the trace's true gangs during a run.

:class:`Workset` follows pod binds and deletions (one O(1) update per pod event), keeps
per-unit integer totals of what each unit holds, integrates GPU-hours and waste between
changes, decides when a unit is at its minimum (a per-tree evaluation, only for units
whose pods changed) and takes the periodic :class:`Sample`. :class:`Geometry` holds the
static cluster facts the measures need (topology domains, capacities).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

from gangsched.cluster.topology import HOSTNAME, Topology, label_codes
from gangsched.gang import Constraint, PodSet, TreeNode, minimum_pods, podsets, walk
from gangsched.scheduler.tree import min_demand
from gangsched.sim.result import Sample, UnitRecord


class Geometry:
    """Static facts about the cluster: node order, GPU/CPU capacity, domains per level."""

    def __init__(self, topo: Topology, gpu_resource: str, gpu_scale: float) -> None:
        self.topo = topo
        self.gpu_resource = gpu_resource
        self.gpu_scale = gpu_scale
        nodes = topo.nodes
        self.index = dict(topo.index)
        self.schedulable = np.array([n.schedulable for n in nodes], dtype=bool)
        self.gpu_alloc = np.array([n.allocatable.get(gpu_resource, 0) for n in nodes],
                                  dtype=np.int64)
        cpu = np.array([n.allocatable.get("cpu", 0) for n in nodes], dtype=np.int64)
        pods = np.array([n.allocatable.get("pods", 110) for n in nodes], dtype=np.int64)
        self.gpu_total = int(self.gpu_alloc[self.schedulable].sum())
        self.cpu_total = int(cpu[self.schedulable].sum())
        # levels from widest to narrowest, then hosts: (key, node -> domain, max capacity)
        self.levels: list[tuple[str, np.ndarray, tuple[int, int, int]]] = []
        caps = np.stack([self.gpu_alloc, cpu, pods]) * self.schedulable
        for lv in topo.levels:
            if len(lv.starts) == 0:
                continue
            sums = np.add.reduceat(caps, lv.starts, axis=1)[:, lv.valid]
            best = sums.max(axis=1) if sums.shape[1] else np.zeros(3, dtype=np.int64)
            self.levels.append((lv.key, lv.node_domain, (int(best[0]), int(best[1]),
                                                         int(best[2]))))
        n = len(nodes)
        host_best = caps.max(axis=1) if n else np.zeros(3, dtype=np.int64)
        self.levels.append((HOSTNAME, np.arange(n, dtype=np.int64),
                            (int(host_best[0]), int(host_best[1]), int(host_best[2]))))
        self._codes: dict[str, tuple[np.ndarray, list[str]]] = {}

    def codes(self, key: str) -> tuple[np.ndarray, list[str]]:
        """Per node (topology order), the index of its ``key`` label value (-1 without
        the label), and the values; cached per key."""
        got = self._codes.get(key)
        if got is None:
            got = self._codes[key] = label_codes(self.topo.nodes, key)
        return got

    def narrowest_common(self, nodes: np.ndarray) -> int:
        """Index in ``levels`` of the narrowest level whose one domain holds all ``nodes``
        (-1: none, the whole cluster)."""
        for i in range(len(self.levels) - 1, -1, -1):
            dom = self.levels[i][1][nodes]
            if len(dom) and (dom == dom[0]).all():
                return i
        return -1

    def narrowest_feasible(self, gpu: int, cpu: int, pods: int) -> int:
        for i in range(len(self.levels) - 1, -1, -1):
            g, c, p = self.levels[i][2]
            if gpu <= g and cpu <= c and pods <= p:
                return i
        return -1


def _evaluate(node: TreeNode, counts: Sequence[int], idx: dict[int, int]) -> tuple[int, bool]:
    """(pods placed, satisfied) of ``node`` given the pods placed of each set (``counts``,
    by position ``idx[id(set)]``); a module function: a closure calling itself would be a
    reference cycle on every call."""
    if isinstance(node, PodSet):
        n = counts[idx[id(node)]]
        return n, n >= node.min_pods
    placed = sat = 0
    for c in node.children:
        p, ok = _evaluate(c, counts, idx)
        placed += p
        sat += ok
    return placed, sat >= node.min_groups and placed >= node.min_pods


@dataclass(eq=False)
class Tracked:
    """One true gang of the trace."""

    tree: TreeNode
    record: UnitRecord
    sets: list[PodSet]
    # each required constraint of the tree, with the indices of the sets below it
    required: list[tuple[Constraint, list[int]]]
    gpu: list[int]  # per PodSet: gpu_resource per pod
    cpu: list[int]
    min_gpu: int
    min_cpu: int
    counts: list[int] = field(default_factory=list)  # bound pods per PodSet
    pods: dict[str, tuple[int, int]] = field(default_factory=dict)  # bound pod -> (node, set)
    held_gpu: int = 0
    held_cpu: int = 0
    ok: bool = False  # at its minimum (pod counts)
    topology_ok: bool = False  # ... and every required topology constraint holds
    local: bool = False  # ... and its pods lie inside one domain of the narrowest level
    # that could hold them (see Workset.settle)
    last_t: float = 0.0
    active: bool = True

    @property
    def held_pods(self) -> int:
        return len(self.pods)

    def satisfied(self) -> bool:
        idx = {id(ps): i for i, ps in enumerate(self.sets)}
        # admitted means holding something
        return _evaluate(self.tree, self.counts, idx)[1] and bool(self.pods)

    def topology_holds(self, geo: Geometry) -> bool:
        """Every required constraint: the pods below it on nodes sharing one value of its
        key (the pinned one, when pinned); nodes without the label break it."""
        for con, sets in self.required:
            codes, values = geo.codes(con.key)
            seen = -2
            for j, i in self.pods.values():
                if i not in sets:
                    continue
                c = int(codes[j])
                if c < 0 or (seen != -2 and c != seen):
                    return False
                if con.value is not None and values[c] != con.value:
                    return False
                seen = c
        return True


class Workset:
    def __init__(self, geo: Geometry, warmup: float = 0.0) -> None:
        self.geo = geo
        self.warmup = warmup  # time before which GPU-hours are not counted
        self.all: list[Tracked] = []
        self.owner: dict[str, tuple[Tracked, int]] = {}
        self.holding: dict[int, Tracked] = {}  # insertion-ordered: deterministic sums
        self.active: dict[int, Tracked] = {}  # arrived, not finished
        self.dirty: dict[int, Tracked] = {}
        self.by_id: dict[int, Tracked] = {}
        self.node_gpu = np.zeros(len(geo.gpu_alloc), dtype=np.int64)  # bound per node
        self.bound_gpu = 0
        self.bound_cpu = 0

    # -- membership -----------------------------------------------------------------------

    def add(self, unit: TreeNode, record: UnitRecord, now: float) -> Tracked:
        sets = list(podsets(unit))
        g = self.geo.gpu_resource
        demand = min_demand(unit)
        at = {id(ps): i for i, ps in enumerate(sets)}
        required = [(c, sorted(at[id(ps)] for ps in podsets(n)))
                    for n in walk(unit) for c in n.topology if c.mode == "required"]
        t = Tracked(
            tree=unit, record=record, sets=sets, required=required,
            gpu=[ps.requests.get(g, 0) for ps in sets],
            cpu=[ps.requests.get("cpu", 0) for ps in sets],
            min_gpu=demand.get(g, 0), min_cpu=demand.get("cpu", 0),
            counts=[0] * len(sets), last_t=now,
        )
        record.pods_min = minimum_pods(unit)
        record.pods_desired = unit.size
        record.gpus_min = round(t.min_gpu / self.geo.gpu_scale)
        for i, ps in enumerate(sets):
            for key in ps.pods:
                self.owner[key] = (t, i)
        self.all.append(t)
        self.active[id(t)] = t
        self.by_id[id(t)] = t
        self.dirty[id(t)] = t
        return t

    def retire(self, t: Tracked, now: float) -> None:
        self.accrue(t, now)
        t.active = False
        self.active.pop(id(t), None)
        for ps in t.sets:
            for key in ps.pods:
                self.owner.pop(key, None)

    def tracked_by_id(self, ids: Iterable[int]) -> list[Tracked]:
        return [self.by_id[i] for i in sorted(ids) if i in self.by_id]

    # -- pod events -----------------------------------------------------------------------

    def bound(self, pod: str, node: str, now: float) -> None:
        got = self.owner.get(pod)
        j = self.geo.index.get(node)
        if got is None or j is None:
            return
        t, i = got
        if pod in t.pods:
            return
        self.accrue(t, now)
        t.pods[pod] = (j, i)
        t.counts[i] += 1
        g, c = t.gpu[i], t.cpu[i]
        t.held_gpu += g
        t.held_cpu += c
        self.node_gpu[j] += g
        self.bound_gpu += g
        self.bound_cpu += c
        t.record.max_pods = max(t.record.max_pods, len(t.pods))
        self.holding[id(t)] = t
        self.dirty[id(t)] = t

    def unbound(self, pod: str, now: float) -> Tracked | None:
        """A pod was deleted; returns its unit when it was bound."""
        got = self.owner.get(pod)
        if got is None:
            return None
        t, _ = got
        where = t.pods.get(pod)
        if where is None:
            return None
        self.accrue(t, now)
        j, i = where
        del t.pods[pod]
        t.counts[i] -= 1
        g, c = t.gpu[i], t.cpu[i]
        t.held_gpu -= g
        t.held_cpu -= c
        self.node_gpu[j] -= g
        self.bound_gpu -= g
        self.bound_cpu -= c
        if not t.pods:
            self.holding.pop(id(t), None)
        self.dirty[id(t)] = t
        return t

    # -- time -----------------------------------------------------------------------------

    def accrue(self, t: Tracked, now: float) -> None:
        dt = now - max(t.last_t, self.warmup)
        if dt > 0 and t.pods:
            hours = t.held_gpu / self.geo.gpu_scale * dt / 3600.0
            t.record.gpu_hours += hours
            if not t.ok:
                t.record.partial_seconds += dt
                t.record.wasted_gpu_hours += hours
            elif not t.topology_ok:
                t.record.broken_gpu_hours += hours
        t.last_t = max(t.last_t, now)

    def settle(self, now: float) -> Iterator[tuple[Tracked, bool, bool]]:
        """Re-evaluate changed units: (unit, was at minimum, is at minimum) for changes."""
        dirty, self.dirty = self.dirty, {}
        for t in dirty.values():
            ok = t.satisfied()
            topo = ok and t.topology_holds(self.geo)
            wider = self._local(t) if ok else None  # levels wider than needed
            t.local = wider == 0
            if ok == t.ok and topo == t.topology_ok:
                continue
            self.accrue(t, now)
            t.topology_ok = topo
            if ok == t.ok:
                continue
            was, t.ok = t.ok, ok
            if ok and t.record.admitted is None:
                t.record.admitted = now
                self._measure(t, wider or 0)
            yield t, was, ok

    def close(self, now: float) -> None:
        for t in self.active.values():
            self.accrue(t, now)

    # -- measures -------------------------------------------------------------------------

    def _local(self, t: Tracked) -> int:
        """Levels wider than needed: the narrowest level one domain of which holds the
        unit's pods, against the narrowest that could hold them (0: as narrow as can be)."""
        if not t.pods:
            return 0
        geo = self.geo
        nodes = np.fromiter((j for j, _ in t.pods.values()), dtype=np.int64, count=len(t.pods))
        actual = geo.narrowest_common(nodes)
        need = geo.narrowest_feasible(t.held_gpu, t.held_cpu, len(t.pods))
        return max(0, need - actual)

    def _measure(self, t: Tracked, wider: int) -> None:
        """Locality (``wider``: levels wider than needed, :meth:`_local`) and
        prefill-decode distance, at admission."""
        if not t.pods:
            return
        t.record.locality = 1.0 / (1 + wider)
        geo = self.geo
        roles = _role_sets(t)
        pre = [j for j, i in t.pods.values() if roles[i] == "prefill"]
        dec = [j for j, i in t.pods.values() if roles[i] == "decode"]
        if pre and dec:
            common = geo.narrowest_common(np.array(pre + dec, dtype=np.int64))
            t.record.pd_distance = len(geo.levels) - 1 - common

    def sample(self, now: float) -> Sample:
        geo = self.geo
        gt = geo.gpu_total
        useful = topology = held = local = 0
        partial: list[Tracked] = []
        for t in self.holding.values():
            if t.ok:
                held += 1
                local += t.local
                useful += t.held_gpu
                if t.topology_ok:
                    topology += t.held_gpu
            else:
                partial.append(t)
        pending = sum(1 for t in self.active.values() if not t.ok)
        free = np.where(geo.schedulable, geo.gpu_alloc - self.node_gpu, 0)
        free_total = int(free.sum())
        whole = int(free[(self.node_gpu == 0) & (geo.gpu_alloc > 0)].sum())
        return Sample(
            time=now,
            gpu_allocated=self.bound_gpu / gt if gt else 0.0,
            gpu_useful=useful / gt if gt else 0.0,
            gpu_useful_topology=topology / gt if gt else 0.0,
            cpu_allocated=self.bound_cpu / geo.cpu_total if geo.cpu_total else 0.0,
            pending_units=pending,
            partial_units=len(partial),
            deadlocked_units=self._deadlocked(partial, free_total),
            deadlocked_pairs=self._deadlocked_pairs(partial, free_total),
            fragmentation=1.0 - whole / free_total if free_total else 0.0,
            units_held=held,
            units_local=local,
        )

    def _deadlocked(self, partial: list[Tracked], free_gpu: int) -> int:
        """Partial units whose missing minimum (GPUs and CPUs, counted) does not fit in
        free capacity but would with the other partial units' pods released."""
        if len(partial) < 2:
            return 0
        free_cpu = self.geo.cpu_total - self.bound_cpu
        held_gpu = sum(t.held_gpu for t in partial)
        held_cpu = sum(t.held_cpu for t in partial)
        n = 0
        for t in partial:
            mg, mc = max(0, t.min_gpu - t.held_gpu), max(0, t.min_cpu - t.held_cpu)
            if mg <= free_gpu and mc <= free_cpu:
                continue
            if (mg <= free_gpu + held_gpu - t.held_gpu
                    and mc <= free_cpu + held_cpu - t.held_cpu):
                n += 1
        return n


    def _deadlocked_pairs(self, partial: list[Tracked], free_gpu: int) -> int:
        """Pairs of partial units (a, b) where neither's missing minimum (GPUs and CPUs,
        counted) fits in free capacity, but each would with the other's pods released:
        the two block each other."""
        if len(partial) < 2:
            return 0
        free_cpu = self.geo.cpu_total - self.bound_cpu
        hg = np.array([t.held_gpu for t in partial], dtype=np.int64)
        hc = np.array([t.held_cpu for t in partial], dtype=np.int64)
        mg = np.maximum(np.array([t.min_gpu for t in partial], dtype=np.int64) - hg, 0)
        mc = np.maximum(np.array([t.min_cpu for t in partial], dtype=np.int64) - hc, 0)
        stuck = (mg > free_gpu) | (mc > free_cpu)
        # needs[a, b]: a's missing minimum fits once b lets go
        needs = ((mg[:, None] <= free_gpu + hg[None, :]) & (mc[:, None] <= free_cpu + hc[None, :])
                 & stuck[:, None])
        both = needs & needs.T
        np.fill_diagonal(both, False)
        return int(both.sum()) // 2


def _role_sets(t: Tracked) -> list[str]:
    """Per PodSet of the unit: "prefill", "decode" or "" by the role segment of its path."""
    root = t.tree.path.rstrip("/") + "/"
    out = []
    for ps in t.sets:
        tail = ps.path[len(root):] if ps.path.startswith(root) else ps.path
        seg = tail.split("/", 1)[0].lower()
        out.append("prefill" if "prefill" in seg else "decode" if "decode" in seg else "")
    return out
