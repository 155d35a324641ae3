"""A node of the gang tree with no pods (a role scaled to zero), or whose minimum is no
pods (an optional role), may place nothing, and placing nothing breaks no topology
constraint, whatever it names: a pinned value no node has, a level no node is labelled
with, a key outside the chain. It is satisfied, as the exact solver finds; a role with a
minimum of none but pods to place places none of them outside what it names."""

from __future__ import annotations

import pytest

from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.testing.builders import group, node, podset

ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"
SWITCH = "example.com/switch"  # no node has it


def cluster() -> ClusterState:
    nodes = [node(f"{z}-h{h}", {ZONE: z, RACK: f"{z}-r{h // 2}"}) for z in ("z0", "z1")
             for h in range(4)]
    return ClusterState.from_nodes(nodes, [ZONE, RACK])


CONSTRAINTS = {
    "pinned to a zone no node has": (Constraint(ZONE, "required", "nowhere"),),
    "a rack pinned outside its parent's zone": (Constraint(RACK, "required", "z1-r0"),),
    "a key no node has": (Constraint(SWITCH, "required"),),
    "a pinned key no node has": (Constraint(SWITCH, "required", "s0"),),
}


def two_roles(empty: tuple[Constraint, ...]) -> Group:
    """A gang of two required roles: two 8-GPU pods in zone z0, and a role of no pods."""
    return group("job", [
        podset("job/workers", 2, gpu=8),
        group("job/spare", [podset("job/spare/pods", 0, gpu=8)], topology=empty),
    ], topology=(Constraint(ZONE, "required", "z0"),))


@pytest.mark.parametrize("case", CONSTRAINTS)
@pytest.mark.parametrize("opts", [Options(), Options(exact=0), Options(fast=False)],
                         ids=["default", "search-only", "generic"])
def test_a_role_of_no_pods_is_satisfied_whatever_its_constraints_name(
        case: str, opts: Options) -> None:
    state = cluster()
    before = state.snapshot()
    unit = two_roles(CONSTRAINTS[case])
    got = solve(unit, before, time_limit=10)
    assert got.feasible  # the exact solver: nothing to place, nothing to break
    d = place(unit, state, opts)
    assert d.admitted, d.reason
    assert {n.split("-")[0] for n in d.assignments.values()} == {"z0"}
    assert len(d.assignments) == 2 and verify(unit, before, d.assignments) == []
    spare = {g.path: g for g in d.groups}["job/spare"]
    assert spare.satisfied and spare.placed_pods == 0 and spare.domain is None


@pytest.mark.parametrize("case", CONSTRAINTS)
def test_an_empty_unit_is_admitted_whatever_its_constraints_name(case: str) -> None:
    state = cluster()
    unit = group("empty", [podset("empty/pods", 0, gpu=8)], topology=CONSTRAINTS[case])
    d = place(unit, state)
    assert d.admitted and d.assignments == {}, d.reason


def test_a_role_with_pods_still_fails_on_a_value_no_node_has() -> None:
    state = cluster()
    unit = group("job", [
        podset("job/workers", 2, gpu=8),
        group("job/more", [podset("job/more/pods", 1, gpu=8)],
              topology=(Constraint(ZONE, "required", "nowhere"),)),
    ])
    d = place(unit, state, commit=False)
    assert not d.admitted and "nowhere" in d.reason
    assert not solve(unit, state, time_limit=10).feasible


def optional_role(constraint: tuple[Constraint, ...]) -> Group:
    """A gang of two required children: two 8-GPU pods in zone z0, and a role of two pods
    whose minimum is none (its pods are extras), constrained as given."""
    return group("job", [
        podset("job/workers", 2, gpu=8),
        group("job/optional", [podset("job/optional/pods", 2, gpu=8, min_pods=0)],
              topology=constraint),
    ], topology=(Constraint(ZONE, "required", "z0"),))


@pytest.mark.parametrize("case", CONSTRAINTS)
@pytest.mark.parametrize("opts", [Options(), Options(exact=0), Options(fast=False)],
                         ids=["default", "search-only", "generic"])
def test_a_role_of_no_minimum_is_satisfied_by_none_of_its_pods_where_nothing_is_allowed(
        case: str, opts: Options) -> None:
    state = cluster()
    before = state.snapshot()
    unit = optional_role(CONSTRAINTS[case])
    assert solve(unit, before, time_limit=10).feasible
    d = place(unit, state, opts)
    assert d.admitted, d.reason
    assert verify(unit, before, d.assignments) == []
    # the two workers in z0, and none of the optional pods: they may go nowhere
    assert len(d.assignments) == 2
    assert not any("job-optional-" in p for p in d.assignments)
    assert {n.split("-")[0] for n in d.assignments.values()} == {"z0"}
    optional = {g.path: g for g in d.groups}["job/optional"]
    assert optional.satisfied and optional.placed_pods == 0


def test_a_role_of_no_minimum_still_grows_where_its_constraint_allows() -> None:
    state = cluster()
    before = state.snapshot()
    unit = optional_role((Constraint(RACK, "required"),))
    d = place(unit, state)
    assert d.admitted, d.reason
    assert verify(unit, before, d.assignments) == []
    optional = [n for p, n in d.assignments.items() if "job-optional-" in p]
    assert len(optional) == 2  # its extras, in one rack of z0 (hosts 2r and 2r+1)
    assert len({(n.split("-")[0], int(n.split("-h")[1]) // 2) for n in optional}) == 1


def test_an_optional_unit_whose_constraint_names_nothing_is_still_rejected() -> None:
    """The unit itself is not a role: one that can place no pod is not admitted."""
    state = cluster()
    unit = group("solo", [podset("solo/pods", 2, gpu=8, min_pods=0)],
                 topology=(Constraint(ZONE, "required", "nowhere"),))
    d = place(unit, state, commit=False)
    assert not d.admitted and d.assignments == {}


def test_optional_roles_with_no_domain_do_not_multiply_the_search() -> None:
    """Each is left out once and counted only when the count needs it: a gang needing 8
    of its children and 2 pods, from twelve such roles and a role that fits nowhere, is
    rejected after about 140 dry runs, not one or more per subset of the twelve (2,000
    and more when each was tried both left out and placed empty)."""
    state = cluster()
    roles = [group(f"job/opt{k}", [podset(f"job/opt{k}/pods", 1, gpu=8, min_pods=0)],
                   topology=(Constraint(ZONE, "required", "nowhere"),)) for k in range(12)]
    # three 8-GPU pods in one rack of two nodes
    bad = group("job/bad", [podset("job/bad/pods", 3, gpu=8,
                                   topology=(Constraint(RACK, "required"),))])
    unit = group("job", [*roles, bad], min_groups=8, min_pods=2)
    d = place(unit, state, Options(exact=0), commit=False)
    assert not d.admitted
    assert d.dry_runs < 500, d.dry_runs
    assert not solve(unit, state, time_limit=10).feasible
    # with a role that fits instead, the twelve are satisfied by placing nothing
    ok = group("job", [*roles, podset("job/w", 2, gpu=8)])
    d = place(ok, state, Options(exact=0), commit=False)
    assert d.admitted and len(d.assignments) == 2, d.reason
