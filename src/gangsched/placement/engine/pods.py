"""Placing pods of one set on the nodes of a scope: the step every placement ends in, for
the minimum and for extras alike.

Per-node capacity comes from the cluster state's cached fit counts (one vectorized array
per shape), cut by the set's own per-node cap (its pods already placed or running count
against it) and by the caps of the groups above it. Within that, nodes fewer of the unit's
other sets can use come first and nodes holding a scarce resource the set does not ask for
come last; then one node that holds them all (the tightest, or with ``spread`` the
emptiest), else the fullest nodes first (the emptiest with ``spread``); among equally
full nodes, those of the fullest lowest domains (racks) first (``keep_whole``), so the
pods of a wide gang use up partly used racks and clean racks stay whole for the gangs
that need one. A set whose scope is full spills into its wider scopes, in order
(preferred constraints).
"""

from __future__ import annotations

import numpy as np

from gangsched.cluster.state import Shape, Transaction
from gangsched.cluster.topology import HOSTNAME
from gangsched.gang import PodSet
from gangsched.placement.engine.facts import Facts
from gangsched.placement.engine.values import Scope, SetPlacement, Spill


class Pods:
    """Places pods of the unit's sets in one attempt's transaction."""

    def __init__(self, facts: Facts, txn: Transaction, pack: bool,
                 keep_whole: bool = False) -> None:
        self.facts = facts
        self.state = facts.state
        self.txn = txn
        self.pack = pack  # fullest nodes first (else emptiest first)
        lowest = [lv for lv in facts.topo.levels if lv.key != HOSTNAME]
        # racks: the lowest level above hosts, when packing and asked to keep racks whole
        self.racks = lowest[-1] if keep_whole and pack and lowest else None

    def add(self, res: SetPlacement, count: int, spill: Spill | None = None) -> int:
        """Place up to ``count`` more pods of res's set inside its scope, then the wider
        scopes of ``spill`` (default: every scope it may spill into); returns how many
        were placed."""
        done = self._add_in(res, count, (res.lo, res.hi, res.sel))
        for scope in res.outer if spill is None else spill:
            if done >= count:
                break
            done += self._add_in(res, count - done, scope)
        return done

    def _add_in(self, res: SetPlacement, count: int, scope: Scope) -> int:
        ps = res.node
        facts = self.facts
        shape = facts.shape(ps)
        lo, hi, sel = scope
        own_cap = ps.max_pods_per_node
        counted = own_cap is not None and bool(res.nodes or ps.held_per_node)
        # a cap that counts pods of the set already on a node: what the node's free
        # resources fit (those pods' resources already taken), at most the cap less them
        f = self.state.capacity(shape, ps.requirements, None if counted else own_cap)[lo:hi]
        if sel is not None:
            f = f * sel[lo:hi]
        if counted:
            assert own_cap is not None
            room = np.full(hi - lo, own_cap, dtype=np.int64)
            for nodes, counts in zip(res.nodes, res.counts, strict=True):
                inside = (nodes >= lo) & (nodes < hi)
                np.subtract.at(room, nodes[inside] - lo, counts[inside])
            if ps.held_per_node:
                room -= facts.held(ps)[lo:hi]
            f = np.minimum(f, np.maximum(room, 0))
        for paths, cap, group in facts.group_caps.get(ps.path, ()):
            used = self._pods_of(paths, lo, hi)
            if group.held_per_node:
                used += facts.held(group)[lo:hi]
            f = np.minimum(f, np.maximum(cap - used, 0))
        if facts.claims:
            barred = facts.barred(ps, lo, hi)
            if barred is not None:
                f = np.where(barred, 0, f)
        nz = np.flatnonzero(f)
        if len(nz) == 0:
            return 0
        fv = f[nz]
        pref = self._preference(ps, shape, nz + lo)
        rack = self._rack_room(ps, shape, nz + lo)
        at, take = choose(fv, count, self.pack, rack, pref)
        picks = nz[at]
        nodes = picks.astype(np.int64) + lo
        self.txn.place(nodes, take, shape, tag=ps.path, held=facts.holds(ps, nodes, take))
        res.nodes.append(nodes)
        res.counts.append(take)
        n = int(take.sum())
        res.placed += n
        return n

    def _rack_room(self, ps: PodSet, shape: Shape, nodes: np.ndarray) -> np.ndarray | None:
        """Pods of this shape the rack of each candidate node can still take (fewer is
        better: a fuller rack); None when racks are not kept whole."""
        lv = self.racks
        if lv is None:
            return None
        sums = self.state.domain_sums(shape, ps.requirements, None, lv)
        return sums[lv.node_domain[nodes]]

    def _preference(self, ps: PodSet, shape: Shape, nodes: np.ndarray) -> np.ndarray | None:
        """Lower is better, per candidate node; None when every node is as good.

        Nodes fewer of the unit's other pod sets can use come first (a set that tolerates
        a taint takes the tainted nodes), and a set that asks for none of a scarce
        resource (a CPU-only pod) keeps off nodes that still hold it (GPU nodes)."""
        facts = self.facts
        pref: np.ndarray | None = None
        others = [r for r in facts.requirements if r != ps.requirements]
        if others:
            pref = np.zeros(len(nodes), dtype=np.int64)
            for other in others:
                pref += self.state.mask(other)[nodes]
            pref *= 1 << 20
        asked = set(shape.index)
        spare = [r for r in facts.scarce if r not in asked]
        if spare:
            held = np.zeros(len(nodes), dtype=np.float64)
            inv = facts.inv_total
            for r in spare:
                held += self.state.free[r, nodes] * inv[r]
            # a share of the cluster's total, at most 1 per resource: fine enough that one GPU
            # of half a million counts, and below the 1 << 20 steps of the sets' contention
            stranded = (held * ((1 << 19) / len(spare))).astype(np.int64)
            pref = stranded if pref is None else pref + stranded
        return pref

    def _pods_of(self, paths: frozenset[str], lo: int, hi: int) -> np.ndarray:
        """Pods of this decision of the sets ``paths`` on each node of [lo, hi)."""
        mine = [ch for ch in self.txn.log if ch.tag in paths]
        if not mine:
            return np.zeros(hi - lo, dtype=np.int64)
        nodes = np.concatenate([ch.nodes for ch in mine]) if len(mine) > 1 else mine[0].nodes
        counts = (np.concatenate([ch.counts for ch in mine]) if len(mine) > 1
                  else mine[0].counts)
        inside = (nodes >= lo) & (nodes < hi)
        return np.bincount(nodes[inside] - lo, weights=counts[inside],
                           minlength=hi - lo).astype(np.int64)


