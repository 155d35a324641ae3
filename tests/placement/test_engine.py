"""The engine's guarantees (DESIGN.md section 2), one scenario each."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gangsched.api.types import (
    NodeRequirements,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Taint,
    Toleration,
)
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group
from gangsched.placement import Decision, Options, place
from gangsched.placement.engine.trace import SearchLog, recording
from gangsched.placement.exact import solve
from gangsched.placement.verify import verify
from gangsched.testing.builders import (
    BLOCK,
    GPU,
    HOST,
    RACK,
    ZONE,
    cluster,
    cons,
    group,
    levels_of,
    node,
    nodes,
    podset,
    replicas,
    take,
)


def labels_of(state: ClusterState, d: Decision, key: str) -> set[str]:
    by_name = {n.name: n for n in state.topology.nodes}
    return {by_name[n].labels.get(key, "?") for n in d.assignments.values()}


def pods_of(d: Decision, prefix: str) -> dict[str, str]:
    return {p: n for p, n in d.assignments.items() if p.startswith(f"default/{prefix}")}


def flat(nodes_count: int, gpu: int = 8) -> ClusterState:
    """One rack of identical nodes."""
    return cluster((("zone", 1), ("block", 1), ("rack", 1), ("host", nodes_count)),
                   alloc={"cpu": 64_000, GPU: gpu, "pods": 110})


def disagg(p: int, pmin: int, d: int, dmin: int, *, p_pods: int = 1, d_pods: int = 1,
           gpu: int = 8) -> Group:
    return group("app", [
        replicas("app/prefill", p, pods=p_pods, gpu=gpu, min_replicas=pmin),
        replicas("app/decode", d, pods=d_pods, gpu=gpu, min_replicas=dmin),
    ])


# -- all-or-nothing ---------------------------------------------------------------------


def test_gang_that_does_not_fit_places_nothing_and_leaves_state_unchanged() -> None:
    state = flat(4)
    before = state.free.copy()
    unit = group("train", [podset("train/workers", 5, gpu=8)])
    d = place(unit, state)
    assert not d.admitted
    assert d.assignments == {}
    assert np.array_equal(state.free, before)
    assert "workers" in d.reason and "5 pods x 8 nvidia.com/gpu" in d.reason


def test_admitted_gang_consumes_exactly_its_pods() -> None:
    state = flat(4)
    d = place(group("train", [podset("train/workers", 3, gpu=8)]), state)
    assert d.admitted and d.placed == 3
    assert int(state.free[state.rindex[GPU]].sum()) == 8


def test_commit_false_is_a_dry_run() -> None:
    state = flat(4)
    before = state.free.copy()
    d = place(group("train", [podset("train/workers", 3, gpu=8)]), state, commit=False)
    assert d.admitted and d.placed == 3
    assert np.array_equal(state.free, before)


def test_every_gang_minimum_in_the_tree_must_hold() -> None:
    # prefill fits alone, decode's minimum of 2 replicas does not: nothing is placed
    state = flat(3)
    unit = disagg(2, 1, 2, 2, d_pods=1)
    unit.children[1] = replicas("app/decode", 3, pods=1, gpu=8, min_replicas=3)
    d = place(unit, state)
    assert not d.admitted and d.assignments == {}


# -- minimum first, fair extras ---------------------------------------------------------


def test_minimum_first_admits_where_extras_first_would_not() -> None:
    # min 1 prefill + 1 decode, desired 4 + 2; a prefill replica is 1 node, a decode
    # replica 2 nodes; room for the minimum (3 nodes) plus two more prefill replicas.
    state = flat(5)
    d = place(disagg(4, 1, 2, 1, p_pods=1, d_pods=2), state)
    assert d.admitted
    prefill = pods_of(d, "app-prefill")
    decode = pods_of(d, "app-decode")
    assert len(decode) == 2  # one complete decode replica
    assert len(prefill) == 3  # the minimum plus the two extras that fit
    assert d.minimum_pods == 3 and d.extra_pods == 2


def test_extras_are_spread_fairly_across_roles() -> None:
    # 4P + 2D wanted (1 + 1 minimum), room for exactly 3 more replicas
    state = flat(5)
    d = place(disagg(4, 1, 2, 1), state)
    assert d.admitted and d.placed == 5
    assert len(pods_of(d, "app-prefill")) == 3
    assert len(pods_of(d, "app-decode")) == 2


def test_each_extra_replica_is_all_or_nothing() -> None:
    # replicas of 2 pods; 5 nodes hold the 2-replica minimum (4 pods) and one lone pod:
    # the lone node must stay empty rather than hold half a replica
    state = flat(5)
    d = place(disagg(3, 1, 3, 1, p_pods=2, d_pods=2), state)
    assert d.admitted and d.placed == 4
    assert int(state.free[state.rindex[GPU]].sum()) == 8


def test_an_extra_child_leaves_a_domain_its_minimum_filled_for_one_with_room() -> None:
    # a Volcano-style job: minMember 1 over a CPU master and rack-bound GPU workers of no
    # minimum. The master alone goes to the tightest node, r0's, for locality, where it
    # leaves no room for a worker; a worker still fits on r1 and must go there
    shape = (("zone", 1), ("rack", 2), ("host", 1))
    ns = nodes(shape, {"cpu": 96_000, GPU: 8, "pods": 110})
    ns[1].allocatable["cpu"] = 192_000
    job = group("job", [podset("job/master", 1, cpu=8_000, min_pods=0),
                        podset("job/worker", 2, gpu=8, cpu=96_000, min_pods=0,
                               topology=cons("rack"))], min_groups=0, min_pods=1)
    state = ClusterState.from_nodes(ns, levels_of(shape))
    d = place(job, state, commit=False)
    assert d.admitted and verify(job, state, d.assignments) == []
    # each rack's one node holds one worker at most: the master and one worker is the most
    assert d.assignments == {"default/job-master-0": "n-z0-r0-h0",
                             "default/job-worker-0": "n-z0-r1-h0"}


def test_basic_pod_set_places_what_fits() -> None:
    state = flat(2)
    d = place(podset("web", 5, gpu=4, min_pods=0), state)
    assert d.admitted and d.placed == 4


# -- topology ---------------------------------------------------------------------------


def test_required_rack_puts_the_whole_gang_in_one_rack() -> None:
    state = cluster()
    take(state, "n-z0-b0-r0-h0", gpu=8)
    unit = group("g", [podset("g/w", 4, gpu=8)], topology=cons("rack"))
    d = place(unit, state)
    assert d.admitted
    assert len(labels_of(state, d, RACK)) == 1
    # tight fit: the 4 free nodes of a full rack beat a partially used one
    assert labels_of(state, d, RACK) != {"z0-b0-r0"}


def test_required_rack_rejects_when_no_single_rack_has_room() -> None:
    state = cluster()  # racks of 4 nodes
    d = place(group("g", [podset("g/w", 5, gpu=8)], topology=cons("rack")), state)
    assert not d.admitted
    assert "inside one rack" in d.reason and "holds 4" in d.reason


def test_nested_constraints_zone_block_rack_host() -> None:
    state = cluster((("zone", 2), ("block", 2), ("rack", 2), ("host", 4)))
    shard = lambda p: podset(p, 2, gpu=4, topology=cons("host"))  # noqa: E731
    replica = lambda p: group(p, [shard(f"{p}/s0"), shard(f"{p}/s1")],  # noqa: E731
                              topology=cons("rack"))
    role = lambda p, n: group(p, [replica(f"{p}/r{i}") for i in range(n)],  # noqa: E731
                              topology=cons("block"))
    unit = group("w", [role("w/prefill", 2), role("w/decode", 2)], topology=cons("zone"))
    d = place(unit, state)
    assert d.admitted and d.placed == 16
    assert len(labels_of(state, d, ZONE)) == 1
    for r in ("prefill", "decode"):
        role_pods = {p: n for p, n in d.assignments.items() if f"/w-{r}-" in p}
        blocks = {n.rsplit("-", 2)[0] for n in role_pods.values()}
        assert len(blocks) == 1
        for i in range(2):
            rep = {p: n for p, n in role_pods.items() if f"-{r}-r{i}-" in p}
            assert len({n.rsplit("-", 1)[0] for n in rep.values()}) == 1  # one rack
            for s in ("s0", "s1"):
                shard_nodes = {n for p, n in rep.items() if f"-r{i}-{s}-" in p}
                assert len(shard_nodes) == 1  # one host


def test_preferred_constraint_falls_back_to_a_wider_domain() -> None:
    state = cluster()  # racks of 4 nodes
    unit = group("g", [podset("g/w", 6, gpu=8)], topology=cons("rack~"))
    d = place(unit, state)
    assert d.admitted and d.placed == 6
    assert len(labels_of(state, d, BLOCK)) == 1  # fell back to one block, not the cluster


def test_preferred_constraint_keeps_the_narrow_domain_when_it_fits() -> None:
    state = cluster()
    d = place(group("g", [podset("g/w", 3, gpu=8)], topology=cons("rack~")), state)
    assert d.admitted and len(labels_of(state, d, RACK)) == 1


def test_a_minimum_that_needs_two_nodes_is_kept_in_one_rack_when_one_holds_it() -> None:
    # one block, two racks of two 8-GPU hosts: r0 has one empty host (the other full),
    # r1 one empty host and one with 4 GPUs free. A prefill pod (8 GPUs) and a decode
    # pod (4 GPUs) fit together only in r1. Trying hosts first (Options.narrow) must not
    # let the decode pod leave the prefill pod's host for any node of the block: the
    # narrow tiers are for locality, only extras spill out of them
    state = cluster((("zone", 1), ("block", 1), ("rack", 2), ("host", 2)),
                    alloc={"cpu": 64_000, GPU: 8, "pods": 110})
    names = [n.name for n in state.topology.nodes]
    take(state, names[1], gpu=8)  # r0: one host full
    take(state, names[3], gpu=4)  # r1: 4 GPUs free on its second host
    unit = group("app", [podset("app/prefill", 1, gpu=8), podset("app/decode", 1, gpu=4)],
                 topology=cons("block"))
    d = place(unit, state, commit=False)
    assert d.admitted and len(labels_of(state, d, RACK)) == 1
    # without the narrow tiers the decode pod takes the tightest node of the block
    wide = place(unit, state, Options(narrow=False), commit=False)
    assert wide.admitted and len(labels_of(state, wide, RACK)) == 2


def test_heterogeneous_replica_cpu_leader_and_gpu_workers() -> None:
    cpu_nodes = [node(f"cpu-{i}", {RACK: "r0", ZONE: "z"}, gpu=0) for i in range(2)]
    gpu_nodes = [node(f"gpu-{i}", {RACK: "r0", ZONE: "z"}, gpu=8, cpu=8_000) for i in range(2)]
    other = [node(f"gpu-x{i}", {RACK: "r1", ZONE: "z"}, gpu=8) for i in range(4)]
    state = ClusterState.from_nodes(cpu_nodes + gpu_nodes + other, [ZONE, RACK])
    leader = podset("lws/leader", 1, cpu=32_000)  # does not fit on a GPU node of r0
    workers = podset("lws/workers", 2, gpu=8, cpu=4_000)
    d = place(group("lws", [leader, workers], topology=cons("rack")), state)
    assert d.admitted
    assert d.assignments["default/lws-leader-0"].startswith("cpu-")
    assert all(d.assignments[f"default/lws-workers-{i}"].startswith("gpu-") for i in range(2))
    assert labels_of(state, d, RACK) == {"r0"}


def test_required_key_no_node_carries_is_a_clear_rejection() -> None:
    # KEP-5732: a topology key is a plain node label; nodes without it are no candidates
    state = flat(2)
    unit = group("g", [podset("g/w", 1)], topology=cons("example.com/pod"))
    d = place(unit, state)
    assert not d.admitted and "no node has the label example.com/pod" in d.reason


# -- search -----------------------------------------------------------------------------


def backtracking_instance() -> tuple[ClusterState, Group]:
    # A (4 GPUs, any rack) is placed first (bigger). Tight fit sends it to rack r0, whose
    # 4 free GPUs are the only ones B (2 GPUs, needs the "fast" label of r0) can use.
    r0 = [node("r0-a", {RACK: "r0", ZONE: "z", "fast": "yes"}, gpu=4)]
    r1 = [node("r1-a", {RACK: "r1", ZONE: "z"}, gpu=8)]
    state = ClusterState.from_nodes(r0 + r1, [ZONE, RACK])
    fast = NodeRequirements(node_selector=(("fast", "yes"),))
    a = group("job/a", [podset("job/a/p", 1, gpu=4)], topology=cons("rack"))
    b = group("job/b", [podset("job/b/p", 1, gpu=2, requirements=fast)], topology=cons("rack"))
    return state, group("job", [a, b])


def test_backtracking_finds_what_first_fit_misses() -> None:
    state, unit = backtracking_instance()
    # the search alone (no exact solver after it)
    greedy = place(unit, state, Options(backtrack_budget=0, score_top=1, exact=0),
                   commit=False)
    assert not greedy.admitted  # first fit in sibling order fails
    d = place(unit, state)
    assert d.admitted
    assert d.assignments == {"default/job-a-p-0": "r1-a", "default/job-b-p-0": "r0-a"}


def test_backtracking_budget_is_bounded() -> None:
    state = flat(8)
    # 9 identical replicas, 8 nodes: infeasible; the search must stop quickly
    unit = replicas("big", 9, pods=1, gpu=8)
    d = place(unit, state, Options(backtrack_budget=16))
    assert not d.admitted and d.dry_runs < 200


def test_min_groups_skips_a_child_that_cannot_fit() -> None:
    state = flat(2)
    unit = group("g", [podset("g/huge", 3, gpu=8), podset("g/small", 2, gpu=8)], min_groups=1)
    d = place(unit, state)
    assert d.admitted and set(pods_of(d, "g-small")) == {"default/g-small-0", "default/g-small-1"}


# -- filters ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node_kwargs", "requirements", "fits"),
    [
        pytest.param({}, NodeRequirements(), True, id="plain"),
        pytest.param({"ready": False}, NodeRequirements(), False, id="not-ready"),
        pytest.param({"unschedulable": True}, NodeRequirements(), False, id="cordoned"),
        pytest.param({"taints": [Taint("gpu", "x", "NoSchedule")]}, NodeRequirements(), False,
                     id="taint-no-schedule"),
        pytest.param({"taints": [Taint("gpu", "x", "NoExecute")]}, NodeRequirements(), False,
                     id="taint-no-execute"),
        pytest.param({"taints": [Taint("gpu", "x", "PreferNoSchedule")]}, NodeRequirements(),
                     True, id="taint-prefer-no-schedule"),
        pytest.param({"taints": [Taint("gpu", "x", "NoSchedule")]},
                     NodeRequirements(tolerations=(Toleration("gpu", "Equal", "x"),)), True,
                     id="tolerated"),
        pytest.param({}, NodeRequirements(node_selector=(("pool", "a"),)), True, id="selector"),
        pytest.param({}, NodeRequirements(node_selector=(("pool", "b"),)), False,
                     id="selector-miss"),
        pytest.param({}, NodeRequirements(affinity=(NodeSelectorTerm(
            (Requirement("pool", "NotIn", ("a",)),)),)), False, id="affinity-notin"),
        pytest.param({}, NodeRequirements(affinity=(NodeSelectorTerm(
            (Requirement("gen", "Gt", ("3",)),)),)), True, id="affinity-gt"),
    ],
)
def test_node_filters(node_kwargs: dict[str, object], requirements: NodeRequirements,
                      fits: bool) -> None:
    n = node("only", {"pool": "a", "gen": "5"}, **node_kwargs)  # type: ignore[arg-type]
    state = ClusterState.from_nodes([n], [])
    d = place(podset("p", 1, gpu=1, requirements=requirements), state)
    assert d.admitted is fits


def test_already_bound_pods_consume_capacity() -> None:
    nodes = [node("a"), node("b")]
    bound = Pod("old", requests={GPU: 8, "pods": 1}, node_name="a")
    state = ClusterState.from_nodes(nodes, [], pods=[bound])
    d = place(podset("p", 1, gpu=8), state)
    assert d.assignments == {"default/p-0": "b"}
    assert not place(podset("q", 1, gpu=8), state).admitted


def test_max_pods_per_node_spreads_a_set() -> None:
    state = flat(4)
    d = place(podset("p", 4, gpu=1, max_per_node=2), state)
    assert d.admitted
    assert max(list(d.assignments.values()).count(n) for n in d.assignments.values()) == 2


# -- determinism and explanations -------------------------------------------------------


def test_same_input_same_output() -> None:
    unit = lambda: group("w", [replicas("w/p", 3, pods=2, gpu=4, replica_topology=cons("rack")),  # noqa: E731
                               replicas("w/d", 2, pods=2, gpu=8)], topology=cons("zone"))
    a = place(unit(), cluster())
    b = place(unit(), cluster())
    assert a.assignments == b.assignments and a.admitted


def test_reason_names_the_group_what_it_needed_and_the_best_found() -> None:
    # every rack has room for one 2-pod decode replica; decode needs 2 of them in one rack
    state = cluster((("zone", 1), ("block", 2), ("rack", 2), ("host", 2)))
    unit = group("app", [
        replicas("app/prefill", 1, pods=1, gpu=8, topology=cons("rack")),
        replicas("app/decode", 2, pods=2, gpu=8, topology=cons("rack")),
    ])
    d = place(unit, state)
    assert not d.admitted
    assert "decode: needs 2 replicas of 2 pods x 8 nvidia.com/gpu" in d.reason
    assert "inside one rack" in d.reason and "holds 1" in d.reason


def test_empty_cluster_rejects_with_reason() -> None:
    state = ClusterState.from_nodes([], [])
    d = place(podset("p", 1), state)
    assert not d.admitted and "no nodes" in d.reason


def test_hostname_constraint_without_a_host_level() -> None:
    state = cluster((("zone", 1), ("rack", 1), ("host", 3)))
    d = place(podset("p", 2, gpu=4, topology=cons("host")), state)
    assert d.admitted and len(labels_of(state, d, HOST)) == 1


# -- pins and emulation switches --------------------------------------------------------


def test_pinned_constraint_places_inside_that_domain() -> None:
    state = cluster()
    pin = (Constraint(RACK, "required", "z1-b0-r1"),)
    d = place(group("g", [podset("g/w", 2, gpu=8)], topology=pin), state)
    assert d.admitted and labels_of(state, d, RACK) == {"z1-b0-r1"}


def test_pinned_constraint_to_a_full_domain_rejects() -> None:
    state = cluster()
    pin = (Constraint(RACK, "required", "z1-b0-r1"),)
    d = place(group("g", [podset("g/w", 5, gpu=8)], topology=pin), state)
    assert not d.admitted and "rack" in d.reason


def test_extras_first_emulation_steals_the_minimum() -> None:
    # the minimum-first instance: an engine growing each role fully before the next
    # role's minimum (KEP-6012 alpha) rejects what gangsched admits
    unit = lambda: disagg(4, 1, 2, 1, p_pods=1, d_pods=2)  # noqa: E731
    alpha = Options(extras_first=True, child_order="given", backtrack_budget=0, score_top=1,
                    exact=0)  # an emulation: no exact solver after its search
    assert not place(unit(), flat(5), alpha).admitted
    assert place(unit(), flat(5)).admitted


def test_first_feasible_domain_emulation_ignores_tight_fit() -> None:
    state = cluster()
    take(state, "n-z1-b1-r1-h0", gpu=8)  # the last rack is the tightest fit for 3 pods
    unit = lambda: group("g", [podset("g/w", 3, gpu=8)], topology=cons("rack"))  # noqa: E731
    first = place(unit(), state, Options(domain_order="index"), commit=False)
    best = place(unit(), state, commit=False)
    assert labels_of(state, first, RACK) == {"z0-b0-r0"}
    assert labels_of(state, best, RACK) == {"z1-b1-r1"}


def test_group_cap_limits_a_role_across_its_replicas() -> None:
    state = flat(2)
    role = replicas("svc/role", 4, pods=1, gpu=1)
    role.max_pods_per_node = 2
    d = place(group("svc", [role]), state)
    assert d.admitted and d.placed == 4
    per_node = [list(d.assignments.values()).count(n) for n in set(d.assignments.values())]
    assert per_node == [2, 2]
    role5 = replicas("big/role", 5, pods=1, gpu=1)
    role5.max_pods_per_node = 2
    assert not place(group("big", [role5]), flat(2)).admitted


def test_pods_already_running_count_against_the_cap() -> None:
    state = flat(2)
    first = state.topology.nodes[0].name
    rest = podset("svc/w", 2, gpu=1, min_pods=0, max_per_node=1)
    rest.held_per_node = {first: 1}  # a pod of the set already runs there
    d = place(rest, state)
    assert list(d.assignments.values()) == [state.topology.nodes[1].name]


def test_a_running_pod_takes_room_under_the_cap_once_not_twice() -> None:
    # two nodes of 2 GPUs, each running one pod of the set (1 GPU), at most 2 a node: each
    # node's free GPU is its second pod under the cap. The running pod is already out of
    # the free GPUs; taking it off the capped fit as well left no room (sweep-s32)
    state = cluster((("zone", 1), ("rack", 1), ("host", 2)),
                    alloc={"cpu": 64_000, GPU: 2, "pods": 110})
    running = state.begin()
    running.place(np.array([0, 1]), np.array([1, 1]), state.shape({GPU: 1}))
    running.commit()
    held = {n.name: 1 for n in state.topology.nodes}
    unit = group("svc", [replace(podset("svc/w", 2, gpu=1, max_per_node=2),
                                 held_per_node=held)])
    assert solve(unit, state).feasible
    d = place(unit, state, Options(exact=0), commit=False)  # the search alone: no solver
    assert d.admitted and verify(unit, state, d.assignments) == []
    assert sorted(d.assignments.values()) == sorted(held)


def test_reason_for_a_lone_child_is_not_repeated() -> None:
    d = place(group("b", [podset("b/w", 5, gpu=8)]), flat(2))
    assert d.reason.count("needs") == 1


def test_a_set_capped_per_node_goes_before_larger_pods_that_would_take_its_nodes() -> None:
    """Three nodes of 8 GPUs. prefill: 3 pods of 4 GPUs (the larger pods: more CPU);
    decode: 3 pods of 4 GPUs, at most one a node, so it needs all three nodes. Packed first,
    prefill fills one node and half of another, and decode finds two nodes; placed first,
    decode takes one slot on each node and prefill fits beside it."""
    state = cluster((("zone", 1), ("rack", 1), ("host", 3)))
    unit = group("job", [
        group("job/prefill", [podset("job/prefill/w", 3, gpu=4, cpu=16_000)]),
        group("job/decode", [podset("job/decode/w", 3, gpu=4, cpu=2_000, max_per_node=1)]),
    ])
    log = SearchLog()
    with recording(log):
        d = place(unit, state)
    assert d.admitted, d.reason
    decode = pods_of(d, "job-decode")
    assert len(decode) == 3 and len(set(decode.values())) == 3
    assert len(pods_of(d, "job-prefill")) == 3
    # the default order failed (packed, then spread); the last attempt, capped sets first,
    # placed it, and the log (what explain prints) says which attempt that was
    assert [(a.pack, a.caps_first) for a in log.attempts if not a.explanation] == [
        (True, False), (False, False), (True, True)]


def test_a_pod_count_minimum_is_reached_by_trying_a_sibling_elsewhere() -> None:
    """The root needs 5 pods: 1 of ``one`` (preferring a block) and at least 4 of
    ``many`` (2 required, in one block). ``many`` takes block b0, where 4 nodes are free;
    ``one`` then prefers b0 too (as tight as b1, listed first) and takes a node ``many``
    needed to grow to 4. The engine tries ``one``'s next block instead of giving up."""
    state = cluster((("zone", 1), ("block", 2), ("rack", 1), ("host", 4)))
    for name in [n.name for n in state.topology.nodes if "-b1-" in n.name][:2]:
        take(state, name, gpu=8)
    unit = group("job", [
        podset("job/one", 1, gpu=8, topology=cons("block~")),
        podset("job/many", 6, gpu=8, min_pods=2, topology=cons("block")),
    ], min_pods=5)
    d = place(unit, state)
    assert d.admitted, d.reason
    many = pods_of(d, "job-many")
    assert len(many) >= 4 and len(pods_of(d, "job-one")) == 1
    assert len(labels_of(state, Decision("job", True, many), BLOCK)) == 1


