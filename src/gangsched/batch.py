"""Decide every workload of an assembled plan, once (the use case of ``gangsched place``).

All trees are validated before anything is placed, so a bad input changes nothing. Then,
as one batch:

1. **Minimums.** Every scheduling unit's minimum, all-or-nothing, workloads in priority
   order (higher first), then input order; each unit sees the ones admitted before it.
   A minimum goes to the domain the whole unit would take (``place_minimum``), so its
   extras find room beside it in step 2.
   **Look-ahead**: when some workload is rejected, the batch is tried again in other
   orders, on copies of the state, a local search from the best order so far: first
   the workloads of each priority largest first ("largest": the dominant share of its
   minimum; among equal shares, more pods first), and smallest pods first (the dominant
   share of its largest pod; then largest first); then, for up to half the budget, one
   rejected workload moved to the front of its priority (largest first, each once);
   then one admitted workload moved to the back of its priority (fewest pods per share
   first, each once), which frees its room for the workloads after it; the two moves
   take turns while either keeps finding better. An order is kept when it admits more,
   counted per priority, higher priorities first: the sum over admitted pods of each
   pod's dominant share (its largest request as a fraction of the cluster's total of
   that resource), then the pods. So a lower priority never gains at a higher one's
   expense, and within a priority later workloads may be admitted in place of an
   earlier one when that packs more. A trial that changes the order only from some
   position on resumes from the best order's trial state marked there (at most
   :data:`LOOKAHEAD_MARKS` marks a trial), deciding only the rest. The budget: the unit
   decisions of :data:`LOOKAHEAD` whole batches, at most :data:`LOOKAHEAD_DECISIONS`.
   Workloads of one signature (:func:`_signature`: the same tree but for names) are
   interchangeable: an order that differs from the best one only by swapping such
   workloads is not tried, and within a trial a workload like one the trial rejected
   is rejected without a search (the trial state only loses free capacity), so a batch
   of many equal workloads that do not all fit costs a few searches a trial.
   **Fragmentation**: when the plain order rejects some workload and the batch asks for
   pods of more than one request, the look-ahead's trials, and then the batch, are
   decided with ``Options.mix`` set to the batch's mix (:func:`batch_mix`: each distinct
   request, weighted by its share of the dominant shares of all the pods the batch asks
   for). Among the candidate domains of a level that fit, the engine then takes the one
   where the pods would strand the least of the mix's capacity (the free room of a
   shape's dominant resource that no pod of that shape can use; FGD), then the tightest:
   a gang of half-node pods goes to the racks whose half nodes are free rather than
   breaking the whole nodes a gang of whole-node pods needs. A pod of the mix's only
   shape strands nothing of it, so a batch of one request, or one that fits in its
   plain order, is decided exactly as without the mix; when the look-ahead with the mix
   ends below the plain order's value, the plain order without the mix is kept. The
   trials decide by the search alone; the engine's exact attempt on small units that no
   search places (``Options.exact``) runs only when the batch is decided in the order
   the trials chose.
2. **Extras, fairly.** Extras only once every minimum was tried, so no unit's extras can
   take what another unit's minimum needs. In rounds: every admitted unit grows half of
   what it still lacks (all-or-nothing, inside the domains its pods are in), then all of
   it, then whatever still fits (water-filling), units in the same order each round;
   the last round again for the units it grew (up to :data:`FIT_ROUNDS` times), as a
   try's first-feasible choices can leave room its next try fills.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gangsched.api.errors import ValidationError
from gangsched.cluster.state import ClusterState
from gangsched.gang import (
    PodSet,
    TreeNode,
    minimum_pods,
    podsets,
    scheduling_units,
    validate,
    walk,
)
from gangsched.model import Plan, Workload
from gangsched.placement.decision import Decision, GroupOutcome
from gangsched.placement.engine import Mix, Options, place, place_minimum, raised
from gangsched.scheduler.capacity import pins_of
from gangsched.scheduler.tree import residual

EXTRA_ROUNDS = (0.5, 1.0)  # shares of what each unit still lacks, grown all-or-nothing
FIT_ROUNDS = 3  # "whatever still fits" rounds, at most: each again only for units it grew
LOOKAHEAD = 24  # trial batches' worth of unit decisions, at most, to admit more
LOOKAHEAD_DECISIONS = 40_000  # and at most this many unit decisions in all
LOOKAHEAD_MARKS = 32  # states a trial keeps to resume from, at most (see Lookahead.run)


@dataclass
class WorkloadOutcome:
    name: str
    kind: str
    admitted: bool
    reason: str = ""
    waiting: bool = False
    pods: dict[str, str] = field(default_factory=dict)  # pod key -> node, placed pods only
    groups: list[GroupOutcome] = field(default_factory=list)
    total_pods: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "admitted": self.admitted,
            "waiting": self.waiting,
            "reason": self.reason,
            "pods": dict(sorted(self.pods.items())),
            "groups": [group_dict(g) for g in self.groups],
        }


def group_dict(g: GroupOutcome) -> dict[str, Any]:
    """A group outcome for JSON: ``placed``/``minimum`` count children for gangs of
    children, pods otherwise."""
    by_children = g.kind == "Group" and g.min_groups > 0
    return {
        **asdict(g),
        "placed": g.satisfied_children if by_children else g.placed_pods,
        "minimum": g.min_groups if by_children else g.min_pods,
        "counts": "children" if by_children else "pods",
    }


def check_trees(plan: Plan, levels: list[str]) -> None:
    """Validate every ready tree against the cluster's levels. A tree they make invalid
    (a child's required key wider than its parent's in this cluster's chain) is that
    workload's problem: it is marked invalid and not placed, the others are."""
    for w in plan.ready:
        assert w.tree is not None
        try:
            validate(w.tree, levels)
        except ValidationError as e:
            where = f"{w.source}: " if w.source else ""
            w.invalid = f"{where}{w.kind}/{w.name}: {e}"
            w.waiting = f"invalid: {e}"


def place_plan(
    plan: Plan, state: ClusterState, options: Options | None = None, *,
    min_first: bool = True, lookahead: int = LOOKAHEAD, fragmentation: bool = True,
) -> list[WorkloadOutcome]:
    """Decide every workload; returns outcomes in input order (waiting ones included).
    ``min_first=False`` places each unit with its extras at once, in order (the
    ablation of minimum-first); ``lookahead=0`` keeps the priority-then-input order;
    ``fragmentation=False`` leaves ``Options.mix`` as given (the plain domain order)."""
    check_trees(plan, state.topology.keys)
    state.note_claims(plan.claims)  # bound pods hold their exclusive domains
    order, opts, first = decision_order(plan, state, options, min_first=min_first,
                                        lookahead=lookahead, fragmentation=fragmentation)
    outcomes: dict[int, WorkloadOutcome] = {}
    admitted: list[tuple[WorkloadOutcome, TreeNode, dict[str, dict[str, str]]]] = []
    for i in order:
        out, placed = decide(plan.workloads[i], state, first)
        outcomes[i] = out
        admitted += [(out, unit, sets) for unit, sets in placed]
    if min_first and opts.extras:
        grow_extras(admitted, state, opts)
    return [outcomes[i] for i in range(len(plan.workloads))]


def decision_order(
    plan: Plan, state: ClusterState, options: Options | None = None, *,
    min_first: bool = True, lookahead: int = LOOKAHEAD, fragmentation: bool = True,
) -> tuple[list[int], Options, Options]:
    """The order :func:`place_plan` decides the workloads in (priority, then input order;
    or the look-ahead's), and the options it decides them with: (order, options, those
    of the first pass: the minimums alone under minimum first), with the batch's mix
    when the look-ahead used it. ``state`` (bound pods' claims noted) is left as it is:
    the trials run on copies. ``gangsched explain`` replays a batch in this order."""
    order = sorted(range(len(plan.workloads)),
                   key=lambda i: (-plan.workloads[i].priority, i))
    opts = options or Options()
    first = replace(opts, extras=False) if min_first else opts
    if lookahead > 0:
        mix = batch_mix(plan, state) if fragmentation and not opts.mix else ()
        look = Lookahead(plan, state, first, mix)
        order = look.best(order, lookahead)
        if look.mixed:  # the batch is decided with the domain order the search used
            opts, first = replace(opts, mix=mix), replace(first, mix=mix)
    return order, opts, first


def batch_mix(plan: Plan, state: ClusterState) -> Mix:
    """The batch's pod shapes as ``Options.mix``: each distinct request, weighted by its
    share of what the batch asks for (the dominant shares of all its pods, minimum and
    extras, summed per request; the weights sum to 1)."""
    inverse = state.inverse_totals
    asked: dict[tuple[tuple[str, int], ...], float] = {}
    for w in plan.workloads:
        if w.tree is None or w.waiting:
            continue
        for ps in podsets(w.tree):
            key = tuple(sorted((r, v) for r, v in ps.requests.items() if v > 0))
            s = max((v * inverse[state.rindex[r]] for r, v in key
                     if r in state.rindex and r != "pods"), default=0.0)
            if s > 0 and ps.pods:
                asked[key] = asked.get(key, 0.0) + s * len(ps.pods)
    total = sum(asked.values())
    return tuple((k, round(v / total, 9)) for k, v in sorted(asked.items())) if total else ()


class Lookahead:
    """Trial batches on copies of the state, to find an order that admits more."""

    def __init__(self, plan: Plan, state: ClusterState, options: Options,
                 mix: Mix = ()) -> None:
        self.plan, self.state = plan, state
        # the trials compare orders by the search alone: the exact solver's last attempt
        # (up to thousands of trial decisions on a small cluster, each a MILP) is left to
        # the batch decided in the order they choose
        self.options = replace(options, explain=False, exact=0)
        self.mix = mix if len(mix) > 1 else ()  # one shape strands nothing of itself
        self.mixed = False  # whether the best order was found with the mix
        self.decisions = 0  # unit decisions made by the trials so far
        inverse = state.inverse_totals
        self.share: dict[str, float] = {}  # pod key -> its dominant share
        self.weight: list[float] = []  # per workload: its minimum's dominant share
        self.pods: list[int] = []  # per workload: its minimum's pods
        self.biggest: list[float] = []  # per workload: its largest pod's dominant share
        # per workload: what its decisions depend on (see _signature)
        held = {owner for claims in state.pod_claims.values() for _, _, owner in claims}
        self.signature = [_signature(w.tree, held) if w.tree is not None else None
                          for w in plan.workloads]
        for w in plan.workloads:
            total, count, biggest = 0.0, 0, 0.0
            if w.tree is not None and not w.waiting:
                for ps in podsets(w.tree):
                    s = max((v * inverse[state.rindex[r]] for r, v in ps.requests.items()
                             if r in state.rindex and r != "pods"), default=0.0)
                    self.share.update(dict.fromkeys(ps.pods, s))
                    total += s * ps.min_pods
                    count += ps.min_pods
                    biggest = max(biggest, s)
            self.weight.append(total)
            self.pods.append(count)
            self.biggest.append(round(biggest, 9))

    def run(self, order: list[int], start: int = 0, mark: _Mark | None = None,
            every: int = 0) -> tuple[tuple[float, ...], list[int], dict[int, _Mark]]:
        """The value of deciding the minimums in ``order`` (per priority, highest first:
        the dominant shares admitted, then the pods), and the workloads it rejects. With
        ``mark`` (the trial as it stood before ``order[start]``), only ``order[start:]``
        is decided (without, all of it); with ``every``, the trial is also marked at each
        position that is a multiple of it, so that a later order with the same prefix can
        resume there."""
        if mark is None:
            start, trial, shares, pods, rejected = 0, self.state.snapshot(), {}, {}, []
            failed: set[tuple[Any, ...]] = set()
        else:
            trial, shares = mark.state.snapshot(), dict(mark.shares)
            pods, rejected = dict(mark.pods), list(mark.rejected)
            failed = set(mark.failed)
        marks: dict[int, _Mark] = {}
        for k in range(start, len(order)):
            if every and k % every == 0:
                marks[k] = _Mark(trial.snapshot(), dict(shares), dict(pods), list(rejected),
                                 set(failed))
            i = order[k]
            w = self.plan.workloads[i]
            self.decisions += 1
            sig = self.signature[i]
            if sig is not None and sig in failed:
                # one just like it was rejected in this trial, and the trial state has
                # only lost free capacity since: rejected too, without a search
                rejected.append(i)
                continue
            out, _ = decide(w, trial, self.options)
            if sig is not None and not out.admitted and not out.waiting:
                failed.add(sig)
            if out.admitted:
                shares[w.priority] = shares.get(w.priority, 0.0) + sum(
                    self.share.get(p, 0.0) for p in out.pods)
                pods[w.priority] = pods.get(w.priority, 0) + len(out.pods)
            elif not out.waiting:
                rejected.append(i)
        levels = sorted({w.priority for w in self.plan.workloads}, reverse=True)
        value: list[float] = []
        for p in levels:
            value += [round(shares.get(p, 0.0), 9), pods.get(p, 0)]
        return tuple(value), rejected, marks

    def best(self, order: list[int], trials: int) -> list[int]:
        """The best of ``order`` and the variations of it that ``trials`` batches' worth
        of decisions allow (see the module docstring)."""
        best_value, rejected, _ = self.run(order)
        if not rejected:
            return order
        plain_value, plain_order = best_value, order
        if self.mix:  # from here on, domains by the least stranding of the batch's mix
            self.options, self.mixed = replace(self.options, mix=self.mix), True
            best_value, rejected, _ = self.run(order)
            if not rejected:  # everything fits: no order admits more
                return order
        n = len(order)
        budget = min(trials * n, LOOKAHEAD_DECISIONS)
        every = -(-n // LOOKAHEAD_MARKS)  # marks kept per trial: at most LOOKAHEAD_MARKS
        self.decisions = 0
        prio = [w.priority for w in self.plan.workloads]
        at = {i: k for k, i in enumerate(order)}

        def size(i: int) -> tuple[float, int]:  # larger first; equal shares: more pods
            return -round(self.weight[i], 9), -self.pods[i]

        marks: dict[int, _Mark] = {}  # the best order's marks
        # workloads decided alike (one signature, one priority) are interchangeable
        alike = [(prio[i], sig) if sig is not None else ("workload", i)
                 for i, sig in enumerate(self.signature)]

        def trial(candidate: list[int], start: int = 0) -> bool:
            """Try ``candidate``, which differs from the best order from ``start`` on;
            keep it when it admits more."""
            nonlocal best_value, order, rejected, marks
            if list(map(alike.__getitem__, candidate[start:])) == list(
                    map(alike.__getitem__, order[start:])):
                return False  # the best order up to names: the same value, not tried
            m = start - start % every
            value, rej, new = self.run(candidate, m, marks.get(m), every)
            if value <= best_value:
                return False
            best_value, order, rejected = value, candidate, rej
            marks = {k: v for k, v in marks.items() if k < m} | new
            return True

        trial(sorted(order, key=lambda i: (-prio[i], size(i), at[i])))  # largest first
        # and smallest pods first: they fill what is left on partly used nodes before the
        # gangs of whole-node pods need whole nodes
        trial(sorted(order, key=lambda i: (-prio[i], self.biggest[i], size(i), at[i])))
        runs = _Runs(order, alike)  # of the best order: runs of alike workloads
        tried: set[int] = set()  # rejected workloads moved to the front
        dropped: set[int] = set()  # admitted workloads moved to the back
        cap = budget // 2  # the first round of moves to the front: half the budget
        progress = True
        while progress:
            progress = False
            queue: list[int] = []  # rejected and not tried, the largest last
            queued_for: list[int] | None = None
            while self.decisions + n <= cap:  # a rejected one to the front, largest first
                if queued_for is not rejected:  # the best order changed
                    queued_for, runs = rejected, runs.of(order)
                    queue = [i for i in sorted(rejected, key=size) if i not in tried][::-1]
                if not queue:
                    break
                i = queue.pop()
                tried.add(i)
                k = runs.at[i]
                if runs.start[k] <= runs.first_of(prio[i], prio):
                    continue  # only alike ones ahead of it: the same order up to names
                progress |= trial(_to_front(order, i, prio))
            cap = budget
            if not marks and self.decisions + n <= budget:  # the best order, marked
                _, _, marks = self.run(order, every=every)
            picks: list[int] = []  # admitted ones by fewest pods per share, the first last
            picked_for: list[int] | None = None
            while marks:  # an admitted one to the back, fewest pods per share first
                if picked_for is not order:  # the best order changed
                    picked_for, runs, out = order, runs.of(order), set(rejected)
                    picks = sorted((k for k, i in enumerate(order) if i not in out
                                    and i not in dropped and self.weight[i] > 0),
                                   key=lambda k: (self.pods[order[k]] / self.weight[order[k]],
                                                  -k), reverse=True)
                # a trial from k decides n - (k - k % every) workloads: within the budget
                while picks and self.decisions + n - (picks[-1] - picks[-1] % every) > budget:
                    picks.pop()  # it only grows: never within the budget again
                if not picks:
                    break
                k = picks.pop()
                dropped.add(order[k])
                if runs.end[k] >= runs.last_of(prio[order[k]], prio):
                    continue  # only alike ones behind it: the same order up to names
                progress |= trial(_to_back(order, order[k], prio), k)
        if self.mixed and best_value < plain_value:  # never worse than the plain order
            self.options, self.mixed = replace(self.options, mix=()), False
            return plain_order
        return order


@dataclass
class _Mark:
    """A trial as it stood before deciding the workload at some position."""

    state: ClusterState
    shares: dict[int, float]  # per priority: dominant shares admitted
    pods: dict[int, int]  # per priority: pods admitted
    rejected: list[int]
    failed: set[tuple[Any, ...]]  # signatures of the workloads it rejected


class _Runs:
    """Of one order: each position's run of alike workloads (one signature, one
    priority), so that a move that only passes alike ones is known to change nothing in
    O(1), without building the moved order and comparing it."""

    def __init__(self, order: list[int], alike: list[Any]) -> None:
        self.order, self.alike = order, alike
        n = len(order)
        self.at = {i: k for k, i in enumerate(order)}  # workload -> position
        self._bounds: dict[tuple[str, int], int] = {}  # (first|last, priority) -> position
        self.start = [0] * n  # position -> first position of its run
        self.end = [0] * n  # position -> last position of its run
        for k in range(1, n):
            same = alike[order[k]] == alike[order[k - 1]]
            self.start[k] = self.start[k - 1] if same else k
        for k in range(n - 2, -1, -1):
            same = alike[order[k]] == alike[order[k + 1]]
            self.end[k] = self.end[k + 1] if same else k
        if n:
            self.end[n - 1] = n - 1

    def of(self, order: list[int]) -> _Runs:
        """These runs, or new ones when ``order`` is another order."""
        return self if order is self.order else _Runs(order, self.alike)

    def first_of(self, priority: int, prio: list[int]) -> int:
        """Where :func:`_to_front` puts a workload of ``priority``."""
        if ("first", priority) not in self._bounds:
            self._bounds["first", priority] = next(
                (k for k, j in enumerate(self.order) if prio[j] <= priority), len(self.order))
        return self._bounds["first", priority]

    def last_of(self, priority: int, prio: list[int]) -> int:
        """Where :func:`_to_back` puts a workload of ``priority``."""
        if ("last", priority) not in self._bounds:
            self._bounds["last", priority] = next(
                (k for k, j in enumerate(self.order) if prio[j] < priority),
                len(self.order)) - 1
        return self._bounds["last", priority]


def _to_front(order: list[int], i: int, prio: list[int]) -> list[int]:
    """``order`` with ``i`` moved ahead of every workload of its priority."""
    rest = [j for j in order if j != i]
    at = next((k for k, j in enumerate(rest) if prio[j] <= prio[i]), len(rest))
    return [*rest[:at], i, *rest[at:]]


def _to_back(order: list[int], i: int, prio: list[int]) -> list[int]:
    """``order`` with ``i`` moved behind every workload of its priority."""
    rest = [j for j in order if j != i]
    at = next((k for k, j in enumerate(rest) if prio[j] < prio[i]), len(rest))
    return [*rest[:at], i, *rest[at:]]


def _signature(node: TreeNode, held: set[str]) -> tuple[Any, ...] | None:
    """What the engine's decisions on a tree depend on, its names and paths (and pod
    names) left out: two trees of one signature are placed alike on one state. The
    look-ahead's trials use it to reject a workload like one they just rejected without
    searching again (a trial only ever loses free capacity, and exclusive domains held
    by others only grow), which keeps a batch of many equal workloads that do not all
    fit from searching for each in every trial. None for a tree with pods already running
    on nodes, or whose exclusive owners already hold domains (``held``: their paths):
    whose those are counts."""
    cons = node.topology
    if node.held_per_node or (node.path in held
                              and any(c.exclusive is not None for c in cons)):
        return None
    if isinstance(node, PodSet):
        return ("set", len(node.pods), node.min_pods, tuple(sorted(node.requests.items())),
                node.requirements, cons, node.max_pods_per_node)
    kids = []
    for child in node.children:
        sig = _signature(child, held)
        if sig is None:
            return None
        kids.append(sig)
    return ("group", node.min_groups, node.min_pods, cons, node.disruption,
            node.priority, node.max_pods_per_node, tuple(kids))


def decide(w: Workload, state: ClusterState, options: Options
           ) -> tuple[WorkloadOutcome, list[tuple[TreeNode, dict[str, dict[str, str]]]]]:
    """A workload's units placed (what ``options`` ask: its minimum, or with extras);
    the outcome, and each admitted unit with its pods per set."""
    if w.tree is None or w.waiting:
        return WorkloadOutcome(w.name, w.kind, False, reason=w.waiting or "waiting",
                               waiting=True, total_pods=len(w.pods)), []
    out = WorkloadOutcome(w.name, w.kind, True, total_pods=w.tree.size)
    placed: list[tuple[TreeNode, dict[str, dict[str, str]]]] = []
    failed: list[str] = []
    for unit in scheduling_units(w.tree):
        if not options.extras and minimum_pods(unit) == 0:
            placed.append((unit, _sets(unit, {})))  # nothing required: with the extras
            continue
        # a minimum goes where the whole unit would, so its extras find room beside it
        d = (place(unit, state, options) if options.extras
             else place_minimum(unit, state, options))
        out.groups.extend(d.groups)
        if d.admitted:
            out.pods.update(d.assignments)
            placed.append((unit, _sets(unit, d.assignments)))
        else:
            failed.append(d.reason)
    if failed:
        # the units of a basic root are independent (replicas of a ModelServing whose
        # roles require none): those placed keep their nodes and grow their extras, and
        # the workload is admitted with them, the others' reasons kept; with none placed
        # it is rejected
        out.reason = "; ".join(failed)
        out.admitted = bool(placed)  # (a unit of no minimum is placed with the extras)
    return out, placed


def _sets(unit: TreeNode, assignments: dict[str, str]) -> dict[str, dict[str, str]]:
    return {ps.path: {p: assignments[p] for p in ps.pods if p in assignments}
            for ps in podsets(unit)}


def grow_extras(admitted: list[tuple[WorkloadOutcome, TreeNode, dict[str, dict[str, str]]]],
                state: ClusterState, opts: Options) -> None:
    """Step 2: the admitted units' extras, in rounds (see the module docstring)."""
    exact = replace(opts, extras=False)

    def pins(node: str, key: str) -> tuple[tuple[str, str | None], ...]:
        return pins_of(state, node, key)

    last: dict[str, Decision] = {}
    for share in EXTRA_ROUNDS:
        for out, unit, sets in admitted:
            rest = residual(unit, sets, pins)
            if rest is None:
                continue
            target = raised(rest, share)
            if target is rest:
                continue
            d = place(target, state, exact)
            if d.admitted and d.assignments:
                _grown(out, sets, unit, d)
    growing = admitted
    for _ in range(FIT_ROUNDS):  # whatever still fits
        grew = []
        for item in growing:
            out, unit, sets = item
            rest = residual(unit, sets, pins)
            if rest is None:
                continue
            d = place(rest, state, opts)
            last.setdefault(unit.path, d)
            if d.admitted and d.assignments:
                _grown(out, sets, unit, d)
                grew.append(item)
        growing = grew
    # a unit with nothing required that placed nothing, in a workload that placed no pod
    # at all (a basic group's pods are independent: those that fit are its placement)
    for out, unit, sets in admitted:
        if minimum_pods(unit) == 0 and not any(sets.values()) and unit.size \
                and not out.pods:
            d = last.get(unit.path) or place(unit, state, opts, commit=False)
            out.admitted = False
            out.reason = out.reason or d.reason or f"{unit.name}: no pod fits"
            out.groups.extend(d.groups)


def _grown(out: WorkloadOutcome, sets: dict[str, dict[str, str]], unit: TreeNode,
           d: Decision) -> None:
    out.pods.update(d.assignments)
    for path, got in _sets(unit, d.assignments).items():
        sets[path].update(got)
    counts = _counts(unit, sets)
    known = {g.path for g in out.groups}
    for g in out.groups:  # the domains stay those the minimum was placed in
        count = counts.get(g.path)
        if count is not None:
            g.placed_pods, g.satisfied_children, g.satisfied = count
    if unit.path not in known:  # a unit with nothing required, placed only now
        out.groups += [GroupOutcome(
            n.path, "PodSet" if isinstance(n, PodSet) else "Group", counts[n.path][0],
            n.min_pods, n.size, satisfied_children=counts[n.path][1],
            min_groups=0 if isinstance(n, PodSet) else n.min_groups,
            children=0 if isinstance(n, PodSet) else len(n.children),
            satisfied=counts[n.path][2]) for n in walk(unit)]


def _counts(unit: TreeNode, sets: dict[str, dict[str, str]]
            ) -> dict[str, tuple[int, int, bool]]:
    """Per node of the unit: (pods placed, children satisfied, satisfied), from its pods
    per set (minimum and extras)."""
    out: dict[str, tuple[int, int, bool]] = {}
    _count(unit, sets, out)
    return out


def _count(node: TreeNode, sets: dict[str, dict[str, str]],
           out: dict[str, tuple[int, int, bool]]) -> tuple[int, bool]:
    # a module function: a closure calling itself is a reference cycle on every call
    if isinstance(node, PodSet):
        n = len(sets.get(node.path, {}))
        out[node.path] = (n, 0, n >= node.min_pods)
        return n, n >= node.min_pods
    kids = [_count(c, sets, out) for c in node.children]
    placed = sum(n for n, _ in kids)
    sat = sum(1 for _, ok in kids if ok)  # as the verifier: a child whose minimum is 0
    # is satisfied with no pod (a Kthena role with minRoleReplicas 0)
    ok = sat >= node.min_groups and placed >= node.min_pods
    out[node.path] = (placed, sat, ok)
    return placed, ok
