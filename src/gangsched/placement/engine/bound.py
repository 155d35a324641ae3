"""A nested capacity bound: whether a unit's minimum could fit at all, checked before the
exact solver is asked to prove that it cannot.

The search rejects a unit without the solver only when no domain of the root passes the
capacity bound (``Search.bounded_out``); a unit whose root finds domains but whose
children find none inside any of them goes to the MILP, which proves it infeasible, at
tens of milliseconds a proof on a busy cluster (the simulator retries such units as
capacity frees). This bound settles most of them in a few numpy calls.

It is a relaxation of the verifier's rules (:mod:`gangsched.placement.verify`), so a unit
it rejects has no placement: a node of the tree with a minimum must lie in one labelled
domain of each chain key it requires (in the domain a pinned value names, in its
parent's domain), hold its minimum there (per pod shape, and all shapes' resources
together), and have ``min_groups`` children that could each do the same inside that
domain. What it leaves out only loosens it: that siblings share capacity, per-node
caps, keys outside the chain, exclusive domains. A child of no minimum is satisfied
with none of its pods placed. At most ``TRIES`` domains are looked into per node and
scope, and ``CHECKS`` (node, scope) pairs per unit; past them a node is taken to fit.
"""

from __future__ import annotations

import numpy as np

from gangsched.cluster.topology import Level
from gangsched.gang import Group, PodSet, TreeNode
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.facts import Demand, Facts

TRIES = 16  # domains looked into per node and scope before the node is taken to fit
CHECKS = 2_000  # (node, scope) pairs looked into per unit before the rest are taken to fit


