"""Nodes that lack some topology labels: the engine, the verifier and the exact MILP agree
on what they may host. Every node is a host (its hostname label, else its name); a node
lacking a wider level's label keeps its narrower domains; a constraint on a key needs the
key's label on every node it uses, however many keys a group requires."""

from __future__ import annotations

import pytest

from gangsched.api.types import Node
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet, validate
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
RACK = "example.com/rack"
BLOCK = "example.com/block"
ENGINES = [Options(), Options(exact=0)]


def bare(name: str, labels: dict[str, str], cpu: int = 4000, pods: int = 110) -> Node:
    return Node(name, labels, allocatable={"cpu": cpu, "pods": pods})


def gang(pods: int, *keys: str, min_pods: int | None = None) -> PodSet:
    names = tuple(f"ns/p{i}" for i in range(pods))
    return PodSet("g", "g", names, {"cpu": 1000, "pods": 1},
                  min_pods=pods if min_pods is None else min_pods,
                  topology=tuple(Constraint(k, "required") for k in keys))


def agree(unit: PodSet, state: ClusterState) -> bool:
    """Each engine decides as the MILP does, and what it admits the verifier passes."""
    validate(unit, state.topology.keys)
    feasible = solve(unit, state, time_limit=5.0, maximize=False).status != "infeasible"
    for opts in ENGINES:
        d = place(unit, state, opts, commit=False)
        assert d.admitted == feasible, (opts, d.reason)
        if d.admitted:
            assert verify(unit, state, d.assignments) == []
    return feasible


@pytest.mark.parametrize("levels", [[HOST], None])
def test_a_node_without_a_hostname_label_is_a_host_by_its_name(levels: list[str] | None
                                                               ) -> None:
    state = ClusterState.from_nodes(
        [bare("n0", {}), bare("n1", {HOST: "n1"}, pods=0)], levels)
    assert state.topology.keys == [HOST]
    assert agree(gang(2, HOST), state)


@pytest.mark.parametrize("order", [(HOST, REGION), (REGION, HOST)])
def test_a_wider_required_key_is_enforced_beside_hostname(order: tuple[str, str]) -> None:
    state = ClusterState.from_nodes([bare("n0", {HOST: "n0"})], [REGION])
    assert not agree(gang(1, *order), state)
    d = place(gang(1, *order), state)
    assert "no node here carries all of the labels it requires" in d.reason
    assert REGION in d.reason


def test_a_wider_required_key_picks_the_host_that_carries_it() -> None:
    state = ClusterState.from_nodes(
        [bare("a", {HOST: "a"}), bare("b", {HOST: "b", REGION: "west"}, cpu=2000)], [REGION])
    assert agree(gang(2, HOST, REGION), state)
    d = place(gang(2, HOST, REGION), state)
    assert set(d.assignments.values()) == {"b"}


@pytest.mark.parametrize("min_pods", [1, 0])
def test_a_node_lacking_a_wider_level_keeps_its_narrower_domain(min_pods: int) -> None:
    # zone nests in region, and the only zoned node has no region label
    state = ClusterState.from_nodes(
        [bare("n2", {ZONE: "g0-z1"}, pods=3), bare("n4", {REGION: "g0"}, pods=6)], None)
    assert state.topology.keys == [REGION, ZONE]
    unit = gang(1, ZONE, min_pods=min_pods)
    assert agree(unit, state)
    assert place(unit, state).assignments == {"ns/p0": "n2"}


def test_a_rack_below_no_block_takes_a_rack_gang_and_no_block_gang() -> None:
    nodes = [bare("x0", {RACK: "rx"}, cpu=2000), bare("x1", {RACK: "rx"}, cpu=2000),
             bare("y0", {BLOCK: "b0", RACK: "ry"}, cpu=1000)]
    state = ClusterState.from_nodes(nodes, [BLOCK, RACK])
    assert agree(gang(4, RACK), state)  # only rack rx holds four pods
    d = place(gang(4, RACK), state)
    assert set(d.assignments.values()) == {"x0", "x1"}
    assert not agree(gang(2, BLOCK, RACK), state)  # rack rx is in no block


def test_a_unit_of_no_minimum_searches_other_domains_for_its_first_pods() -> None:
    # the root requires one zone and asks for no pod; its child needs two pods on one
    # host. Zone z0 has the most room but no host that holds two; z1's one host does
    nodes = [bare(f"a{i}", {ZONE: "z0", HOST: f"a{i}"}) for i in range(6)]
    nodes.append(bare("b0", {ZONE: "z1", HOST: "b0"}, cpu=8000))
    state = ClusterState.from_nodes(nodes, [ZONE])
    # six pods asked: every raised minimum (half of them or more) fits on no host
    pods = PodSet("p", "job/c/p", tuple(f"ns/p{i}" for i in range(6)),
                  {"cpu": 4000, "pods": 1}, min_pods=2)
    child = Group("c", "job/c", [pods], min_groups=0,
                  topology=(Constraint(HOST, "required"),))
    unit = Group("job", "job", [child], min_groups=0,
                 topology=(Constraint(ZONE, "required"),))
    validate(unit, state.topology.keys)
    assert solve(unit, state, time_limit=5.0).max_pods == 2
    # zones taken widest first (no narrowing to hosts): z0, the roomiest, comes first
    for opts in [Options(narrow=False), Options(narrow=False, exact=0)]:
        d = place(unit, state, opts, commit=False)
        assert d.admitted, d.reason
        assert set(d.assignments.values()) == {"b0"} and len(d.assignments) == 2
        assert verify(unit, state, d.assignments) == []
