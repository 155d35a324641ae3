"""Cluster state: one int64 row per resource over the topology-sorted nodes.

``free[r, n]`` is what node n has left of resource r. Changes go through a
:class:`Transaction`, an undo log of node deltas with savepoints, so a dry run costs only
the nodes it touched. Per-shape fit counts are cached and patched on every change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from gangsched.api.errors import InputError
from gangsched.api.types import Node, NodeRequirements, Pod
from gangsched.cluster.topology import Topology, build_topology, infer_levels

BIG = np.int64(1 << 40)  # fit count standing for "unlimited" (a shape requesting nothing)
_FIT_CACHE = 256


@dataclass(frozen=True)
class Shape:
    """A pod's resource request as a vector over the cluster's resources (cache key)."""

    index: tuple[int, ...]  # resource rows with a positive request
    amount: tuple[int, ...]
    impossible: bool = False  # requests a resource no node has

    def total(self, count: int, n_resources: int) -> np.ndarray:
        v = np.zeros(n_resources, dtype=np.int64)
        for r, a in zip(self.index, self.amount, strict=True):
            v[r] = a * count
        return v


class ClusterState:
    def __init__(self, topology: Topology, extra_resources: Iterable[str] = ()) -> None:
        self.topology = topology
        nodes = topology.nodes
        names: dict[str, None] = {}
        for nd in nodes:
            names.update(dict.fromkeys(nd.allocatable))
        names.update(dict.fromkeys(extra_resources))
        names.setdefault("pods", None)
        self.resources: list[str] = sorted(names)
        self.rindex = {r: i for i, r in enumerate(self.resources)}
        n, r = len(nodes), len(self.resources)
        alloc = np.zeros((r, n), dtype=np.int64)
        for j, nd in enumerate(nodes):
            for k, v in nd.allocatable.items():
                alloc[self.rindex[k], j] = v
        self.alloc = alloc
        self.free = alloc.copy()
        self.schedulable = np.fromiter((nd.schedulable for nd in nodes), dtype=bool, count=n)
        self.bound: dict[str, tuple[int, Shape]] = {}  # pod key -> (node index, shape)
        self.generation = 0
        self._masks: dict[NodeRequirements, np.ndarray] = {}
        self._fits: OrderedDict[Shape, np.ndarray] = OrderedDict()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_nodes(
        cls,
        nodes: Sequence[Node],
        levels: Sequence[str] | None = None,
        pods: Sequence[Pod] = (),
    ) -> ClusterState:
        """Build state from nodes (topology-sorted) and charge already-bound pods."""
        names = [nd.name for nd in nodes]
        if len(set(names)) != len(names):
            dup = next(x for x in names if names.count(x) > 1)
            raise InputError("duplicate Node name", obj=f"Node/{dup}", field="metadata.name")
        topo = build_topology(nodes, infer_levels(nodes) if levels is None else levels)
        state = cls(topo, extra_resources=(k for p in pods for k in p.requests))
        for p in pods:
            if p.node_name:
                state.charge_bound(p)
        return state

    def charge_bound(self, pod: Pod) -> None:
        """Account for a pod already bound to a node (it may overcommit; that is reality)."""
        if pod.node_name is None or pod.key in self.bound:
            return
        j = self.topology.index.get(pod.node_name)
        if j is None:
            return  # bound to a node we do not know: it consumes nothing we model
        shape = self.shape(pod.requests)
        self._apply(np.array([j]), np.array([1]), shape, sign=-1)
        self.bound[pod.key] = (j, shape)

    def release(self, pod_key: str) -> None:
        entry = self.bound.pop(pod_key, None)
        if entry is not None:
            j, shape = entry
            self._apply(np.array([j]), np.array([1]), shape, sign=+1)

    # -- queries ------------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        return self.free.shape[1]

    def shape(self, requests: Mapping[str, int]) -> Shape:
        idx: list[int] = []
        amt: list[int] = []
        impossible = False
        for k in sorted(requests):
            v = requests[k]
            if v <= 0:
                continue
            r = self.rindex.get(k)
            if r is None:
                impossible = True
                continue
            idx.append(r)
            amt.append(v)
        return Shape(tuple(idx), tuple(amt), impossible)

    def mask(self, req: NodeRequirements) -> np.ndarray:
        """Nodes that are schedulable and pass the pod's selector/affinity/taint filters."""
        m = self._masks.get(req)
        if m is None:
            if req == NodeRequirements():
                m = self.schedulable & np.fromiter(
                    (not any(t.effect != "PreferNoSchedule" for t in nd.taints)
                     for nd in self.topology.nodes),
                    dtype=bool,
                    count=self.n_nodes,
                )
            else:
                m = self.schedulable & np.fromiter(
                    (req.matches(nd) for nd in self.topology.nodes),
                    dtype=bool,
                    count=self.n_nodes,
                )
            m.flags.writeable = False
            self._masks[req] = m
        return m

    def fit(self, shape: Shape) -> np.ndarray:
        """How many pods of this shape each node can still take (resources only)."""
        f = self._fits.get(shape)
        if f is not None:
            self._fits.move_to_end(shape)
            return f
        f = self._compute_fit(shape, slice(None))
        self._fits[shape] = f
        if len(self._fits) > _FIT_CACHE:
            self._fits.popitem(last=False)
        return f

    def _compute_fit(self, shape: Shape, where: slice | np.ndarray) -> np.ndarray:
        if shape.impossible:
            n = self.n_nodes if isinstance(where, slice) else len(where)
            return np.zeros(n, dtype=np.int64)
        if not shape.index:
            n = self.n_nodes if isinstance(where, slice) else len(where)
            return np.full(n, BIG, dtype=np.int64)
        out: np.ndarray | None = None
        for r, a in zip(shape.index, shape.amount, strict=True):
            q = self.free[r, where] // a
            out = q if out is None else np.minimum(out, q, out=out)
        assert out is not None
        np.maximum(out, 0, out=out)
        return out

    # -- mutation -----------------------------------------------------------------------

    def _apply(self, nodes: np.ndarray, counts: np.ndarray, shape: Shape, sign: int) -> None:
        for r, a in zip(shape.index, shape.amount, strict=True):
            np.add.at(self.free[r], nodes, sign * a * counts)
        self.generation += 1
        if self._fits:
            uniq = np.unique(nodes)
            for s, f in self._fits.items():
                f[uniq] = self._compute_fit(s, uniq)

    def begin(self) -> Transaction:
        return Transaction(self)

    def snapshot(self) -> ClusterState:
        """An independent copy (static topology and masks are shared)."""
        other = object.__new__(ClusterState)
        other.__dict__.update(self.__dict__)
        other.free = self.free.copy()
        other.bound = dict(self.bound)
        other._fits = OrderedDict()
        return other


@dataclass
class _Change:
    nodes: np.ndarray
    counts: np.ndarray
    shape: Shape
    tag: object


class Transaction:
    """An undo log over a ClusterState (Volcano's Statement, KAI's checkpoint)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.log: list[_Change] = []
        self.closed = False

    def place(
        self, nodes: np.ndarray, counts: np.ndarray, shape: Shape, tag: object = None
    ) -> None:
        """Take ``counts[i]`` pods of ``shape`` on ``nodes[i]``; may not overcommit."""
        if self.closed:
            raise RuntimeError("transaction already closed")
        self.state._apply(nodes, counts, shape, sign=-1)
        self.log.append(_Change(nodes, counts, shape, tag))

    def mark(self) -> int:
        return len(self.log)

    def rollback_to(self, mark: int) -> None:
        while len(self.log) > mark:
            ch = self.log.pop()
            self.state._apply(ch.nodes, ch.counts, ch.shape, sign=+1)

    def discard(self) -> None:
        self.rollback_to(0)
        self.closed = True

    def commit(self) -> None:
        self.closed = True

    def changes(self) -> list[_Change]:
        return list(self.log)