class Bound:
    """The nested bound for the nodes of one unit on one state (memoized per scope)."""

    def __init__(self, facts: Facts, domains: Domains) -> None:
        self.facts = facts
        self.domains = domains
        self._memo: dict[tuple[int, int, int, bool], bool] = {}
        self._left = CHECKS

    def could_fit(self, node: TreeNode, lo: int = 0, hi: int | None = None,
                  one: bool = False) -> bool:
        """False only when the node's minimum (with ``one``, its minimum and at least one
        pod) cannot be placed inside [lo, hi) (the whole cluster by default), whatever
        else is placed."""
        facts = self.facts
        hi = facts.state.n_nodes if hi is None else hi
        if not one and facts.minimum(node) == 0:
            return True  # satisfied with none of its pods placed
        if lo >= hi or not facts.size(node):
            return False
        key = (id(node), lo, hi, one)
        got = self._memo.get(key)
        if got is None:
            if self._left <= 0:
                return True  # looked into enough: taken to fit (the MILP decides)
            self._left -= 1
            got = self._memo[key] = self._could_fit(node, lo, hi, one)
        return got

    def _could_fit(self, node: TreeNode, lo: int, hi: int, one: bool) -> bool:
        facts = self.facts
        pins = [c for c in node.topology
                if c.mode == "required" and c.value is not None and facts.topo.nested(c.key)]
        ranges = self.domains.pinned(pins, lo, hi)[0] if pins else [(lo, hi)]
        levels = facts.required_levels(node)
        for a, b in ranges:
            if not levels:
                if self._holds(node, a, b, one) and self._children(node, a, b, one):
                    return True
                continue
            cands, more = self._domains(node, levels, a, b, one)
            if more:
                return True
            if any(self._children(node, s, e, one) for s, e in cands):
                return True
        return False

    def _demand(self, node: TreeNode, one: bool) -> list[Demand]:
        """The node's minimum per shape; with ``one``, a pod set's at least one pod."""
        dems = self.facts.demand(node)
        if one and isinstance(node, PodSet) and not dems:
            shape = self.facts.shape(node)
            return [Demand(shape, node.requirements, 1)]
        return dems

    def _domains(self, node: TreeNode, levels: tuple[Level, ...], lo: int, hi: int,
                 one: bool) -> tuple[list[tuple[int, int]], bool]:
        """The domains of the node's narrowest required level inside [lo, hi), clipped to
        it, that are labelled (with every wider required key too) and hold its minimum
        by the capacity bound; and whether more than ``TRIES`` of them do (then none is
        returned: the node is taken to fit)."""
        lv = levels[0]
        d0, starts, ends = _clipped(lv, lo, hi)
        ok = lv.valid[d0:d0 + len(starts)].copy()
        for wider in levels[1:]:
            ok &= wider.valid[wider.node_domain[starts]]
        ok &= self._hold(node, lo, hi, starts, one)
        ids = np.flatnonzero(ok)
        if len(ids) > TRIES:
            return [], True
        return list(zip(starts[ids].tolist(), ends[ids].tolist(), strict=True)), False

    def _holds(self, node: TreeNode, lo: int, hi: int, one: bool) -> bool:
        """Whether [lo, hi) holds the node's minimum by the capacity bound."""
        return bool(self._hold(node, lo, hi, np.array([lo]), one)[0])

    def _hold(self, node: TreeNode, lo: int, hi: int, starts: np.ndarray, one: bool
              ) -> np.ndarray:
        """Per slice of [lo, hi) from ``starts`` to the next: whether it holds the node's
        minimum by the capacity bound, per shape and every shape's resources together
        (:meth:`.domains.Domains.holds_together`)."""
        state = self.facts.state
        dems = self._demand(node, one)
        at = starts - lo
        ok = np.ones(len(starts), dtype=bool)
        for dem in dems:
            ok &= np.add.reduceat(state.capacity(dem.shape, dem.req)[lo:hi], at) >= dem.count
        if len(dems) > 1 and ok.any():
            ok &= self.domains.holds_together(dems, lo, hi, starts, None)
        return ok

    def _children(self, node: TreeNode, lo: int, hi: int, one: bool) -> bool:
        """Whether the node's children could satisfy it inside [lo, hi): ``min_groups``
        of them could each fit there, as many identical replicas as it needs could fit
        there together (:meth:`_replicas`), and, when it must place a pod (``one`` or
        its ``min_pods``), one child could be satisfied with a pod placed (a pod in a
        child not satisfied breaks the gang)."""
        if isinstance(node, PodSet):
            return True
        kids = node.children
        if (one or node.min_pods > 0) and not any(
                self.could_fit(ch, lo, hi, True) for ch in kids):
            return False
        need, left = node.min_groups, len(kids)
        if need == 0:
            return True
        if not self._replicas(node, lo, hi):
            return False
        for ch in kids:
            left -= 1
            if self.could_fit(ch, lo, hi):
                need -= 1
                if need == 0:
                    return True
            elif need > left:
                return False
        return False

    def _replicas(self, node: TreeNode, lo: int, hi: int) -> bool:
        """For a group of identical children of one pod shape that each require a domain
        of one level: whether the domains of that level in [lo, hi) could hold
        ``min_groups`` of them, a domain at most as many as its capacity holds whole
        (each replica lies in one domain, and replicas in a domain share it)."""
        facts = self.facts
        dem = facts.replica_demand(node)
        assert isinstance(node, Group)
        if dem is None:
            return True
        levels = facts.required_levels(node.children[0])
        if not levels or any(facts.required_levels(c) != levels for c in node.children[1:]):
            return True
        lv = levels[0]
        d0, starts, _ = _clipped(lv, lo, hi)
        sums = np.add.reduceat(facts.state.capacity(dem.shape, dem.req)[lo:hi], starts - lo)
        whole = (sums // dem.count)[lv.valid[d0:d0 + len(starts)]]
        return int(whole.sum()) >= node.min_groups


def _clipped(lv: Level, lo: int, hi: int) -> tuple[int, np.ndarray, np.ndarray]:
    """The domains of ``lv`` meeting [lo, hi): the first one's index, and their starts and
    ends clipped to it."""
    d0 = int(lv.node_domain[lo])
    d1 = int(lv.node_domain[hi - 1]) + 1
    return d0, np.maximum(lv.starts[d0:d1], lo), np.minimum(lv.ends[d0:d1], hi)
