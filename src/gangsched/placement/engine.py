"""The hierarchical placement engine (DESIGN.md sections 2-3).

``place(unit, state)`` decides where one scheduling unit goes, all-or-nothing:

0. **Extras by search first.** When the unit asks for more than its minimum, the tree is
   first searched with every gang's minimum raised to the same fraction of what it asks
   (100%, 75%, 50%): equal fractions are the proportional split, so the extras stay fair
   while the full search (with backtracking) places them. The first fraction that fits
   wins; otherwise step 1 runs on the minimum itself.
1. **Minimum.** Recursively place every gang's minimum: for a node with a topology
   constraint, enumerate candidate domains of its level inside the parent's domain, prune
   them with vectorized fit-count sums, dry-run the best few in the transaction, keep the
   best by score (room for the extras the node wants, then tight fit, then fewest nodes)
   and recurse. Siblings go most constrained first, then largest pods first; they are
   searched depth-first, and when a later sibling fails, earlier siblings' alternatives
   are tried within a bounded budget (backtracking). A set spanning nodes fills the
   fullest nodes first; a unit that fails that way is searched once more filling the
   emptiest nodes first.
2. **Extras.** With the minimum held, the rest is added by water-filling: repeatedly grow
   the child with the lowest placed/asked ratio, each extra child placed all-or-nothing
   inside its parent's domain (spilling to wider scopes only for preferred constraints).
3. **Decide.** Commit the transaction (or discard it and explain the blocking group).

Everything is a pure function of (tree, state); ties break by stable order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

import numpy as np

from gangsched.api.types import NodeRequirements
from gangsched.cluster.state import BIG, ClusterState, Shape, Transaction
from gangsched.cluster.topology import HOSTNAME, CrossLevel, Level, Topology
from gangsched.gang import (
    Constraint,
    Group,
    PodSet,
    TreeNode,
    minimum_pods,
    podsets,
    preferred_key,
    walk,
)
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.describe import describe_requests, level_noun, plural
from gangsched.placement.filters import node_summary

RAISE_STEPS = (1.0, 0.75, 0.5)  # fractions of what each gang asks for, tried before its minimum


@dataclass(frozen=True)
class Options:
    backtrack_budget: int = 256  # alternatives tried after a first choice failed deeper
    score_budget: int = 64  # dry runs spent on scoring candidates, per unit
    score_top: int = 3  # candidates dry-run per choice for scoring
    max_dry_runs: int = 20_000  # hard cap on placement attempts per unit
    extras: bool = True
    raise_budget: int = 16  # backtracking for each raised-minimum attempt (extras by search)
    raise_steps: tuple[float, ...] = RAISE_STEPS  # () places extras greedily after the minimum
    # emulation switches (for comparing with other schedulers; ours are the defaults)
    child_order: Literal["size", "given"] = "size"  # biggest minimum first, or as listed
    domain_order: Literal["fit", "index"] = "fit"  # tightest fit first, or first feasible
    extras_first: bool = False  # grow each child fully before the next one's minimum
    # when a set spans nodes: fullest nodes first (best fit), or emptiest first; a unit
    # rejected with "pack" is searched once more with "spread" before it is rejected
    node_order: Literal["pack", "spread"] = "pack"


@dataclass(frozen=True)
class _Candidate:
    lo: int
    hi: int
    level: Level | None = None  # None: the parent's scope as it is
    d: int = -1  # domain index in level (or in cross)
    topo: Topology | None = None
    sel: np.ndarray | None = None  # bool [N]: the nodes of [lo, hi) in scope (None: all)
    cross: CrossLevel | None = None  # a domain of a key outside the chain of levels

    @property
    def label(self) -> str | None:
        if self.cross is not None:
            return self.cross.values[self.d]
        if self.level is None or self.topo is None:
            return None
        return self.topo.domain_path(self.level, self.d)

    @property
    def pin(self) -> tuple[str | None, str | None]:
        """(label key, label value) of the chosen domain, or (None, None)."""
        if self.cross is not None:
            return self.cross.key, self.cross.values[self.d]
        if self.level is None:
            return None, None
        return self.level.key, self.level.values[self.d]

    @property
    def key(self) -> str | None:
        return self.pin[0]


@dataclass
class _Seen:
    """What one tier of candidates offered, kept to explain a failure."""

    node: TreeNode
    level: Level | None
    lo: int
    hi: int
    sums: np.ndarray | None = None  # main-shape capacity per domain
    valid: np.ndarray | None = None
    d0: int = 0
    sel: np.ndarray | None = None


@dataclass
class _Candidates:
    """Domains that passed the capacity bound, best first; candidates are built lazily."""

    lo: np.ndarray
    hi: np.ndarray
    d: np.ndarray
    level: Level | None
    topo: Topology
    sel: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.d)

    def __getitem__(self, i: int) -> _Candidate:
        return _Candidate(int(self.lo[i]), int(self.hi[i]), self.level, int(self.d[i]), self.topo,
                          self.sel)


_Scope = tuple[int, int, np.ndarray | None]  # node range [lo, hi) and its selection
_Spill = tuple[_Scope, ...]  # scopes extras may spill into, in order


@dataclass
class _PSRes:
    node: PodSet
    lo: int
    hi: int
    outer: _Spill  # wider scopes extras may spill into (preferred constraints)
    cand: _Candidate | None = None
    sel: np.ndarray | None = None
    nodes: list[np.ndarray] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)
    placed: int = 0


@dataclass
class _GRes:
    node: Group
    lo: int
    hi: int
    outer: _Spill
    cand: _Candidate | None = None
    sel: np.ndarray | None = None
    kids: dict[int, _PSRes | _GRes] = field(default_factory=dict)
    placed: int = 0


_Res = _PSRes | _GRes


_DEFAULT = Options()
_EMPTY = np.zeros(0, dtype=np.int64)
_NO_DOMAIN = np.array([-1], dtype=np.int64)
_COMMON = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


@dataclass(frozen=True)
class _Demand:
    """Pods of one shape (and node requirements) a subtree needs at minimum."""

    shape: Shape
    req: NodeRequirements
    count: int


class _Search:
    def __init__(self, state: ClusterState, options: Options) -> None:
        self.state = state
        self.topo = state.topology
        self.opts = options
        self.txn: Transaction = state.begin()
        self.backtrack = options.backtrack_budget
        self.score_left = options.score_budget
        self.dry_runs = 0
        self.notes: dict[str, str] = {}
        self.blocker: dict[str, str] = {}
        self._shapes: dict[int, Shape] = {}
        self._demand: dict[int, list[_Demand]] = {}
        self._weights: dict[int, float] = {}
        self._sizes: dict[int, int] = {}
        self._simple: dict[int, bool] = {}
        self._desired: dict[int, list[_Demand]] = {}
        self.originals: dict[str, TreeNode] = {}  # path -> the unit's own node (raised searches)
        self.group_caps: dict[str, tuple[tuple[str, int, Group], ...]] = {}  # set -> group caps
        self._held: dict[int, np.ndarray] = {}
        self._stripped: dict[tuple[int, Constraint], TreeNode] = {}
        self._most: dict[str, int] = {}  # group path -> most children placed together
        self.bottleneck: dict[str, _Demand] = {}  # path -> scarcest demand, when no domain held it
        self.requirements: list[NodeRequirements] = []  # distinct ones, when several
        self.scarce: list[int] = []  # extended resources (GPUs) some set of the unit asks for
        self.ranking = False
        self._inv_total = state.inverse_totals

    # -- static facts about the tree ----------------------------------------------------

    def shape(self, ps: PodSet) -> Shape:
        s = self._shapes.get(id(ps))
        if s is None:
            s = self._shapes[id(ps)] = self.state.shape(ps.requests)
        return s

    def demand(self, node: TreeNode) -> list[_Demand]:
        """Lower bound on the pods per shape the node's minimum needs (largest first)."""
        d = self._demand.get(id(node))
        if d is None:
            d = self._demand[id(node)] = self._bound(node, full=False)
        return d

    def desired(self, node: TreeNode) -> list[_Demand]:
        """Pods per shape the whole node asks for (minimum and extras)."""
        d = self._desired.get(id(node))
        if d is None:
            d = self._desired[id(node)] = self._bound(node, full=True)
        return d

    def _bound(self, node: TreeNode, full: bool) -> list[_Demand]:
        """Per shape: the pods needed whichever children are chosen. For a gang over
        children that is, shape by shape, the ``min_groups`` smallest children's counts
        (a valid lower bound even when children have different shapes). Per-node caps
        are left out: they only restrict, so the bound stays valid; placement applies them."""
        acc: dict[tuple[Shape, NodeRequirements], int] = {}
        if isinstance(node, PodSet):
            count = self.size(node) if full else node.min_pods
            if count:
                acc[(self.shape(node), node.requirements)] = count
        else:
            kids = [self.desired(c) if full else self.demand(c) for c in node.children]
            need = len(kids) if full else node.min_groups
            per: dict[tuple[Shape, NodeRequirements], list[int]] = {}
            for ds in kids:
                for x in ds:
                    per.setdefault((x.shape, x.req), []).append(x.count)
            for k, counts in per.items():
                counts += [0] * (len(kids) - len(counts))
                counts.sort()
                total = sum(counts[:need])
                if total:
                    acc[k] = total
        if not full and isinstance(node, Group) and node.min_pods:
            every = self.desired(node)  # a subtree of one kind of pod: min_pods of it
            if len(every) == 1:
                k = (every[0].shape, every[0].req)
                acc[k] = max(acc.get(k, 0), node.min_pods)
        out = [_Demand(s, r, n) for (s, r), n in acc.items()]
        out.sort(key=lambda x: -self._shape_weight(x.shape) * x.count)
        return out

    def _shape_weight(self, shape: Shape) -> float:
        inv = self._inv_total
        return max((a * inv[r] for r, a in zip(shape.index, shape.amount, strict=True)),
                   default=0.0)

    def placement_order(self, node: TreeNode, index: int) -> tuple[int, float, float, int]:
        """Siblings are placed most constrained first (narrowest required level), then
        largest pods first (first-fit decreasing), then largest minimum, then as listed."""
        biggest = max((self._shape_weight(d.shape) for d in self.demand(node)), default=0.0)
        return (-self.narrowness(node), -biggest, -self.weight(node), index)

    def required(self, node: TreeNode) -> str | None:
        """The narrowest required key of the chain on the node (it implies the wider ones;
        keys outside the chain are handled by :meth:`cross_alternatives`)."""
        keys = [c.key for c in node.topology
                if c.mode == "required" and self.topo.nested(c.key)]
        if len(keys) <= 1:
            return keys[0] if keys else None
        return max(keys, key=lambda k: self.topo.rank(k) or 0)

    def narrowness(self, node: TreeNode) -> int:
        """Rank of the node's own required level (higher is narrower), -1 without one."""
        key = self.required(node)
        rank = self.topo.rank(key) if key is not None else None
        return -1 if rank is None else rank

    def weight(self, node: TreeNode) -> float:
        """Dominant-resource size of the node's minimum: bigger children are placed first."""
        w = self._weights.get(id(node))
        if w is None:
            w = sum(self._shape_weight(x.shape) * x.count for x in self.demand(node))
            self._weights[id(node)] = w
        return w

    # -- capacity arrays ----------------------------------------------------------------

    def capacity(self, dem: _Demand, lo: int, hi: int) -> np.ndarray:
        """How many pods of dem's shape each node in [lo, hi) can take now (read only)."""
        return self.state.capacity(dem.shape, dem.req)[lo:hi]

    def capacity_in(self, dem: _Demand, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        """:meth:`capacity`, zero on the nodes of [lo, hi) outside the selection."""
        f = self.capacity(dem, lo, hi)
        return f if sel is None else f * sel[lo:hi]

    def size(self, node: TreeNode) -> int:
        n = self._sizes.get(id(node))
        if n is None:
            n = self._sizes[id(node)] = node.size
        return n

    def simple(self, node: TreeNode) -> bool:
        """True when the capacity bound already orders candidates as a dry run would:
        one shape, and no topology constraint below the node."""
        v = self._simple.get(id(node))
        if v is None:
            v = len(self.demand(node)) <= 1 and (
                isinstance(node, PodSet)
                or all(not c.topology and self.simple(c) for c in node.children)
            )
            self._simple[id(node)] = v
        return v

    # -- candidate domains --------------------------------------------------------------

    def tiers(self, node: TreeNode) -> list[Level | None]:
        """Levels to try, narrowest first; None means the parent's scope as it is.

        A required key is the widest level tried; a preferred key starts narrower and falls
        back level by level (to the parent's scope when nothing is required). Keys outside
        the chain were taken off the node by :meth:`cross_alternatives` before this.
        """
        req, pref = self.required(node), preferred_key(node)
        r = self.topo.rank(req) if req is not None else None
        p = self.topo.rank(pref) if pref is not None else None
        assert req is None or r is not None, f"{req} is not a level of the chain"
        if p is not None and r is not None and p <= r:
            p = None
        narrow = p if p is not None else r
        if narrow is None:
            return [None]
        stop = r if r is not None else 0
        out: list[Level | None] = [self.level_at(i) for i in range(narrow, stop - 1, -1)]
        if r is None:
            out.append(None)
        return out

    def pin(self, node: TreeNode, key: str, value: str, lo: int, hi: int) -> tuple[int, int]:
        """The part of [lo, hi) inside the domain of ``key`` whose label is ``value``
        (empty when there is none)."""
        lv = self.topo.level_for(key)
        assert lv is not None, f"{key} is not a level of the chain"
        if hi <= lo:
            return lo, lo
        d0, d1 = int(lv.node_domain[lo]), int(lv.node_domain[hi - 1]) + 1
        for d in range(d0, d1):
            if lv.valid[d] and lv.values[d] == value:
                return max(int(lv.starts[d]), lo), min(int(lv.ends[d]), hi)
        return lo, lo

    def level_at(self, i: int) -> Level:
        levels = self.topo.levels
        if i < len(levels):
            return levels[i]
        lv = self.topo.level_for(HOSTNAME)
        assert lv is not None
        return lv

    def outer(self, node: TreeNode, c: _Candidate, scope: _Scope, spill: _Spill) -> _Spill:
        """Where extras may spill, in order, when the chosen domain is full: a node without
        a constraint inherits its parent's; a preferred one adds the parent's scope
        (only up to its required domain, when it also has one)."""
        if c.level is None:
            return spill
        if preferred_key(node) is None:
            return ()
        lo, hi, sel = scope
        req = self.required(node)
        if req is None:
            return ((lo, hi, sel), *spill)
        lv = self.topo.level_for(req)
        assert lv is not None
        d = int(lv.node_domain[c.lo])
        return ((max(int(lv.starts[d]), lo), min(int(lv.ends[d]), hi), sel),)

    def candidates(
        self, node: TreeNode, level: Level | None, lo: int, hi: int,
        within: Level | None = None, sel: np.ndarray | None = None,
    ) -> tuple[_Candidates, _Seen]:
        """Domains of ``level`` inside [lo, hi) that pass the capacity bound, best first.

        The bound: for every shape of the node's minimum, the domain's summed fit count
        covers the pods needed. Order: room for the wanted extras, then tightest slack.
        Also returns what was seen, to explain a failure later.
        """
        dems = self.demand(node)
        if level is None:
            seen = _Seen(node, None, lo, hi, sel=sel)
            # a pod set in its parent's scope: placing it is the check
            if isinstance(node, PodSet) or all(
                int(self.capacity_in(d, lo, hi, sel).sum()) >= d.count for d in dems
            ):
                return _Candidates(np.array([lo]), np.array([hi]), _NO_DOMAIN, None,
                                   self.topo, sel), seen
            return _Candidates(_EMPTY, _EMPTY, _EMPTY, None, self.topo), seen
        d0 = int(level.node_domain[lo])
        d1 = int(level.node_domain[hi - 1]) + 1
        starts = level.starts[d0:d1]
        ends = level.ends[d0:d1]
        whole = int(starts[0]) >= lo and int(ends[-1]) <= hi
        if not whole:  # the scope cuts through domains: clip them to it
            starts, ends = np.maximum(starts, lo), np.minimum(ends, hi)
        valid = level.valid[d0:d1]
        ok_mask = valid.copy()
        if within is not None:  # a preferred level narrower than the required one
            ok_mask &= within.valid[within.node_domain[starts]]

        def sums_of(dem: _Demand) -> np.ndarray:
            if whole and sel is None:
                return self.state.domain_sums(dem.shape, dem.req, None, level)[d0:d1]
            return np.add.reduceat(self.capacity_in(dem, lo, hi, sel), starts - lo)

        main_sum: np.ndarray | None = None
        for i, dem in enumerate(dems):
            sums = sums_of(dem)
            if i == 0:
                main_sum = sums
            ok_mask &= sums >= dem.count
        ids = np.flatnonzero(ok_mask)
        # order (and explain) by the main shape: of the minimum, else of what is asked
        main = dems[0] if dems else next(iter(self.desired(node)), None)
        if main is not None and main_sum is None:
            main_sum = sums_of(main)
        seen = _Seen(node, level, lo, hi, main_sum, valid, d0, sel)
        if main is not None and main_sum is not None and len(ids) > 1 and (
            self.opts.domain_order == "fit"
        ):
            # room for wanted extras (more is better), then slack (less is better), then index
            slack = np.minimum(main_sum[ids] - (main.count if dems else 0), BIG)
            room = np.minimum(slack, self.want(node))
            ids = ids[np.argsort((BIG - room) * (BIG + 1) + slack, kind="stable")]
        return _Candidates(starts[ids], ends[ids], ids + d0, level, self.topo, sel), seen

    def want(self, node: TreeNode) -> int:
        """Extra pods the node would like beyond its minimum."""
        return max(0, self.size(node) - sum(d.count for d in self.demand(node)))

    # -- the minimum --------------------------------------------------------------------

    def spend_backtrack(self) -> bool:
        if self.backtrack <= 0:
            return False
        self.backtrack -= 1
        return True

    def alternatives(
        self, node: TreeNode, lo: int, hi: int, spill: _Spill = (),
        sel: np.ndarray | None = None,
    ) -> Iterator[_Res]:
        """Placements of node's minimum inside [lo, hi) (the selected nodes of it, when
        ``sel`` is given), best first; each is live in the transaction while the consumer
        holds it and undone when the consumer asks for the next one."""
        cross = self.cross_constraint(node)
        if cross is not None:
            yield from self.cross_alternatives(node, cross, (lo, hi, sel), spill)
            return
        yielded = False
        seen: list[_Seen] = []
        for con in node.topology:
            if con.value is not None and con.mode == "required":
                lo, hi = self.pin(node, con.key, con.value, lo, hi)
                if lo >= hi:
                    self.notes[node.path] = (
                        f"{node.name}: pinned to {level_noun(con.key)} {con.value}, "
                        "which is not inside its parent's domain"
                    )
                    return
        req = self.required(node)
        req_level = self.topo.level_for(req) if req is not None else None
        for level in self.tiers(node):
            within = req_level if level is not None and level is not req_level else None
            cands, tier = self.candidates(node, level, lo, hi, within, sel)
            seen.append(tier)
            if not cands:
                continue
            order: Iterator[int] | range = range(len(cands))
            if (len(cands) > 1 and self.opts.score_top > 1 and self.score_left > 0
                    and not self.ranking and not self.simple(node) and self.want(node) > 0):
                order = self.rank(node, cands, (lo, hi, sel), spill)
            for j in order:
                if yielded and not self.spend_backtrack():
                    return
                if self.dry_runs >= self.opts.max_dry_runs:
                    return
                m = self.txn.mark()
                r = self.place_in(node, cands[j], (lo, hi, sel), spill)
                if r is not None:
                    yielded = True
                    yield r
                self.txn.rollback_to(m)
        if not yielded:
            self.note_failure(node, seen)

    def cross_constraint(self, node: TreeNode) -> Constraint | None:
        """The node's first constraint (required ones first) on a key outside the chain."""
        found = [c for c in node.topology if not self.topo.nested(c.key)]
        if not found:
            return None
        return next((c for c in found if c.mode == "required"), found[0])

    def stripped(self, node: TreeNode, con: Constraint) -> TreeNode:
        """The node without ``con`` (cached: the search's caches are keyed by identity)."""
        key = (id(node), con)
        inner = self._stripped.get(key)
        if inner is None:
            inner = replace(node, topology=tuple(c for c in node.topology if c != con))
            self._stripped[key] = inner
            self._stripped[(id(inner), con)] = inner  # keeps the original alive too
        return inner

    def cross_alternatives(
        self, node: TreeNode, con: Constraint, scope: _Scope, spill: _Spill
    ) -> Iterator[_Res]:
        """Placements of node's minimum inside one domain of a key outside the chain of
        levels (its domains are node sets, not slices): domains that pass the capacity
        bound, best first, each searched with the rest of the node's constraints. A
        preferred key falls back to the whole scope."""
        lo, hi, sel = scope
        xl = self.topo.cross(con.key)
        inner = self.stripped(node, con)
        codes = xl.node_domain[lo:hi]
        ok = codes >= 0
        if sel is not None:
            ok &= sel[lo:hi]
        if con.value is not None and con.mode == "required":
            ok &= codes == (xl.values.index(con.value) if con.value in xl.values else -2)
        size = len(xl)
        feasible = np.bincount(codes[ok], minlength=size) > 0
        dems = self.demand(node)
        main_sum: np.ndarray | None = None
        for i, dem in enumerate(dems):
            sums = np.bincount(codes[ok], weights=self.capacity(dem, lo, hi)[ok], minlength=size)
            if i == 0:
                main_sum = sums
            feasible &= sums >= dem.count
        ids = np.flatnonzero(feasible)
        if main_sum is not None and len(ids) > 1 and self.opts.domain_order == "fit":
            slack = np.minimum(main_sum[ids] - dems[0].count, float(BIG))
            room = np.minimum(slack, self.want(node))
            ids = ids[np.lexsort((slack, -room))]
        yielded = False
        for d in ids.tolist():
            if yielded and not self.spend_backtrack():
                return
            if self.dry_runs >= self.opts.max_dry_runs:
                return
            members = xl.members[d]
            members = members[(members >= lo) & (members < hi)]
            if sel is not None:
                members = members[sel[members]]
            dsel = np.zeros(self.state.n_nodes, dtype=bool)
            dsel[members] = True
            cand = _Candidate(int(members[0]), int(members[-1]) + 1, None, d, self.topo, dsel, xl)
            # required: everything stays in the domain; preferred: extras may spill out
            inner_spill: _Spill = () if con.mode == "required" else (scope, *spill)
            for r in self.alternatives(inner, cand.lo, cand.hi, inner_spill, dsel):
                if r.cand is None or r.cand.key is None:
                    r.cand = cand
                yielded = True
                yield r
        if con.mode == "preferred":
            if not yielded or self.spend_backtrack():
                yield from self.alternatives(inner, lo, hi, spill, sel)
            return
        if not yielded and node.path not in self.notes:
            self.note_cross(node, con, ok, codes, main_sum)

    def note_cross(self, node: TreeNode, con: Constraint, ok: np.ndarray, codes: np.ndarray,
                   main_sum: np.ndarray | None) -> None:
        """Why no domain of a key outside the chain holds the node's minimum."""
        noun = level_noun(con.key)
        need = self.need_text(node)
        xl = self.topo.cross(con.key)
        if not ok.any():
            if not len(xl):
                why = f"no node has the label {con.key}"
            elif con.value is not None:
                why = f"no node in its scope has {con.key}={con.value}"
            else:
                why = f"no node in its scope has the label {con.key}"
            self.notes[node.path] = f"{node.name}: needs {need} inside one {noun}; {why}"
            return
        if main_sum is None:
            self.notes[node.path] = f"{node.name}: needs {need} inside one {noun}"
            return
        present = np.bincount(codes[ok], minlength=len(xl)) > 0
        masked = np.where(present, main_sum, -1)
        j = int(np.argmax(masked))
        self.notes[node.path] = (f"{node.name}: needs {need} inside one {noun}; the best "
                                 f"{noun} ({xl.values[j]}) holds {int(min(masked[j], BIG))}")

    def rank(
        self, node: TreeNode, cands: _Candidates, scope: _Scope, spill: _Spill
    ) -> Iterator[int]:
        """Dry-run the first few candidates and order them by the resulting score: room
        for the extras the node wants, then tight fit (least capacity left), then fewest
        nodes touched; stable order breaks ties. Yields candidate indices."""
        scored: list[tuple[tuple[int, int, int], int]] = []
        dems = self.demand(node)
        tried = 0
        self.ranking = True  # dry runs below take candidates in bound order
        for j in range(min(len(cands), self.opts.score_top)):
            if self.score_left <= 0:
                break
            self.score_left -= 1
            tried += 1
            c = cands[j]
            m = self.txn.mark()
            r = self.place_in(node, c, scope, spill)
            if r is not None:
                left = int(self.capacity_in(dems[0], c.lo, c.hi, c.sel).sum()) if dems else 0
                want = self.size(node) - r.placed
                scored.append(((-min(left, want), left, touched(r)), j))
            self.txn.rollback_to(m)
        self.ranking = False
        for _, j in sorted(scored):
            yield j
        yield from range(tried, len(cands))

    def place_in(
        self, node: TreeNode, c: _Candidate, scope: _Scope, spill: _Spill = ()
    ) -> _Res | None:
        """Place node's minimum inside candidate c (chosen within the parent's scope)."""
        self.dry_runs += 1
        outer = self.outer(node, c, scope, spill)
        if isinstance(node, PodSet):
            res = _PSRes(node, c.lo, c.hi, outer, c, c.sel)
            if node.min_pods and self.add_pods(res, node.min_pods) < node.min_pods:
                return None
            return res
        return self.place_group(node, c, outer)

    def place_group(
        self, g: Group, c: _Candidate, outer: _Spill
    ) -> _GRes | None:
        res = _GRes(g, c.lo, c.hi, outer, c, c.sel)
        order = list(range(len(g.children)))
        if self.opts.child_order == "size":
            order.sort(key=lambda i: self.placement_order(g.children[i], i))
        need = g.min_groups
        stuck_at, stuck_child = 0, ""  # deepest sibling position the search failed at
        most = 0  # most children satisfied together in this domain

        def dfs(pos: int, sat: int) -> bool:
            nonlocal stuck_at, stuck_child, most
            most = max(most, sat)
            if sat >= need:
                return True
            if len(order) - pos < need - sat:
                return False
            i = order[pos]
            child = g.children[i]
            m = self.txn.mark()
            for r in self.alternatives(child, c.lo, c.hi, outer, c.sel):
                res.kids[i] = r
                if self.opts.extras_first:
                    self.grow(r, self.size(child))
                if dfs(pos + 1, sat + 1):
                    return True
                del res.kids[i]
            self.txn.rollback_to(m)
            if pos >= stuck_at:
                stuck_at, stuck_child = pos, child.path
            if len(order) - pos - 1 < need - sat:
                return False
            return dfs(pos + 1, sat)  # leave this child out; it may come back as an extra

        if not dfs(0, 0):
            self.blocker[g.path] = stuck_child
            if most >= self._most.get(g.path, -1):  # keep the domain that came closest
                self._most[g.path] = most
                self.notes[g.path] = self.describe_group(g, c, most)
            return None
        res.placed = sum(r.placed for r in res.kids.values())
        if res.placed < g.min_pods:
            self.grow(res, g.min_pods - res.placed)
            if res.placed < g.min_pods:
                self.notes[g.path] = (
                    f"{g.name}: needs {plural(g.min_pods, 'pod')} placed{where_text(c)}; "
                    f"only {res.placed} fit"
                )
                return None
        return res

    # -- pods ---------------------------------------------------------------------------

    def add_pods(self, res: _PSRes, count: int) -> int:
        """Place up to ``count`` more pods of res's set inside its scope (then the wider
        scope, for preferred constraints); returns how many were placed."""
        done = self._add_pods_in(res, count, (res.lo, res.hi, res.sel))
        for scope in res.outer:
            if done >= count:
                break
            done += self._add_pods_in(res, count - done, scope)
        return done

    def _add_pods_in(self, res: _PSRes, count: int, scope: _Scope) -> int:
        ps = res.node
        shape = self.shape(ps)
        lo, hi, sel = scope
        f = self.state.capacity(shape, ps.requirements, ps.max_pods_per_node)[lo:hi]
        if sel is not None:
            f = f * sel[lo:hi]
        if ps.max_pods_per_node is not None and (res.nodes or ps.held_per_node):
            f = f.copy()  # the cap counts this set's pods already on each node
            for nodes, counts in zip(res.nodes, res.counts, strict=True):
                inside = (nodes >= lo) & (nodes < hi)
                np.subtract.at(f, nodes[inside] - lo, counts[inside])
            if ps.held_per_node:
                f -= self.held(ps)[lo:hi]
            np.maximum(f, 0, out=f)
        for prefix, cap, group in self.group_caps.get(ps.path, ()):
            used = self.pods_under(prefix, lo, hi)
            if group.held_per_node:
                used += self.held(group)[lo:hi]
            f = np.minimum(f, np.maximum(cap - used, 0))
        nz = np.flatnonzero(f)
        if len(nz) == 0:
            return 0
        fv = f[nz]
        pref = self.node_preference(ps, shape, nz + lo)
        single = np.flatnonzero(fv >= count)
        if pref is None and len(single):
            # one node holds them all: the tightest (best fit), or the emptiest (spread)
            pick = np.argmin if self.opts.node_order == "pack" else np.argmax
            j = single[int(pick(fv[single]))]
            picks, take = nz[j : j + 1], np.array([count], dtype=np.int64)
        else:
            # preferred nodes first, then the fullest nodes first (best fit per pod, as
            # kube-scheduler's MostAllocated): whole free nodes stay for bigger pods
            key = fv if self.opts.node_order == "pack" else -fv
            order = (np.argsort(key, kind="stable") if pref is None
                     else np.lexsort((key, pref)))
            cum = np.cumsum(fv[order])
            k = int(np.searchsorted(cum, count))
            k = min(k, len(order) - 1)
            picks = nz[order[: k + 1]]
            take = fv[order[: k + 1]].astype(np.int64)
            placed = int(cum[k])
            if placed > count:
                take[-1] -= placed - count
        nodes = picks.astype(np.int64) + lo
        self.txn.place(nodes, take, shape, tag=ps.path)
        res.nodes.append(nodes)
        res.counts.append(take)
        n = int(take.sum())
        res.placed += n
        return n

    def node_preference(self, ps: PodSet, shape: Shape, nodes: np.ndarray) -> np.ndarray | None:
        """Lower is better, per candidate node; None when every node is as good.

        Nodes fewer of the unit's other pod sets can use come first (a set that tolerates
        a taint takes the tainted nodes), and a set that asks for none of a scarce
        resource (a CPU-only pod) keeps off nodes that still hold it (GPU nodes)."""
        pref: np.ndarray | None = None
        others = [r for r in self.requirements if r != ps.requirements]
        if others:
            pref = np.zeros(len(nodes), dtype=np.int64)
            for other in others:
                pref += self.state.mask(other)[nodes]
            pref *= 1 << 20
        asked = set(shape.index)
        spare = [r for r in self.scarce if r not in asked]
        if spare:
            held = np.zeros(len(nodes), dtype=np.float64)
            for r in spare:
                held += self.state.free[r, nodes] * self._inv_total[r]
            stranded = (held * 1000).astype(np.int64)
            pref = stranded if pref is None else pref + stranded
        return pref

    def prepare(self, unit: TreeNode) -> None:
        """Note, for every pod set, the per-node caps of the groups above it; the
        distinct node requirements of the unit; the scarce resources it asks for."""
        sets = list(podsets(unit))
        if not self.originals:
            self.originals = {n.path: n for n in walk(unit)}
        self.requirements = list(dict.fromkeys(ps.requirements for ps in sets))
        if len(self.requirements) == 1:
            self.requirements = []  # one kind of pod: no contention between sets
        asked = {r for ps in sets for r in self.shape(ps).index}
        self.scarce = [r for r in asked if self.state.resources[r] not in _COMMON]
        def visit(node: TreeNode, caps: tuple[tuple[str, int, Group], ...]) -> None:
            if isinstance(node, PodSet):
                if caps:
                    self.group_caps[node.path] = caps
                return
            if node.max_pods_per_node is not None:
                caps = (*caps, (node.path + "/", node.max_pods_per_node, node))
            for child in node.children:
                visit(child, caps)

        visit(unit, ())

    def held(self, node: TreeNode) -> np.ndarray:
        """Pods of the set or group already running on each node (``held_per_node``)."""
        arr = self._held.get(id(node))
        if arr is None:
            arr = np.zeros(self.state.n_nodes, dtype=np.int64)
            index = self.topo.index
            for name, count in node.held_per_node.items():
                if name in index:
                    arr[index[name]] += count
            self._held[id(node)] = arr
        return arr

    def pods_under(self, prefix: str, lo: int, hi: int) -> np.ndarray:
        """Pods of this decision under the group path ``prefix`` on each node of [lo, hi)."""
        used = np.zeros(hi - lo, dtype=np.int64)
        for ch in self.txn.log:
            if isinstance(ch.tag, str) and ch.tag.startswith(prefix):
                inside = (ch.nodes >= lo) & (ch.nodes < hi)
                np.add.at(used, ch.nodes[inside] - lo, ch.counts[inside])
        return used

    # -- extras -------------------------------------------------------------------------

    def grow(self, res: _Res, want: int) -> int:
        """Add up to about ``want`` pods (at least one step when possible) by water-filling;
        returns pods added (0: nothing more fits)."""
        if isinstance(res, _PSRes):
            k = min(want, self.size(res.node) - res.placed)
            return self.add_pods(res, k) if k > 0 else 0
        g = res.node
        full: set[int] = set()
        added = 0
        while added < want:
            ratios: list[tuple[float, int]] = []
            for i, ch in enumerate(g.children):
                if i in full:
                    continue
                r = res.kids.get(i)
                placed = r.placed if r is not None else 0
                size = self.size(ch)
                if (r is not None and placed >= size) or size == 0:
                    full.add(i)
                    continue
                ratios.append((placed / size, i))
            if not ratios:
                break
            ratios.sort()
            i = ratios[0][1]
            ch = g.children[i]
            r = res.kids.get(i)
            placed = r.placed if r is not None else 0
            nxt = ratios[1][0] if len(ratios) > 1 else 1.0
            quota = max(1, min(want - added, math.floor(nxt * self.size(ch)) - placed + 1))
            n = self.grow_child(res, i, quota)
            if n == 0:
                full.add(i)
                continue
            res.placed += n
            added += n
        return added

    def grow_child(self, res: _GRes, i: int, quota: int) -> int:
        ch = res.node.children[i]
        ch = self.originals.get(ch.path, ch)  # an extra child asks for its own minimum
        r = res.kids.get(i)
        if r is not None:
            return self.grow(r, quota)
        # an extra child: its minimum, all-or-nothing, inside the parent's domain
        scopes = [(res.lo, res.hi, res.sel), *res.outer]
        for lo, hi, sel in scopes:
            saved = self.backtrack
            self.backtrack = 0  # extras take the first feasible choice, no backtracking
            m = self.txn.mark()
            got = next(self.alternatives(ch, lo, hi, (), sel), None)
            self.backtrack = saved
            if got is not None:
                res.kids[i] = got
                if got.placed < quota:
                    self.grow(got, quota - got.placed)  # counted in got.placed
                return got.placed
            self.txn.rollback_to(m)
        return 0

    # -- explanations -------------------------------------------------------------------

    def note_failure(self, node: TreeNode, seen: list[_Seen]) -> None:
        """Why no domain passed: the tier and domain that came closest (the most of the
        scarcest kind of pod) and exactly how many of the blocking pods or replicas it
        holds now."""
        if isinstance(node, Group) and node.path in self.notes:
            return  # the group's own search left a more precise note
        dems = self.demand(node) or self.desired(node)
        if not dems:
            self.notes[node.path] = f"{node.name}: does not fit"
            return
        best: tuple[float, int, int, str | None, Level | None] | None = None
        for tier in seen:  # narrowest first; a wider tier must come strictly closer
            held = [self.domain_counts(tier, d) for d in dems]
            if not len(held[0]):
                continue
            cover = np.min([h / d.count for h, d in zip(held, dems, strict=True)], axis=0)
            j = int(np.argmax(cover))
            worst = min(range(len(dems)), key=lambda i: (held[i][j] / dems[i].count, i))
            where = (self.topo.domain_path(tier.level, tier.d0 + j)
                     if tier.level is not None else None)
            if best is None or cover[j] > best[0]:
                best = (float(cover[j]), worst, int(held[worst][j]), where, tier.level)
        if best is None:
            self.notes[node.path] = f"{node.name}: needs {self.need_text(node)}; no domain"
            return
        _, worst, have, where, level = best
        self.bottleneck[node.path] = dems[worst]
        inside = f" inside one {level_noun(level.key)}" if level is not None else ""
        per = self.replica_demand(node)
        unit = "replica" if per is not None else "pod"
        need = self.need_text(node) if len(dems) == 1 else self.demand_text(node, dems, worst)
        if level is not None and where is not None:
            got = f"the best {level_noun(level.key)} ({where}) holds {have}"
        else:
            got = f"room for {plural(have, unit)}"
        self.notes[node.path] = f"{node.name}: needs {need}{inside}; {got}"

    def domain_counts(self, tier: _Seen, dem: _Demand) -> np.ndarray:
        """How many of ``dem``'s pods (or, for a group of identical replicas, whole
        replicas) each valid domain of the tier can hold now; one entry for a tier
        without a level. Per-node caps and a replica's own narrower required level are
        taken into account, so the number is what really fits."""
        node, lo, hi, sel = tier.node, tier.lo, tier.hi, tier.sel
        cap = node.max_pods_per_node if isinstance(node, PodSet) else None
        f = self.state.capacity(dem.shape, dem.req, cap)[lo:hi]
        if sel is not None:
            f = f * sel[lo:hi]
        per = self.replica_demand(node) if isinstance(node, Group) else None
        outer = tier.level
        if per is not None and per.shape == dem.shape:
            assert isinstance(node, Group)
            inner_key = self.required(node.children[0])
            inner = self.topo.level_for(inner_key) if inner_key is not None else None
            if inner is not None and (outer is None or (self.topo.rank(inner.key) or 0)
                                      > (self.topo.rank(outer.key) or 0)):
                f = self.per_domain(f, inner, lo, hi) // per.count  # replicas per inner
                starts = self.clipped_starts(inner, lo, hi)
                if outer is None:
                    return np.array([int(f[inner.valid[inner.node_domain[starts]]].sum())])
                ids = outer.node_domain[starts] - int(outer.node_domain[lo])
                ok = inner.valid[inner.node_domain[starts]]
                assert tier.valid is not None
                sums = np.bincount(ids[ok], weights=f[ok], minlength=len(tier.valid))
                return np.where(tier.valid, sums, -1).astype(np.int64)
            if outer is None:
                return np.array([int(f.sum()) // per.count])
            sums = self.per_domain(f, outer, lo, hi) // per.count
        elif outer is None:
            return np.array([min(int(f.sum()), int(BIG))])
        else:
            sums = self.per_domain(f, outer, lo, hi)
        assert tier.valid is not None
        return np.where(tier.valid, np.minimum(sums, BIG), -1)

    def clipped_starts(self, level: Level, lo: int, hi: int) -> np.ndarray:
        """First node index of each domain of ``level`` inside [lo, hi)."""
        d0, d1 = int(level.node_domain[lo]), int(level.node_domain[hi - 1]) + 1
        return np.maximum(level.starts[d0:d1], lo)

    def per_domain(self, f: np.ndarray, level: Level, lo: int, hi: int) -> np.ndarray:
        """Per-node values of [lo, hi) summed per domain of ``level``."""
        return np.add.reduceat(f, self.clipped_starts(level, lo, hi) - lo)

    def demand_text(self, node: TreeNode, dems: list[_Demand], worst: int) -> str:
        """The scarcest kind of pod the minimum needs, and how many others beside."""
        text = self.pods_text(node, dems[worst])
        others = sum(x.count for i, x in enumerate(dems) if i != worst)
        return f"{text} beside {plural(others, 'other pod')}" if others else text

    def pods_text(self, node: TreeNode, d: _Demand) -> str:
        """``5 pods x 8 nvidia.com/gpu, 1 cpu (workers)``: the set is named when one set
        below the node has pods of this kind."""
        sets = [ps for ps in podsets(node)
                if ps is not node and (self.shape(ps), ps.requirements) == (d.shape, d.req)]
        who = f" ({sets[0].name})" if len({ps.name for ps in sets}) == 1 else ""
        reqs = describe_requests(self.shape_requests(d.shape, d.req))
        return f"{plural(d.count, 'pod')} x {reqs}{who}"

    def need_text(self, node: TreeNode) -> str:
        """What the node's minimum needs, e.g. ``2 replicas of 4 pods x 8 nvidia.com/gpu``."""
        per = self.replica_demand(node)
        if isinstance(node, PodSet):
            return f"{plural(node.min_pods, 'pod')} x {describe_requests(node.requests)}"
        if per is not None:
            reqs = describe_requests(self.shape_requests(per.shape, per.req))
            return (f"{plural(node.min_groups, 'replica')} of {plural(per.count, 'pod')} "
                    f"x {reqs}")
        return "; ".join(self.pods_text(node, d) for d in self.demand(node)) or "its minimum"

    def replica_demand(self, node: TreeNode) -> _Demand | None:
        """For a group of identical single-shape children (replicas): one child's demand."""
        if not isinstance(node, Group) or len(node.children) < 2 or node.min_groups == 0:
            return None
        first = self.demand(node.children[0])
        if len(first) != 1 or any(self.demand(c) != first for c in node.children[1:]):
            return None
        return first[0]

    def shape_requests(self, shape: Shape, req: NodeRequirements) -> dict[str, int]:
        """The requests of the unit's pods of this shape (a resource no node offers
        included), for messages."""
        for n in self.originals.values() or ():
            if isinstance(n, PodSet) and n.requirements == req and self.shape(n) == shape:
                return n.requests
        names = self.state.resources
        return {names[r]: a for r, a in zip(shape.index, shape.amount, strict=True)}

    def describe_group(self, g: Group, c: _Candidate, got: int) -> str:
        """``decode: needs 2 children of 4 pods inside one rack; the best rack (r3) held
        1 of them``: ``got`` children were satisfied together at most."""
        per = self.replica_demand(g)
        if per is not None:
            reqs = describe_requests(self.shape_requests(per.shape, per.req))
            noun = "replica" if g.min_groups == 1 else "replicas"
            each = f" of {plural(per.count, 'pod')} x {reqs}"
        else:
            noun = "child" if g.min_groups == 1 else "children"
            sizes = sorted({ch.size for ch in g.children})
            each = f" of {plural(sizes[0], 'pod')}" if len(sizes) == 1 else ""
        if c.key is not None:
            best = f"the best {level_noun(c.key)} ({c.label}) held {got} of them together"
        else:
            best = f"at most {got} of them fit together"
        inside = f" inside one {level_noun(c.key)}" if c.key is not None else ""
        return f"{g.name}: needs {g.min_groups} {noun}{each}{inside}; {best}"

    def reason(self, root: TreeNode) -> str:
        """Why the unit was rejected, one clause per blocking group.

        When no domain could even hold the root's minimum, the root's own note says how
        close the best one came (the scarcest kind of pod and exactly how many fit).
        Otherwise descend to the group that cannot be placed: first a child that does not
        fit even alone; else, placing children one by one in search order, the first that
        no longer fits beside its earlier siblings (cheap dry runs, no backtracking). Then
        kube-scheduler's account of the nodes for the blocking kind of pod."""
        self.backtrack = 0
        root_note = self.notes.get(root.path)
        if root_note is not None and root.path in self.bottleneck and (
                self.replica_demand(root) is not None):  # identical replicas: said it all
            return "; ".join(p for p in (root_note, self.filter_note(root)) if p)
        chain = self.blocking_chain(root)
        blamed = next((self.notes[c.path] for c in chain if c.path in self.notes), None)
        if blamed and isinstance(root, Group) and len(root.children) == 1 and not root.topology:
            root_note = None  # an only child's note says what the root's would, precisely
        parts = [p for p in (root_note, blamed, self.filter_note(chain[-1] if chain else root))
                 if p]
        return "; ".join(parts) if parts else f"{root.name}: does not fit"

    def blocking_chain(self, root: TreeNode) -> list[TreeNode]:
        """The groups below ``root`` that block it, outermost first."""
        start = self.txn.mark()
        chain: list[TreeNode] = []
        node = root
        while isinstance(node, Group):
            order = [c for _, c in sorted(
                (self.placement_order(c, i), c) for i, c in enumerate(node.children))]
            culprit = next((c for c in order if not self.fits_alone(c)), None)
            if culprit is None:
                for child in order:
                    if next(self.alternatives(child, 0, self.state.n_nodes), None) is None:
                        culprit = child
                        break
            if culprit is None:
                break
            chain.append(culprit)
            node = culprit
        self.txn.rollback_to(start)
        return chain

    def filter_note(self, node: TreeNode) -> str | None:
        """kube-scheduler's account of the nodes for one pod of the blocking group's most
        demanding set, when filters or capacity cut some nodes out."""
        sets = [ps for ps in podsets(node) if ps.size]
        if not sets:
            return None
        impossible = [ps for ps in sets if self.shape(ps).impossible]
        scarce = self.bottleneck.get(node.path)
        matching = [ps for ps in sets if scarce is not None
                    and (self.shape(ps), ps.requirements) == (scarce.shape, scarce.req)]
        target = (impossible or matching or [max(
            sets, key=lambda ps: (self._shape_weight(self.shape(ps)), ps.min_pods))])[0]
        available, text = node_summary(self.state, target.requests, target.requirements,
                                       target.from_limits, target.name)
        return None if available == self.state.n_nodes else text

    def fits_alone(self, node: TreeNode) -> bool:
        m = self.txn.mark()
        fits = next(self.alternatives(node, 0, self.state.n_nodes), None) is not None
        self.txn.rollback_to(m)
        return fits


def where_text(c: _Candidate) -> str:
    if c.level is None:
        return ""
    return f" inside one {level_noun(c.level.key)} ({c.label})"


def touched(r: _Res) -> int:
    if isinstance(r, _PSRes):
        return sum(len(n) for n in r.nodes)
    return sum(touched(k) for k in r.kids.values())


# -- results --------------------------------------------------------------------------


def _outcomes(node: TreeNode, r: _Res | None, out: list[GroupOutcome]) -> None:
    placed = r.placed if r is not None else 0
    if isinstance(node, PodSet):
        out.append(
            GroupOutcome(
                path=node.path, kind="PodSet", placed_pods=placed, min_pods=node.min_pods,
                size=node.size, domain=_label(r),
                satisfied=r is not None and placed >= node.min_pods,
                domain_key=_pin(r)[0], domain_value=_pin(r)[1],
            )
        )
        return
    kids = r.kids if isinstance(r, _GRes) else {}
    sat = sum(
        1 for i, ch in enumerate(node.children)
        if i in kids and kids[i].placed >= (ch.min_pods if isinstance(ch, PodSet) else 0)
    )
    out.append(
        GroupOutcome(
            path=node.path, kind="Group", placed_pods=placed, min_pods=node.min_pods,
            size=node.size, satisfied_children=sat, min_groups=node.min_groups,
            children=len(node.children), domain=_label(r),
            satisfied=r is not None,
            domain_key=_pin(r)[0], domain_value=_pin(r)[1],
        )
    )
    for i, ch in enumerate(node.children):
        _outcomes(ch, kids.get(i), out)


def _label(r: _Res | None) -> str | None:
    return r.cand.label if r is not None and r.cand is not None else None


def _pin(r: _Res | None) -> tuple[str | None, str | None]:
    return r.cand.pin if r is not None and r.cand is not None else (None, None)


def _assign(r: _Res, names: list[str], out: dict[str, str]) -> None:
    if isinstance(r, _GRes):
        for k in r.kids.values():
            _assign(k, names, out)
        return
    pods = iter(r.node.pods)
    for nodes, counts in zip(r.nodes, r.counts, strict=True):
        for j, cnt in zip(nodes.tolist(), counts.tolist(), strict=True):
            for _ in range(cnt):
                out[next(pods)] = names[j]


def raised(node: TreeNode, fraction: float) -> TreeNode:
    """A copy of the tree in which every gang asks for at least ``fraction`` of its
    children (or pods) as its minimum. Equal fractions for all siblings are the
    proportional split, so searching these first keeps extras fair while letting the
    full search (with backtracking) place them."""
    if isinstance(node, PodSet):
        m = max(node.min_pods, math.ceil(fraction * node.size))
        return node if m == node.min_pods else replace(node, min_pods=m)
    kids = [raised(c, fraction) for c in node.children]
    groups = max(node.min_groups, math.ceil(fraction * len(kids)))
    return replace(node, children=kids, min_groups=groups)


def _raised_search(
    unit: TreeNode, state: ClusterState, opts: Options, minimum: int
) -> tuple[_Search, _Res] | None:
    """Try the tree with raised minima, largest fraction first; the first that fits wins."""
    tried = minimum
    for fraction in opts.raise_steps:
        tree = raised(unit, fraction)
        need = minimum_pods(tree)
        if need <= tried:
            continue
        tried = need
        search = _Search(state, replace(opts, backtrack_budget=opts.raise_budget,
                                        score_budget=opts.score_budget // 4))
        search.originals = {n.path: n for n in walk(unit)}
        search.prepare(unit)
        root = next(search.alternatives(tree, 0, state.n_nodes), None)
        if root is None:
            search, root = _spread_retry(tree, state, search.opts, search)
            search.originals = {n.path: n for n in walk(unit)}
        if root is not None:
            return search, root
        search.txn.discard()
    return None


def _spread_retry(
    tree: TreeNode, state: ClusterState, opts: Options, failed: _Search
) -> tuple[_Search, _Res | None]:
    """After a search that packed pods onto the fullest nodes failed: the same search
    taking the emptiest nodes first. Returns the search to keep (the failed one, with its
    notes for the explanation, when the retry fails too)."""
    if opts.node_order != "pack" or opts.extras_first:
        return failed, None
    retry = _Search(state, replace(opts, node_order="spread"))
    retry.prepare(tree)
    root = next(retry.alternatives(tree, 0, state.n_nodes), None)
    if root is None:
        retry.txn.discard()
        return failed, None
    failed.txn.discard()
    return retry, root


def place(
    unit: TreeNode,
    state: ClusterState,
    options: Options | None = None,
    *,
    commit: bool = True,
) -> Decision:
    """Decide one scheduling unit. On admission the state holds the placement when
    ``commit`` is true; otherwise (or on rejection) the state is left exactly as it was."""
    opts = options or _DEFAULT
    search = _Search(state, opts)
    root: _Res | None = None
    minimum = minimum_pods(unit)
    search.prepare(unit)
    if (state.n_nodes and opts.extras and not opts.extras_first
            and minimum < search.size(unit)):
        search, root = _raised_search(unit, state, opts, minimum) or (search, None)
    if root is None and state.n_nodes:
        root = next(search.alternatives(unit, 0, state.n_nodes), None)
        if root is None:
            search, root = _spread_retry(unit, state, opts, search)
    size = search.size(unit)
    if root is not None and opts.extras and root.placed < size:
        search.backtrack = 0
        search.grow(root, size)
    groups: list[GroupOutcome] = []
    _outcomes(unit, root, groups)
    if root is None:
        if state.n_nodes == 0:
            reason = f"{unit.name}: the cluster has no nodes"
        else:
            reason = search.reason(unit)
        search.txn.discard()
        return Decision(
            unit=unit.path, admitted=False, groups=groups, reason=reason,
            minimum_pods=minimum, dry_runs=search.dry_runs,
        )
    names = state.topology.names
    assignments: dict[str, str] = {}
    _assign(root, names, assignments)
    admitted = root.placed > 0 or minimum > 0 or unit.size == 0
    reason = ""
    if not admitted:
        reason = search.reason(unit) if search.notes else f"{unit.name}: no pod fits"
    if commit and admitted:
        search.txn.commit()
    else:
        search.txn.discard()
    return Decision(
        unit=unit.path,
        admitted=admitted,
        assignments=assignments if admitted else {},
        groups=groups,
        reason=reason,
        minimum_pods=minimum,
        extra_pods=root.placed - minimum,
        dry_runs=search.dry_runs,
    )


def place_all(
    units: Sequence[TreeNode], state: ClusterState, options: Options | None = None
) -> list[Decision]:
    """Decide units in order, each seeing the ones admitted before it."""
    return [place(u, state, options) for u in units]
