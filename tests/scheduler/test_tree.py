"""Residual trees, surplus and broken ``all`` groups: pure functions of (tree, bound)."""

from __future__ import annotations

from gangsched.gang import Constraint, Group, PodSet, minimum_pods, podsets
from gangsched.scheduler.tree import (
    broken_all_groups,
    residual,
    satisfied,
    surplus,
    unit_name,
)
from gangsched.testing.builders import RACK, cons, group, podset, replicas


def rack_of(node: str, key: str) -> tuple[tuple[str, str], ...]:
    return ((RACK, {"n0": "r0", "n1": "r0", "n2": "r1"}[node]),) if key == RACK else ()


def svc() -> Group:
    return group("s", [
        replicas("s/prefill", 2, pods=1, gpu=8, min_replicas=1),
        replicas("s/decode", 3, pods=2, gpu=8, min_replicas=2),
    ], topology=cons("rack"))


P = "default/s-prefill-prefill-{}-pods-{}"
D = "default/s-decode-decode-{}-pods-{}"


def sets_of(bound: dict[str, str]) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    for pod, node in bound.items():
        role = "prefill" if "prefill" in pod else "decode"
        i = pod.split("-")[-3]
        out.setdefault(f"s/{role}/{role}-{i}/pods", {})[pod] = node
    return out


def test_minimum_and_satisfaction() -> None:
    t = svc()
    assert minimum_pods(t) == 1 + 2 * 2
    full = {P.format(0, 0): "n0", D.format(0, 0): "n0", D.format(0, 1): "n1",
            D.format(1, 0): "n1", D.format(1, 1): "n1"}
    assert satisfied(t, sets_of(full))
    assert not satisfied(t, sets_of({k: v for k, v in full.items() if k != D.format(1, 1)}))


def test_residual_of_a_satisfied_unit_is_extras_pinned_to_its_rack() -> None:
    bound = {P.format(0, 0): "n0", D.format(0, 0): "n0", D.format(0, 1): "n1",
             D.format(1, 0): "n1", D.format(1, 1): "n1"}
    r = residual(svc(), sets_of(bound), rack_of)
    assert isinstance(r, Group)
    assert r.topology == (Constraint(RACK, "required", "r0"),)
    assert (r.min_groups, r.min_pods) == (0, 0)
    prefill, decode = r.children
    assert isinstance(prefill, Group) and isinstance(decode, Group)
    assert [c.path for c in prefill.children] == ["s/prefill/prefill-1"]  # unplaced replica
    assert prefill.min_groups == 0
    extra = decode.children[0]
    assert isinstance(extra, Group) and extra.path == "s/decode/decode-2"
    assert extra.min_groups == 1  # an extra child keeps its own minimum: all or nothing
    assert isinstance(extra.children[0], PodSet) and extra.children[0].min_pods == 2


def test_residual_of_a_broken_unit_repairs_the_broken_replica_inside_the_rack() -> None:
    bound = {P.format(0, 0): "n0", D.format(0, 0): "n0", D.format(0, 1): "n1",
             D.format(1, 0): "n1"}  # decode-1 lost a pod
    r = residual(svc(), sets_of(bound), rack_of)
    assert isinstance(r, Group) and r.topology == (Constraint(RACK, "required", "r0"),)
    decode = next(c for c in r.children if c.path == "s/decode")
    assert isinstance(decode, Group) and decode.min_groups == 1
    assert [c.path for c in decode.children] == ["s/decode/decode-1"]  # not decode-2
    broken = decode.children[0]
    assert isinstance(broken, Group)
    ps = broken.children[0]
    assert isinstance(ps, PodSet)
    assert ps.pods == (D.format(1, 1),) and ps.min_pods == 1


def test_nothing_left_to_place() -> None:
    t = podset("p", 2, gpu=1, topology=cons("rack"))
    assert residual(t, {"p": {"default/p-0": "n0", "default/p-1": "n0"}}, rack_of) is None


