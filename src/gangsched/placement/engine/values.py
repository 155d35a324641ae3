"""The values the phases pass around: scopes, candidate domains, placements of subtrees,
and the coded status an attempt ends with.

A :class:`SetPlacement` or :class:`GroupPlacement` records where a subtree's pods went in
the decision's transaction. It describes the transaction as it is while the search holds
it: the search undoes it (rolls back to its mark) when it moves on to another alternative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from gangsched.cluster.topology import CrossLevel, Level, Topology
from gangsched.gang import Group, PodSet

Scope = tuple[int, int, np.ndarray | None]  # node range [lo, hi) and its selection
Spill = tuple[Scope, ...]  # scopes extras may spill into, in order


@dataclass(frozen=True, slots=True)
class Candidate:
    """One domain to try: the node range [lo, hi) and, when not all of it, a selection."""

    lo: int
    hi: int
    level: Level | None = None  # None: the parent's scope as it is
    d: int = -1  # domain index in level (or in cross)
    topo: Topology | None = None
    sel: np.ndarray | None = None  # bool [N]: the nodes of [lo, hi) in scope (None: all)
    cross: CrossLevel | None = None  # a domain of a key outside the chain of levels

    @property
    def label(self) -> str | None:
        if self.cross is not None:
            return self.cross.values[self.d]
        if self.level is None or self.topo is None:
            return None
        return self.topo.domain_path(self.level, self.d)

    @property
    def pin(self) -> tuple[str | None, str | None]:
        """(label key, label value) of the chosen domain, or (None, None)."""
        if self.cross is not None:
            return self.cross.key, self.cross.values[self.d]
        if self.level is None:
            return None, None
        return self.level.key, self.level.values[self.d]

    @property
    def key(self) -> str | None:
        return self.pin[0]


@dataclass(slots=True)
class SetPlacement:
    """Pods of one set placed: ``counts[k][i]`` pods on node ``nodes[k][i]``."""

    node: PodSet
    lo: int
    hi: int
    outer: Spill  # wider scopes extras may spill into (preferred constraints)
    cand: Candidate | None = None
    sel: np.ndarray | None = None
    nodes: list[np.ndarray] = field(default_factory=list)
    counts: list[np.ndarray] = field(default_factory=list)
    placed: int = 0


@dataclass(slots=True)
class GroupPlacement:
    """A group placed: the placements of its children so far, by child index."""

    node: Group
    lo: int
    hi: int
    outer: Spill
    cand: Candidate | None = None
    sel: np.ndarray | None = None
    kids: dict[int, SetPlacement | GroupPlacement] = field(default_factory=dict)
    placed: int = 0


Placement = SetPlacement | GroupPlacement


def touched(r: Placement) -> int:
    """Nodes a placement uses (counted once per set)."""
    if isinstance(r, SetPlacement):
        return sum(len(n) for n in r.nodes)
    return sum(touched(k) for k in r.kids.values())


class Code(Enum):
    """How an attempt or a decision ended (kube-scheduler's status codes)."""

    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"  # does not fit now; the reasons say why
    UNRESOLVABLE = "UnschedulableAndUnresolvable"  # cannot fit whatever changes


@dataclass(frozen=True)
class Status:
    """A code plus the reasons behind it, one clause each."""

    code: Code
    reasons: tuple[str, ...] = ()

    @property
    def success(self) -> bool:
        return self.code is Code.SUCCESS

    @property
    def message(self) -> str:
        return "; ".join(self.reasons)


SUCCESS = Status(Code.SUCCESS)
