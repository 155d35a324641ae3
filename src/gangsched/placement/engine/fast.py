"""The fast path: the common shapes decided without the generic search machinery.

A unit of the shape most workloads have (a root Group under at most one required level of
the chain, whose children are identical replicas: pod sets, or groups of one pod set,
every pod required, one pod shape, no per-node caps, no exclusive domains, nothing
pinned) is decided here in a handful of numpy calls on the cached capacities, with the
same result as the generic search (:mod:`.attempts`), decision for decision:

- Nothing to choose between attempts: the minimum is the whole unit (no raised trees),
  and the capacity bound is exact for identical pods without caps (a domain whose summed
  capacity holds the pods takes them, sibling after sibling), so the packed attempt's
  first candidate wins, and no ranking dry runs happen (the unit is ``simple``).
- The candidate is the generic one: tier by tier (the narrowest level first with
  ``Options.narrow``, up to the required level; the whole cluster last when nothing is
  required), the domain whose capacity covers the pods with the least slack, the lowest
  index among equals. A tier no domain of which could hold the pods even empty
  (:meth:`ClusterState.domain_bound`) is skipped without looking at its domains.
- Inside it each replica in placement order (largest first, then as listed) takes its
  nodes by :func:`.pods.choose`, exactly as :class:`.pods.Pods` would, on a local copy
  of the scope's capacity (a pod of one shape lowers a node's fit count by one, and its
  rack's room by one).
- The decision value (assignments, per-group outcomes, dry runs) is built as
  :func:`.attempts._decision` builds it.

Anything else, and any unit that does not fit (its rejection is explained by the generic
search), returns None: the caller runs the generic search. ``Options.fast=False`` turns
this path off; the tests check both agree on random clusters and units.
"""

from __future__ import annotations

import numpy as np

from gangsched.cluster.state import BIG, ClusterState, Shape, _Entry
from gangsched.cluster.topology import HOSTNAME, Level, Topology
from gangsched.gang import Group, PodSet
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine.options import Options
from gangsched.placement.engine.pods import choose


def _replica_sets(unit: Group) -> list[PodSet] | None:
    """The unit's pod sets, one per child, when every child is a required replica of
    the fast shape; None otherwise."""
    kids = unit.children
    if not kids or unit.min_groups != len(kids):
        return None
    sets: list[PodSet] = []
    for ch in kids:
        if isinstance(ch, PodSet):
            ps = ch
        else:
            if (ch.topology or ch.max_pods_per_node is not None or ch.held_per_node
                    or ch.min_groups != 1 or len(ch.children) != 1):
                return None
            ps = ch.children[0]  # type: ignore[assignment]
            if not isinstance(ps, PodSet) or ch.min_pods > len(ps.pods):
                return None
        if (ps.topology or ps.max_pods_per_node is not None or ps.held_per_node
                or not ps.pods or ps.min_pods != len(ps.pods)):
            return None
        sets.append(ps)
    first = sets[0]
    for ps in sets[1:]:
        if ps.requests != first.requests or ps.requirements != first.requirements:
            return None
    return sets


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


def fast_place(unit: Group | PodSet, state: ClusterState, opts: Options, minimum: int,
               commit: bool) -> Decision | None:
    """The decision for a unit of the fast shape that fits; None for anything else."""
    if (not isinstance(unit, Group) or unit.max_pods_per_node is not None
            or unit.held_per_node or opts.node_order != "pack" or opts.extras_first
            or opts.domain_order != "fit"):
        return None
    key: str | None = None
    if unit.topology:
        if len(unit.topology) > 1:
            return None
        con = unit.topology[0]
        if (con.mode != "required" or con.value is not None or con.exclusive is not None
                or not state.topology.nested(con.key)):
            return None
        key = con.key
    sets = _replica_sets(unit)
    if sets is None:
        return None
    total = sum(len(ps.pods) for ps in sets)
    if unit.min_pods > total or minimum != total:
        return None
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
        slack = entry.level_sums(lv) - total
        bad = _invalid(state, lv, req_level if lv is not req_level else None)
        if bad is not None:
            slack[bad] = -1
        j = int(slack.view(np.uint64).argmin())  # negative slack reads as huge
        s = int(slack[j])
        if s < 0:
            continue
        if s >= BIG:
            return None  # the generic order caps slack: ties there, let it decide
        level, lo, hi, d = lv, int(lv.starts[j]), int(lv.ends[j]), j
        break
    if lo < 0:
        return None  # does not fit: the generic search explains why
    # 2. the pods: each replica in placement order (largest first, then as listed)
    placed: list[tuple[int, np.ndarray, np.ndarray]] = []
    if hi - lo == 1:  # one node holds them all (its fit covers the total): each set there
        node, n_sets = np.array([lo], dtype=np.int64), len(sets)
        placed = [(i, node, np.array([len(sets[i].pods)], dtype=np.int64))
                  for i in (range(n_sets) if n_sets == 1 else _order(sets))]
    else:
        placed = _spread_over(sets, entry, _racks(state, opts), lo, hi)
    if commit:
        txn = state.begin()
        for i, nodes, take in placed:
            txn.place(nodes, take, shape, tag=sets[i].path)
        txn.commit()
    return _decision(unit, state, sets, placed, level, d, req_level, key, minimum, total)


