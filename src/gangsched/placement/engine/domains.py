"""Candidate domains and their order: where one node of the tree may go inside its
parent's scope, best first (DESIGN.md sections 2.4, 2.5 and 3).

- **Tiers.** The levels to try, narrowest first: a required key is the widest level tried;
  a preferred key starts narrower and falls back level by level (to the parent's scope as
  it is when nothing is required).
- **Nested levels.** Nodes are sorted by topology path, so a domain of a level of the
  chain is a contiguous slice [start, end); a scope cutting through domains clips them.
  A pinned value (``Constraint.value``) narrows the scope to that one domain first.
- **Capacity bound.** For every shape of the node's minimum, a domain's summed fit count
  must cover the pods needed (vectorized: cached per-level sums, or ``np.add.reduceat``
  over the scope). Survivors are ordered by room for the extras the node wants, then
  tightest slack, then index.
- **Crossing keys.** A key whose domains cut across the chain (``Topology.cross``) has
  domains that are node sets; they are bounded with ``np.bincount`` and searched through
  a node selection.
- **Fragmentation** (``Options.mix``, set by the batch only). Domains with equal room
  for the extras go by the least estimated stranding of a mix of pod shapes, before the
  tightest slack: where the pods step would put the node's main pods in each domain
  (estimated for all the domains at once, without a dry run), how much free room of
  each shape's dominant resource would become (or stop being) room no pod of that shape
  can use, weighted by the shape's share of the mix (:meth:`Domains.stranding`).
- **Ranking.** For a node whose bound does not already order domains as a dry run would,
  the first few candidates are dry-run and reordered by the resulting score: room for the
  wanted extras, then tight fit (least capacity left), then fewest nodes touched.
- **Spill scopes.** Where extras may go when the chosen domain is full (preferred
  constraints, and the levels a node tries first only for locality). A minimum may spill
  only into the scopes of preferred constraints: a node narrowed for locality
  (``Options.narrow``) holds its whole minimum in the narrow domain, or that domain
  fails and the next wider level is tried.
- **Exclusive domains.** A node that owns its domain of a key (an exclusive constraint,
  gang.py) drops the candidates inside a domain of that key where another owner of the
  same set has pods (in this unit, or running), before any dry run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import chain

import numpy as np

from gangsched.cluster.state import BIG, Shape, Transaction
from gangsched.cluster.topology import HOSTNAME, CrossLevel, Level, Topology
from gangsched.gang import Constraint, PodSet, TreeNode, preferred_key
from gangsched.placement.engine.facts import Demand, Facts
from gangsched.placement.engine.options import Mix
from gangsched.placement.engine.pods import choose_each
from gangsched.placement.engine.values import Candidate, Placement, Scope, Spill, touched

_EMPTY = np.zeros(0, dtype=np.int64)
_NO_DOMAIN = np.array([-1], dtype=np.int64)
_SCOPE_ONLY: list[Level | None] = [None]  # the tiers of a node without constraints


@dataclass
class Candidates:
    """Domains that passed the capacity bound, best first; candidates are built lazily."""

    lo: np.ndarray
    hi: np.ndarray
    d: np.ndarray
    level: Level | None
    topo: Topology
    sel: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.d)

    def __getitem__(self, i: int) -> Candidate:
        return Candidate(int(self.lo[i]), int(self.hi[i]), self.level, int(self.d[i]), self.topo,
                         self.sel)


@dataclass
class Seen:
    """What one tier of candidates offered, kept to explain a failure."""

    node: TreeNode
    level: Level | None
    lo: int
    hi: int
    sums: np.ndarray | None = None  # main-shape capacity per domain (None: not yet read)
    valid: np.ndarray | None = None  # False: the pseudo-domain of nodes lacking the label
    d0: int = 0
    sel: np.ndarray | None = None
    held: np.ndarray | None = None  # True: inside a domain another exclusive owner holds


@dataclass
class Crossing:
    """The domains of a crossing key inside a scope, bounded and ordered."""

    level: CrossLevel
    codes: np.ndarray  # domain of each node of the scope (-1: no label)
    ok: np.ndarray  # bool: nodes of the scope that may be used
    ids: list[int]  # domains that pass the capacity bound, best first
    main_sum: np.ndarray | None  # main-shape capacity per domain
    lo: int = 0  # first node of the scope (codes[i] is node lo + i)


class Domains:
    """Candidate domains for the nodes of one unit (shared by its attempts)."""

    def __init__(self, facts: Facts, fit_order: bool, narrow: bool = False,
                 mix: Mix = (), keep_whole: bool = False) -> None:
        self.facts = facts
        self.state = facts.state
        self.topo = facts.topo
        self.fit_order = fit_order  # Options.domain_order == "fit"
        self.narrow = narrow  # Options.narrow
        self.mix = mix  # Options.mix: shapes whose stranded capacity orders domains
        self._mix: list[tuple[Shape, int, int, float]] | None = None  # see _mix_shapes
        self.keep_whole = keep_whole  # Options.keep_whole: as the pods step orders nodes
        # spill scopes of nodes narrowed only for locality, by id (kept alive here)
        self._extras_only: dict[int, Scope] = {}
        self._tiers: dict[int, list[Level | None]] = {}  # by node identity, as facts are

    def capacity_in(self, dem: Demand, lo: int, hi: int, sel: np.ndarray | None) -> np.ndarray:
        """How many pods of dem's shape each node in [lo, hi) can take now (read only),
        zero on the nodes outside the selection."""
        f = self.state.capacity(dem.shape, dem.req)[lo:hi]
        return f if sel is None else f * sel[lo:hi]

    # -- levels -------------------------------------------------------------------------

    def tiers(self, node: TreeNode) -> list[Level | None]:
        """Levels to try, narrowest first; None means the parent's scope as it is.

        Keys outside the chain were taken off the node by the cross-key stage before this.
        """
        out = self._tiers.get(id(node))
        if out is None:
            if not node.topology and not self.facts.is_root(node):
                out = _SCOPE_ONLY  # no constraint: nothing to narrow to (_levels)
            else:
                out = self._levels(node)
            self._tiers[id(node)] = out
        return out

    def _narrowed(self, node: TreeNode) -> bool:
        """Whether the node tries narrower levels first on its own (Options.narrow): like
        a preferred constraint, its extras may then spill into its wider scope."""
        return (self.narrow and preferred_key(node) is None and bool(self.topo.levels)
                and (self.facts.required(node) is not None or self.facts.is_root(node)))

    def _levels(self, node: TreeNode) -> list[Level | None]:
        topo = self.topo
        req, pref = self.facts.required(node), preferred_key(node)
        r = topo.rank(req) if req is not None else None
        p = topo.rank(pref) if pref is not None else None
        assert req is None or r is not None, f"{req} is not a level of the chain"
        if p is not None and r is not None and p <= r:
            p = None
        if p is None and self._narrowed(node):
            p = topo.rank(HOSTNAME)  # the narrowest level first (hosts), then wider
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

    def level_at(self, i: int) -> Level:
        levels = self.topo.levels
        if i < len(levels):
            return levels[i]
        lv = self.topo.level_for(HOSTNAME)
        assert lv is not None
        return lv

    def pinned(self, pins: list[Constraint], lo: int, hi: int
               ) -> tuple[list[tuple[int, int]], Constraint | None]:
        """The parts of [lo, hi) inside a domain of every pin's key whose label is its
        value, in index order (a value may name several domains of a level: racks
        named alike in two blocks), and None; or no part and the first pin none
        matched."""
        ranges = [(lo, hi)]
        for con in pins:
            assert con.value is not None
            lv = self.topo.level_for(con.key)
            assert lv is not None, f"{con.key} is not a level of the chain"
            named = self.topo.domains_named(lv, con.value)
            got: list[tuple[int, int]] = []
            for a, b in ranges:
                for d in named:
                    s, e = max(int(lv.starts[d]), a), min(int(lv.ends[d]), b)
                    if s < e:
                        got.append((s, e))
            if not got:
                return [], con
            ranges = got
        return ranges, None

    def outer(self, node: TreeNode, c: Candidate, scope: Scope, spill: Spill) -> Spill:
        """Where extras may spill, in order, when the chosen domain is full: a node without
        a constraint inherits its parent's; a preferred one adds the parent's scope
        (only up to its required domain, when it also has one)."""
        if c.level is None:
            return spill
        preferred = preferred_key(node) is not None
        if not preferred and not self._narrowed(node):
            return ()
        lo, hi, sel = scope
        req = self.facts.required(node)
        if req is None:
            wider: Scope = (lo, hi, sel)
            out: Spill = (wider, *spill)
        else:
            lv = self.topo.level_for(req)
            assert lv is not None
            d = int(lv.node_domain[c.lo])
            wider = (max(int(lv.starts[d]), lo), min(int(lv.ends[d]), hi), sel)
            out = (wider,)
        if not preferred:  # narrowed for locality only: for extras, not minimums
            self._extras_only[id(wider)] = wider
        return out

    def for_minimum(self, spill: Spill) -> Spill:
        """The scopes of ``spill`` a minimum may use: not those of nodes narrowed only
        for locality."""
        if not self._extras_only:
            return spill
        return tuple(s for s in spill if id(s) not in self._extras_only)

    def scope(self, lo: int, hi: int, sel: np.ndarray | None = None) -> Candidates:
        """The scope [lo, hi) itself (its selected nodes) as the one candidate: no domain."""
        return Candidates(np.array([lo]), np.array([hi]), _NO_DOMAIN, None, self.topo, sel)

    def whole(self, lo: int, hi: int, sel: np.ndarray | None = None) -> Candidate:
        """:meth:`scope`'s one candidate, built directly."""
        return Candidate(lo, hi, None, int(_NO_DOMAIN[0]), self.topo, sel)

    def nested(
        self, node: TreeNode, level: Level | None, lo: int, hi: int,
        within: tuple[Level, ...] = (), sel: np.ndarray | None = None, first: bool = False,
    ) -> tuple[Candidates, Seen]:
        """Domains of ``level`` inside [lo, hi) that pass the capacity bound, best first,
        and what was seen (to explain a failure later). ``first``: only the best one is
        wanted (the joint check of several shapes then runs on the domains in order,
        until one passes)."""
        facts = self.facts
        dems = facts.demand(node)
        if level is None:
            seen = Seen(node, None, lo, hi, sel=sel)
            # a pod set in its parent's scope: placing it is the check
            if isinstance(node, PodSet) or all(
                int(self.capacity_in(d, lo, hi, sel).sum()) >= d.count for d in dems
            ):
                return self.scope(lo, hi, sel), seen
            return Candidates(_EMPTY, _EMPTY, _EMPTY, None, self.topo), seen
        d0 = int(level.node_domain[lo])
        d1 = int(level.node_domain[hi - 1]) + 1
        if any(self.state.domain_bound(d.shape, d.req, None, level) < d.count for d in dems):
            return self._none_hold(node, level, lo, hi, d0, d1, sel)
        starts = level.starts[d0:d1]
        ends = level.ends[d0:d1]
        whole = int(starts[0]) >= lo and int(ends[-1]) <= hi
        if not whole:  # the scope cuts through domains: clip them to it
            starts, ends = np.maximum(starts, lo), np.minimum(ends, hi)
        valid = level.valid[d0:d1]
        for lv in within:  # required levels wider than this one: a node may lack them
            valid = valid & lv.valid[lv.node_domain[starts]]
        ok_mask = valid.copy()

        def sums_of(dem: Demand) -> np.ndarray:
            if whole and sel is None:
                return self.state.domain_sums(dem.shape, dem.req, None, level)[d0:d1]
            return np.add.reduceat(self.capacity_in(dem, lo, hi, sel), starts - lo)

        main_sum: np.ndarray | None = None
        for i, dem in enumerate(dems):
            sums = sums_of(dem)
            if i == 0:
                main_sum = sums
            ok_mask &= sums >= dem.count
        # a level other than the required one (preferred, or tried first for locality):
        # pods of several shapes may each pass on the same nodes, so the domain's free
        # resources must also cover all of them together. At a preferred level this also
        # passes over domains the minimum would fit only by spilling out of them, as
        # Volcano dry-runs a whole job per hypernode. The required level, whose
        # candidates a rejection is explained by, keeps the per-shape bound alone
        jointly = len(dems) > 1 and level.key != facts.required(node)
        if jointly and not first and ok_mask.any():
            ok_mask &= self.holds_together(dems, lo, hi, starts, sel)
        ids = np.flatnonzero(ok_mask)
        # order (and explain) by the main shape: of the minimum, else of what is asked
        main = dems[0] if dems else next(iter(facts.desired(node)), None)
        if main is not None and main_sum is None:
            main_sum = sums_of(main)
        seen = Seen(node, level, lo, hi, main_sum, valid, d0, sel)
        ordered = main is not None and main_sum is not None and len(ids) > 1 and self.fit_order
        if first and ordered and not self.mix and facts.want(node) == 0:
            assert main is not None and main_sum is not None
            # no room for extras wanted: slack, then index, orders them
            slack = np.minimum(main_sum[ids] - (main.count if dems else 0), BIG)
            ids = (ids[int(np.argmin(slack)):][:1] if not jointly
                   else self._best_together(dems, ids, slack, (lo, hi, sel), starts, ends))
            return Candidates(starts[ids], ends[ids], ids + d0, level, self.topo, sel), seen
        if ordered:
            assert main is not None and main_sum is not None
            # room for wanted extras (more is better), then slack (less is better), then index
            slack = np.minimum(main_sum[ids] - (main.count if dems else 0), BIG)
            room = np.minimum(slack, facts.want(node))
            if self.mix and dems:  # then the least stranding of the mix (Options.mix)
                strand = self.stranding(dems[0], starts[ids], ends[ids], sel)
                ids = ids[np.lexsort((slack, strand, -room))]
            else:
                ids = ids[np.lexsort((slack, -room))]  # stable: ties keep index order
        if first and len(ids):
            ids = ids[:1] if not jointly else self._first_together(dems, ids, starts, ends, sel)
        return Candidates(starts[ids], ends[ids], ids + d0, level, self.topo, sel), seen

    def _first_together(self, dems: list[Demand], ids: np.ndarray, starts: np.ndarray,
                        ends: np.ndarray, sel: np.ndarray | None) -> np.ndarray:
        """The first of the domains ``ids`` (in order) whose free resources cover every
        demand at once (:meth:`holds_together`), alone; none when none does."""
        ok = self._together_at(dems, starts[ids], ends[ids], sel)
        return ids[int(np.argmax(ok)):][:1] if ok.any() else ids[:0]

    def _best_together(self, dems: list[Demand], ids: np.ndarray, slack: np.ndarray,
                       scope: Scope, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """:meth:`_first_together` of ``ids`` ordered by ``slack``, then index: the
        domain of the least slack alone first, then those of the 16 least slacks (ties at
        the edge included), then all."""
        lo, hi, sel = scope
        best = int(np.argmin(slack))  # the first in that order
        if self._holds_at(dems, int(starts[ids[best]]), int(ends[ids[best]]), sel):
            return ids[best:best + 1]
        few = 16
        if len(ids) > few:
            edge = np.partition(slack, few - 1)[few - 1]
            head = np.flatnonzero(slack <= edge)
            head = head[np.argsort(slack[head], kind="stable")]
            got = self._first_together(dems, ids[head], starts, ends, sel)
            if len(got):
                return got
        order = ids[np.argsort(slack, kind="stable")]
        ok = self.holds_together(dems, lo, hi, starts, sel)[order]
        return order[int(np.argmax(ok)):][:1] if ok.any() else ids[:0]

    def _together_at(self, dems: list[Demand], starts: np.ndarray, ends: np.ndarray,
                     sel: np.ndarray | None) -> np.ndarray:
        """:meth:`holds_together` for the (disjoint, non-empty) slices [starts[k],
        ends[k]), in any order."""
        sizes = ends - starts
        at = np.cumsum(sizes) - sizes
        pos = np.arange(int(sizes.sum())) + np.repeat(starts - at, sizes)
        keep = sel.take(pos) if sel is not None else None
        ok = np.ones(len(starts), dtype=bool)
        for r, v in self._together_need(dems).items():
            row = self.state.free[r].take(pos)
            if keep is not None:
                row *= keep
            np.maximum(row, 0, out=row)  # a node overcommitted by bound pods holds none
            ok &= np.add.reduceat(row, at) >= v
        return ok

    def _holds_at(self, dems: list[Demand], s: int, e: int, sel: np.ndarray | None) -> bool:
        """:meth:`holds_together` for the one slice [s, e)."""
        need = self._together_need(dems)
        block = self.state.free[list(need), s:e]
        if sel is not None:
            block *= sel[s:e]
        np.maximum(block, 0, out=block)  # a node overcommitted by bound pods holds none
        return bool((block.sum(axis=1) >= list(need.values())).all())

    @staticmethod
    def _together_need(dems: list[Demand]) -> dict[int, int]:
        """Per resource: what every demand's pods take together."""
        need: dict[int, int] = {}
        for dem in dems:
            for r, v in zip(dem.shape.index, dem.shape.amount, strict=True):
                need[r] = need.get(r, 0) + v * dem.count
        return need

    def _mix_shapes(self) -> list[tuple[Shape, int, int, float]]:
        """Per shape of the mix: (shape, its dominant resource, the amount of it a pod
        asks for, weight / the cluster's total of that resource). The dominant resource
        is the one it asks the largest share of, pod slots (``pods``) only when it asks
        for nothing else, as the batch's own shares count them."""
        if self._mix is None:
            state, inv = self.state, self.facts.inv_total
            self._mix = []
            slots = state.rindex.get("pods")
            for requests, weight in self.mix:
                shape = state.shape(dict(requests))
                if shape.impossible or not shape.index or weight <= 0:
                    continue
                k = max(range(len(shape.index)),
                        key=lambda i: (shape.index[i] != slots,
                                       shape.amount[i] * inv[shape.index[i]]))
                r = shape.index[k]
                self._mix.append((shape, r, shape.amount[k], weight * inv[r]))
        return self._mix

    def stranding(self, dem: Demand, starts: np.ndarray, ends: np.ndarray,
                  sel: np.ndarray | None) -> np.ndarray:
        """Per candidate domain (the slices [starts, ends)): how much of the mix's capacity
        (``Options.mix``) placing ``dem``'s pods there would strand, estimated without a
        dry run: the pods go about where the pods step packs them (one node that holds
        them all, the tightest; else the fullest nodes first, among equally full ones
        those of the fullest racks with ``keep_whole``; the step's node preferences, such
        as CPU-only pods keeping off GPU nodes, are left out), and each node's stranded
        capacity for a shape of the mix is the free amount of the shape's dominant
        resource that no pod of the shape can use there (free minus fit count times
        request). The result is the sum over the nodes taken of its change, per shape
        weighted by the mix's weight over the cluster's total of that resource (rounded
        to 9 places, so ties stay ties).

        Lower is better: negative when the pods fill room the mix could not use (a small
        pod on a node's leftover), positive when they break room it could (a small pod on
        a whole node that a large pod needed)."""
        mix = self._mix_shapes()
        n = len(starts)
        if not mix or n == 0:
            return np.zeros(n)
        state = self.state
        fit = self.state.capacity(dem.shape, dem.req)
        if sel is not None:
            fit = fit * sel
        room: np.ndarray | None = None
        if self.keep_whole:
            lowest = [lv for lv in self.topo.levels if lv.key != HOSTNAME]
            if lowest:
                racks = lowest[-1]
                room = state.domain_sums(dem.shape, dem.req, None, racks)[racks.node_domain]
        nodes, take, owner = choose_each(fit, dem.count, starts, ends, room)
        before = state.free[:, nodes]
        after = before.copy()
        for r, a in zip(dem.shape.index, dem.shape.amount, strict=True):
            after[r] -= a * take
        cost = np.zeros(len(nodes))
        for shape, r, amount, w in mix:
            cost += w * ((after[r] - state.fits(shape, after) * amount)
                         - (before[r] - state.fits(shape, before) * amount))
        return np.round(np.bincount(owner, cost, minlength=n), 9)

    def holds_together(self, dems: list[Demand], lo: int, hi: int, starts: np.ndarray,
                        sel: np.ndarray | None) -> np.ndarray:
        """Per domain (slices from ``starts`` to the next, inside [lo, hi)): whether its
        free resources cover every demand's pods at once (a necessary condition)."""
        at = starts - lo
        ok = np.ones(len(starts), dtype=bool)
        for r, v in self._together_need(dems).items():  # row by row: views, no copy of the scope
            row = self.state.free[r, lo:hi]
            if sel is not None:
                row = row * sel[lo:hi]
            if row.min() < 0:  # a node overcommitted by bound pods holds none
                row = np.maximum(row, 0)
            ok &= np.add.reduceat(row, at) >= v
        return ok

    def _none_hold(self, node: TreeNode, level: Level, lo: int, hi: int, d0: int, d1: int,
                   sel: np.ndarray | None) -> tuple[Candidates, Seen]:
        """:meth:`nested` when no domain of the level could hold the node's minimum even
        empty (``ClusterState.domain_bound``): no candidate, without bounding each domain.
        What was seen leaves out the per-domain sums (only a search log reads them:
        :meth:`main_sums`)."""
        seen = Seen(node, level, lo, hi, None, level.valid[d0:d1], d0, sel)
        return Candidates(_EMPTY, _EMPTY, _EMPTY, level, self.topo, sel), seen

    def main_sums(self, tier: Seen) -> np.ndarray | None:
        """The tier's capacity per domain for the node's main shape (of its minimum, else
        of what it asks for), as :meth:`nested` records it; None without a level."""
        if tier.sums is not None or tier.level is None or tier.valid is None:
            return tier.sums
        node, level, lo, hi, sel = tier.node, tier.level, tier.lo, tier.hi, tier.sel
        dems = self.facts.demand(node)
        main = dems[0] if dems else next(iter(self.facts.desired(node)), None)
        if main is None:
            return None
        d0, d1 = tier.d0, tier.d0 + len(tier.valid)
        starts = level.starts[d0:d1]
        if int(starts[0]) >= lo and int(level.ends[d1 - 1]) <= hi and sel is None:
            return self.state.domain_sums(main.shape, main.req, None, level)[d0:d1]
        return np.add.reduceat(self.capacity_in(main, lo, hi, sel), np.maximum(starts, lo) - lo)

    # -- exclusive domains --------------------------------------------------------------

    def not_owned(self, node: TreeNode, cands: Candidates
                  ) -> tuple[Candidates, list[tuple[Constraint, set[str]]]]:
        """``cands`` without those inside a domain another owner of the node's exclusive
        sets holds, and (constraint, values held by others) for each constraint that
        removed some. Candidates lie inside one domain of every chain key the node
        requires, so their first node tells the domain."""
        if not len(cands):
            return cands, []
        keep = np.ones(len(cands), dtype=bool)
        removed: list[tuple[Constraint, set[str]]] = []
        for con, held in self.owned_by_others(node):
            lv = self.topo.level_for(con.key)
            assert lv is not None
            vals = self.facts.level_values(lv)[lv.node_domain[cands.lo]]
            bad = np.isin(vals, list(held)) & lv.valid[lv.node_domain[cands.lo]]
            if bad.any():
                keep &= ~bad
                removed.append((con, held))
        if keep.all():
            return cands, removed
        return Candidates(cands.lo[keep], cands.hi[keep], cands.d[keep], cands.level,
                          cands.topo, cands.sel), removed

    def owned_by_others(self, node: TreeNode) -> list[tuple[Constraint, set[str]]]:
        """(constraint, values held by others) for each of the node's exclusive
        constraints on a key of the chain whose set other owners hold domains of."""
        out = []
        for con in self.facts.exclusive(node):
            assert con.exclusive is not None
            held = self.state.held_by_others(con.exclusive, con.key, node.path)
            if held and self.topo.level_for(con.key) is not None:
                out.append((con, held))
        return out

    def owned_mask(self, tier: Seen, owned: list[tuple[Constraint, set[str]]]
                   ) -> np.ndarray | None:
        """Domains of the tier inside a domain other owners hold (to leave them out of an
        explanation); None for a tier without a level."""
        if tier.level is None or tier.valid is None:
            return None
        firsts = tier.level.starts[tier.d0:tier.d0 + len(tier.valid)]
        mask = np.zeros(len(tier.valid), dtype=bool)
        for con, held in owned:
            lv = self.topo.level_for(con.key)
            if lv is not None:
                mask |= np.isin(self.facts.level_values(lv)[lv.node_domain[firsts]], list(held))
        return mask

    # -- crossing keys ------------------------------------------------------------------

    def crossing(self, node: TreeNode, con: Constraint, scope: Scope) -> Crossing:
        """Domains of ``con``'s key (outside the chain) inside the scope that pass the
        capacity bound, best first."""
        lo, hi, sel = scope
        xl = self.topo.cross(con.key)
        codes = xl.node_domain[lo:hi]
        ok = codes >= 0
        if sel is not None:
            ok &= sel[lo:hi]
        if con.value is not None and con.mode == "required":
            ok &= codes == (xl.values.index(con.value) if con.value in xl.values else -2)
        size = len(xl)
        feasible = np.bincount(codes[ok], minlength=size) > 0
        dems = self.facts.demand(node)
        main_sum: np.ndarray | None = None
        for i, dem in enumerate(dems):
            cap = self.state.capacity(dem.shape, dem.req)[lo:hi]
            sums = np.bincount(codes[ok], weights=cap[ok], minlength=size)
            if i == 0:
                main_sum = sums
            feasible &= sums >= dem.count
        # order by the main shape: of the minimum, else of what is asked (a minimum of
        # no pod still wants its extras in the domain with the most room for them)
        main = dems[0] if dems else next(iter(self.facts.desired(node)), None)
        if main is not None and main_sum is None:
            cap = self.state.capacity(main.shape, main.req)[lo:hi]
            main_sum = np.bincount(codes[ok], weights=cap[ok], minlength=size)
        ids = np.flatnonzero(feasible)
        if main is not None and main_sum is not None and len(ids) > 1 and self.fit_order:
            slack = np.minimum(main_sum[ids] - (main.count if dems else 0), float(BIG))
            room = np.minimum(slack, self.facts.want(node))
            ids = ids[np.lexsort((slack, -room))]
        return Crossing(xl, codes, ok, ids.tolist(), main_sum, lo)

    def cross_candidate(self, xl: CrossLevel, d: int, scope: Scope) -> Candidate:
        """Domain ``d`` of a crossing key, as a selection of the scope's nodes."""
        lo, hi, sel = scope
        members = xl.members[d]
        members = members[(members >= lo) & (members < hi)]
        if sel is not None:
            members = members[sel[members]]
        dsel = np.zeros(self.state.n_nodes, dtype=bool)
        dsel[members] = True
        return Candidate(int(members[0]), int(members[-1]) + 1, None, d, self.topo, dsel, xl)

    # -- ranking ------------------------------------------------------------------------

    def rank(
        self, node: TreeNode, cands: Candidates, tries: int, txn: Transaction,
        trial: Callable[[Candidate], Placement | None],
    ) -> Iterable[int]:
        """Candidate indices in the order to try them: the first ``tries`` dry-run (by
        ``trial``, undone at once) and ordered by score, failures left out; then the rest
        in bound order. Stable order breaks ties."""
        scored: list[tuple[tuple[int, int, int], int]] = []
        dems = self.facts.demand(node)
        size = self.facts.size(node)
        for j in range(tries):
            c = cands[j]
            m = txn.mark()
            r = trial(c)
            if r is not None:
                left = int(self.capacity_in(dems[0], c.lo, c.hi, c.sel).sum()) if dems else 0
                scored.append(((-min(left, size - r.placed), left, touched(r)), j))
            txn.rollback_to(m)
        return chain([j for _, j in sorted(scored)], range(tries, len(cands)))
