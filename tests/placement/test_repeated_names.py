"""A domain of a level of the chain is a path of label values: a rack named alike in two
blocks is two racks (Kueue's reading of a topology: "there could be two nodes with the
same rack label, but in different blocks"). The engine, the exact solver and the
verifier count domains alike, so no attempt of the engine admits a gang the others would
split over two racks."""

from __future__ import annotations

import numpy as np

from gangsched.api.types import Node, NodeRequirements
from gangsched.batch import place_plan
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet
from gangsched.model import Plan, Workload
from gangsched.placement import place
from gangsched.placement.engine import Options
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.scheduler.capacity import pins_of
from gangsched.scheduler.tree import residual
from gangsched.testing.builders import GPU, group, node, podset

BLOCK = "example.com/block"
RACK = "example.com/rack"


def two_blocks(hosts: int = 2) -> ClusterState:
    """Blocks b0 and b1, each with one rack named r0 of ``hosts`` 8-GPU nodes."""
    nodes = [node(f"{b}-h{h}", {BLOCK: b, RACK: "r0"}) for b in ("b0", "b1")
             for h in range(hosts)]
    return ClusterState.from_nodes(nodes, [BLOCK, RACK])


def rack_gang(pods: int) -> Group:
    return group("job", [podset("job/w", pods, gpu=8)], topology=(Constraint(RACK),))


def test_a_gang_larger_than_either_rack_of_one_name_is_rejected_by_every_attempt() -> None:
    state = two_blocks()
    unit = rack_gang(3)  # each r0 holds two: only the two together hold three
    for opts in (Options(), Options(exact=0)):
        d = place(unit, state, opts, commit=False)
        assert not d.admitted
        assert "the best rack (b0/r0) holds 2" in d.reason
    assert not solve(unit, state, time_limit=10).feasible


def test_the_verifier_counts_the_two_racks_as_two() -> None:
    state = two_blocks()
    unit = rack_gang(3)
    pods = unit.children[0].pods  # type: ignore[union-attr]
    across = dict(zip(pods, ("b0-h0", "b0-h1", "b1-h0"), strict=True))
    problems = verify(unit, state, across)
    assert "job: required topology broken: pods span 2 domains of example.com/rack " \
           "(b0/r0, b1/r0)" in problems


def test_a_gang_that_fits_one_of_them_stays_in_it() -> None:
    state = two_blocks()
    before = state.snapshot()
    unit = rack_gang(2)
    d = place(unit, state)
    assert d.admitted
    assert {n.split("-")[0] for n in d.assignments.values()} in ({"b0"}, {"b1"})
    assert verify(unit, before, d.assignments) == []
    got = solve(unit, before, time_limit=10)
    assert got.feasible and got.assignments is not None
    assert verify(unit, before, got.assignments) == []


def test_the_rest_of_a_running_gang_goes_to_its_own_rack_not_the_first_named_alike() -> None:
    # a gang of 2 to 4 pods runs its minimum in b1's r0; b0's r0, as free, comes first:
    # pinned to the value r0 alone, the rest went there, two racks for one gang
    state = two_blocks(hosts=2)
    unit = group("job", [podset("job/w", 4, gpu=4, min_pods=2)], topology=(Constraint(RACK),))
    running = dict(zip(unit.children[0].pods[:2], ("b1-h0", "b1-h0"),  # type: ignore[union-attr]
                       strict=True))
    assert pins_of(state, "b1-h0", RACK) == ((BLOCK, "b1"), (RACK, "r0"))
    rest = residual(unit, {"job/w": running}, lambda n, k: pins_of(state, n, k))
    assert rest is not None
    got = place(rest, state, commit=False)
    assert got.admitted and got.assignments
    assert {n.split("-")[0] for n in got.assignments.values()} == {"b1"}


