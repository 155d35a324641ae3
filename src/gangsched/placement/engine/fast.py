"""The fast path: the common shapes decided without the generic search machinery.

A unit of the shape most workloads have is decided here in a handful of numpy calls on
the cached capacities, with the same result as the generic search (:mod:`.attempts`),
decision for decision. The shape: a root Group under at most one required level of the
chain, whose children are identical replicas, every pod required: pod sets, or groups of
one pod set that may each require one level of their own (the same for all, no wider
than the root's); one pod shape and node requirements, no per-node caps, nothing pinned,
no exclusive domains, no preferred constraints.

- Nothing to choose between attempts: the minimum is the whole unit (no raised trees),
  nothing wants extras (so no ranking dry runs), and the capacity bound is exact for
  identical pods without caps (a domain whose summed capacity holds the pods takes them),
  so the packed attempt's first candidate at each node of the tree is the one placed.
- A candidate is the generic one: tier by tier (the narrowest level first with
  ``Options.narrow``, up to the required level; the whole scope last when nothing is
  required), the domain whose capacity covers the pods with the least slack, the lowest
  index among equals. A tier no domain of which could hold the pods even empty
  (:meth:`ClusterState.domain_bound`) is skipped without looking at its domains.
- Inside the root's domain, each replica in placement order (largest first, then as
  listed) takes its domain the same way and its nodes by :func:`.pods.choose`, exactly as
  :class:`.pods.Pods` would, on local copies of the capacities (:class:`_Scope`). A run of
  equal replicas that take one domain each (a training job's rack slices) is placed in
  one pass of numpy calls over all those domains (:meth:`_Scope.replicas`), with the
  same result; the placement is committed as one change.
- The decision value (assignments, per-group outcomes, dry runs) is built as
  :func:`.attempts._decision` builds it.

Anything else returns None and the caller runs the generic search: other shapes, a unit
that does not fit (the generic search explains why), and a replica that finds no domain
in the root's first candidate (the generic search backtracks over earlier replicas and
tries the root's other candidates). ``Options.fast=False`` turns this path off; the tests
check both agree on random clusters and units.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from gangsched.api.types import NodeRequirements
from gangsched.cluster.state import BIG, ClusterState, Shape, _Entry
from gangsched.cluster.topology import HOSTNAME, Level, Topology
from gangsched.gang import Group, PodSet
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine.options import Options
from gangsched.placement.engine.pods import choose, choose_each


def _required(node: Group, state: ClusterState) -> tuple[bool, str | None]:
    """(served, key): whether the node's constraints are at most one plain required key of
    the chain (not pinned, not exclusive), and that key."""
    if not node.topology:
        return True, None
    if len(node.topology) > 1:
        return False, None
    con = node.topology[0]
    if (con.mode != "required" or con.value is not None or con.exclusive is not None
            or not state.topology.nested(con.key)):
        return False, None
    return True, con.key


def _replica_sets(unit: Group, state: ClusterState
                  ) -> tuple[list[PodSet], str | None, int] | None:
    """The unit's pod sets, one per child, the key every replica group requires (None:
    none) and how many children are groups, when every child is a required replica of
    the fast shape; None otherwise. (Called on every decision of a wide unit: one pass,
    the common checks as tuple comparisons.)"""
    kids = unit.children
    # every child required; or one pod set the group needs whole by its pod count, the set
    # itself asking for all its pods or none (a Workload API gang: min_groups 0; a Volcano
    # PodGroup: min_groups 1 over a task without minTaskMember; both with min_pods = its
    # pods), which the generic search places as it would place it as a required child
    basic = (unit.min_groups <= 1 and len(kids) == 1 and isinstance(kids[0], PodSet)
             and unit.min_pods == len(kids[0].pods))
    if not kids or (unit.min_groups != len(kids) and not basic):
        return None
    sets: list[PodSet] = []
    keys: set[str | None] = set()
    topo: object = None  # the last replica group's constraints, and what they gave
    key: str | None = None
    groups = 0
    first = kids[0]
    first_ps = first if isinstance(first, PodSet) else (first.children or (None,))[0]
    if not isinstance(first_ps, PodSet):
        return None
    requests, requirements = first_ps.requests, first_ps.requirements
    zero_ok = 0 if basic else -1
    for ch in kids:
        if ch.__class__ is PodSet:
            ps = ch
            keys.add(None)
        elif isinstance(ch, Group):
            if ch.topology is not topo and ch.topology != topo:
                ok, key = _required(ch, state)
                if not ok:
                    return None
                topo = ch.topology
            # no cap, nothing held, one child needed of one
            if (ch.max_pods_per_node, ch.min_groups, len(ch.children)) != (None, 1, 1) \
                    or ch.held_per_node:
                return None
            keys.add(key)
            ps = ch.children[0]  # type: ignore[assignment]
            if ps.__class__ is not PodSet or ch.min_pods > len(ps.pods):
                return None
            groups += 1
        else:
            return None
        n = len(ps.pods)
        if ((ps.topology, ps.max_pods_per_node) != ((), None) or ps.held_per_node or not n
                or (ps.min_pods != n and ps.min_pods != zero_ok)
                or (ps.requests is not requests and ps.requests != requests)
                or (ps.requirements is not requirements and ps.requirements != requirements)):
            return None
        sets.append(ps)
    if len(keys) > 1:
        return None
    return sets, next(iter(keys)), groups


def _tiers(state: ClusterState, key: str | None, narrow: bool
           ) -> tuple[list[Level | None], Level | None]:
    """The levels the root tries, narrowest first (as :meth:`.domains.Domains.tiers`
    for a root without a preferred key), and its required level."""
    memo = state.static
    mk = ("fast_tiers", key, narrow)
    got = memo.get(mk)
    if got is None:
        topo = state.topology
        r = topo.rank(key) if key is not None else None
        p = topo.rank(HOSTNAME) if narrow and topo.levels else None
        if p is not None and r is not None and p <= r:
            p = None
        top = p if p is not None else r
        tiers: list[Level | None] = []
        if top is not None:
            tiers = [_level_at(topo, i) for i in range(top, (r if r is not None else 0) - 1, -1)]
        if r is None:
            tiers.append(None)
        req = topo.level_for(key) if key is not None else None
        got = memo[mk] = (tiers, req)
    return got  # type: ignore[return-value]


def _level_at(topo: Topology, i: int) -> Level:
    if i < len(topo.levels):
        return topo.levels[i]
    lv = topo.level_for(HOSTNAME)
    assert lv is not None
    return lv


def _invalid(state: ClusterState, level: Level, within: Level | None) -> np.ndarray | None:
    """Domains of ``level`` that are never candidates (no label, or outside a labelled
    domain of ``within``); None when there are none."""
    mk = ("fast_invalid", id(level), id(within) if within is not None else None)
    if mk not in state.static:
        ok = level.valid.copy()
        if within is not None:
            ok &= within.valid[within.node_domain[level.starts]]
        state.static[mk] = None if ok.all() else np.flatnonzero(~ok)
    return state.static[mk]  # type: ignore[return-value]


def _racks(state: ClusterState, opts: Options) -> Level | None:
    """The level whose room orders equally full nodes (as :class:`.pods.Pods`)."""
    if not opts.keep_whole:
        return None
    lowest = [lv for lv in state.topology.levels if lv.key != HOSTNAME]
    return lowest[-1] if lowest else None


def fast_place(unit: Group | PodSet, state: ClusterState, opts: Options,
               minimum: int | None, commit: bool) -> Decision | None:
    """The decision for a unit of the fast shape that fits; None for anything else.
    ``minimum``: the unit's minimum pods, or None (the fast shape's minimum is all its
    pods, :func:`gangsched.gang.minimum_pods` need not walk the tree)."""
    if (not isinstance(unit, Group) or unit.max_pods_per_node is not None
            or unit.held_per_node or opts.node_order != "pack" or opts.extras_first
            or opts.domain_order != "fit"):
        return None
    ok, key = _required(unit, state)
    got = _replica_sets(unit, state) if ok else None
    if got is None:
        return None
    sets, kid_key, n_groups = got
    if kid_key is not None and key is not None:
        topo = state.topology
        if (topo.rank(kid_key) or 0) < (topo.rank(key) or 0):
            return None  # a replica's level wider than the unit's
    counts = [len(ps.pods) for ps in sets]
    total = sum(counts)
    if unit.min_pods > total or minimum not in (None, total):
        return None
    if 1 + len(sets) + n_groups > opts.max_dry_runs:
        return None  # the generic search would run out of dry runs: let it
    ps0 = sets[0]
    shape = state.shape(ps0.requests)
    if shape.impossible or not shape.index:
        return None
    req = ps0.requirements
    tiers, req_level = _tiers(state, key, opts.narrow)
    entry = state.cached(shape, req)
    # 1. the domain: the first tier with a candidate, its tightest domain
    level: Level | None = None
    lo = hi = d = -1
    for lv in tiers:
        if lv is None:
            top = state.topology.levels
            held = int(entry.level_sums(top[0]).sum()) if top else int(entry.fit.sum())
            if held >= total:
                level, lo, hi = None, 0, state.n_nodes
                break
            continue
        if state.domain_bound(shape, req, None, lv) < total:
            continue  # no domain of this level holds the pods even empty
        j = _tightest(entry.level_sums(lv), total,
                      _invalid(state, lv, req_level if lv is not req_level else None))
        if j is None:
            return None  # the generic order caps slack: ties there, let it decide
        if j < 0:
            continue
        level, lo, hi, d = lv, int(lv.starts[j]), int(lv.ends[j]), j
        break
    if lo < 0:
        return None  # does not fit: the generic search explains why
    # 2. the pods: each replica in placement order (largest first, then as listed), in
    # its own domain when it requires one
    kid_tiers = _tiers(state, kid_key, opts.narrow) if kid_key is not None else None
    by_size = opts.child_order == "size"
    if hi - lo == 1 and kid_key is None:  # one node holds them all: each set there
        n_sets = len(sets)
        placed: list[Placed] = [(i, None, -1) for i in (
            range(n_sets) if n_sets == 1 else _order(counts, by_size))]
        parts = [(np.array([lo], dtype=np.int64), np.array([total], dtype=np.int64))]
    else:
        inside = _Scope(state, entry, _racks(state, opts), lo, hi)
        got_all = inside.replicas(_order(counts, by_size), counts, kid_tiers, shape, req)
        if got_all is None:
            return None  # the generic search backtracks: let it decide
        placed = got_all
        parts = [(picks + lo, take) for picks, take in inside.taken]
    if commit:
        txn = state.begin()
        if len(parts) == 1:
            txn.place(parts[0][0], parts[0][1], shape)
            state.took(entry, parts[0][0], parts[0][1])
        else:  # one change for all the sets
            at = np.concatenate([p[0] for p in parts])
            take = np.concatenate([p[1] for p in parts])
            # the sets share no node when each is in its own domain of one level
            disjoint = (placed[0][1] is not None and len({id(p[1]) for p in placed}) == 1
                        and len({p[2] for p in placed}) == len(placed))
            if not disjoint:  # summed per node
                nodes, where = np.unique(at, return_inverse=True)
                at, take = nodes, np.bincount(where, take, len(nodes)).astype(np.int64)
            txn.place(at, take, shape)
            state.took(entry, at, take)
        txn.commit()
    return _decision(unit, state, sets, placed, parts, (level, d, req_level, key),
                     (kid_key, kid_tiers[1] if kid_tiers is not None else None), counts,
                     n_groups)


def _tightest(sums: np.ndarray, count: int, bad: np.ndarray | None) -> int | None:
    """The domain whose sum covers ``count`` with the least slack, the lowest index among
    equals (``bad`` ones never): -1 when none covers it, None when the least slack is
    "unlimited" (the generic order caps slack, so ties there are its to break)."""
    slack = sums - count
    if bad is not None:
        slack[bad] = -1
    j = int(slack.view(np.uint64).argmin())  # negative slack reads as huge
    s = int(slack[j])
    if s < 0:
        return -1
    return None if s >= BIG else j


def _order(counts: list[int], by_size: bool = True) -> list[int]:
    """Placement order of identical replicas of ``counts`` pods each: largest first, then
    as listed (``Options.child_order == "size"``), or as listed."""
    if not by_size or min(counts) == max(counts):
        return list(range(len(counts)))
    return sorted(range(len(counts)), key=lambda i: -counts[i])


Placed = tuple[int, "Level | None", int]
"""(set, the replica's level and domain, or None and -1); the nodes each set took and
how many pods each are :attr:`_Scope.taken`, in the same order."""


class _Scope:
    """The unit's domain [lo, hi) as the generic search sees it while it places the
    replicas one after the other: local copies of the fit counts, of the rack rooms that
    order equally full nodes, and of the domain sums of the replicas' levels, each taking
    what every placed pod takes (a pod of one shape takes one from its node's fit count
    and from the sums of the domains holding the node)."""

    def __init__(self, state: ClusterState, entry: _Entry, racks: Level | None,
                 lo: int, hi: int) -> None:
        self.state, self.entry, self.lo, self.hi = state, entry, lo, hi
        self.f = entry.fit[lo:hi].copy()
        self.room: np.ndarray | None = None  # per rack of the scope: its room
        self.dom = self.f  # per node of the scope: its rack (read only with racks)
        if racks is not None:
            r0 = int(racks.node_domain[lo])
            r1 = int(racks.node_domain[hi - 1]) + 1
            self.room = entry.level_sums(racks)[r0:r1].copy()
            self.dom = racks.node_domain[lo:hi] - r0
        # level id -> (sums, node -> local domain, first domain, starts, ends, bad)
        self.sums: dict[int, tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray,
                                   np.ndarray | None]] = {}
        # (nodes in scope, pods on each), set after set in placement order
        self.taken: list[tuple[np.ndarray, np.ndarray]] = []

    def _level(self, lv: Level, within: Level | None
               ) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray, np.ndarray | None]:
        """The level's domains inside the scope, as :meth:`.domains.Domains.nested`
        clips and bounds them: their sums (kept up to date here), and the invalid ones."""
        got = self.sums.get(id(lv))
        if got is None:
            lo, hi = self.lo, self.hi
            d0 = int(lv.node_domain[lo])
            d1 = int(lv.node_domain[hi - 1]) + 1
            starts, ends = lv.starts[d0:d1], lv.ends[d0:d1]
            if len(starts) == hi - lo:  # one node per domain: the fit counts themselves
                sums = self.f
            elif int(starts[0]) >= lo and int(ends[-1]) <= hi:
                sums = self.entry.level_sums(lv)[d0:d1].copy()
                for picks, take in self.taken:  # what the replicas placed before took
                    np.subtract.at(sums, lv.node_domain[lo:hi][picks] - d0, take)
            else:
                starts, ends = np.maximum(starts, lo), np.minimum(ends, hi)
                sums = np.add.reduceat(self.f, starts - lo)
            bad = _invalid(self.state, lv, within)
            if bad is not None:
                bad = bad[(bad >= d0) & (bad < d1)] - d0
                if not len(bad):
                    bad = None
            got = (sums, lv.node_domain[lo:hi] - d0, d0, starts, ends, bad)
            self.sums[id(lv)] = got
        return got

    def replicas(self, order: list[int], counts: list[int],
                 tiers: tuple[list[Level | None], Level | None] | None,
                 shape: Shape, req: NodeRequirements) -> list[Placed] | None:
        """Place the sets of ``order`` one after the other, set i's ``counts[i]`` pods
        each: in the scope, or (``tiers``: the replicas' levels and required level) in
        the first tier's tightest domain that holds them; None when one finds no domain.

        A run of equal counts is placed at once where that is the same: the domains
        taking one replica each. A domain's sum only falls as pods are placed, so no
        narrower tier gains a candidate, and the domain a replica took either still
        holds another (then it is the tightest, and takes the next one too) or holds no
        more; the domains no replica touched keep their order. So the run takes the
        tier's candidates in the order (slack, index), each as many replicas as its sum
        holds; the domains holding one replica come first (:meth:`_ones`), and their
        nodes, disjoint, are chosen as :func:`.pods.choose` would, all at once
        (:meth:`_each`)."""
        out: list[Placed] = []
        no_runs: set[tuple[int, int]] = set()  # (level, count) where no run was found
        # per position: how many of the same count start there
        if min(counts) == max(counts):
            same = list(range(len(order), 0, -1))
        else:
            same = [1] * len(order)
            for k in range(len(order) - 2, -1, -1):
                if counts[order[k]] == counts[order[k + 1]]:
                    same[k] = same[k + 1] + 1
        k = 0
        while k < len(order):
            i, count = order[k], counts[order[k]]
            if tiers is None:
                out.append(self._take(i, count, 0, self.hi - self.lo, None, -1))
                k += 1
                continue
            tier = self._tier(count, tiers, shape, req)
            if tier is None:
                return None
            lv, d0, starts, ends, j = tier
            run = same[k]  # replicas of this count from here on
            cand: np.ndarray | None = None
            if (run > 1 and (id(lv), count) not in no_runs
                    and self.sums[id(lv)][0][j] < 2 * count):  # the tightest holds one
                cand = self._ones(lv, count, run)
                run = len(cand)
                if run < 2:  # placed one by one here from now on (the same, only slower)
                    no_runs.add((id(lv), count))
            if cand is None or run <= 1:
                out.append(self._take(i, count, int(starts[j]) - self.lo,
                                      int(ends[j]) - self.lo, lv, d0 + j))
                k += 1
                continue
            out += self._each(order[k:k + run], count, lv, d0, starts, ends, cand[:run])
            k += run
        return out

    def _tier(self, count: int, tiers: tuple[list[Level | None], Level | None],
              shape: Shape, req: NodeRequirements
              ) -> tuple[Level, int, np.ndarray, np.ndarray, int] | None:
        """The first of ``tiers`` with a domain holding ``count``: (its level, the scope's
        first domain of it, domain starts and ends, the tightest domain: least slack,
        then index); None when none does or the least slack is "unlimited"
        (:func:`_tightest`)."""
        levels, kid_req = tiers
        for lv in levels:
            assert lv is not None
            if self.state.domain_bound(shape, req, None, lv) < count:
                continue
            sums, _, d0, starts, ends, bad = self._level(
                lv, kid_req if lv is not kid_req else None)
            j = _tightest(sums, count, bad)
            if j is None:
                return None
            if j < 0:
                continue
            return lv, d0, starts, ends, j
        return None

    def _ones(self, lv: Level, count: int, want: int) -> np.ndarray:
        """The domains of ``lv`` (its sums as :meth:`_tier` last saw them) that hold one
        replica of ``count`` and not two, at most ``want``, in the order a run takes
        them: least slack, then index. They come before every domain holding two (their
        slack is less), so a run takes exactly these, one replica each."""
        sums, _, _, _, _, bad = self.sums[id(lv)]
        ok = (sums >= count) & (sums < 2 * count)
        if bad is not None:
            ok[bad] = False
        cand = np.flatnonzero(ok)
        key = (sums[cand] - count) * len(sums) + cand  # (slack, index), unique
        if len(cand) > want:  # the first ``want`` without sorting them all
            part = np.argpartition(key, want - 1)[:want]
            cand, key = cand[part], key[part]
        return cand[np.argsort(key)]

    def _take(self, i: int, count: int, lo: int, hi: int, level: Level | None, d: int
              ) -> Placed:
        """Set i's ``count`` pods on the nodes :func:`.pods.choose` picks in [lo, hi) of
        the scope."""
        f = self.f[lo:hi]
        nz = np.flatnonzero(f)
        fv = f[nz]
        room = self.room
        rk = room[self.dom[lo:hi][nz]] if room is not None else None
        at, take = choose(fv, count, True, rk, None)
        self._took(nz[at] + lo, take)  # positions in the scope
        return i, level, d

    def _took(self, picks: np.ndarray, take: np.ndarray) -> None:
        """Bring the scope's counts up to date after pods were placed on ``picks``."""
        self.f[picks] -= take
        if self.room is not None:
            np.subtract.at(self.room, self.dom[picks], take)
        for sums, node_dom, *_ in self.sums.values():
            if sums is not self.f:
                np.subtract.at(sums, node_dom[picks], take)
        self.taken.append((picks, take))

    def _each(self, sets: list[int], count: int, lv: Level, d0: int, starts: np.ndarray,
              ends: np.ndarray, doms: np.ndarray) -> list[Placed]:
        """One replica in each of the domains ``doms`` (local indices, disjoint), set
        ``sets[r]`` in ``doms[r]``: in each, :func:`.pods.choose`'s nodes (one node that
        holds them all, the tightest, then the fullest rack, then the lowest index; else
        nodes by fit ascending, then rack room, then index, until ``count`` are placed),
        in numpy calls over all the domains at once (:func:`.pods.choose_each`)."""
        room = self.room[self.dom] if self.room is not None else None
        pos, take, _ = choose_each(self.f, count, starts[doms] - self.lo, ends[doms] - self.lo,
                                   room)
        self._took(pos, take)  # the sets' pods in order, as one part
        return [(i, lv, d) for i, d in zip(sets, (doms + d0).tolist(), strict=True)]


def _domain(topo: Topology, level: Level | None, d: int, req: Level | None, key: str | None
            ) -> tuple[str | None, str | None, str | None]:
    """(key, value, label) a placed group reports, as :func:`.attempts._outcomes`: the
    domain it was placed in when its level is the one it asked for, else the domain of
    its required level holding it (none without one)."""
    if level is None:
        return None, None, None
    if level.key == key:
        return level.key, level.values[d], topo.domain_path(level, d)
    if req is None:
        return None, None, None
    rd = int(req.node_domain[int(level.starts[d])])
    return req.key, req.values[rd], topo.domain_path(req, rd)


def _decision(unit: Group, state: ClusterState, sets: list[PodSet], placed: list[Placed],
              parts: list[tuple[np.ndarray, np.ndarray]],
              where: tuple[Level | None, int, Level | None, str | None],
              kid: tuple[str | None, Level | None], counts: list[int], n_groups: int
              ) -> Decision:
    """The decision value, as the generic path builds it (``n_groups``: how many of the
    unit's children are groups over their set)."""
    topo = state.topology
    total = sum(counts)
    # each set's pods in order, node after node; the sets in placement order
    pods = chain.from_iterable(sets[one[0]].pods for one in placed)
    if len(parts) == 1 and len(parts[0][0]) == 1:
        assignments = dict.fromkeys(pods, topo.names[int(parts[0][0][0])])
    else:
        nodes, take = parts[0] if len(parts) == 1 else (
            np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))
        names = np.repeat(topo.name_array[nodes], take).tolist()
        assignments = dict(zip(pods, names, strict=True))
    level, d, req_level, key = where
    dkey, dval, label = _domain(topo, level, d, req_level, key)
    kids = unit.children
    G = GroupOutcome  # positional below, in the order of its fields (cheaper):
    # path, kind, placed_pods, min_pods, size, satisfied_children, min_groups, children,
    # domain, satisfied, domain_key, domain_value
    groups = [G(unit.path, "Group", total, unit.min_pods, total, len(kids), unit.min_groups,
                len(kids), label, True, dkey, dval)]
    if not n_groups:
        groups += [G(ps.path, "PodSet", n, ps.min_pods, n, 0, 0, 0, None, True)
                   for ps, n in zip(sets, counts, strict=True)]
    else:
        domains = _kid_domains(topo, placed, kid)
        for ch, ps, n, (ckey, cval, clabel) in zip(kids, sets, counts, domains, strict=True):
            if isinstance(ch, Group):  # a replica group over its set
                groups.append(G(ch.path, "Group", n, ch.min_pods, n, 1, ch.min_groups, 1,
                                clabel, True, ckey, cval))
            groups.append(G(ps.path, "PodSet", n, ps.min_pods, n, 0, 0, 0, None, True))
    dry_runs = 1 + len(sets) + n_groups
    return Decision(unit=unit.path, admitted=True, assignments=assignments, groups=groups,
                    reason="", minimum_pods=total, extra_pods=0, dry_runs=dry_runs)


def _kid_domains(topo: Topology, placed: list[Placed], kid: tuple[str | None, Level | None]
                 ) -> list[tuple[str | None, str | None, str | None]]:
    """(key, value, label) each replica group reports (by set), as :func:`_domain`: in
    one pass when every replica took a domain of the level it asked for."""
    kid_key, kid_req = kid
    out: list[tuple[str | None, str | None, str | None]] = [(None, None, None)] * len(placed)
    lv = placed[0][1]
    if lv is not None and lv.key == kid_key and all(one[1] is lv for one in placed):
        ds = [one[2] for one in placed]
        values = lv.values
        for one, label in zip(placed, topo.domain_paths(lv, ds), strict=True):
            out[one[0]] = (kid_key, values[one[2]], label)
        return out
    for i, lv_i, d in placed:
        out[i] = _domain(topo, lv_i, d, kid_req, kid_key)
    return out


__all__ = ["fast_place"]
