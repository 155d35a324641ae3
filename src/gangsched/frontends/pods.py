"""Helpers every front-end uses on pods: natural name order, and splitting a group's pods
into PodSets of identical pods (same requests, same node requirements)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gangsched.api.types import Pod
from gangsched.gang import PodSet

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key putting ``x-2`` before ``x-10`` (any two names compare)."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(text))


def identical(pods: Sequence[Pod]) -> list[list[Pod]]:
    """``pods`` split into lists of identical requests and node requirements, in order of
    first appearance."""
    shapes: dict[object, list[Pod]] = {}
    for pod in pods:
        shapes.setdefault((tuple(sorted(pod.requests.items())), pod.requirements), []).append(pod)
    return list(shapes.values())


def podset(name: str, parent: str, members: Sequence[Pod], min_pods: int) -> PodSet:
    """A PodSet ``name`` under the node at path ``parent``, of identical ``members``."""
    return PodSet(
        name=name, path=f"{parent}/{name}", pods=tuple(p.key for p in members),
        requests=dict(members[0].requests), requirements=members[0].requirements,
        min_pods=min_pods, from_limits=from_limits(members),
    )


def from_limits(members: Sequence[Pod]) -> tuple[str, ...]:
    """The resources some of ``members`` request only through their limits, sorted."""
    first = members[0].from_limits if members else ()
    if all(p.from_limits == first for p in members):
        return first
    return tuple(sorted({name for p in members for name in p.from_limits}))
