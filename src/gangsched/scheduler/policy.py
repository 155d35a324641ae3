"""How a workload is split into scheduling units and how one unit is placed.

The scheduler is policy-agnostic: the simulator compares ours with emulations of other
schedulers by swapping the policy (e.g. engine ``Options`` emulation switches, or no
preemption).
"""

from __future__ import annotations

from typing import Protocol

from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, minimum_pods, scheduling_units
from gangsched.model import Workload
from gangsched.placement.decision import Decision
from gangsched.placement.engine import Options, place, place_minimum


class Policy(Protocol):
    name: str
    preemption: bool  # may evict lower-priority pods to make room
    # minimums before extras across units: within a queue pass, extras are bound only
    # after every due unit's minimum was tried
    min_first: bool
    # with min_first, admission decides a unit's minimum and extras together (the extras
    # beside the minimum) and holds the extras as a plan until the end of the pass
    # (:mod:`.plans`); without it, admission places the minimum alone
    whole: bool
    # a waiting unit may take back extras of running units of its own or lower priority
    # (never their minimums)
    reclaim: bool
    # starvation protection: a unit queued longer than ``reserve_after`` reserves its best
    # domain, and units behind it do not see that domain until it is admitted
    reserve: bool
    # a unit with a run-time limit may use a domain reserved by a unit ahead of it when
    # it will be done before that unit can expect to start
    backfill: bool

    def units(self, workload: Workload) -> list[Group | PodSet]: ...

    def place(self, unit: Group | PodSet, state: ClusterState) -> Decision:
        """A dry run: decide ``unit`` on ``state`` without changing it."""
        ...


class GangschedPolicy:
    """The hierarchical engine, minimums before extras across units, with workload-aware
    preemption.

    With ``whole`` (the default) admission decides a unit's minimum and extras in one
    decision, so the extras sit beside the minimum (inside its narrowest domain); the
    minimum is bound at once and the extras when every due unit's minimum was tried,
    unless a later minimum needed their room (:mod:`.plans`). Without it, admission
    places the minimum alone, where the whole unit would go, and extras grow after the
    queue in later decisions that often find the minimum's domain taken and spread.
    Either way a waiting unit's minimum takes back extras of running units (reclaim).
    ``min_first=False`` turns this off: whole units in queue order, extras kept."""

    name = "gangsched"

    def __init__(self, options: Options | None = None, *, preemption: bool = True,
                 min_first: bool = True, whole: bool = True) -> None:
        self.options = options
        self.preemption = preemption
        self.min_first = min_first
        self.whole = whole
        self.reclaim = min_first
        self.reserve = True
        self.backfill = True
        self._options = options or Options()

    def units(self, workload: Workload) -> list[Group | PodSet]:
        if workload.tree is None:
            return []
        return scheduling_units(workload.tree)

    def place(self, unit: Group | PodSet, state: ClusterState) -> Decision:
        if self.min_first and not self.whole and minimum_pods(unit) > 0:  # the minimum,
            # where the whole unit would go (its extras grow beside it later)
            return place_minimum(unit, state, self._options, commit=False)
        return place(unit, state, self.options, commit=False)
