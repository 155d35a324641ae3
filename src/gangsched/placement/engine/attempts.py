"""``place()``: a list of attempts at the minimum, then extras, then decide.

Attempts, in order; the first that places the minimum wins:

1. for each fraction of :data:`RAISE_STEPS` (when the unit asks for more than its
   minimum): the tree with every gang's minimum raised to that fraction, packed, then
   spread (equal fractions are the proportional split, so extras stay fair while the
   full search places them; these attempts get a smaller budget);
2. when a group's pod-count minimum needs more of a child than the child's own minimum
   (what its siblings could place at most falls short): the tree with those implied
   minimums (:func:`implied`; the same placements are valid), packed, then spread;
3. the minimum itself, packed (a set spanning nodes fills the fullest nodes first),
   then spread (the emptiest nodes first);
4. when a pod set's per-node cap spreads its minimum over several nodes: the minimum
   once more, with such sets placed before their larger siblings (whose pods could take
   the nodes they need);
5. when a group may leave children out: the minimum once more, each such group asked
   for its other ways before its next domain (``Search.deep``);
6. when none placed, no capacity bound proved that nothing fits, and the unit is small:
   the exact solver, for its minimum alone (:mod:`.exact_attempt`); a small unit whose
   search has spent its dry runs (``Options.max_dry_runs``, for all attempts together)
   goes to it at once.

The solver is asked earlier, once, when a small unit's attempts have spent
``Options.exact_after`` dry runs: the attempt under way stops there, and a unit the
solver proves infeasible is rejected at once (every attempt would fail; a search of its
own minimum, with a tenth of the dry runs, explains it when none ran yet); otherwise the
stopped attempt is searched again from its start, so the decision is the one the whole
search makes. An attempt whose raised minimum is more pods than could fit at all (per pod
set, its pods or the room the nodes have for it) is skipped. A unit whose minimum is
more pods than could fit at all (that room, inside the domains its pinned values name)
is rejected before any attempt: a search of its minimum with a tenth of the dry runs
explains it (a unit of no minimum with room for no pod, when no explanation is asked).

A unit of no minimum whose extras placed no pod where its (empty) minimum went is
searched once more asking for one pod, over every domain, and grown from there; when
that finds none either and the unit is small, the solver's placement of the fewest pods
(one or more) is taken.

The unit's dry runs are shared by its attempts: a tree whose search space is large is
not searched whole once per attempt (on 33 nodes, eight attempts of 14,500 dry runs each
took 9 s to reject a unit); an attempt made after they are spent gets a tenth of them.

Each attempt is one :class:`~.search.Search` with its own transaction, budget and notes,
and returns an :class:`Outcome`: placed, or unschedulable with its notes. When none
places, the minimum attempt with the options' own node order explains the rejection.
The winner then grows extras (:mod:`.extras`), and the decision commits its transaction
or leaves the state exactly as it was.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, NamedTuple

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.cluster.topology import Level
from gangsched.gang import PodSet, TreeNode, minimum_pods
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine.direct import first_choice, nodes_if_whole
from gangsched.placement.engine.domains import Domains
from gangsched.placement.engine.exact_attempt import decide as exact_decision
from gangsched.placement.engine.exact_attempt import small, solved
from gangsched.placement.engine.explain import reasons
from gangsched.placement.engine.extras import grow
from gangsched.placement.engine.facts import Facts
from gangsched.placement.engine.fast import fast_place
from gangsched.placement.engine.options import DEFAULT, Options
from gangsched.placement.engine.search import Budget, Search
from gangsched.placement.engine.trace import current
from gangsched.placement.engine.values import (
    SUCCESS,
    Code,
    GroupPlacement,
    Placement,
    Status,
)

if TYPE_CHECKING:
    from gangsched.placement.exact import ExactResult


class Attempt(NamedTuple):
    """One way to search for the unit's minimum."""

    tree: TreeNode  # the unit, or a copy with raised minima
    node_order: Literal["pack", "spread"]
    backtrack: int  # Budget.backtrack
    score: int  # Budget.score
    own: TreeNode  # where an extra child reads its own minimum (see attempts())
    caps_first: bool = False  # Search.caps_first
    deep: bool = False  # Search.deep
    implied: bool = False  # tree: the unit with the minimums its pod counts imply


