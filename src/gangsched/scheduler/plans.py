"""Planned extras: minimums before extras, with the extras beside their minimum.

Under a policy that admits whole units (``Policy.whole``), a unit's admission decides
its minimum and its extras together, so the extras sit beside the minimum (inside the
narrowest domain that holds them). Only the minimum is bound at once; the extras are
held for the unit as a *plan* until every due unit's minimum was tried:

- a later unit in the pass sees the planned extras as used, so its minimum goes
  elsewhere when it can (the extras keep their place beside their minimum);
- when it fits only without them, the plans give way to it (a minimum before anyone's
  extras), and a plan that no longer fits whole is dropped;
- at the end of the pass what is left of the plans is bound. A dropped plan's extras
  grow later like any unit's (:mod:`.extras`), where there is room.

Nothing is bound and then taken back within a pass: a plan is only charged to views.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from gangsched.cluster.state import ClusterState
from gangsched.gang import exclusive_constraints, walk
from gangsched.scheduler.capacity import assume
from gangsched.scheduler.status import UnitState
from gangsched.scheduler.tree import surplus
from gangsched.scheduler.unit import Unit


@dataclass(frozen=True, slots=True)
class Plan:
    unit: Unit
    pods: Mapping[str, str]  # extra pod -> node name


def split(u: Unit, assignments: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(the minimum to bind now, the extras to plan) of an admitted decision for ``u``:
    the extras are the decision's own pods the unit can give up and stay satisfied."""
    assert u.tree is not None
    sets = {path: dict(pods) for path, pods in u.pods.sets.items()}
    for p, n in assignments.items():
        path = u.pods.set_of.get(p)
        if path is not None:
            sets.setdefault(path, {})[p] = n
    spare = {p for chunk in surplus(u.tree, sets, evict=False)
             if all(q in assignments for q in chunk) for p in chunk}
    now = {p: n for p, n in assignments.items() if p not in spare}
    return now, {p: n for p, n in assignments.items() if p in spare}


def plannable(u: Unit) -> bool:
    """Whether ``u``'s extras may be held as a plan: not when its tree claims exclusive
    domains (a plan is checked against capacity only, not against other units' claims);
    such a unit's extras grow after the queue instead."""
    return u.tree is not None and not any(exclusive_constraints(n) for n in walk(u.tree))


class Plans:
    """The plans of one queue pass, in admission order."""

    def __init__(self) -> None:
        self._plans: dict[str, Plan] = {}
        self._checked: tuple[int, int] | None = None  # (state generation, plans) checked

    def __bool__(self) -> bool:
        return bool(self._plans)

    def add(self, u: Unit, pods: Mapping[str, str]) -> None:
        if pods:
            self._plans[u.name] = Plan(u, dict(pods))
            self._checked = None

    def view(self, state: ClusterState, base: ClusterState, hidden: np.ndarray
             ) -> ClusterState | None:
        """``base`` (the view a unit may use of ``state``) with the plans that still fit
        on ``state`` charged as used, or None when there are none."""
        self._keep_fitting(state)
        if not self._plans:
            return None
        view = base.snapshot()
        index = view.topology.index
        skip = set(hidden.tolist())  # hidden nodes look used up already
        assume(view, ((p, n, plan.unit.pods.requests(p)) for plan in self._plans.values()
                      for p, n in plan.pods.items() if index.get(n) not in skip))
        return view

    def take(self, state: ClusterState) -> Iterator[Plan]:
        """The plans that still fit whole, in admission order (and no more plans)."""
        self._keep_fitting(state)
        plans, self._plans = self._plans, {}
        yield from plans.values()

    def _keep_fitting(self, state: ClusterState) -> None:
        """Drop the plans that no longer fit whole on ``state`` beside the plans before
        them (each unit's minimum bound since is in ``state``), or whose unit left."""
        key = (state.generation, len(self._plans))
        if self._checked == key:
            return
        free = state.free.copy()
        index = state.topology.index
        n_nodes = max(1, state.n_nodes)
        for name, plan in list(self._plans.items()):
            u = plan.unit
            cells: dict[int, int] = {}  # resource row * nodes + node -> amount
            ok = u.state == UnitState.admitted
            for p, n in plan.pods.items():
                j = index.get(n)
                if not ok or j is None or p not in u.pods.set_of:
                    ok = False
                    break
                shape = state.shape(u.pods.requests(p))
                for r, a in zip(shape.index, shape.amount, strict=True):
                    cells[r * n_nodes + j] = cells.get(r * n_nodes + j, 0) + a
            if ok and cells:
                at = np.fromiter(cells, dtype=np.int64, count=len(cells))
                rows, cols = at // n_nodes, at % n_nodes
                amount = np.fromiter(cells.values(), dtype=np.int64, count=len(cells))
                ok = bool((free[rows, cols] >= amount).all())
                if ok:
                    free[rows, cols] -= amount
            if not ok:
                del self._plans[name]
        self._checked = (state.generation, len(self._plans))
