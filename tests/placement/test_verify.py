"""The verifier flags every kind of broken rule on hand-built bad assignments."""

from __future__ import annotations

from gangsched.api.types import Taint
from gangsched.cluster.state import ClusterState
from gangsched.gang import Group, PodSet
from gangsched.placement import place
from gangsched.placement.exact import solve
from gangsched.placement.verify import achievable, tree_minimum, verify
from gangsched.testing.builders import (
    BLOCK,
    HOST,
    RACK,
    ZONE,
    cluster,
    cons,
    group,
    node,
    podset,
    replicas,
    take,
)

H = ["n-z0-b0-r0-h0", "n-z0-b0-r0-h1", "n-z0-b0-r1-h0", "n-z0-b0-r1-h1"]


def state4() -> ClusterState:
    """Two racks of two 8-GPU hosts."""
    return cluster((("zone", 1), ("block", 1), ("rack", 2), ("host", 2)))


def pods(ps: PodSet, *nodes: str) -> dict[str, str]:
    return dict(zip(ps.pods, nodes, strict=False))


def one(problems: list[str], needle: str) -> None:
    assert any(needle in p for p in problems), problems


def test_a_sound_assignment_has_no_violations() -> None:
    unit = group("job", [podset("job/w", 4, gpu=8)], topology=cons("block"))
    assert verify(unit, state4(), pods(unit.children[0], *H)) == []  # type: ignore[arg-type]


def test_capacity_exceeded() -> None:
    ps = podset("job/w", 2, gpu=8)
    problems = verify(group("job", [ps]), state4(), pods(ps, H[0], H[0]))
    one(problems, "nvidia.com/gpu over capacity (placed 16, free 8)")


def test_unknown_pod_and_node() -> None:
    ps = podset("job/w", 1, gpu=1)
    problems = verify(group("job", [ps]), state4(), {ps.pods[0]: "nowhere", "x/y": H[0]})
    one(problems, "on unknown node 'nowhere'")
    one(problems, "unknown pod 'x/y'")


def test_pod_on_a_node_failing_its_mask() -> None:
    extra = [node("tainted", {RACK: "t"}, taints=(Taint("k", "v", "NoSchedule"),)),
             node("cordoned", {RACK: "t"}, unschedulable=True)]
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)), extra=extra)
    ps = podset("job/w", 2, gpu=1)
    problems = verify(group("job", [ps]), state, pods(ps, "tainted", "cordoned"))
    one(problems, "on node tainted, which is unschedulable or fails")
    one(problems, "on node cordoned, which is unschedulable or fails")


def test_max_pods_per_node() -> None:
    ps = podset("job/w", 3, gpu=1, max_per_node=2)
    problems = verify(group("job", [ps]), state4(), pods(ps, H[0], H[0], H[0]))
    one(problems, "3 pods on node n-z0-b0-r0-h0, above max_pods_per_node 2")


def test_partial_extra_child_breaks_all_or_nothing() -> None:
    unit = replicas("svc", 2, pods=2, gpu=8, min_replicas=1)
    r0, r1 = (c.children[0] for c in unit.children)  # type: ignore[union-attr]
    assignment = {**pods(r0, H[0], H[1]), **pods(r1, H[2])}  # r1 holds 1 of its 2 pods
    problems = verify(unit, state4(), assignment)
    one(problems, "svc/svc-1/pods: has 1 pod(s) placed but is not satisfied")
    one(problems, "svc/svc-1: has 1 pod(s) placed but is not satisfied")
    assert not any("svc: minimum not met" in p for p in problems)  # the root is satisfied