@dataclass(slots=True)
class Outcome:
    """What one attempt came to: a placed minimum, or a status with the search's notes."""

    status: Status
    search: Search
    root: Placement | None = None


def raised(node: TreeNode, fraction: float) -> TreeNode:
    """A copy of the tree in which every gang asks for at least ``fraction`` of its
    children (or pods) as its minimum. Equal fractions for all siblings are the
    proportional split, so searching these first keeps extras fair while letting the
    full search (with backtracking) place them."""
    if isinstance(node, PodSet):
        m = max(node.min_pods, math.ceil(fraction * node.size))
        return node if m == node.min_pods else replace(node, min_pods=m)
    kids = [raised(c, fraction) for c in node.children]
    groups = max(node.min_groups, math.ceil(fraction * len(kids)))
    return replace(node, children=kids, min_groups=groups)


def implied(node: TreeNode, facts: Facts, need: int = 0) -> TreeNode:
    """The tree with each node asking for at least ``need`` pods, and each child for at
    least what its parent's pod-count minimum leaves to it: that minimum less the most
    every sibling could place (their sizes). Every placement of the unit meets these
    minimums, so the same placements are valid; a search of this tree meets them from
    the start (a child the parent's count needs whole is placed whole, not as its own
    minimum and then grown where it may no longer fit). The node itself when nothing
    rises."""
    size = facts.size(node)
    # a need its own minimum already meets (a group's min_groups may) changes nothing
    own = min(size, need) if need > 0 and need > minimum_pods(node) else node.min_pods
    if isinstance(node, PodSet):
        return node if own == node.min_pods else replace(node, min_pods=own)
    sizes = [facts.size(c) for c in node.children]
    total = sum(sizes)
    kids = [implied(c, facts, own - (total - s)) if own > total - s else c
            for c, s in zip(node.children, sizes, strict=True)]
    if own == node.min_pods and all(k is c for k, c in zip(kids, node.children, strict=True)):
        return node
    return replace(node, children=kids, min_pods=own)


def attempts(unit: TreeNode, facts: Facts, opts: Options, minimum: int) -> Iterator[Attempt]:
    """The attempts, in order (made lazily: a raised tree is built only when reached)."""
    orders: tuple[Literal["pack", "spread"], ...] = (opts.node_order,)
    if opts.node_order == "pack" and not opts.extras_first:
        orders = ("pack", "spread")  # a unit that fails packed is searched once spread
    if opts.extras and not opts.extras_first and minimum < facts.size(unit):
        tried = {minimum}
        for fraction in opts.raise_steps:
            tree = raised(unit, fraction)
            need = minimum_pods(tree)
            if need <= minimum or need in tried:
                continue  # no more than the minimum, or the same as a fraction tried
            tried.add(need)
            facts.adopt(tree)
            for order in orders:
                # the spread retry of a raised tree reads an extra child's minimum from
                # that tree, the packed one from the unit's own
                yield Attempt(tree, order, opts.raise_budget, opts.score_budget // 4,
                              unit if order == "pack" else tree)
    tight = implied(unit, facts)
    if tight is not unit:  # first the minimums the unit's pod counts imply
        facts.adopt(tight)
        for order in orders:
            yield Attempt(tight, order, opts.backtrack_budget, opts.score_budget, unit,
                          implied=True)
    for order in orders:
        yield Attempt(unit, order, opts.backtrack_budget, opts.score_budget, unit)
    if opts.child_order == "size" and facts.spread(unit) > 1:
        # a set that its per-node cap spreads over several nodes, placed after larger
        # pods, may find they took the nodes it needs: once more, capped sets first
        yield Attempt(unit, orders[0], opts.backtrack_budget, opts.score_budget, unit, True)
    if facts.has_choice(unit):
        # a group that may leave children out, satisfied by the first siblings that fit,
        # may have taken what a later sibling needed: once more, each group asked for its
        # other ways before its next domain (last: the budget goes deeper, not wider)
        yield Attempt(unit, orders[0], opts.backtrack_budget, opts.score_budget, unit,
                      deep=True)


