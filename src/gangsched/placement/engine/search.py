"""The minimum search: place every gang's minimum of a tree, recursively, all-or-nothing
(DESIGN.md sections 2.1, 2.2, 2.5).

For one node inside its parent's scope: a constraint on a crossing key is served first
(each of its domains, best first, searched with the node's other constraints; a
preferred one falls back to the whole scope); then a pinned value narrows the scope;
then, tier by tier, the candidate domains of :mod:`.domains` are tried best first (ranked
by scoring dry runs when the bound alone cannot order them), each by a dry run in the
decision's transaction. A pod set places its minimum (:mod:`.pods`); a group places
``min_groups`` children by a depth-first search over its siblings, most constrained and
largest first: when a later sibling cannot be placed, earlier siblings' next alternatives
are tried, and a child may be left out (it can come back as an extra). A group short of
its ``min_pods`` grows by water-filling, else cheapest pods first (:mod:`.extras`); when
neither reaches it, earlier siblings' alternatives are tried as for a child that fails.

The alternatives for a node are a generator, best first; each placement it yields stays
in the transaction while the consumer holds it, and is undone when the consumer asks for
the next one. Only this module iterates it (the DFS over siblings and the cross-key
stage); everyone else asks for :meth:`Search.first`.

A :class:`Budget` bounds the work of one attempt: alternatives after a first choice that
failed deeper (backtracking), dry runs for scoring, and all dry runs together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from gangsched.gang import Constraint, Group, PodSet, TreeNode
from gangsched.placement.engine.domains import Candidates, Domains, Seen
from gangsched.placement.engine.explain import Notes, QuietNotes
from gangsched.placement.engine.extras import Snapshot, grow, reach, restore, snapshot
from gangsched.placement.engine.facts import Facts
from gangsched.placement.engine.options import Options
from gangsched.placement.engine.pods import Pods
from gangsched.placement.engine.trace import current
from gangsched.placement.engine.values import (
    Candidate,
    GroupPlacement,
    Placement,
    Scope,
    SetPlacement,
    Spill,
)


@dataclass(slots=True)
class Budget:
    """What one attempt may still spend."""

    backtrack: int  # alternatives tried after a first choice that failed deeper
    score: int  # dry runs for scoring candidates (none while a scoring dry run runs)
    max_dry_runs: int  # placement attempts, all told
    dry_runs: int = 0  # placement attempts so far
    # the search stops at this many placement attempts (-1: never) for the exact solver
    # to be asked first (attempts.place: a long search of a small unit), and says so
    probe_at: int = -1
    stopped: bool = False

    def spend_backtrack(self) -> bool:
        if self.backtrack <= 0:
            return False
        self.backtrack -= 1
        return True


class Search:
    """One attempt's search over a unit's tree: its transaction, budget and notes."""

    def __init__(
        self, facts: Facts, domains: Domains, opts: Options, budget: Budget, *,
        pack: bool, own: TreeNode, caps_first: bool = False, deep: bool = False,
    ) -> None:
        self.facts = facts
        self.domains = domains
        self.opts = opts
        self.budget = budget
        self.state = facts.state
        self.txn = facts.state.begin()
        self.notes = Notes(facts) if opts.explain else QuietNotes(facts)
        self.pods = Pods(facts, self.txn, pack, opts.keep_whole)
        self.own = own  # the tree an extra child's own minimum is read from
        self.caps_first = caps_first  # siblings capped per node before larger pods
        # a group placed one way is asked for its other ways (other siblings, or siblings
        # elsewhere) when a later sibling fails, before its next candidate domain
        self.deep = deep
        self.log = current()  # a SearchLog when explaining (read only: see trace.py)
        # no domain of any tier passed the capacity bound for the root: no node order and
        # no other attempt at this minimum can place it
        self.bounded_out = False
        self._nowhere: np.ndarray | None = None  # no node selected (see _fill)

    def first(
        self, node: TreeNode, lo: int = 0, hi: int | None = None, spill: Spill = (),
        sel: np.ndarray | None = None,
    ) -> Placement | None:
        """The best placement of node's minimum inside [lo, hi) (all nodes by default),
        left in the transaction; None (and the transaction as it was) when none fits."""
        return next(self.alternatives(node, lo, self.state.n_nodes if hi is None else hi,
                                      spill, sel), None)

    def alternatives(
        self, node: TreeNode, lo: int, hi: int, spill: Spill = (),
        sel: np.ndarray | None = None,
    ) -> Iterator[Placement]:
        """Placements of node's minimum inside [lo, hi) (the selected nodes of it, when
        ``sel`` is given), best first; each is live in the transaction while the consumer
        holds it and undone when the consumer asks for the next one."""
        if not self.facts.size(node):
            # no pods (a role scaled to zero): nothing placed breaks no constraint, whatever
            # domain it names (even none), so it is placed as it is, in the parent's scope
            yield from self._placements(node, self.domains.scope(lo, hi, sel)[0],
                                        (lo, hi, sel), spill)
            return
        cross = self.facts.cross_constraint(node)
        if cross is not None:
            yield from self._crossing(node, cross, (lo, hi, sel), spill)
            return
        pins = [con for con in node.topology if con.value is not None and con.mode == "required"]
        if not pins:
            yield from self._within(node, lo, hi, spill, sel)
            return
        ranges, outside = self.domains.pinned(pins, lo, hi)
        if outside is not None:
            self.notes.pinned_outside(node, outside)
            return
        # each domain the pins name (a value may name several: racks named alike in two
        # blocks), in index order; the root is bounded out only when it is in all
        out = []
        for plo, phi in ranges:
            self.bounded_out = False
            yield from self._within(node, plo, phi, spill, sel)
            out.append(self.bounded_out)
        self.bounded_out = all(out)

    def _within(
        self, node: TreeNode, lo: int, hi: int, spill: Spill, sel: np.ndarray | None
    ) -> Iterator[Placement]:
        """:meth:`alternatives` inside [lo, hi), with no constraint outside the chain and
        the node's pins applied."""
        facts, budget, txn = self.facts, self.budget, self.txn
        yielded = any_cands = False
        seen: list[Seen] = []
        required = facts.required_levels(node)
        for level in self.domains.tiers(node):
            # a domain narrower than the required ones lies in a valid domain of each
            within = () if level is None else tuple(lv for lv in required if lv is not level)
            cands, tier = self.domains.nested(node, level, lo, hi, within, sel)
            seen.append(tier)
            if self.facts.claims:
                # what others hold is left out, and explained as held, not counted as room
                # (also where no domain passed the bound: the best one may be held)
                cands, owned = (self.domains.not_owned(node, cands) if cands
                                else (cands, self.domains.owned_by_others(node)))
                for con, held in owned:
                    self.notes.owned(node, con, held)
                if owned:
                    tier.held = self.domains.owned_mask(tier, owned)
            if self.log is not None:
                self.log.tier(self, node, tier, cands)
            if not cands:
                continue
            any_cands = True
            order: Iterable[int] = range(len(cands))
            if (len(cands) > 1 and self.opts.score_top > 1 and budget.score > 0
                    and not facts.simple(node) and facts.want(node) > 0):
                order = self._rank(node, cands, (lo, hi, sel), spill)
            for j in order:
                if yielded and not budget.spend_backtrack():
                    return
                if budget.dry_runs >= budget.max_dry_runs:
                    return
                m = txn.mark()
                placed = False
                for r in self._placements(node, cands[j], (lo, hi, sel), spill):
                    if not placed and self.log is not None:
                        self.log.tried(self, node, cands[j], True)
                    placed = yielded = True
                    yield r
                    if not self.deep:
                        break  # the node's other ways in this candidate: in a deep search
                    if not budget.spend_backtrack():
                        txn.rollback_to(m)
                        return
                if not placed and self.log is not None:
                    self.log.tried(self, node, cands[j], False)
                txn.rollback_to(m)
        if not yielded:
            self.notes.failure(node, seen)
            if not any_cands and self.facts.is_root(node):
                self.bounded_out = True

    def _rank(self, node: TreeNode, cands: Candidates, scope: Scope,
              spill: Spill) -> Iterable[int]:
        """Scoring dry runs of the first few candidates, paid from the scoring budget;
        the dry runs themselves take candidates in bound order (the budget reads zero
        while they run)."""
        budget = self.budget
        tries = min(len(cands), self.opts.score_top, budget.score)
        left, budget.score = budget.score - tries, 0
        order = self.domains.rank(node, cands, tries, self.txn,
                                  lambda c: self.place_in(node, c, scope, spill))
        budget.score = left
        return order

    def _crossing(
        self, node: TreeNode, con: Constraint, scope: Scope, spill: Spill
    ) -> Iterator[Placement]:
        """Placements of node's minimum inside one domain of a key outside the chain of
        levels (its domains are node sets, not slices): domains that pass the capacity
        bound, best first, each searched with the rest of the node's constraints. A
        preferred key falls back to the whole scope."""
        lo, hi, sel = scope
        inner = self.facts.stripped(node, con)
        x = self.domains.crossing(node, con, scope)
        budget = self.budget
        yielded = False
        ids = x.ids
        before = self.notes.saved() if con.mode == "preferred" else None
        if con.exclusive is not None:  # domains other owners of its set hold are out
            held = self.state.held_by_others(con.exclusive, con.key, node.path)
            if held:
                ids = [d for d in ids if x.level.values[d] not in held]
                if len(ids) < len(x.ids):
                    self.notes.owned(node, con, held)
        for d in ids:
            if yielded and not budget.spend_backtrack():
                return
            if budget.dry_runs >= budget.max_dry_runs:
                return
            cand = self.domains.cross_candidate(x.level, d, scope)
            # required: everything stays in the domain; preferred: extras may spill out
            inner_spill: Spill = () if con.mode == "required" else (scope, *spill)
            for r in self.alternatives(inner, cand.lo, cand.hi, inner_spill, cand.sel):
                if r.cand is None or r.cand.key is None:
                    r.cand = cand
                yielded = True
                yield r
        if before is not None:
            if not yielded or budget.spend_backtrack():
                # what fits in the whole scope explains a failure, not what fit in one
                # preferred domain
                self.notes.restore(before)
                yield from self.alternatives(inner, lo, hi, spill, sel)
            return
        if not yielded and node.path not in self.notes:
            self.notes.cross(node, con, x)

    def place_in(
        self, node: TreeNode, c: Candidate, scope: Scope, spill: Spill = ()
    ) -> Placement | None:
        """Place node's minimum inside candidate c (chosen within the parent's scope)."""
        return next(self._placements(node, c, scope, spill), None)

    def _placements(
        self, node: TreeNode, c: Candidate, scope: Scope, spill: Spill = ()
    ) -> Iterator[Placement]:
        """Placements of node's minimum inside candidate c, best first, as
        :meth:`alternatives` yields them: a pod set's one; a group's, one per way its
        depth-first search satisfies it (:meth:`_place_group`)."""
        budget = self.budget
        budget.dry_runs += 1
        if budget.dry_runs == budget.probe_at:  # no more after this one: see Budget
            budget.stopped = True
            budget.max_dry_runs = budget.dry_runs
        outer = self.domains.outer(node, c, scope, spill)
        if isinstance(node, PodSet):
            res = SetPlacement(node, c.lo, c.hi, outer, c, c.sel)
            # the minimum spills only where a preferred constraint allows it: a scope a
            # node tried narrower only for locality (Options.narrow) is for extras, so
            # a minimum that does not fit its narrow domain fails there and the next
            # wider level is tried as a candidate of its own
            if not node.min_pods or self.pods.add(
                    res, node.min_pods, self.domains.for_minimum(outer)) >= node.min_pods:
                yield res
            return
        yield from self._place_group(node, c, outer)

    def _place_group(self, g: Group, c: Candidate, outer: Spill) -> Iterator[GroupPlacement]:
        """Depth-first over the children in placement order: ``min_groups`` of them
        satisfied together, earlier siblings' alternatives tried when a later one fails.
        Each way found is yielded, live in the transaction; asked for the next, the
        search undoes its last step and goes on (a sibling placed elsewhere, or another
        set of siblings), so a failure further up can try the group's other choices."""
        res = GroupPlacement(g, c.lo, c.hi, outer, c, c.sel)
        facts, txn = self.facts, self.txn
        children = g.children
        order = list(range(len(children)))
        if self.opts.child_order == "size" and len(order) > 1:
            caps_first = self.caps_first
            order.sort(key=lambda i: facts.placement_order(children[i], i, caps_first))
        need = g.min_groups
        extras_first = self.opts.extras_first
        most = 0  # most children satisfied together in this domain
        short = -1  # most pods placed where enough children were, short of min_pods
        found = False

        # dfs gets itself as ``again``: a closure naming itself would be a reference cycle,
        # leaving this search's placements to the cyclic collector after every call.
        # ``spare``: children of no minimum left out for want of a domain here (a value no
        # node has, a level none is labelled with); placing nothing satisfies them, so as
        # many as the count needs are placed so, with no node to grow on (_fill)
        def dfs(pos: int, sat: int, spare: tuple[int, ...],
                again: Callable[[int, int, tuple[int, ...], Any], Iterator[GroupPlacement]]
                ) -> Iterator[GroupPlacement]:
            nonlocal most, short, found
            most = max(most, sat + len(spare))
            if sat + len(spare) >= need:
                m = txn.mark()
                filled = self._fill(res, spare[:max(0, need - sat)], c)
                if filled is None:  # out of dry runs
                    txn.rollback_to(m)
                    return
                got, saved = self._reach_pods(res)
                if got < 0:
                    found = True
                    # asked for another way, the group's placements must be as they were
                    # here, whatever the consumer grew in them since (its changes to
                    # the transaction are after the mark), and the growth undone
                    kept = snapshot(res) if self.deep else None
                    yield res
                    txn.rollback_to(m)
                    if kept is not None:
                        restore(kept)
                    if saved is not None:
                        restore(saved)
                else:
                    short = max(short, got)  # too few pods: earlier siblings' ways next
                for i in filled:
                    del res.kids[i]
                txn.rollback_to(m)
                return
            if len(order) - pos < need - sat - len(spare):
                return
            i = order[pos]
            child = children[i]
            m = txn.mark()
            placed = False
            for r in self.alternatives(child, c.lo, c.hi, outer, c.sel):
                placed = True
                res.kids[i] = r
                if extras_first:
                    grow(self, r, facts.size(child))
                yield from again(pos + 1, sat + 1, spare, again)
                del res.kids[i]
            txn.rollback_to(m)
            if not placed and not facts.minimum(child):
                yield from again(pos + 1, sat, (*spare, i), again)
            elif len(order) - pos - 1 >= need - sat - len(spare):
                # leave this child out; it may come back as an extra
                yield from again(pos + 1, sat, spare, again)

        yield from dfs(0, 0, (), dfs)
        if not found:
            if short >= 0:
                self.notes.group_pods(g, c, short)
            else:
                self.notes.group(g, c, most)

    def _fill(self, res: GroupPlacement, spare: tuple[int, ...], c: Candidate
              ) -> list[int] | None:
        """Place the children ``spare`` of the group (of no minimum, no domain in its
        candidate c) so that they place nothing and cannot grow: in c with no node
        selected, nowhere to spill. Their indices; None when the dry runs ran out."""
        budget = self.budget
        filled: list[int] = []
        for i in spare:
            if budget.dry_runs >= budget.max_dry_runs:
                r = None
            else:
                if self._nowhere is None:
                    self._nowhere = np.zeros(self.state.n_nodes, dtype=bool)
                nowhere = self.domains.scope(c.lo, c.hi, self._nowhere)[0]
                r = next(self._placements(res.node.children[i], nowhere, (c.lo, c.hi, c.sel)),
                         None)
            if r is None:
                for j in filled:
                    del res.kids[j]
                return None
            res.kids[i] = r
            filled.append(i)
        return filled

    def _reach_pods(self, res: GroupPlacement) -> tuple[int, Snapshot | None]:
        """With enough of the group's children placed: (-1, what to restore to undo the
        growth, or None when there was none) when they hold its ``min_pods`` (grown to it
        when short, :func:`.extras.reach`); else (the most pods they came to, None), the
        growth undone (so earlier siblings' alternatives can be tried)."""
        g = res.node
        res.placed = sum(r.placed for r in res.kids.values())
        if res.placed >= g.min_pods:
            return -1, None
        m = self.txn.mark()
        saved = snapshot(res)
        reach(self, res, g.min_pods - res.placed)
        got = res.placed
        if got >= g.min_pods:
            return -1, saved
        self.txn.rollback_to(m)
        restore(saved)
        return got, None

