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


def place_minimum(unit: TreeNode, state: ClusterState, options: Options, *,
                  commit: bool = True) -> Decision:
    """The unit's minimum (``options`` with ``extras`` off), inside the domain of its
    root's required level the whole unit (``options``) would take."""
    alone = replace(options, extras=False)
    need = minimum_pods(unit)
    if need == 0 or need >= unit.size:  # no extras to keep room for
        return place(unit, state, alone, commit=commit)
    d = place(unit, state, alone, commit=False)
    if not d.admitted:
        return d
    full = place(unit, state, replace(options, extras=True), commit=False)
    root = full.groups[0] if full.admitted and full.extra_pods and full.groups else None
    got = d.groups[0] if d.groups else None
    if (root is not None and got is not None and root.domain_key and root.domain_value
            and (got.domain_key, got.domain_value) != (root.domain_key, root.domain_value)):
        pinned = place(pin_root(unit, root.domain_key, root.domain_value), state, alone,
                       commit=commit)
        if pinned.admitted:
            return pinned
    # the engine is a pure function of (tree, state): deciding again makes the same choice
    return place(unit, state, alone, commit=True) if commit else d
