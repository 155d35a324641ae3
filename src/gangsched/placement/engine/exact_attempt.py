"""The last attempt: the exact solver, for a small unit the search could not place.

The search is greedy with a bounded backtracking budget, so on a tight instance (pods of
several sizes packed into few nodes, per-node caps over nodes that siblings share) it can
miss a placement that exists. When every attempt failed and no capacity bound proved that
nothing fits (``Search.bounded_out``), a unit whose pod sets can take a pod on at most
``Options.exact`` (set, node) pairs in all is given to the exact MILP of
:mod:`gangsched.placement.exact`, which asks for the fewest pods that satisfy it: its
minimum. Branch and bound stops after ``Options.exact_nodes`` nodes rather than after a
time, so the same input gives the same decision on any machine.

What it finds is kept only when the independent verifier (:mod:`gangsched.placement.verify`)
passes it, and it is the minimum alone: preferred constraints are not weighed there and
extras are not grown (they come when the scheduler next grows the unit). Each set's pods
are charged as the search charges them, with the exclusive domains they hold.

Before the MILP runs, the nested capacity bound (:mod:`.bound`) is checked: a unit it
rejects has no placement under the MILP's rules either, so it is answered infeasible
without a solve.

It is also asked earlier, once, when the search of a small unit runs long
(``Options.exact_after`` dry runs, all attempts told): a unit it proves infeasible is
rejected then, since every further attempt would fail too (the search places nothing
the verifier refuses, and the MILP is exact for the verifier's rules). Otherwise the
search goes on as if it had not been asked, and its answer is kept for the end.
"""

from __future__ import annotations

from itertools import islice
from typing import TYPE_CHECKING

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, TreeNode, podsets, walk
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine.bound import Bound
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.facts import Facts
from gangsched.placement.engine.options import Options
from gangsched.placement.verify import domain_value, verify

if TYPE_CHECKING:
    from gangsched.placement.exact import ExactResult

# seconds per solve, a safety net only: ``exact_nodes`` bounds the work. The hardest small
# units measured, 30 perfect 2-D packings of 17-53 pods on 4-15 nodes, each solved within
# the node limit in at most 21 s on a busy 2-core machine (a 5 s limit cut half of them,
# so the verdict turned on the machine's speed); this one binds only far beyond that
TIME_LIMIT = 60.0
MAX_TREE = 256  # tree nodes at most (the model's symmetry rows grow with siblings squared)


def small(unit: TreeNode, state: ClusterState, limit: int) -> bool:
    """Whether the unit's sets can take a pod on at most ``limit`` (set, node) pairs (the
    MILP's integer variables), and its tree is small."""
    pairs = 0
    for ps in podsets(unit):
        shape = state.shape(ps.requests)
        if ps.pods and not shape.impossible:  # a set of no pods takes none anywhere
            pairs += int(np.count_nonzero(state.cached(shape, ps.requirements).fit))
        if pairs > limit:
            return False
    return next(islice(walk(unit), MAX_TREE, None), None) is None


def solved(unit: TreeNode, facts: Facts, domains: Domains, opts: Options
           ) -> tuple[ExactResult | None, bool]:
    """(the MILP's placement of the unit's minimum, verified and of at least one pod, or
    None; whether nothing satisfies the unit, by the nested capacity bound
    (:mod:`.bound`) or proved by the MILP). (None, False) when the MILP finds no
    placement within its node limit, or the unit is too large to ask."""
    state = facts.state
    if opts.exact <= 0 or not small(unit, state, opts.exact):
        return None, False
    if not Bound(facts, domains).could_fit(unit):
        return None, True  # no MILP needed: the bound is a relaxation of its rules
    from gangsched.placement.exact import solve  # scipy's solver: loaded when first asked

    got = solve(unit, state, time_limit=TIME_LIMIT, maximize=False,
                node_limit=opts.exact_nodes)
    if got.status == "infeasible":
        return None, True
    if not got.feasible or not got.assignments or verify(unit, state, got.assignments):
        return None, False
    return got, False


def decide(unit: TreeNode, facts: Facts, got: ExactResult, minimum: int, commit: bool,
           dry_runs: int) -> Decision:
    """The decision of the MILP's placement ``got``, committed when ``commit``."""
    assert got.assignments is not None
    state = facts.state
    index = state.topology.index
    on: dict[str, list[int]] = {}  # set path -> node index of each pod
    for ps in podsets(unit):
        on[ps.path] = [index[got.assignments[p]] for p in ps.pods if p in got.assignments]
    if commit:
        txn = state.begin()
        for ps in podsets(unit):
            if on[ps.path]:
                nodes, counts = np.unique(np.asarray(on[ps.path], dtype=np.int64),
                                          return_counts=True)
                counts = counts.astype(np.int64)
                txn.place(nodes, counts, state.shape(ps.requests), tag=ps.path,
                          held=facts.holds(ps, nodes, counts))
        txn.commit()
    groups: list[GroupOutcome] = []
    _outcomes(unit, facts, got.active, on, groups)
    placed = len(got.assignments)
    return Decision(unit=unit.path, admitted=True, assignments=dict(got.assignments),
                    groups=groups, minimum_pods=minimum, extra_pods=max(0, placed - minimum),
                    dry_runs=dry_runs)


def _outcomes(node: TreeNode, facts: Facts, active: frozenset[str],
              on: dict[str, list[int]], out: list[GroupOutcome]) -> list[int]:
    """Append the outcome of ``node`` and of its subtree (as the search reports them:
    the node first, then its children in order); returns the nodes its pods are on."""
    key, value, label = None, None, None
    if isinstance(node, PodSet):
        where = on[node.path]
        if where:
            key, value, label = _domain(facts, node, where[0])
        out.append(GroupOutcome(
            path=node.path, kind="PodSet", placed_pods=len(where), min_pods=node.min_pods,
            size=node.size, domain=label, satisfied=node.path in active,
            domain_key=key, domain_value=value))
        return where
    assert isinstance(node, Group)
    at = len(out)
    out.append(GroupOutcome(path=node.path, kind="Group", placed_pods=0, min_pods=0, size=0))
    where = []
    for ch in node.children:
        where += _outcomes(ch, facts, active, on, out)
    if where:
        key, value, label = _domain(facts, node, where[0])
    out[at] = GroupOutcome(
        path=node.path, kind="Group", placed_pods=len(where), min_pods=node.min_pods,
        size=node.size, satisfied_children=sum(ch.path in active for ch in node.children),
        min_groups=node.min_groups, children=len(node.children), domain=label,
        satisfied=node.path in active, domain_key=key, domain_value=value)
    return where


def _domain(facts: Facts, node: TreeNode, j: int
            ) -> tuple[str | None, str | None, str | None]:
    """(key, value, label) of the domain a placed node reports: that of its narrowest
    required level of the chain holding node ``j``, else of its first required key
    outside the chain; none without a required key."""
    topo = facts.topo
    key = facts.required(node)
    lv = topo.level_for(key) if key is not None else None
    if lv is not None:
        d = int(lv.node_domain[j])
        return lv.key, lv.values[d], topo.domain_path(lv, d)
    for con in node.topology:
        if con.mode == "required":
            value = domain_value(facts.state, topo.nodes[j], con.key)
            return con.key, value, value
    return None, None, None

