"""A unit's minimum alone, placed where the whole unit would go.

Minimum first (the scheduler's admission, ``place``'s first pass) places only a unit's
minimum, so no unit's extras take what another unit's minimum needs; the extras grow
later, inside the domains the minimum's pods are in. Placed alone, the minimum goes to
the domain that fits *it* tightest: often one with no room left beside it, so the extras
spill across the required domain or find no room at all. :func:`place_minimum` keeps
both: it places the minimum, and when the unit asks for extras, asks where the whole
unit would go (a dry run) and places the minimum again with its root's required
constraint pinned to that domain. The extras then find room next to their minimum when
their turn comes, unless a waiting unit's minimum took it first.

Same verdict as the plain minimum: the pinned search only moves an admitted minimum and
falls back to the plain one when the pinned domain does not take it.
"""

from __future__ import annotations

from dataclasses import replace

from gangsched.cluster.state import ClusterState
from gangsched.gang import TreeNode, minimum_pods, pin_root
from gangsched.placement.decision import Decision
from gangsched.placement.engine.attempts import place
from gangsched.placement.engine.options import Options
from gangsched.placement.engine.trace import current, unrecorded


def place_minimum(unit: TreeNode, state: ClusterState, options: Options, *,
                  commit: bool = True) -> Decision:
    """The unit's minimum (``options`` with ``extras`` off), inside the domain of its
    root's required level the whole unit (``options``) would take."""
    alone = replace(options, extras=False)
    need = minimum_pods(unit)
    if need == 0 or need >= unit.size or not unit.topology:
        # no extras to keep room for; or no domain of the root's to keep it in (a root
        # without constraints reports none, so the whole unit's dry run could not move
        # the minimum): one search, not three
        return place(unit, state, alone, commit=commit)
    with unrecorded():  # explain tells of the placement that follows these dry runs
        d = place(unit, state, alone, commit=False)
        full = (place(unit, state, replace(options, extras=True), commit=False)
                if d.admitted else None)
    if full is None:  # the minimum does not fit: decided again, so explain sees why
        return place(unit, state, alone, commit=False) if current() is not None else d
    root = full.groups[0] if full.admitted and full.extra_pods and full.groups else None
    got = d.groups[0] if d.groups else None
    if (root is not None and got is not None and root.domain_key and root.domain_value
            and (got.domain_key, got.domain_value) != (root.domain_key, root.domain_value)):
        pinned = pin_root(unit, root.domain_key, root.domain_value)
        if current() is None:
            moved = place(pinned, state, alone, commit=commit)
            if moved.admitted:
                return moved
        else:  # explain records only the placement that is kept
            with unrecorded():
                fits = place(pinned, state, alone, commit=False).admitted
            if fits:
                return place(pinned, state, alone, commit=commit)
    if commit or current() is not None:
        # the engine is a pure function of (tree, state): deciding again makes the same
        # choice, committed (or recorded) this time
        return place(unit, state, alone, commit=commit)
    return d