# an attempt made after the unit's dry runs are spent still gets this share of them (a
# retry in another node order, or an explanation's own dry runs, is not starved)
FLOOR_SHARE = 10
# the attempts at raised minimums (extras placed with the minimum) spend at most this
# share of the unit's dry runs: the rest is kept for its own minimum
RAISED_SHARE = 2


def run(attempt: Attempt, facts: Facts, domains: Domains, opts: Options,
        dry_runs: int, probe_at: int = -1) -> Outcome:
    """Search the attempt's tree for its minimum over the whole cluster, in at most
    ``dry_runs`` placement attempts; stopped at ``probe_at`` of them (``Budget``)."""
    budget = Budget(attempt.backtrack, attempt.score, dry_runs, probe_at=probe_at)
    search = Search(facts, domains, opts, budget, pack=attempt.node_order == "pack",
                    own=attempt.own, caps_first=attempt.caps_first, deep=attempt.deep)
    if search.log is not None:
        search.log.attempt(search, attempt.node_order == "pack", attempt.tree, facts.unit,
                           attempt.implied)
    root = search.first(attempt.tree)
    budget.probe_at = -1  # the extras and an explanation are not stopped
    if root is None:
        return Outcome(Status(Code.UNSCHEDULABLE), search)
    return Outcome(SUCCESS, search, root)