def test_surplus_takes_whole_extra_children_then_pods_above_minimums() -> None:
    bound = {P.format(0, 0): "n0", P.format(1, 0): "n0",
             D.format(0, 0): "n0", D.format(0, 1): "n1", D.format(1, 0): "n1",
             D.format(1, 1): "n1", D.format(2, 0): "n2", D.format(2, 1): "n2"}
    chunks = surplus(svc(), sets_of(bound))
    assert chunks == [[P.format(1, 0)], [D.format(2, 0), D.format(2, 1)]]


def test_all_groups_give_no_surplus_and_break_whole() -> None:
    t = svc()
    decode = t.children[1]
    assert isinstance(decode, Group)
    decode.disruption = "all"
    bound = {P.format(0, 0): "n0", D.format(0, 0): "n0", D.format(0, 1): "n1",
             D.format(1, 0): "n1", D.format(1, 1): "n1", D.format(2, 0): "n2",
             D.format(2, 1): "n2"}
    assert surplus(t, sets_of(bound)) == []  # decode's third replica may not go alone
    del bound[D.format(1, 1)]
    del bound[D.format(2, 1)]
    assert [g.path for g in broken_all_groups(t, sets_of(bound))] == ["s/decode"]


def test_unit_names() -> None:
    unit = podset("ns/app/web", 1)
    assert unit_name("ns/app", "ns/app", unit, alone=True) == "ns/app"
    assert unit_name("ns/app", "ns/app", unit, alone=False) == "ns/app/web"
    assert unit_name("w", "elsewhere", unit, alone=False) == "w/web"


SWITCH = "gangsched.io/switch"


def test_residual_pins_every_required_key_of_a_node() -> None:
    """A set required in one rack and one switch keeps its extras on both (the second key
    was left free: extras spread over two switches)."""
    ps = PodSet("w", "job/w", tuple(f"ns/w-{i}" for i in range(4)), {"cpu": 1, "pods": 1},
                min_pods=2, topology=(Constraint(RACK), Constraint(SWITCH)))

    def pins(node: str, key: str) -> tuple[tuple[str, str], ...]:
        return ((key, {RACK: "r0", SWITCH: "s1"}[key]),)

    r = residual(ps, {"job/w": {"ns/w-0": "n0", "ns/w-1": "n0"}}, pins)
    assert isinstance(r, PodSet) and r.pods == ("ns/w-2", "ns/w-3")
    assert r.topology == (Constraint(RACK, "required", "r0"),
                          Constraint(SWITCH, "required", "s1"))


def test_residual_keeps_the_pods_a_tree_says_are_running_against_its_cap() -> None:
    ps = PodSet("w", "job/w", ("ns/w-0", "ns/w-1", "ns/w-2"), {"cpu": 1, "pods": 1},
                min_pods=1, max_pods_per_node=1, held_per_node={"n0": 1})
    r = residual(ps, {"job/w": {"ns/w-0": "n1"}}, rack_of)
    assert isinstance(r, PodSet) and r.held_per_node == {"n0": 1, "n1": 1}


def test_residual_keeps_every_child_a_group_short_of_pods_above_may_draw_on() -> None:
    """job (min 3 pods) > g (both children) > x (2 pods, min 1), y (1 pod): with only x-0
    left running, job lacks 2 pods and g lacks y. x's unplaced pod must stay in the
    residual, though g itself needs only y: without it job's 2 pods cannot be found and a
    repair that fits (x-1, y-0 on the node) fails."""
    req = {"cpu": 1, "pods": 1}
    x = PodSet("x", "job/g/x", ("ns/x-0", "ns/x-1"), req, min_pods=1)
    y = PodSet("y", "job/g/y", ("ns/y-0",), req, min_pods=1)
    job = Group("job", "job", [Group("g", "job/g", [x, y], min_groups=2)], min_pods=3)
    r = residual(job, {"job/g/x": {"ns/x-0": "n0"}}, rack_of)
    assert isinstance(r, Group) and r.min_pods == 2
    (g,) = r.children
    assert isinstance(g, Group)
    assert [(c.path, c.pods) for c in podsets(g)] == [("job/g/x", ("ns/x-1",)),
                                                       ("job/g/y", ("ns/y-0",))]
    assert g.min_groups == 2  # x is satisfied by what runs, y still needs its pod
