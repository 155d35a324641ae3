"""How a workload is split into scheduling units and how one unit is placed.

The scheduler is policy-agnostic: the simulator compares ours with emulations of other
schedulers by swapping the policy (e.g. engine ``Options`` emulation switches, or no
preemption).
"""

from __future__ import annotations

from typing import Protocol

from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet, scheduling_units
from gangsched.model import Workload
from gangsched.placement.decision import Decision
from gangsched.placement.engine import Options, place


class Policy(Protocol):
    name: str
    preemption: bool

    def units(self, workload: Workload) -> list[Group | PodSet]: ...

    def place(self, unit: Group | PodSet, state: ClusterState) -> Decision:
        """A dry run: decide ``unit`` on ``state`` without changing it."""
        ...


class GangschedPolicy:
    """The hierarchical engine, with workload-aware preemption."""

    name = "gangsched"

    def __init__(self, options: Options | None = None, *, preemption: bool = True) -> None:
        self.options = options
        self.preemption = preemption

    def units(self, workload: Workload) -> list[Group | PodSet]:
        if workload.tree is None:
            return []
        return scheduling_units(workload.tree)

    def place(self, unit: Group | PodSet, state: ClusterState) -> Decision:
        return place(unit, state, self.options, commit=False)
