"""Gang tree validation: each rule rejects with a message naming the offending path."""

from __future__ import annotations

import pytest

from gangsched.api.errors import ValidationError
from gangsched.gang import Constraint, Group, PodSet, scheduling_units, validate
from gangsched.testing.builders import BLOCK, RACK, ZONE, group, podset

LEVELS = [ZONE, BLOCK, RACK]


def test_a_valid_tree_passes() -> None:
    tree = group("w", [group("w/a", [podset("w/a/p", 2)], topology=(Constraint(RACK),))],
                 topology=(Constraint(ZONE),))
    validate(tree, LEVELS)


@pytest.mark.parametrize(
    ("tree", "message"),
    [
        pytest.param(group("g", [podset("g/p", 1)], min_groups=2), "min_groups 2 exceeds",
                     id="min-groups-over-children"),
        pytest.param(group("g", [podset("g/p", 1)], min_groups=-1), "min_groups must be >= 0",
                     id="negative-min-groups"),
        pytest.param(group("g", [podset("g/p", 2)], min_pods=3), "min_pods 3 exceeds the 2",
                     id="min-pods-over-subtree"),
        pytest.param(podset("p", 2, min_pods=3), "min_pods 3 exceeds its 2 pods",
                     id="podset-min-over-size"),
        pytest.param(podset("p", 2, min_pods=-1), "min_pods must be >= 0", id="negative-min-pods"),
        pytest.param(group("g", [group("g/a", [podset("g/a/p", 1)],
                                       topology=(Constraint(ZONE),))],
                           topology=(Constraint(RACK),)),
                     "wider than its parent's", id="child-wider-than-parent"),
        pytest.param(group("g", [podset("g/p", 1), podset("g/p", 1)]), "duplicate path",
                     id="duplicate-path"),
        pytest.param(podset("p", 1, max_per_node=0), "max_pods_per_node", id="zero-cap"),
        pytest.param(podset("p", 1, topology=(Constraint("", "required"),)), "empty key",
                     id="empty-topology-key"),
    ],
)
def test_invalid_trees_are_rejected(tree: Group | PodSet, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        validate(tree, LEVELS)


def test_depth_limit() -> None:
    node: Group | PodSet = podset("p", 1)
    for i in range(20):
        node = group(f"g{i}", [node])
    with pytest.raises(ValidationError, match="deeper than"):
        validate(node)


def test_negative_request_is_rejected() -> None:
    bad = PodSet("p", "p", ("default/p-0",), {"cpu": -1, "pods": 1}, min_pods=1)
    with pytest.raises(ValidationError, match="negative request"):
        validate(bad)


def test_basic_group_children_are_separate_units() -> None:
    a, b = podset("r/a", 2), podset("r/b", 1, min_pods=0)
    root = group("r", [a, b], min_groups=0)
    assert scheduling_units(root) == [a, b]
    gang = group("r", [a, b], min_groups=1)
    assert scheduling_units(gang) == [gang]


def test_a_basic_group_with_a_required_topology_or_a_cap_stays_one_unit() -> None:
    """Its pods must share one domain (or its per-node cap): split into units they were
    placed apart (sound-s29 r3)."""
    a, b = podset("r/a", 2), podset("r/b", 1, min_pods=0)
    racked = group("r", [a, b], min_groups=0, topology=(Constraint("gangsched.io/rack"),))
    assert scheduling_units(racked) == [racked]
    capped = group("r", [a, b], min_groups=0)
    capped.max_pods_per_node = 1
    assert scheduling_units(capped) == [capped]
    preferred = group("r", [a, b], min_groups=0,
                      topology=(Constraint("gangsched.io/rack", "preferred"),))
    assert scheduling_units(preferred) == [a, b]
