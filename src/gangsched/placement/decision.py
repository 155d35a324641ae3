"""What the engine returns: a decision value, applied elsewhere (DESIGN.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class GroupOutcome:
    """How one node of the gang tree fared."""

    path: str
    kind: str  # "Group" or "PodSet"
    placed_pods: int
    min_pods: int
    size: int  # pods in the subtree
    satisfied_children: int = 0
    min_groups: int = 0
    children: int = 0
    domain: str | None = None  # the topology domain the group was pinned to, if any
    satisfied: bool = False
    domain_key: str | None = None  # that domain's label key and value, to pin it again
    domain_value: str | None = None


@dataclass
class Decision:
    unit: str  # path of the unit's root
    admitted: bool
    assignments: dict[str, str] = field(default_factory=dict)  # pod key -> node name
    groups: list[GroupOutcome] = field(default_factory=list)
    reason: str = ""
    minimum_pods: int = 0
    extra_pods: int = 0
    dry_runs: int = 0

    @property
    def placed(self) -> int:
        return len(self.assignments)