def test_the_search_log_says_what_each_domain_of_a_level_too_narrow_holds() -> None:
    """A gang of 3 pods of 8 GPUs tries hosts first (none holds all three, whatever its
    load: the level is passed over without bounding each domain), then racks. The log
    (what explain prints) still names each host with the pods it could take now."""
    state = cluster((("zone", 1), ("rack", 2), ("host", 2)))
    busy = state.topology.nodes[1].name
    take(state, busy, gpu=8)
    log = SearchLog()
    with recording(log):
        d = place(group("job", [podset("job/w", 3, gpu=8)]), state)
    assert d.admitted, d.reason
    tiers = log.attempts[0].tiers
    hosts = tiers[("job", HOST)].domains
    assert {label.rsplit("/", 1)[-1]: (dom.holds, dom.passed) for label, dom in hosts.items()
            } == {n.name: (0 if n.name == busy else 1, False) for n in state.topology.nodes}
    racks = tiers[("job", RACK)].domains
    assert sorted(dom.holds for dom in racks.values()) == [1, 2]


def test_a_group_satisfied_one_way_tries_its_other_ways_when_a_sibling_then_fails() -> None:
    """One node of 8 GPUs. ``a`` needs one of its two pod sets (8 GPUs, or CPU only) and
    is placed first (it requires the host itself); ``b`` needs the 8 GPUs. ``a`` first
    takes the GPUs (the larger pods); when ``b`` then finds none, the search asks ``a``
    for its next way on the same node instead of giving the node up: the CPU pod."""
    state = cluster((("zone", 1), ("rack", 1), ("host", 1)))
    unit = group("job", [
        group("job/a", [podset("job/a/big", 1, gpu=8), podset("job/a/small", 1)],
              min_groups=1, topology=cons("host")),
        podset("job/b", 1, gpu=8),
    ])
    log = SearchLog()
    with recording(log):
        d = place(unit, state, Options(extras=False))
    assert d.admitted, d.reason
    assert len(pods_of(d, "job-b")) == 1 and len(pods_of(d, "job-a-small")) == 1
    assert not pods_of(d, "job-a-big")
    # the attempts that take a group's first way failed; the last one (what explain
    # names) asked ``a`` for its other ways
    tried = [a for a in log.attempts if not a.explanation]
    assert [a.deep for a in tried] == [False] * (len(tried) - 1) + [True]