def test_minimum_not_met() -> None:
    unit = replicas("svc", 3, pods=1, gpu=8, min_replicas=2)
    first = unit.children[0].children[0]  # type: ignore[union-attr]
    problems = verify(unit, state4(), pods(first, H[0]))  # type: ignore[arg-type]
    one(problems, "svc: minimum not met (root not satisfied): 1 of min_groups 2 children")
    empty = verify(unit, state4(), {})
    one(empty, "0 of min_groups 2 children satisfied")
    pods_min = group("job", [podset("job/w", 4, gpu=1, min_pods=0)], min_groups=0, min_pods=3)
    one(verify(pods_min, state4(), pods(pods_min.children[0], H[0], H[1])),  # type: ignore[arg-type]
        "2 of min_pods 3 pods placed")


def test_required_topology_broken() -> None:
    ps = podset("job/w", 2, gpu=8)
    unit = group("job", [ps], topology=cons("rack"))
    problems = verify(unit, state4(), pods(ps, H[0], H[2]))
    one(problems, "job: required topology broken: pods span 2 domains of gangsched.io/rack")
    one(problems, "job: minimum not met (root not satisfied): required topology broken")
    # hostname is not a topology level of this cluster: it means one node
    on_host = group("job", [podset("job/w", 2, gpu=1)], topology=cons("host"))
    assert on_host.topology[0].key == HOST
    one(verify(on_host, state4(), pods(on_host.children[0], H[0], H[1])),  # type: ignore[arg-type]
        "pods span 2 domains of kubernetes.io/hostname")
    assert verify(on_host, state4(), pods(on_host.children[0], H[0], H[0])) == []  # type: ignore[arg-type]


def test_node_lacking_the_required_label() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)),
                    extra=[node("bare")])
    ps = podset("job/w", 1, gpu=1)
    unit = group("job", [ps], topology=cons("rack"))
    one(verify(unit, state, pods(ps, "bare")), "pods on node(s) lacking label gangsched.io/rack")


def test_tree_minimum() -> None:
    a, b = podset("j/a", 3, gpu=1), podset("j/b", 3, gpu=1)
    assert tree_minimum(group("j", [a, b], min_groups=0, min_pods=4)) == 6
    assert tree_minimum(group("j", [a, b], min_groups=1)) == 3
    elastic = podset("j/c", 5, gpu=1, min_pods=2)
    assert achievable(group("j", [a, elastic], min_groups=1, min_pods=4)) == set(range(4, 9))
    assert tree_minimum(Group("j", "j", [a, b], min_groups=0, min_pods=0)) == 0


def extra_child_with_zero_minimum() -> Group:
    return group("job", [podset("job/a", 1, gpu=1), podset("job/b", 1, gpu=1, min_pods=0),
                         podset("job/c", 1, gpu=16)], min_groups=0, min_pods=3)


def test_engine_extra_child_with_zero_minimum_is_counted_once() -> None:
    # only a and b can be placed (c needs 16 GPUs): 2 < min_pods 3, the unit must be rejected
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)))
    unit = extra_child_with_zero_minimum()
    d = place(unit, state, commit=False)
    if d.admitted:
        assert verify(unit, state, d.assignments) == []
    assert not d.admitted


def test_engine_preferred_host_stays_inside_a_valid_required_domain() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 1)),
                    extra=[node("bare", {ZONE: "z0", BLOCK: "z0-b0"})])  # no rack label
    take(state, "n-z0-b0-r0-h0", gpu=8)  # the only racked node is full
    unit = group("job", [podset("job/w", 1, gpu=1)], topology=cons("rack", "host~"))
    d = place(unit, state, commit=False)
    if d.admitted:
        assert verify(unit, state, d.assignments) == []
    assert not d.admitted


def test_group_cap_is_checked_by_verifier_and_solver() -> None:
    state = cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", 2)))
    role = group("r", [podset("r/a", 2, gpu=1), podset("r/b", 1, gpu=1)])
    role.max_pods_per_node = 2
    node = state.topology.nodes[0].name
    bad = {p: node for ps in role.children for p in ps.pods}  # type: ignore[union-attr]
    assert any("above max_pods_per_node 2" in v for v in verify(role, state, bad))
    assert solve(role, state).feasible
    role.max_pods_per_node = 1
    assert not solve(role, state).feasible