# below this many candidate nodes a full sort is as cheap as a partial selection
_PARTIAL = 256


def choose(fv: np.ndarray, count: int, pack: bool, rack: np.ndarray | None = None,
           pref: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Which of the candidate nodes take up to ``count`` pods, and how many each:
    (positions into ``fv``, pods per position). ``fv`` (each at least 1) is what each
    candidate can take, ``rack`` the room of its rack (fewer is better) and ``pref`` its
    preference (lower is better), both optional.

    Without a preference, one node that holds them all is taken when there is one: the
    tightest (then the fullest rack, then the lowest index), or with ``pack`` false the
    emptiest. Otherwise nodes go in the order (pref, fit, rack room, index), fit ascending
    with ``pack`` (fullest first) and descending without, until ``count`` are placed.
    At most ``count / min(fv)`` nodes are needed, so on a wide scope only that many
    first in that order are selected (``np.argpartition`` on one
    combined key, then sorted): the same nodes as a full sort, in the same order, in time
    linear in the scope instead of ``n log n``.
    """
    n = len(fv)
    if pref is None:
        single = np.flatnonzero(fv >= count)
        if len(single):
            # one node holds them all: the tightest (best fit), or the emptiest (spread)
            if rack is not None:
                j = int(single[int(np.lexsort((rack[single], fv[single]))[0])])
            else:
                pick = np.argmin if pack else np.argmax
                j = int(single[int(pick(fv[single]))])
            return np.array([j], dtype=np.int64), np.array([count], dtype=np.int64)
    key = fv if pack else -fv
    keys = [k for k in (rack, key, pref) if k is not None]
    order: np.ndarray | None = None
    m = n
    if n > _PARTIAL:  # k nodes take at least k times the smallest fit
        m = min(n, -(-count // max(1, int(fv.min()))))
    if 0 < m < n // 2:
        combined = _combined(keys, n)
        if combined is not None:
            part = np.argpartition(combined, m - 1)[:m]
            order = part[np.argsort(combined[part], kind="stable")]
    if order is None:
        order = (np.argsort(key, kind="stable") if len(keys) == 1
                 else np.lexsort(tuple(keys)))
    cum = np.cumsum(fv[order])
    k = int(np.searchsorted(cum, count))
    k = min(k, len(order) - 1)
    take = fv[order[: k + 1]].astype(np.int64)
    placed = int(cum[k])
    if placed > count:
        take[-1] -= placed - count
    return order[: k + 1], take


def _combined(keys: list[np.ndarray], n: int) -> np.ndarray | None:
    """One int64 key per position ordering as ``np.lexsort(keys)`` (last key primary)
    then by position, unique; None when it would not fit in 62 bits."""
    out = np.arange(n, dtype=np.int64)
    span = n
    for k in keys:  # least significant first, as lexsort reads them
        lo, hi = int(k.min()), int(k.max())
        width = hi - lo + 1
        if span * width >= 1 << 62:
            return None
        out += (k.astype(np.int64) - lo) * span
        span *= width
    return out


def choose_each(fit: np.ndarray, count: int, starts: np.ndarray, ends: np.ndarray,
                room: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`choose` packing, without a preference, in each of the disjoint slices
    [starts[k], ends[k]) of ``fit`` (what each position can take), all at once:
    (positions, pods on each, the slice each belongs to), slice after slice, each in the
    order :func:`choose` gives. ``room``: the rack room of each position, or None. Per
    slice: the tightest position that holds all ``count`` (then the least room, then the
    lowest), when there is one; else positions by (fit, room, index) until ``count`` are
    placed (fewer when the slice holds fewer)."""
    sizes = ends - starts
    if len(sizes) and 2 * int(sizes.sum()) >= len(sizes) * int(sizes.max()) > 0:
        return _choose_grid(fit, count, starts, sizes, room)
    owner = np.repeat(np.arange(len(starts)), sizes)
    pos = np.arange(int(sizes.sum())) + np.repeat(starts - np.cumsum(sizes) + sizes, sizes)
    fv = fit[pos]
    keep = fv > 0
    owner, pos, fv = owner[keep], pos[keep], fv[keep]
    n = len(starts)
    if not len(fv):
        return pos, fv.astype(np.int64), owner
    rk = room[pos] if room is not None else None
    # per slice: fit, room, index ascending (positions ascend within a slice, so a
    # stable sort on one key of (slice, fit, room) orders them so)
    width = int(fv.max()) + 1
    rwidth = int(rk.max()) + 1 if rk is not None else 1
    if n * width * rwidth < 1 << 62:
        key = owner * width + fv
        if rk is not None:
            key = key * rwidth + rk
        at = np.argsort(key, kind="stable")
    else:  # one key would overflow
        at = np.lexsort((fv, owner) if rk is None else (rk, fv, owner))
    owner, pos, fv = owner[at], pos[at], fv[at]
    # one position that holds them all: the first such of its slice in this order
    whole = np.flatnonzero(fv >= count)
    first = np.full(n, -1, dtype=np.int64)
    if len(whole):
        wo = owner[whole]
        lead = np.ones(len(whole), dtype=bool)
        np.not_equal(wo[1:], wo[:-1], out=lead[1:])
        first[wo[lead]] = whole[lead]
    begin = np.searchsorted(owner, np.arange(n))
    cum = np.cumsum(fv)
    before = cum - fv - np.repeat(np.append(0, cum)[begin], np.diff(np.append(begin, len(fv))))
    take = np.minimum(fv, count - before)
    take[(before >= count) | (first[owner] >= 0)] = 0
    take[first[first >= 0]] = count
    chosen = np.flatnonzero(take > 0)
    return pos[chosen], take[chosen].astype(np.int64), owner[chosen]


def _choose_grid(fit: np.ndarray, count: int, starts: np.ndarray, sizes: np.ndarray,
                 room: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`choose_each` on a grid, one row per slice padded to the longest (slices of
    about one size, such as a level's domains): the same result in fewer, 2-D numpy
    calls. Padding takes nothing (fit 0)."""
    n, m = len(starts), int(sizes.max())
    cols = np.arange(m)
    idx = starts[:, None] + cols
    if int(sizes.min()) == m:
        fv = fit[idx]
    else:
        pad = cols >= sizes[:, None]
        # any position in range (an empty slice may start at the end): its fit is masked
        idx[pad] = np.minimum(np.repeat(starts, m - sizes), len(fit) - 1)
        fv = fit[idx]
        fv[pad] = 0
    # per row: fit, room, index ascending (a stable sort on one key of (fit, room))
    if room is None:
        at = np.argsort(fv, axis=1, kind="stable")
    else:
        rk = room[idx]
        rwidth = int(rk.max()) + 1
        if (int(fv.max()) + 1) * rwidth < 1 << 62:
            at = np.argsort(fv * rwidth + rk, axis=1, kind="stable")
        else:  # one key would overflow
            at = np.lexsort((rk, fv), axis=1)
    at += np.arange(0, n * m, m)[:, None]  # flat positions, row after row
    fv = fv.ravel()[at]
    before = np.cumsum(fv, axis=1) - fv
    take = np.minimum(fv, count - before)
    # a row whose largest fit holds them all: its first position that does, alone
    whole = np.flatnonzero(fv[:, -1] >= count)
    if len(whole):
        first = np.argmax(fv[whole] >= count, axis=1)
        take[whole] = 0
        take[whole, first] = count
    chosen = np.flatnonzero(take > 0)
    pos = idx.ravel()[at.ravel()[chosen]]
    return pos, take.ravel()[chosen].astype(np.int64), chosen // m