@pytest.mark.parametrize("opts", [Options(), Options(extras_first=True)],
                         ids=["default", "extras_first"])
def test_every_attempt_leaves_the_state_holding_exactly_the_decided_pods(opts: Options) -> None:
    """Random gang trees (those of ``bench quality``) committed one by one: each admitted
    decision verifies, and the cluster then holds exactly its pods, whichever attempt
    placed it (the last one asks groups for their other ways, and must put back whatever
    was grown in a way it leaves)."""
    from gangsched.bench.instances import random_instance
    from gangsched.gang import podsets
    from gangsched.placement.verify import verify

    for seed in range(60):
        state, unit = random_instance(np.random.default_rng(seed))
        before = state.snapshot()
        d = place(unit, state, opts)
        want = np.zeros_like(state.free)
        if d.admitted:
            assert not verify(unit, before, d.assignments), seed
            index = state.topology.index
            for ps in podsets(unit):
                shape = state.shape(ps.requests)
                for pod in ps.pods:
                    if pod in d.assignments:
                        for r, a in zip(shape.index, shape.amount, strict=True):
                            want[r, index[d.assignments[pod]]] += a
        assert ((before.free - state.free) == want).all(), seed


def test_a_group_cap_holds_for_sets_whose_paths_do_not_nest_under_it() -> None:
    # a tree's paths are names, not a hierarchy the engine may rely on: the group's cap
    # covers its sets by what they are, whatever their paths
    state = flat(1)
    a = replace(podset("a", 1, gpu=1, min_pods=0), path="x62")
    b = replace(podset("b", 1, gpu=1, min_pods=0), path="x43")
    unit = replace(group("job", [a, b], min_groups=0), path="x21", max_pods_per_node=1)
    d = place(unit, state, commit=False)
    assert d.admitted and len(d.assignments) == 1
    assert verify(unit, state, d.assignments) == []


def test_a_cpu_only_pod_keeps_off_free_gpus_in_a_large_cluster() -> None:
    # 1,200 GPU nodes (9,600 GPUs): one node's free GPUs are a tiny share of the cluster's,
    # still the CPU-only leader must not take a node whose GPUs it would strand
    gpu_nodes = [node(f"gpu-{i}", {RACK: "r0", ZONE: "z"}, gpu=8) for i in range(1200)]
    big_cpu = node("cpu-0", {RACK: "r0", ZONE: "z"}, gpu=0, cpu=128_000)
    state = ClusterState.from_nodes([*gpu_nodes, big_cpu], [ZONE, RACK])
    leader = podset("lws/leader", 1, cpu=8_000)
    workers = podset("lws/workers", 1, gpu=8, cpu=60_000)  # no room for the leader beside
    d = place(group("lws", [leader, workers]), state, commit=False)
    assert d.admitted and d.assignments["default/lws-leader-0"] == "cpu-0"
