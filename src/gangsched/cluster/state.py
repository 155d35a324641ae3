"""Cluster state: one int64 row per resource over the topology-sorted nodes.

``free[r, n]`` is what node n has left of resource r. Changes go through a
:class:`Transaction`, an undo log of node deltas with savepoints, so a dry run costs only
the nodes it touched. Per-shape fit counts are cached and patched on every change.

The state also remembers which *exclusive* domains are held (gang.py, "Exclusive
domains"): per (set, label key), per domain value, the pods each owner has there. Pods a
transaction places carry their claims with them (undone on rollback); pods charged as
bound carry the claims registered for them (:meth:`ClusterState.note_claims`), and give
them back when released.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gangsched.api.errors import InputError
from gangsched.api.types import Node, NodeRequirements, Pod
from gangsched.cluster.topology import (
    Level,
    Topology,
    build_topology,
    derive_levels,
    domain_of,
)
from gangsched.gang import Claim, TreeNode, claims_of, podsets

BIG = np.int64(1 << 40)  # fit count standing for "unlimited" (a shape requesting nothing)
_FIT_CACHE = 256
# changes an entry may lag behind before it is recomputed whole: this many, or one per 16
# nodes on a larger cluster (patching that many nodes still costs less than recomputing)
_JOURNAL = 512
_SHAPES = 4096  # shapes memoized by their requests (then the memo starts over)
_SCALAR = 8  # an entry behind by at most this many nodes is patched in scalars

Held = tuple[str, str, str, str, int]
"""(set, label key, domain value, owner path, pods): pods of an owner holding a domain."""


@dataclass(frozen=True)
class Shape:
    """A pod's resource request as a vector over the cluster's resources (cache key)."""

    index: tuple[int, ...]  # resource rows with a positive request
    amount: tuple[int, ...]
    impossible: bool = False  # requests a resource no node has
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:  # a cache key hashed on every lookup: hash once
        object.__setattr__(self, "_hash", hash((self.index, self.amount, self.impossible)))

    def __hash__(self) -> int:
        return self._hash


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
        self._shapes: dict[tuple[tuple[str, int], ...], Shape] = {}  # requests -> shape
        self._cache: OrderedDict[tuple[object, ...], _Entry] = OrderedDict()
        self._totals: np.ndarray | None = None
        self._inv: list[float] | None = None
        self._journal: list[np.ndarray] = []  # nodes touched by generation base+1, base+2...
        self._journal_base = 0
        self._journal_keep = max(_JOURNAL, n // 16)
        self.snapshot_of: ClusterState | None = None  # the state this one was copied from
        # facts of the static cluster (allocatable, masks, topology) kept by their users;
        # a snapshot shares them
        self.static: dict[object, object] = {}
        # exclusive domains: (set, key) -> domain value -> owner path -> pods there
        self.claims: dict[tuple[str, str], dict[str, dict[str, int]]] = {}
        self.pod_claims: dict[str, tuple[Claim, ...]] = {}  # pod key -> its claims

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_nodes(
        cls,
        nodes: Sequence[Node],
        levels: Sequence[str] | None = None,
        pods: Sequence[Pod] = (),
        keys: Iterable[str] = (),
    ) -> ClusterState:
        """Build state from nodes (topology-sorted) and charge already-bound pods.

        ``levels`` fixes the chain of topology levels (None: the well-known keys the nodes
        carry); ``keys``, the label keys the workloads constrain on, join the chain where
        they nest (:func:`derive_levels`)."""
        names = [nd.name for nd in nodes]
        if len(set(names)) != len(names):
            dup = next(x for x in names if names.count(x) > 1)
            raise InputError("duplicate Node name", obj=f"Node/{dup}", field="metadata.name")
        topo = build_topology(nodes, derive_levels(nodes, keys, levels))
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
        self.pod_held(pod.key, j, +1)

    def release(self, pod_key: str) -> None:
        entry = self.bound.pop(pod_key, None)
        if entry is not None:
            j, shape = entry
            self._apply(np.array([j]), np.array([1]), shape, sign=+1)
            self.pod_held(pod_key, j, -1)

    # -- exclusive domains --------------------------------------------------------------

    def domain_value(self, j: int, key: str) -> str | None:
        """Node ``j``'s domain of ``key`` (:func:`~.topology.domain_of`)."""
        return domain_of(self.topology.nodes[j], key, self.topology.keys)

    def hold(self, held: Iterable[Held], sign: int = 1) -> None:
        """Add (``sign`` 1) or remove (-1) pods of owners holding exclusive domains."""
        for exclusive, key, value, owner, n in held:
            domains = self.claims.setdefault((exclusive, key), {})
            owners = domains.setdefault(value, {})
            count = owners.get(owner, 0) + sign * n
            if count > 0:
                owners[owner] = count
            else:
                owners.pop(owner, None)
                if not owners:
                    del domains[value]

    def held_by_others(self, exclusive: str, key: str, owner: str) -> set[str]:
        """Domain values of ``key`` holding pods of an owner of set ``exclusive`` other
        than ``owner``: where ``owner`` may not go."""
        domains = self.claims.get((exclusive, key))
        if not domains:
            return set()
        return {v for v, owners in domains.items() if any(o != owner for o in owners)}

    def pod_held(self, pod_key: str, j: int, sign: int) -> None:
        """Hold (or give back) the domains of a bound pod's registered claims on node j."""
        claims = self.pod_claims.get(pod_key)
        if not claims:
            return
        held: list[Held] = []
        for exclusive, key, owner in claims:
            value = self.domain_value(j, key)
            if value is not None:
                held.append((exclusive, key, value, owner, 1))
        self.hold(held, sign)

    def note_claims(self, pods: Mapping[str, tuple[Claim, ...]]) -> None:
        """Register the claims of pods (pod key -> claims); a pod already bound holds its
        domains from now on."""
        for key, claims in pods.items():
            if self.pod_claims.get(key) == claims:
                continue
            entry = self.bound.get(key)
            if entry is not None:
                self.pod_held(key, entry[0], -1)
            self.pod_claims[key] = claims
            if entry is not None:
                self.pod_held(key, entry[0], +1)

    def note_exclusive(self, tree: TreeNode) -> None:
        """Register the claims of every pod of ``tree`` (see :meth:`note_claims`)."""
        by_set = claims_of(tree)
        if by_set:
            self.note_claims({p: by_set[ps.path] for ps in podsets(tree)
                              if ps.path in by_set for p in ps.pods})

    # -- queries ------------------------------------------------------------------------

    @property
    def n_nodes(self) -> int:
        return self.free.shape[1]

    def shape(self, requests: Mapping[str, int]) -> Shape:
        """The shape of a pod asking for ``requests`` (memoized: every decision asks for
        its pod sets' shapes, mostly the same few)."""
        key = tuple(requests.items())
        got = self._shapes.get(key)
        if got is None:
            if len(self._shapes) >= _SHAPES:
                self._shapes.clear()
            got = self._shapes[key] = self._shape(requests)
        return got

    def _shape(self, requests: Mapping[str, int]) -> Shape:
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
        """How many pods of this shape each node can still take (resources only).

        The returned array is the live cache entry: read it, never write it."""
        return self._entry(shape, None, None).fit

    def capacity(
        self, shape: Shape, req: NodeRequirements, cap: int | None = None
    ) -> np.ndarray:
        """Pods of this shape each node can take, zero where the requirements filter the
        node out, at most ``cap`` per node. Live cache entry: read only."""
        return self._entry(shape, req, cap).fit

    def domain_sums(
        self, shape: Shape, req: NodeRequirements, cap: int | None, level: Level
    ) -> np.ndarray:
        """``capacity`` summed per domain of ``level`` (kept up to date incrementally)."""
        return self._entry(shape, req, cap).level_sums(level)

    def cached(self, shape: Shape, req: NodeRequirements, cap: int | None = None) -> _Entry:
        """The up-to-date cache entry behind :meth:`capacity` and :meth:`domain_sums`
        (``.fit``, ``.level_sums(level)``), for callers reading several: read only."""
        return self._entry(shape, req, cap)

    def domain_bound(
        self, shape: Shape, req: NodeRequirements, cap: int | None, level: Level
    ) -> int:
        """The most pods of this shape one domain of ``level`` could take were every pod
        gone (from allocatable, filters and cap applied): no domain takes more now while
        no node's free capacity exceeds its allocatable. Static: cached for good."""
        key = ("domain_bound", shape, req, cap, id(level))
        got = self.static.get(key)
        if got is None:  # every level's bound at once: the allocatable fit is not kept
            fit = self._compute(shape, self.mask(req), cap, slice(None), self.alloc)
            levels = list(self.topology.levels)
            if all(lv is not level for lv in levels):
                levels.append(level)
            for lv in levels:
                if not len(lv.starts):
                    bound = 0
                elif len(lv.starts) == len(fit):
                    bound = int(fit.max())
                else:
                    bound = int(np.add.reduceat(fit, lv.starts).max())
                self.static[("domain_bound", shape, req, cap, id(lv))] = bound
            got = self.static[key]
        assert isinstance(got, int)
        return got

    @property
    def totals(self) -> np.ndarray:
        """Allocatable summed over the cluster, per resource."""
        if self._totals is None:
            self._totals = self.alloc.sum(axis=1)
        return self._totals

    @property
    def inverse_totals(self) -> list[float]:
        """1 / total allocatable per resource (0 where the cluster has none)."""
        if self._inv is None:
            self._inv = [1.0 / t if t > 0 else 0.0 for t in self.totals.tolist()]
        return self._inv

    def _entry(self, shape: Shape, req: NodeRequirements | None, cap: int | None) -> _Entry:
        key = (shape, req, cap)
        e = self._cache.get(key)
        if e is not None:
            self._cache.move_to_end(key)
            if e.generation != self.generation:
                self._sync(e)
            return e
        mask = None if req is None else self.mask(req)
        e = _Entry(shape, mask, cap, self._compute(shape, mask, cap, slice(None)), self.generation)
        self._cache[key] = e
        if len(self._cache) > _FIT_CACHE:
            self._cache.popitem(last=False)
        return e

    def _sync(self, e: _Entry) -> None:
        """Bring a cache entry up to date: patch the nodes touched since it was last
        synced (from the journal), or recompute it when the journal no longer reaches."""
        since = e.generation - self._journal_base
        complete = self._journal_base + len(self._journal) == self.generation
        if since < 0 or not complete or len(self._journal) - since > self._journal_keep:
            e.fit = self._compute(e.shape, e.mask, e.cap, slice(None))
            e.sums.clear()
            e.levels.clear()
        else:
            touched = self._journal[since:]
            nodes = touched[0] if len(touched) == 1 else _distinct(touched, self.n_nodes)
            if len(nodes) <= _SCALAR:
                self._sync_nodes(e, nodes.tolist())
                e.generation = self.generation
                return
            new = self._compute(e.shape, e.mask, e.cap, nodes)
            delta = new - e.fit.take(nodes)
            e.fit[nodes] = new
            if e.sums and delta.any():
                for lid, sums in e.sums.items():
                    np.add.at(sums, e.levels[lid].node_domain[nodes], delta)
        e.generation = self.generation

    def took(self, e: _Entry, nodes: np.ndarray, counts: np.ndarray) -> None:
        """The last change placed ``counts[i]`` pods of the entry's shape on distinct
        ``nodes[i]``, each within what its fit held: bring the entry (in sync before
        that change, without a cap) up to date directly, as :meth:`_sync` would. A pod
        of the shape takes exactly one from the fit of a node it fits on (its amounts
        divide what it takes) and from each domain sum holding the node."""
        if e.generation != self.generation - 1 or e.cap is not None or not e.shape.index:
            return  # not in sync before, or not linear in the pods: the journal patches it
        e.fit[nodes] -= counts
        for lid, sums in e.sums.items():
            np.subtract.at(sums, e.levels[lid].node_domain[nodes], counts)
        e.generation = self.generation

    def _sync_nodes(self, e: _Entry, nodes: list[int]) -> None:
        """:meth:`_sync` for a few nodes, in scalars (cheaper than numpy calls on tiny
        arrays): the same fit counts as :meth:`_compute`."""
        free, fit = self.free, e.fit
        shape, mask, cap = e.shape, e.mask, e.cap
        levels = [(e.levels[lid].node_domain, sums) for lid, sums in e.sums.items()]
        for j in nodes:
            if shape.impossible or (mask is not None and not mask[j]):
                v = 0
            elif not shape.index:
                v = int(BIG)
            else:
                v = min(free.item(r, j) // a
                        for r, a in zip(shape.index, shape.amount, strict=True))
                v = max(v, 0)
            if cap is not None:
                v = min(v, cap)
            delta = v - fit.item(j)
            if delta:
                fit[j] = v
                for node_domain, sums in levels:
                    sums[node_domain.item(j)] += delta

    def fits(self, shape: Shape, free: np.ndarray) -> np.ndarray:
        """Pods of ``shape`` each column of ``free`` (resources x nodes: a what-if copy of
        some nodes' free capacity) could take, as the cached fit counts are computed
        (no node filters, no cap)."""
        return self._compute(shape, None, None, np.arange(free.shape[1]), free)

    def _compute(
        self, shape: Shape, mask: np.ndarray | None, cap: int | None, where: slice | np.ndarray,
        free: np.ndarray | None = None,
    ) -> np.ndarray:
        n = self.n_nodes if isinstance(where, slice) else len(where)
        if shape.impossible:
            return np.zeros(n, dtype=np.int64)
        if not shape.index:
            out = np.full(n, BIG, dtype=np.int64)
        else:
            free = self.free if free is None else free
            if isinstance(where, slice):
                r0, a0 = shape.index[0], shape.amount[0]
                out = free[r0, where] // a0
                for r, a in zip(shape.index[1:], shape.amount[1:], strict=True):
                    np.minimum(out, free[r, where] // a, out=out)
            else:  # a row's take is cheaper than free[r, where]; no division by one
                out = _row_fit(free, shape.index[0], shape.amount[0], where)
                for r, a in zip(shape.index[1:], shape.amount[1:], strict=True):
                    np.minimum(out, _row_fit(free, r, a, where), out=out)
            np.maximum(out, 0, out=out)
        if cap is not None:
            np.minimum(out, cap, out=out)
        if mask is not None:
            out[~mask[where]] = 0
        return out

    # -- mutation -----------------------------------------------------------------------

    def _apply(self, nodes: np.ndarray, counts: np.ndarray, shape: Shape, sign: int) -> None:
        """Add ``sign * counts[i]`` pods of ``shape`` worth of free capacity on nodes[i]
        (``nodes`` distinct); cached capacities catch up lazily from the journal."""
        free = self.free
        if len(nodes) == 1:  # most changes touch one node: scalar updates are cheaper
            j, c = int(nodes[0]), sign * int(counts[0])
            for r, a in zip(shape.index, shape.amount, strict=True):
                free[r, j] += a * c
        else:
            for r, a in zip(shape.index, shape.amount, strict=True):
                free[r][nodes] += sign * a * counts  # a row's view: cheaper indexing
        self.generation += 1
        self._journal.append(nodes)
        if len(self._journal) > 2 * self._journal_keep:
            drop = len(self._journal) - self._journal_keep
            del self._journal[:drop]
            self._journal_base += drop

    def begin(self) -> Transaction:
        return Transaction(self)

    def snapshot(self) -> ClusterState:
        """An independent copy (static topology and masks are shared)."""
        other = object.__new__(ClusterState)
        other.__dict__.update(self.__dict__)
        other.free = self.free.copy()
        other.bound = dict(self.bound)
        other._cache = OrderedDict()
        other._journal = []
        other._journal_base = other.generation
        other.snapshot_of = self
        other.claims = {k: {v: dict(o) for v, o in m.items()} for k, m in self.claims.items()}
        other.pod_claims = dict(self.pod_claims)
        return other

    @property
    def origin(self) -> ClusterState:
        """The state this one is a (chain of) snapshot(s) of; itself when it is none."""
        base = self
        while base.snapshot_of is not None:
            base = base.snapshot_of
        return base


def _row_fit(free: np.ndarray, r: int, a: int, where: np.ndarray) -> np.ndarray:
    """Pods taking ``a`` of resource ``r`` each that the nodes ``where`` could take."""
    got = free[r].take(where)
    if a != 1:
        got //= a
    return got


def _distinct(arrays: list[np.ndarray], n: int) -> np.ndarray:
    """The distinct node indices (of ``n`` nodes) of several arrays, ascending (cheaper
    than np.unique: a set for a few, else a mark per node, else a sort)."""
    total = sum(len(a) for a in arrays)
    if total <= 64:
        return np.fromiter(sorted({j for a in arrays for j in a.tolist()}), dtype=np.int64)
    if 16 * total >= n:
        seen = np.zeros(n, dtype=bool)
        for a in arrays:
            seen[a] = True
        return np.flatnonzero(seen)
    a = np.sort(np.concatenate(arrays))
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


@dataclass
class _Entry:
    """Cached capacity of one (shape, requirements, cap) and its per-level domain sums."""

    shape: Shape
    mask: np.ndarray | None
    cap: int | None
    fit: np.ndarray
    generation: int
    sums: dict[int, np.ndarray] = field(default_factory=dict)
    levels: dict[int, Level] = field(default_factory=dict)

    def level_sums(self, level: Level) -> np.ndarray:
        """``fit`` summed per domain of ``level`` (kept up to date with ``fit``)."""
        if len(level.starts) == len(self.fit):  # one node per domain: the fit itself
            return self.fit
        sums = self.sums.get(id(level))
        if sums is None:
            sums = np.add.reduceat(self.fit, level.starts) if len(level.starts) else self.fit[:0]
            self.sums[id(level)] = sums
            self.levels[id(level)] = level
        return sums


@dataclass
class _Change:
    nodes: np.ndarray
    counts: np.ndarray
    shape: Shape
    tag: object
    held: tuple[Held, ...] = ()  # exclusive domains these pods hold


class Transaction:
    """An undo log over a ClusterState (Volcano's Statement, KAI's checkpoint)."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.log: list[_Change] = []
        self.closed = False

    def place(
        self, nodes: np.ndarray, counts: np.ndarray, shape: Shape, tag: object = None,
        held: tuple[Held, ...] = (),
    ) -> None:
        """Take ``counts[i]`` pods of ``shape`` on distinct ``nodes[i]``; ``held``: the
        exclusive domains they hold."""
        if self.closed:
            raise RuntimeError("transaction already closed")
        self.state._apply(nodes, counts, shape, sign=-1)
        if held:
            self.state.hold(held, +1)
        self.log.append(_Change(nodes, counts, shape, tag, held))

    def mark(self) -> int:
        return len(self.log)

    def rollback_to(self, mark: int) -> None:
        while len(self.log) > mark:
            ch = self.log.pop()
            self.state._apply(ch.nodes, ch.counts, ch.shape, sign=+1)
            if ch.held:
                self.state.hold(ch.held, -1)

    def discard(self) -> None:
        self.rollback_to(0)
        self.closed = True

    def commit(self) -> None:
        self.closed = True
