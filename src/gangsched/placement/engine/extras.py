"""Extras: with the minimum held, add the rest of what the unit asks for, fairly
(DESIGN.md sections 2.2 and 2.3).

Water-filling: repeatedly grow the child with the lowest placed/asked ratio, by about
enough pods to bring it level with the next lowest. A placed child grows inside its own
placement; a child not placed yet comes in as an extra child, its own minimum placed all
or nothing (the first feasible choice, no backtracking) inside its parent's domain, then
in the parent's spill scopes (wider scopes, for preferred constraints only). A child of
no minimum that no pod grows in where it first went tries its next domains (up to
:data:`EMPTY_RETRIES` more, the first feasible choice in each), then the spill scopes:
its first domain is only the one with the most room by the capacity bound, which a
per-node cap already used up can belie; when none of its domains in a scope grows a pod,
the next scope (a parent narrowed for locality first tries only a domain its minimum
may have filled). A pod set grows pod by pod (:mod:`.pods`).

A group whose minimum is a pod count over children of different sizes (Volcano's
``minMember`` over tasks without their own minimum) is grown to that count by
water-filling first; when that falls short, the growth is undone and the count is
reached cheapest pods first (:func:`reach`): fair shares can spend the domain on a few
large pods where more small ones would have met the count.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from gangsched.gang import podsets
from gangsched.placement.engine.values import GroupPlacement, Placement, SetPlacement

if TYPE_CHECKING:
    from gangsched.placement.engine.search import Search


def grow(s: Search, res: Placement, want: int) -> int:
    """Add up to about ``want`` pods (at least one step when possible) by water-filling;
    returns pods added (0: nothing more fits)."""
    size = s.facts.size
    if isinstance(res, SetPlacement):
        k = min(want, size(res.node) - res.placed)
        return s.pods.add(res, k) if k > 0 else 0
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
            n = size(ch)
            if (r is not None and placed >= n) or n == 0:
                full.add(i)
                continue
            ratios.append((placed / n, i))
        if not ratios:
            break
        ratios.sort()
        i = ratios[0][1]
        ch = g.children[i]
        r = res.kids.get(i)
        placed = r.placed if r is not None else 0
        nxt = ratios[1][0] if len(ratios) > 1 else 1.0
        quota = max(1, min(want - added, math.floor(nxt * size(ch)) - placed + 1))
        n = grow_child(s, res, i, quota)
        if n == 0:
            full.add(i)
            continue
        res.placed += n
        added += n
    return added


# other domains an extra child of no minimum tries when no pod grows in its first one
EMPTY_RETRIES = 8


def grow_child(s: Search, res: GroupPlacement, i: int, quota: int) -> int:
    """Grow child ``i`` of a placed group by about ``quota`` pods; returns pods added."""
    r = res.kids.get(i)
    if r is not None:
        return grow(s, r, quota)
    ch = res.node.children[i]
    ch = s.facts.by_path(s.own).get(ch.path, ch)  # an extra child asks for its own minimum
    # an extra child: its minimum, all-or-nothing, inside the parent's domain
    budget, txn = s.budget, s.txn
    scopes = ((res.lo, res.hi, res.sel), *res.outer)
    for k, (lo, hi, sel) in enumerate(scopes):
        saved = budget.backtrack
        budget.backtrack = 0  # extras take the first feasible choice, no backtracking
        m = txn.mark()
        # its own extras may spill on along the wider scopes after this one
        ways = s.alternatives(ch, lo, hi, scopes[k + 1:], sel)
        got = next(ways, None)
        grown = False
        if got is not None and got.placed == 0 and _room_beside(s, got, lo, hi, sel):
            # a child of no minimum: when no pod grows in its first domain, its next
            # domains (the first feasible way in each)
            for _ in range(EMPTY_RETRIES):
                at, kept = txn.mark(), snapshot(got)
                grown = grow(s, got, quota) > 0
                if grown:
                    break
                txn.rollback_to(at)
                restore(kept)
                budget.backtrack = 1  # the next way, and no other
                got = next(ways, None)  # (the last one undone)
                budget.backtrack = 0
                if got is None:  # no other domain
                    break
        budget.backtrack = saved
        if got is not None:
            if not grown and got.placed < quota:
                grow(s, got, quota - got.placed)  # counted in got.placed
            if got.placed or k == len(scopes) - 1:
                res.kids[i] = got
                return got.placed
            # a child of no minimum that no pod grows in anywhere in this scope: the next
        txn.rollback_to(m)
    return 0


def _room_beside(s: Search, got: Placement, lo: int, hi: int, sel: np.ndarray | None
                 ) -> bool:
    """Whether a pod of the placed child's sets fits (by the capacity bound) on a node of
    the scope [lo, hi) outside the domain the child went to."""
    c = got.cand
    for ps in podsets(got.node):
        shape = s.facts.shape(ps)
        if not ps.pods or shape.impossible:
            continue
        fit = s.state.capacity(shape, ps.requirements, ps.max_pods_per_node)
        if sel is not None:
            fit = fit * sel
        inside = int(fit[c.lo:c.hi].sum()) if c is not None and lo <= c.lo < c.hi <= hi else 0
        if int(fit[lo:hi].sum()) > inside:
            return True
    return False


def reach(s: Search, res: GroupPlacement, want: int) -> int:
    """Add ``want`` pods to a placed group, by water-filling (:func:`grow`); when that
    adds fewer, undo it and add them cheapest pods first instead: children in order of
    their smallest pod's dominant-resource share (then as listed), each grown as far as
    it goes. Returns pods added."""
    txn = s.txn
    m = txn.mark()
    saved = snapshot(res)
    added = grow(s, res, want)
    if added >= want:
        return added
    txn.rollback_to(m)
    restore(saved)
    facts = s.facts
    children = res.node.children
    order = sorted(range(len(children)), key=lambda i: (
        min((facts.shape_weight(facts.shape(ps)) for ps in podsets(children[i])),
            default=0.0), i))
    added = 0
    for i in order:
        while added < want:
            n = grow_child(s, res, i, want - added)
            if n == 0:
                break
            res.placed += n
            added += n
    return added


Snapshot = list[tuple[Placement, int, int, frozenset[int]]]


def snapshot(r: Placement, out: Snapshot | None = None) -> Snapshot:
    """What undoing growth of a placed subtree in place needs (with the transaction rolled
    back to a mark taken with it, :func:`restore`): per placement of the subtree, (it,
    its node arrays, pods placed, children placed)."""
    out = [] if out is None else out
    if isinstance(r, SetPlacement):
        out.append((r, len(r.nodes), r.placed, frozenset()))
        return out
    out.append((r, 0, r.placed, frozenset(r.kids)))
    for k in r.kids.values():
        snapshot(k, out)
    return out


def restore(saved: Snapshot) -> None:
    """Put the placements of a :func:`snapshot` back as they were."""
    for r, n_nodes, placed, kids in saved:
        r.placed = placed
        if isinstance(r, SetPlacement):
            del r.nodes[n_nodes:], r.counts[n_nodes:]
        else:
            for k in [k for k in r.kids if k not in kids]:
                del r.kids[k]
