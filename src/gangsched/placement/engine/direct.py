"""The first choice: a unit every node of which is required whole, placed by the
search's own steps without its machinery, when its first choice at every node fits.

For such a unit (every pod set asks for all its pods, every group for all its children;
constraints on keys of the chain, none pinned or exclusive), the generic decision is its
first attempt (the unit itself, in the options' node order: nothing is raised, no
minimum is implied, nothing wants extras, so no candidate is ranked by dry runs), and
when that attempt's first candidate at every node of the tree holds the node, the
search's result is that path: tier by tier, the first candidate domain
(:meth:`.domains.Domains.nested`); children in placement order; pods by the pods step
(:class:`.pods.Pods`) with the same spill scopes; one dry run per node of the tree.

:func:`first_choice` walks that path with the same building blocks, in the decision's
transaction, and stops at the first node whose first candidate does not hold it (or
that has none): the generic search then decides the unit from the start, as it would
have (it tries the next candidates, backtracks, or explains). What it leaves out is what
only a failure needs: the capacity bound on the whole unit before any attempt (a unit
placed fits it), the generators the search keeps to backtrack, its budgets and notes.

Disaggregated serving units (prefill replicas in a rack, decode replicas preferably in a
block, frontends, all in one zone) are of this kind; the property tests check that every
decision is the generic search's.
"""

from __future__ import annotations

import numpy as np

from gangsched.cluster.state import Transaction
from gangsched.gang import Group, PodSet, TreeNode
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.facts import Facts
from gangsched.placement.engine.options import Options
from gangsched.placement.engine.pods import Pods
from gangsched.placement.engine.values import GroupPlacement, Placement, SetPlacement, Spill


def nodes_if_whole(unit: TreeNode, facts: Facts) -> int:
    """How many nodes the tree has when every one of them is required whole, with
    constraints only on keys of the chain, none pinned or exclusive (the shape
    :func:`first_choice` serves); 0 otherwise."""
    nested = facts.topo.nested
    stack = [unit]
    count = 0
    while stack:
        node = stack.pop()
        count += 1
        for con in node.topology:
            if con.value is not None or con.exclusive is not None or not nested(con.key):
                return 0
        if isinstance(node, PodSet):
            if not node.pods or node.min_pods != len(node.pods):
                return 0
            continue
        kids = node.children
        if not kids or node.min_groups != len(kids):
            return 0
        stack.extend(kids)
    return count


def first_choice(unit: TreeNode, facts: Facts, domains: Domains, opts: Options
                 ) -> tuple[Placement, Transaction] | None:
    """The unit placed by the first choice at every node, live in a new transaction of
    the state (the caller commits or discards it); None, the state as it was, when some
    node's first candidate does not hold it. It took one dry run per node of the tree."""
    txn = facts.state.begin()
    walk = _Walk(facts, domains, opts, txn)
    got = walk.place(unit, 0, facts.state.n_nodes, (), None)
    if got is None:
        txn.discard()
        return None
    return got, txn


class _Walk:
    """One walk down the tree: the steps :class:`.search.Search` takes on its first
    choice, each with no alternative kept."""

    def __init__(self, facts: Facts, domains: Domains, opts: Options, txn: Transaction
                 ) -> None:
        self.facts, self.domains, self.opts = facts, domains, opts
        self.pods = Pods(facts, txn, opts.node_order == "pack", opts.keep_whole)

    def place(self, node: TreeNode, lo: int, hi: int, spill: Spill,
              sel: np.ndarray | None) -> Placement | None:
        """:meth:`.search.Search._within`'s first candidate, placed; None when it does
        not hold the node (or there is none)."""
        facts, domains = self.facts, self.domains
        required = facts.required_levels(node)
        for level in domains.tiers(node):
            if level is None and isinstance(node, PodSet):
                # the parent's scope as it is, as Domains.nested gives it: placing is the check
                c = domains.whole(lo, hi, sel)
            else:
                within = () if level is None else tuple(lv for lv in required if lv is not level)
                cands = domains.nested(node, level, lo, hi, within, sel, first=True)[0]
                if not len(cands):
                    continue
                c = cands[0]
            outer = domains.outer(node, c, (lo, hi, sel), spill)
            if isinstance(node, PodSet):
                res = SetPlacement(node, c.lo, c.hi, outer, c, c.sel)
                if self.pods.add(res, node.min_pods, domains.for_minimum(outer)) < node.min_pods:
                    return None
                return res
            return self._group(node, GroupPlacement(node, c.lo, c.hi, outer, c, c.sel))
        return None

    def _group(self, g: Group, res: GroupPlacement) -> GroupPlacement | None:
        """Every child in placement order, each by its first choice inside the group's
        candidate (:meth:`.search.Search._place_group`'s first way)."""
        facts = self.facts
        children = g.children
        order = list(range(len(children)))
        if self.opts.child_order == "size" and len(order) > 1:
            order.sort(key=lambda i: facts.placement_order(children[i], i))
        for i in order:
            r = self.place(children[i], res.lo, res.hi, res.outer, res.sel)
            if r is None:
                return None
            res.kids[i] = r
        res.placed = sum(r.placed for r in res.kids.values())
        return res if res.placed >= g.min_pods else None
