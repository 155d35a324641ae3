"""What a unit that lost pods needs (a value; the scheduler applies it).

Below a minimum, an ``all`` group is useless: what is left of it goes. When that is the
unit's root, the unit goes whole and is requeued. Otherwise a unit below its minimum is
degraded and repaired in place: its residual tree (the lost pods, with the minimum
restored where it is violated, pinned to the domains its running pods are in) is placed
like any unit; after ``stale_timeout`` without success it goes whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gangsched.placement.describe import plural
from gangsched.scheduler.queue import Unit
from gangsched.scheduler.tree import bound_in, broken_all_groups, satisfied


@dataclass
class Assessment:
    evict_whole: bool = False  # evict everything and requeue the unit
    evict: list[tuple[str, list[str]]] = field(default_factory=list)  # (group path, pods)
    degraded: bool = False  # below its minimum: repair in place
    reason: str = ""


def assess(u: Unit, lost: Mapping[str, str]) -> Assessment:
    """Decide what to do with a running unit after it lost pods (pod -> node)."""
    out = Assessment()
    nodes = sorted(set(lost.values()))
    what = f"lost {plural(len(lost), 'pod')}" + (f" on {', '.join(nodes)}" if nodes else "")
    if u.tree is None:
        return out
    broken = broken_all_groups(u.tree, u.sets)
    below = not satisfied(u.tree, u.sets)
    if any(g is u.tree for g in broken) or (below and u.disruption == "all"):
        out.evict_whole = True
        out.reason = (f"{what}; below the minimum of {u.tree.name} "
                      "(disruption all): evicted whole")
        return out
    for g in broken:
        out.evict.append((g.path, bound_in(g, u.sets)))
    evicted = {p for _, pods in out.evict for p in pods}
    if evicted:
        sets = {k: {p: n for p, n in v.items() if p not in evicted} for k, v in u.sets.items()}
        below = not satisfied(u.tree, sets)
    if below:
        out.degraded = True
        out.reason = f"{what}; below the minimum: repairing in place"
    return out