def _order(sets: list[PodSet]) -> list[int]:
    """Placement order of identical replicas: largest first, then as listed."""
    return sorted(range(len(sets)), key=lambda i: -len(sets[i].pods))


def _spread_over(sets: list[PodSet], entry: _Entry, racks: Level | None, lo: int, hi: int
                 ) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(set, nodes, pods per node) for each set in placement order inside [lo, hi), as
    :class:`.pods.Pods` places them one after the other (on local copies of the fit
    counts and rack rooms: each pod takes one from its node's and its rack's)."""
    f = entry.fit[lo:hi].copy()
    room: np.ndarray | None = None
    dom = f
    if racks is not None:
        r0 = int(racks.node_domain[lo])
        r1 = int(racks.node_domain[hi - 1]) + 1
        room = entry.level_sums(racks)[r0:r1].copy()
        dom = racks.node_domain[lo:hi] - r0
    placed: list[tuple[int, np.ndarray, np.ndarray]] = []
    for i in _order(sets):
        count = len(sets[i].pods)
        nz = np.flatnonzero(f)
        fv = f[nz]
        rk = room[dom[nz]] if room is not None else None
        at, take = choose(fv, count, True, rk, None)
        picks = nz[at]
        f[picks] -= take
        if room is not None:
            np.subtract.at(room, dom[picks], take)
        placed.append((i, picks + lo, take))
    return placed


def _decision(unit: Group, state: ClusterState, sets: list[PodSet],
              placed: list[tuple[int, np.ndarray, np.ndarray]], level: Level | None, d: int,
              req_level: Level | None, key: str | None, minimum: int, total: int) -> Decision:
    """The decision value, as the generic path builds it."""
    topo = state.topology
    assignments: dict[str, str] = {}
    for i, nodes, take in placed:
        pods = sets[i].pods
        if len(nodes) == 1:
            assignments.update(dict.fromkeys(pods, topo.names[int(nodes[0])]))
        else:  # pods in order, node after node
            where = np.repeat(topo.name_array[nodes], take).tolist()
            assignments.update(zip(pods, where, strict=True))
    dkey = dval = label = None
    if level is not None:
        if level.key == key:
            dkey, dval, label = level.key, level.values[d], topo.domain_path(level, d)
        elif req_level is not None:  # placed narrower than asked: report the asked domain
            rd = int(req_level.node_domain[int(level.starts[d])])
            dkey, dval = req_level.key, req_level.values[rd]
            label = topo.domain_path(req_level, rd)
    kids = unit.children
    groups = [GroupOutcome(
        path=unit.path, kind="Group", placed_pods=total, min_pods=unit.min_pods,
        size=total, satisfied_children=len(kids), min_groups=unit.min_groups,
        children=len(kids), domain=label, satisfied=True, domain_key=dkey, domain_value=dval,
    )]
    dry_runs = 1
    for ch, ps in zip(kids, sets, strict=True):
        n = len(ps.pods)
        if ch is not ps:
            assert isinstance(ch, Group)
            groups.append(GroupOutcome(
                path=ch.path, kind="Group", placed_pods=n, min_pods=ch.min_pods, size=n,
                satisfied_children=1, min_groups=ch.min_groups, children=1, satisfied=True))
            dry_runs += 1
        groups.append(GroupOutcome(path=ps.path, kind="PodSet", placed_pods=n,
                                   min_pods=ps.min_pods, size=n, satisfied=True))
        dry_runs += 1
    return Decision(unit=unit.path, admitted=True, assignments=assignments, groups=groups,
                    reason="", minimum_pods=minimum, extra_pods=total - minimum,
                    dry_runs=dry_runs)


__all__ = ["Shape", "fast_place"]
