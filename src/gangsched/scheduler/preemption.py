"""Workload-aware preemption (KEP-5710): which lower-priority pods to evict, if any.

For each candidate domain (each domain of the preemptor's widest required constraint
level, and the whole cluster when its root is not pinned to that level):

1. Victims: running units of strictly lower priority with pods in the domain. A unit in
   disruption mode ``all`` is one victim, whole. A ``single`` unit offers first its
   surplus in the domain (pods above its minimum, whole extra children), then itself
   whole.
2. Prune by a capacity bound, then dry-run the preemptor with every victim gone
   (a snapshot of the state, victims released); if it does not fit, the domain is out.
3. Shrink: the shortest prefix of victims (lowest priority, then surplus before whole,
   then largest) that lets it fit, found by bisection; then reprieve victims from the
   highest priority down while it still fits.
4. Keep the domain with the fewest victim units, then the lowest highest victim
   priority, then the fewest pods evicted (first domain on ties). A domain with no
   victim, or whose victims bound its plans' cost from below at no less than the best
   plan's (one unit only if one victim alone passes the capacity bound), is not dry-run.

The result is a value; the queue phase turns it into actions (:mod:`.queue`). Nothing
here changes the live state.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gangsched.cluster.state import ClusterState, Shape
from gangsched.cluster.topology import Level
from gangsched.gang import TreeNode, pin_root
from gangsched.placement.decision import Decision
from gangsched.scheduler.capacity import hide, release
from gangsched.scheduler.tree import min_demand, surplus, widest_required
from gangsched.scheduler.unit import Unit

Place = Callable[[TreeNode, ClusterState], Decision]


@dataclass(frozen=True)
class Victim:
    unit: str
    priority: int
    pods: tuple[str, ...]
    whole: bool  # the whole unit goes (requeued); else only surplus pods


@dataclass
class Preemption:
    domain: str  # readable domain name, or "cluster"
    victims: list[Victim]
    decision: Decision  # the dry run that proved the preemptor fits

    @property
    def cost(self) -> tuple[int, int, int]:
        return _cost(self.victims)


@dataclass
class Search:
    """Outcome of a search: the plan, or why there is none."""

    plan: Preemption | None
    dry_runs: int = 0
    notes: list[str] = field(default_factory=list)


def _cost(victims: Sequence[Victim]) -> tuple[int, int, int]:
    units = {v.unit for v in victims}
    return (len(units), max((v.priority for v in victims), default=0),
            sum(len(v.pods) for v in victims))


@dataclass
class _Domain:
    label: str
    key: str | None
    value: str | None
    lo: int
    hi: int
    d: int = -1  # index in its level; -1: the whole cluster


def find_preemption(
    tree: TreeNode,
    priority: int,
    candidates: Sequence[Unit],
    state: ClusterState,
    place: Place,
    hidden: np.ndarray,
    budget: int = 64,
    *,
    surplus_only: bool = False,
) -> Search:
    """Victims among ``candidates`` (priority below ``priority``) whose eviction lets
    ``tree`` fit, or none. With ``surplus_only`` only pods above a unit's minimum are
    taken, never a unit whole (reclaiming extras for a waiting unit's minimum)."""
    out = Search(None)
    cands = [u for u in candidates if u.priority < priority and u.n_bound and u.tree is not None]
    if not cands:
        out.notes.append("no lower-priority pods to preempt")
        return out
    topo = state.topology
    index = topo.index
    offers: dict[int, Offer] = {}
    # a unit holding no more pods than its minimum has no surplus (checked first: the
    # surplus walk of every running unit, for each unit that failed, was most of a pass)
    if surplus_only and not any(u.has_surplus and _offered(u, index, offers)[1]
                                for u in cands):
        out.notes.append("no pods above a minimum to reclaim")
        return out
    level = _level(tree, state)
    by_domain: dict[int, list[Unit]] = {-1: list(cands)}
    if level is not None:  # each unit under the domains holding its pods
        for u in cands:
            where = np.fromiter((index.get(n, -1) for n in u.bound().values()),
                                dtype=np.int64, count=u.n_bound)
            for d in np.unique(level.node_domain[where[where >= 0]]).tolist():
                by_domain.setdefault(d, []).append(u)
    domains = _domains(tree, state, level, by_domain)
    freeable = _freeable(state, cands)
    need = {state.rindex[r]: v for r, v in min_demand(tree).items() if r in state.rindex}
    mask = np.ones(state.n_nodes, dtype=bool)
    mask[hidden] = False
    free = np.where(mask, np.maximum(state.free, 0), 0)
    room = free + np.where(mask, freeable, 0)

    def alone(victims: list[Victim], dom: _Domain) -> list[Victim]:
        """Those of ``victims`` whose eviction alone passes the capacity bound in ``dom``."""
        have = {r: int(free[r, dom.lo:dom.hi].sum()) for r in need}
        out = []
        for v in victims:
            freed = dict.fromkeys(need, 0)
            for p in v.pods:
                entry = state.bound.get(p)
                if entry is not None and dom.lo <= entry[0] < dom.hi and mask[entry[0]]:
                    for r, a in zip(entry[1].index, entry[1].amount, strict=True):
                        if r in freed:
                            freed[r] += a
            if all(have[r] + freed[r] >= v_need for r, v_need in need.items()):
                out.append(v)
        return out

    def fits(pods: list[str], t: TreeNode) -> Decision | None:
        out.dry_runs += 1
        snap = state.snapshot()
        release(snap, pods)
        hide(snap, hidden)
        d = place(t, snap)
        return d if d.admitted else None

    best: Preemption | None = None
    ranked: list[tuple[tuple[int, int, int], _Domain, list[Unit]]] = []
    for dom in domains:
        inside = by_domain.get(dom.d, [])
        if not inside:
            continue
        if any(int(room[r, dom.lo:dom.hi].sum()) < v for r, v in need.items()):
            continue
        ranked.append(((max(u.priority for u in inside), len(inside), dom.lo), dom, inside))
    ranked.sort(key=lambda x: x[0])
    for _, dom, inside in ranked:
        if out.dry_runs >= budget:
            out.notes.append("preemption search budget spent")
            break
        victims = _victims(inside, index, dom, surplus_only, offers)
        if not victims or (best is not None
                           and _least(victims, alone(victims, dom)) >= best.cost):
            continue  # nothing to evict here, or no plan here could cost less
        t = pin_root(tree, dom.key, dom.value) if dom.key and dom.value else tree
        everyone = _pods(victims)
        first = fits(everyone, t)
        if first is None:
            continue
        # bisect the shortest prefix that fits (more room never hurts; no victim at all
        # is known not to fit: that is why we are here)
        lo, hi, found = 1, len(victims), first
        while lo < hi and out.dry_runs < budget:
            mid = (lo + hi) // 2
            d = fits(_pods(victims[:mid]), t)
            if d is not None:
                hi, found = mid, d
            else:
                lo = mid + 1
        chosen = _normalize(victims[:hi])
        # reprieve: the most important victims first
        for v in sorted(chosen, key=lambda v: (-v.priority, not v.whole, len(v.pods))):
            if out.dry_runs >= budget or len(chosen) == 1:
                break
            rest = [w for w in chosen if w is not v]
            d = fits(_pods(rest), t)
            if d is not None:
                chosen, found = rest, d
        plan = Preemption(dom.label, chosen, found)
        if best is None or plan.cost < best.cost:
            best = plan
    out.plan = best
    if best is None and not out.notes:
        out.notes.append("evicting every lower-priority pod in any one domain would not "
                         "make room")
    return out


def _level(tree: TreeNode, state: ClusterState) -> Level | None:
    """The level of the tree's widest required constraint."""
    key = widest_required(tree, state.topology)
    return state.topology.level_for(key) if key is not None else None


def _domains(tree: TreeNode, state: ClusterState, level: Level | None,
             only: Collection[int]) -> list[_Domain]:
    """Candidate domains among ``only``: those of ``level``, plus the whole cluster when
    the root is not pinned to that level."""
    topo = state.topology
    key = level.key if level is not None else None
    out: list[_Domain] = []
    root_pinned = any(c.mode == "required" and c.key == key for c in tree.topology)
    if level is not None:
        fixed = next((c.value for c in tree.topology
                      if c.mode == "required" and c.key == key and c.value), None)
        for d in sorted(x for x in only if x >= 0):
            if not level.valid[d] or (fixed is not None and level.values[d] != fixed):
                continue
            out.append(_Domain(topo.domain_path(level, d), key, level.values[d],
                               int(level.starts[d]), int(level.ends[d]), d))
    if level is None or not root_pinned:
        out.append(_Domain("cluster", None, None, 0, state.n_nodes))
    return out


def _freeable(state: ClusterState, units: Sequence[Unit]) -> np.ndarray:
    """Per resource and node: what evicting every pod of ``units`` would free."""
    out = np.zeros_like(state.free)
    by_shape: dict[Shape, list[int]] = {}
    for u in units:
        for got in u.pods.sets.values():
            for p in got:
                entry = state.bound.get(p)
                if entry is not None:
                    by_shape.setdefault(entry[1], []).append(entry[0])
    for shape, js in by_shape.items():
        idx = np.asarray(js, dtype=np.int64)
        for r, a in zip(shape.index, shape.amount, strict=True):
            np.add.at(out[r], idx, a)
    return out


Offer = tuple[tuple[str, ...], list[tuple[tuple[str, ...], list[int]]]]
"""What a running unit offers: all its bound pods, and its surplus chunks (none for a
unit in disruption mode ``all``) each with the node indices of its pods."""


def _offer(u: Unit, index: Mapping[str, int]) -> Offer:
    assert u.tree is not None
    chunks: list[tuple[tuple[str, ...], list[int]]] = []
    if u.disruption != "all":
        node_of = u.pods.node_of
        chunks = [(tuple(c), [index.get(node_of(p) or "", -1) for p in c])
                  for c in surplus(u.tree, u.pods.sets)]
    return tuple(u.bound()), chunks


def _offered(u: Unit, index: Mapping[str, int], memo: dict[int, Offer]) -> Offer:
    got = memo.get(id(u))
    if got is None:
        got = memo[id(u)] = _offer(u, index)
    return got


def _victims(inside: Sequence[Unit], index: Mapping[str, int], dom: _Domain,
             surplus_only: bool, offers: dict[int, Offer]) -> list[Victim]:
    """Victims in the order they are taken: lowest priority first, surplus before whole
    units, larger first, then queue order. ``offers``: each unit's :func:`_offer`, by id,
    filled as units are first seen (one search asks for the same units domain after
    domain)."""
    out: list[tuple[tuple[int, int, int, int, int], Victim]] = []
    for u in inside:
        pods, chunks = _offered(u, index, offers)
        spare = tuple(p for c, at in chunks if any(dom.lo <= j < dom.hi for j in at)
                      for p in c)
        if spare and len(spare) < len(pods):
            out.append(((u.priority, 0, -len(spare), -u.seq, 0),
                        Victim(u.name, u.priority, spare, whole=False)))
        if not surplus_only:
            out.append(((u.priority, 1, -len(pods), -u.seq, 1),
                        Victim(u.name, u.priority, pods, whole=True)))
    out.sort(key=lambda x: x[0])
    return [v for _, v in out]


def _least(victims: Sequence[Victim], alone: Sequence[Victim]) -> tuple[int, int, int]:
    """A bound below the cost of any plan taking some of ``victims``, ``alone`` those that
    could make room by themselves: a plan of one unit is one victim (its surplus, or it
    whole) that makes room alone, so it costs at least one unit, their lowest priority
    and their fewest pods; any other plan costs at least two units."""
    some = alone or victims
    return (1 if alone else 2, min(v.priority for v in some), min(len(v.pods) for v in some))


def _normalize(victims: Sequence[Victim]) -> list[Victim]:
    """A unit taken whole needs no separate surplus victim."""
    whole = {v.unit for v in victims if v.whole}
    return [v for v in victims if v.whole or v.unit not in whole]


def _pods(victims: Sequence[Victim]) -> list[str]:
    seen: dict[str, None] = {}
    for v in victims:
        seen.update(dict.fromkeys(v.pods))
    return list(seen)