def test_a_value_pinned_names_every_domain_of_that_value() -> None:
    # a pin on rack r0 (a gang tree's Constraint.value) allows either rack named r0; with
    # b0's r0 full, the gang goes to b1's, as the solver and the verifier allow
    state = two_blocks()
    txn = state.begin()
    txn.place(np.array([0, 1]), np.array([8, 8]), state.shape({GPU: 1}))
    txn.commit()
    unit = group("job", [podset("job/w", 2, gpu=8)], topology=(Constraint(RACK, value="r0"),))
    assert solve(unit, state, time_limit=10).feasible
    for opts in (Options(), Options(exact=0)):
        d = place(unit, state, opts, commit=False)
        assert d.admitted, d.reason
        assert sorted(d.assignments.values()) == ["b1-h0", "b1-h1"]
        assert verify(unit, state, d.assignments) == []
    # a value no rack has is still refused, saying so
    none = group("job", [podset("job/w", 1, gpu=8)], topology=(Constraint(RACK, value="r9"),))
    d = place(none, state, Options(exact=0), commit=False)
    assert not d.admitted and "r9" in d.reason


def _batch(unit: Group, state: ClusterState) -> dict[str, str]:
    """``gangsched place``'s batch on one workload: its pods, verified against the state
    before."""
    before = state.snapshot()
    nodes = list(state.topology.nodes)
    out = place_plan(Plan([Workload("ns/job", "PodGroup", unit)], nodes, [BLOCK, RACK], []),
                     state)[0]
    assert out.admitted, out.reason
    assert verify(unit, before, out.pods) == []
    return out.pods


def test_extras_beside_a_node_lacking_its_block_label_stay_in_its_rack() -> None:
    # rack r0 of block b0 (two nodes), and r0 of two nodes lacking a block label: two
    # racks. The minimum can only go to a block-less node, so the extras must too; pinned
    # to the value r0 alone they went to b0's r0
    lone = [node(f"lone-{i}", {RACK: "r0", "special": "yes"}) for i in range(2)]
    state = ClusterState.from_nodes([node("b0-h0", {BLOCK: "b0", RACK: "r0"}),
                                     node("b0-h1", {BLOCK: "b0", RACK: "r0"}), *lone],
                                    [BLOCK, RACK])
    assert pins_of(state, "lone-0", RACK) == ((BLOCK, None), (RACK, "r0"))
    need = NodeRequirements(node_selector=(("special", "yes"),))
    unit = group("job", [podset("job/a", 1, gpu=8, min_pods=1, requirements=need),
                         podset("job/b", 3, gpu=8, min_pods=0)],
                 min_groups=2, topology=(Constraint(RACK),))
    pods = _batch(unit, state)
    assert sorted(pods.values()) == ["lone-0", "lone-1"]


def test_extras_keep_the_block_of_their_rack_when_the_block_is_only_preferred() -> None:
    # a preferred block key on the group is no pin: the extras' rack r0 is still b1's
    state = two_blocks(hosts=2)
    txn = state.begin()  # b0's r0 has room for one more pod, b1's for three
    txn.place(np.array([0, 1]), np.array([8, 4]), state.shape({GPU: 1}))
    txn.commit()
    unit = group("job", [podset("job/a", 3, gpu=4, min_pods=3),
                         podset("job/b", 1, gpu=4, min_pods=0)],
                 min_groups=1, topology=(Constraint(RACK), Constraint(BLOCK, "preferred")))
    pods = _batch(unit, state)
    assert {n.split("-")[0] for n in pods.values()} == {"b1"}


def test_extras_pinned_to_a_host_stay_on_it_when_two_nodes_share_its_hostname() -> None:
    # hostname a level of the chain [rack, hostname]; both racks' nodes are labelled h:
    # the set requires one host, so its second pod (8 GPUs) fits on no host beside it
    rack, host, gpu = "gangsched.io/rack", "kubernetes.io/hostname", "nvidia.com/gpu"
    nodes = [Node(f"n{i}", {rack: f"r{i}", host: "h"}, (),
                  {"cpu": 64000, "pods": 110, gpu: 8}) for i in range(2)]
    ps = PodSet("w", "w", ("ns/w-0", "ns/w-1"), {"cpu": 1000, "pods": 1, gpu: 8},
                min_pods=1, topology=(Constraint(host, "required"),))
    state = ClusterState.from_nodes(nodes, [rack, host])
    assert pins_of(state, "n0", host) == ((rack, "r0"), (host, "h"))
    out = place_plan(Plan([Workload("w", "PodGroup", ps)], nodes, [rack, host], []),
                     ClusterState.from_nodes(nodes, [rack, host]))[0]
    assert out.admitted and len(out.pods) == 1
    assert verify(ps, state, out.pods) == []
