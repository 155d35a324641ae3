"""Decide every workload of an assembled plan, once (the use case of ``gangsched place``).

All trees are validated before anything is placed, so a bad input changes nothing.
Workloads go in priority order (higher first), then input order; each scheduling unit is
all-or-nothing and sees the units admitted before it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gangsched.api.errors import ValidationError
from gangsched.cluster.state import ClusterState
from gangsched.gang import scheduling_units, validate
from gangsched.model import Plan, Workload
from gangsched.placement.decision import GroupOutcome
from gangsched.placement.engine import Options, place


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
    """Validate every ready tree; the first problem is raised naming its workload."""
    for w in plan.ready:
        assert w.tree is not None
        try:
            validate(w.tree, levels)
        except ValidationError as e:
            raise ValidationError(f"{w.kind}/{w.name}: {e}") from None


def place_plan(
    plan: Plan, state: ClusterState, options: Options | None = None
) -> list[WorkloadOutcome]:
    """Decide every workload; returns outcomes in input order (waiting ones included)."""
    check_trees(plan, state.topology.keys)
    order = sorted(range(len(plan.workloads)),
                   key=lambda i: (-plan.workloads[i].priority, i))
    outcomes: dict[int, WorkloadOutcome] = {}
    for i in order:
        outcomes[i] = decide(plan.workloads[i], state, options)
    return [outcomes[i] for i in range(len(plan.workloads))]


def decide(w: Workload, state: ClusterState, options: Options | None) -> WorkloadOutcome:
    if w.tree is None or w.waiting:
        return WorkloadOutcome(w.name, w.kind, False, reason=w.waiting or "waiting",
                               waiting=True, total_pods=len(w.pods))
    out = WorkloadOutcome(w.name, w.kind, True, total_pods=w.tree.size)
    for unit in scheduling_units(w.tree):
        d = place(unit, state, options)
        out.groups.extend(d.groups)
        if d.admitted:
            out.pods.update(d.assignments)
        elif out.admitted:
            out.admitted, out.reason = False, d.reason
    return out