def place(
    unit: TreeNode,
    state: ClusterState,
    options: Options | None = None,
    *,
    commit: bool = True,
) -> Decision:
    """Decide one scheduling unit. On admission the state holds the placement when
    ``commit`` is true; otherwise (or on rejection) the state is left exactly as it was."""
    opts = options or DEFAULT
    if opts.fast and not opts.mix and state.n_nodes and current() is None:
        fast = fast_place(unit, state, opts, None, commit)
        if fast is not None:
            return fast
    minimum = minimum_pods(unit)
    if state.n_nodes == 0:
        status = Status(Code.UNRESOLVABLE, (f"{unit.name}: the cluster has no nodes",))
        return _decision(unit, state, status, None, minimum, 0)
    facts = Facts(unit, state)
    domains = Domains(facts, opts.domain_order == "fit", opts.narrow, opts.mix,
                      opts.keep_whole)
    if opts.fast and not opts.extras_first and current() is None:
        # every node of the tree required whole, placed by its first choice (direct.py):
        # one dry run per node, within the unit's dry runs and short of the solver's probe
        nodes = nodes_if_whole(unit, facts)
        limit = opts.max_dry_runs + 1
        if opts.exact > 0 and opts.exact_after > 0:
            limit = min(limit, opts.exact_after)
        direct = first_choice(unit, facts, domains, opts) if 0 < nodes < limit else None
        if direct is not None:
            first, txn = direct
            if commit:
                txn.commit()
            else:
                txn.discard()
            return _decision(unit, state, SUCCESS, first, minimum, nodes, facts)
    won: Outcome | None = None
    explainer: Outcome | None = None  # the first failed attempt at the unit's own minimum
    pool = opts.max_dry_runs  # the unit's dry runs, all attempts told
    floor = max(1, opts.max_dry_runs // FLOOR_SHARE)
    kept = opts.max_dry_runs - opts.max_dry_runs // RAISED_SHARE  # for the own minimum
    # the exact solver's answer, once asked (exact_attempt.py); it is asked when the
    # unit's attempts have spent ``ask`` dry runs
    solver: tuple[ExactResult | None, bool] | None = None
    ask = opts.exact_after if opts.exact > 0 and opts.exact_after > 0 else 0
    room = _room(unit, facts, domains)  # at most how many pods fit
    if minimum == 0 and room == 0 and unit.size > 0 and not opts.explain:
        status = Status(Code.UNSCHEDULABLE, (f"{unit.name}: no pod fits",))
        return _decision(unit, state, status, None, minimum, 0, facts)
    infeasible = room < minimum  # no attempt can place it, nor the solver
    for attempt in () if infeasible else attempts(unit, facts, opts, minimum):
        if attempt.tree is not unit and not attempt.implied and minimum_pods(attempt.tree) > room:
            continue  # a raised minimum more pods than could ever fit: cannot place
        spent = opts.max_dry_runs - pool
        probe = ask - spent if solver is None and ask > spent else -1
        if attempt.tree is not unit and not attempt.implied:  # a raised minimum
            allowed = pool - kept
            if allowed <= 0:
                continue  # their share is spent
        else:
            allowed = max(pool, floor)
        outcome = run(attempt, facts, domains, opts, allowed, probe)
        if outcome.search.budget.stopped:  # the search runs long: the solver first
            outcome.search.txn.discard()
            if outcome.search.log is not None:
                outcome.search.log.stopped()
            solver = _ask(_asked(unit, facts, minimum), facts, domains, opts)
            infeasible = solver[1]
            if infeasible:
                break  # every attempt would fail
            outcome = run(attempt, facts, domains, opts, allowed)  # all of it
        pool -= outcome.search.budget.dry_runs
        if outcome.status.success:
            won = outcome
            break
        if explainer is None and attempt.tree is unit:
            explainer = outcome  # keeps its (empty) transaction open for its explanation
        else:
            outcome.search.txn.discard()
        if attempt.tree is unit and outcome.search.bounded_out:
            break  # no domain can hold the minimum: the other node order cannot either
        if (attempt.tree is unit and pool <= 0 and opts.exact > 0
                and small(unit, state, opts.exact)):
            break  # the search ran out of dry runs on a small unit: the solver decides it
    if won is None:
        if explainer is None:  # proven infeasible first: a search of the minimum explains
            if not opts.explain:
                status = Status(Code.UNSCHEDULABLE, (f"{unit.name}: does not fit",))
                return _decision(unit, state, status, None, minimum,
                                 opts.max_dry_runs - pool, facts)
            explainer = run(Attempt(unit, opts.node_order, opts.backtrack_budget,
                                    opts.score_budget, unit), facts, domains, opts, floor)
        search = explainer.search
        if not search.bounded_out and opts.exact > 0 and not infeasible:  # the exact solver
            if solver is None:
                solver = _ask(_asked(unit, facts, minimum), facts, domains, opts)
            got = solver[0]
            if got is not None:
                search.txn.discard()
                return exact_decision(unit, facts, got, minimum, commit,
                                      search.budget.dry_runs)
        if search.log is not None:
            search.log.explaining(search)
        why = reasons(search, unit) if opts.explain else (f"{unit.name}: does not fit",)
        status = Status(Code.UNSCHEDULABLE, why)
        search.txn.discard()
        return _decision(unit, state, status, None, minimum, search.budget.dry_runs, facts)
    # extras: grow the placed minimum by water-filling, first feasible choices only
    search, root = won.search, won.root
    assert root is not None
    size = facts.size(unit)
    if opts.extras and root.placed < size:
        search.budget.backtrack = 0
        grow(search, root, size)
    if root.placed == 0 and minimum == 0 and size > 0 and opts.extras and room > 0:
        # nothing required and the extras found no room where the minimum went (their
        # choices are first feasible, without backtracking): search once more for one
        # pod, over every domain, and grow the extras from there
        one = _asked(unit, facts, minimum)
        again = run(Attempt(one, opts.node_order, opts.backtrack_budget, opts.score_budget,
                            unit), facts, domains, opts, max(pool, floor))
        if again.root is not None:
            search.txn.discard()
            search, root = again.search, again.root
            search.budget.backtrack = 0
            grow(search, root, size)
        else:
            again.search.txn.discard()
            # nor that search: the exact solver's fewest pods (one or more), for a small
            # unit; extras come when the unit is next grown, as after the last attempt
            got = _ask(one, facts, domains, opts)[0]
            if got is not None:
                search.txn.discard()
                return exact_decision(unit, facts, got, minimum, commit,
                                      search.budget.dry_runs)
    # decide: a unit without a minimum that placed nothing is not admitted
    status = SUCCESS
    if not (root.placed > 0 or minimum > 0 or unit.size == 0):
        why = (reasons(search, unit) if search.notes.text and opts.explain
               else (f"{unit.name}: no pod fits",))
        status = Status(Code.UNSCHEDULABLE, why)
    if commit and status.success:
        search.txn.commit()
    else:
        search.txn.discard()
    return _decision(unit, state, status, root, minimum, search.budget.dry_runs, facts)


def _asked(unit: TreeNode, facts: Facts, minimum: int) -> TreeNode:
    """The tree the exact solver is asked for: the unit, or for a unit of no minimum the
    same unit asking at least one pod (its empty placement would admit nothing)."""
    if minimum > 0:
        return unit
    one = replace(unit, min_pods=1)
    facts.adopt(one)
    return one


def _ask(unit: TreeNode, facts: Facts, domains: Domains, opts: Options
         ) -> tuple[ExactResult | None, bool]:
    """The exact solver's answer for the unit's minimum (:func:`.exact_attempt.solved`),
    recorded in the search log when one is kept."""
    got = solved(unit, facts, domains, opts)
    log = current()
    if log is not None:
        log.solver(got[0] is not None)
    return got


def _room(node: TreeNode, facts: Facts, domains: Domains,
          ranges: list[tuple[int, int]] | None = None,
          totals: dict[object, int] | None = None) -> int:
    """At most how many of the node's pods fit now, in any tree of its attempts: per pod
    set, its pods or what the nodes its requirements allow could take (each at most its
    per-node cap), whichever is fewer; only the nodes inside ``ranges`` and inside the
    domains the pinned values on its path name (of keys of the chain) count; a node of
    the tree whose minimum no domain of a level it requires could hold adds none
    (:func:`_holds_minimum`). ``totals``: the cluster-wide sums already taken, per
    (shape, requirements, cap)."""
    pins = [c for c in node.topology
            if c.mode == "required" and c.value is not None and facts.topo.nested(c.key)]
    if pins:
        whole = ranges if ranges is not None else [(0, facts.state.n_nodes)]
        ranges = [r for lo, hi in whole for r in domains.pinned(pins, lo, hi)[0]]
        if not ranges:
            return 0
    levels = facts.required_levels(node)
    if levels and not _holds_minimum(facts, node, levels, ranges):
        return 0  # placed at all, it is satisfied: its minimum in one domain of each level
    totals = {} if totals is None else totals
    if not isinstance(node, PodSet):
        return sum(_room(ch, facts, domains, ranges, totals) for ch in node.children)
    shape, n = facts.shape(node), len(node.pods)
    if not n or shape.impossible:
        return 0
    key = (shape, node.requirements, node.max_pods_per_node)
    fit = facts.state.capacity(*key)
    # min(n, sum(min(fit, n))) is min(n, sum(fit)): a node taking n pods settles both
    if ranges is not None:
        return min(n, sum(int(fit[lo:hi].sum()) for lo, hi in ranges))
    got = totals.get(key)
    if got is None:
        got = totals[key] = int(fit.sum())  # sets alike (replicas) sum once
    return min(n, got)


def _holds_minimum(facts: Facts, node: TreeNode, levels: Sequence[Level],
                   ranges: list[tuple[int, int]] | None) -> bool:
    """Whether, for each of ``levels``, one labelled domain of it (clipped to ``ranges``)
    could take the node's minimum (:meth:`.facts.Facts.demand`, every pod shape of it at
    once) by the capacity bound. A node with pods placed is satisfied (the contract), so
    one whose minimum no domain holds places none."""
    dems = facts.demand(node)
    if not dems:
        return True
    state = facts.state
    for lv in levels:
        if ranges is None:
            ok = lv.valid.copy()
            for dem in dems:
                ok &= state.domain_sums(dem.shape, dem.req, None, lv) >= dem.count
            if not ok.any():
                return False
            continue
        for lo, hi in ranges:
            d0, d1 = int(lv.node_domain[lo]), int(lv.node_domain[hi - 1]) + 1
            starts = np.maximum(lv.starts[d0:d1], lo) - lo
            ok = lv.valid[d0:d1].copy()
            for dem in dems:
                fit = state.capacity(dem.shape, dem.req)[lo:hi]
                ok &= np.add.reduceat(fit, starts) >= dem.count
            if ok.any():
                break
        else:
            return False
    return True


def place_all(
    units: Sequence[TreeNode], state: ClusterState, options: Options | None = None
) -> list[Decision]:
    """Decide units in order, each seeing the ones admitted before it."""
    return [place(u, state, options) for u in units]


# -- the decision value ---------------------------------------------------------------


def _decision(
    unit: TreeNode, state: ClusterState, status: Status, root: Placement | None, minimum: int,
    dry_runs: int, facts: Facts | None = None,
) -> Decision:
    groups: list[GroupOutcome] = []
    _outcomes(unit, root, groups, facts)
    if root is None:
        return Decision(unit=unit.path, admitted=False, groups=groups, reason=status.message,
                        minimum_pods=minimum, dry_runs=dry_runs)
    assignments: dict[str, str] = {}
    if status.success:
        _assign(root, state.topology.name_array, assignments)
    return Decision(
        unit=unit.path,
        admitted=status.success,
        assignments=assignments,
        groups=groups,
        reason=status.message,
        minimum_pods=minimum,
        extra_pods=root.placed - minimum,
        dry_runs=dry_runs,
    )


def _outcomes(node: TreeNode, r: Placement | None, out: list[GroupOutcome],
              facts: Facts | None = None) -> None:
    placed = r.placed if r is not None else 0
    size = facts.size(node) if facts is not None else node.size
    cand = r.cand if r is not None else None
    key, value = cand.pin if cand is not None else (None, None)
    label = cand.label if cand is not None else None
    if cand is not None and facts is not None and cand.cross is None and \
            not facts.asked(node, cand.level):
        key, value, label = _asked_domain(facts, node, cand.lo)
    if isinstance(node, PodSet):
        out.append(
            GroupOutcome(
                path=node.path, kind="PodSet", placed_pods=placed, min_pods=node.min_pods,
                size=size, domain=label,
                satisfied=r is not None and placed >= node.min_pods,
                domain_key=key, domain_value=value,
            )
        )
        return
    kids = r.kids if isinstance(r, GroupPlacement) else {}
    sat = sum(
        1 for i, ch in enumerate(node.children)
        if i in kids and kids[i].placed >= (ch.min_pods if isinstance(ch, PodSet) else 0)
    )
    out.append(
        GroupOutcome(
            path=node.path, kind="Group", placed_pods=placed, min_pods=node.min_pods,
            size=size, satisfied_children=sat, min_groups=node.min_groups,
            children=len(node.children), domain=label,
            satisfied=r is not None,
            domain_key=key, domain_value=value,
        )
    )
    for i, ch in enumerate(node.children):
        _outcomes(ch, kids.get(i), out, facts)


def _asked_domain(facts: Facts, node: TreeNode, j: int
                  ) -> tuple[str | None, str | None, str | None]:
    """(key, value, label) of the domain of the node's required level holding node ``j``:
    what a group placed narrower than it asked (for locality) reports; none without one."""
    req = facts.required(node)
    lv = facts.topo.level_for(req) if req is not None else None
    if lv is None:
        return None, None, None
    d = int(lv.node_domain[j])
    return lv.key, lv.values[d], facts.topo.domain_path(lv, d)


def _assign(r: Placement, names: np.ndarray, out: dict[str, str]) -> None:
    """Pod key -> node name, pods of each set in order, node after node."""
    if isinstance(r, GroupPlacement):
        for k in r.kids.values():
            _assign(k, names, out)
        return
    if not r.nodes:
        return
    nodes = r.nodes[0] if len(r.nodes) == 1 else np.concatenate(r.nodes)
    counts = r.counts[0] if len(r.counts) == 1 else np.concatenate(r.counts)
    # the first ``placed`` pods of the set, in order (the rest were not placed)
    out.update(zip(r.node.pods, np.repeat(names[nodes], counts).tolist(), strict=False))
