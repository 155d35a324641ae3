"""Golden rejection texts for decisive cases; every number is worked out by hand in the
comment above its assertion. A rejection names the blocking group, gives what really
fits in the best domain, and, like kube-scheduler's "0/16 nodes are available: ...",
which filters and resources cut the nodes out."""

from __future__ import annotations

from gangsched.api.types import NodeRequirements, Taint, Toleration
from gangsched.cluster.state import ClusterState
from gangsched.placement import place
from gangsched.testing.builders import (
    GPU,
    cluster,
    cons,
    group,
    node,
    podset,
    replicas,
    take,
)

TAS_RACK = "topology.kubernetes.io/rack"


def test_a_gang_one_pod_bigger_than_a_rack() -> None:
    # 2 racks x 10 nodes x 4 cpu: a rack holds 10 x 40 = 400 pods of 100m
    nodes = [node(f"n{i}", {TAS_RACK: f"rack-{i // 10}"}, gpu=0, cpu=4000) for i in range(20)]
    state = ClusterState.from_nodes(nodes, None, keys={TAS_RACK})
    # as the Workload API front-end builds a PodGroup with gang minCount 401
    unit = group("gang-0", [podset("gang-0/pods", 401, cpu=100)], min_groups=0, min_pods=401,
                 topology=cons(TAS_RACK))
    d = place(unit, state)
    assert d.reason == ("gang-0: needs 401 pods x 100m cpu (pods) inside one rack; "
                        "the best rack (rack-0) holds 400")


def test_replicas_each_on_one_host_are_counted_exactly() -> None:
    # one rack of 4 hosts x 8 GPUs; two hosts have only 4 GPUs free. A replica is 2 pods x
    # 4 GPUs on one host: the full hosts take one replica each, the half-used ones none
    # (they hold 1 pod each, 6 pods in all, but 6 // 2 = 3 replicas would be wrong): 2.
    # The third replica's best host holds 1 of its 2 pods.
    state = cluster((("rack", 1), ("host", 4)))
    take(state, "n-r0-h2", gpu=4)
    take(state, "n-r0-h3", gpu=4)
    role = replicas("decode", 3, pods=2, gpu=4, replica_topology=cons("host"),
                    topology=cons("rack"))
    d = place(role, state)
    assert d.reason == (
        "decode: needs 3 replicas of 2 pods x 4 nvidia.com/gpu, 1 cpu inside one rack; "
        "the best rack (r0) held 2 of them together; decode-2: needs 2 pods x 4 "
        "nvidia.com/gpu, 1 cpu (pods) inside one host; the best host (n-r0-h2) holds 1")


def test_a_resource_no_node_offers_is_named() -> None:
    # a typo: nvidia.com/gpus; no node of the 8 offers it
    state = cluster((("rack", 2), ("host", 4)))
    unit = group("train", [podset("train/w", 2, extra={"nvidia.com/gpus": 1})])
    d = place(unit, state)
    assert d.reason == ("w: needs 2 pods x 1 nvidia.com/gpus, 1 cpu; room for 0 pods; "
                        "0/8 nodes are available for a pod of w: 8 Insufficient nvidia.com/gpus "
                        "(no node offers nvidia.com/gpus)")


def test_filters_are_counted_like_kube_scheduler() -> None:
    # 6 nodes: 1 cordoned, 2 tainted (the pod tolerates neither), 1 of another GPU type,
    # 1 with 4 of its 8 GPUs used, 1 that fits: a pod of 8 GPUs fits 1 node of 6
    taint = Taint("reserved", "true", "NoSchedule")
    nodes = [
        node("a", {"gpu": "h100"}, unschedulable=True),
        node("b", {"gpu": "h100"}, taints=[taint]),
        node("c", {"gpu": "h100"}, taints=[taint]),
        node("d", {"gpu": "a100"}),
        node("e", {"gpu": "h100"}),
        node("f", {"gpu": "h100"}),
    ]
    state = ClusterState.from_nodes(nodes, None)
    take(state, "e", gpu=4)
    req = NodeRequirements(node_selector=(("gpu", "h100"),))
    unit = group("job", [podset("job/w", 2, gpu=8, requirements=req)])
    d = place(unit, state)
    assert d.reason == (
        "w: needs 2 pods x 8 nvidia.com/gpu, 1 cpu; room for 1 pod; 1/6 nodes are "
        "available for a pod of w: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match "
        "Pod's node affinity/selector, 2 node(s) had untolerated taint {reserved: true}, "
        "1 node(s) were unschedulable")
    # tolerating the taint: 3 nodes fit, the gang of 2 is admitted
    tolerant = NodeRequirements(node_selector=req.node_selector,
                                tolerations=(Toleration("reserved", "Equal", "true"),))
    ok = group("job2", [podset("job2/w", 2, gpu=8, requirements=tolerant)])
    assert place(ok, state).admitted


def test_siblings_that_fit_alone_but_not_together() -> None:
    # one zone of two racks x 2 hosts; r1's hosts have 2 GPUs free each. prefill (2 x 8
    # GPUs in one rack) can only go to r0, which leaves no rack for decode (2 x 4 GPUs in
    # one rack): the zone passes the capacity bound but holds only 1 of the 2 roles.
    state = cluster((("zone", 1), ("rack", 2), ("host", 2)))
    for h in ("n-z0-r1-h0", "n-z0-r1-h1"):
        take(state, h, gpu=6)
    prefill = group("s/prefill", [podset("s/prefill/w", 2, gpu=8)], topology=cons("rack"))
    decode = group("s/decode", [podset("s/decode/w", 2, gpu=4)], topology=cons("rack"))
    d = place(group("s", [prefill, decode], topology=cons("zone")), state)
    # (prefill took both r0 hosts; r1's hosts have 2 of the 4 GPUs a decode pod needs)
    assert d.reason == (
        "s: needs 2 children of 2 pods inside one zone; the best zone (z0) held 1 of them "
        "together; decode: needs 2 pods x 4 nvidia.com/gpu, 1 cpu (w) inside one rack; "
        "the best rack (z0-r0) holds 0; 2/4 nodes are available for a pod of w: "
        "2 Insufficient nvidia.com/gpu")
    assert GPU in d.reason


def test_a_group_cap_per_node_is_counted_in_the_room() -> None:
    # one zone of 2 nodes x 8 GPUs; a group capped at 1 pod per node asks 3 pods of 1 GPU:
    # 2 fit (one per node), not 16
    state = cluster((("zone", 1), ("host", 2)))
    unit = group("job", [podset("job/w", 3, gpu=1)], topology=cons("zone"))
    unit.max_pods_per_node = 1
    d = place(unit, state)
    assert not d.admitted
    assert d.reason.endswith("w: needs 3 pods x 1 nvidia.com/gpu, 1 cpu; room for 2 pods")


def test_pods_already_running_against_a_cap_are_counted() -> None:
    # cap 2 per node, 2 pods of the set already run on the first node: only the second
    # takes more, 2 of them
    state = cluster((("zone", 1), ("host", 2)))
    first = state.topology.nodes[0].name
    ps = podset("job/w", 3, gpu=1, max_per_node=2)
    ps.held_per_node = {first: 2}
    d = place(group("job", [ps]), state)
    assert not d.admitted
    assert d.reason.endswith("room for 2 pods")


def test_a_set_cap_per_node_is_counted_in_its_groups_domain_too() -> None:
    # one rack of one node with 2 GPUs; the set (capped at 1 pod per node) asks 3 pods of
    # 1 GPU inside one rack: the rack holds 1 of them, not 2, in the root's clause as in
    # the set's
    state = ClusterState.from_nodes([node("n0", {TAS_RACK: "r0"}, gpu=2)], None,
                                    keys={TAS_RACK})
    ps = podset("job/w", 3, gpu=1, max_per_node=1)
    d = place(group("job", [ps], min_groups=0, min_pods=3, topology=cons(TAS_RACK)), state)
    assert not d.admitted
    assert "inside one rack; the best rack (r0) holds 1;" in d.reason
    assert d.reason.endswith("room for 1 pod")


def test_a_preferred_key_across_the_levels_does_not_shrink_the_required_domain() -> None:
    # zone z0: 4 free 8-GPU nodes, 3 on switch s0, 1 on s1; zone z1: 2 on s0. 5 pods in
    # one zone, preferring one switch: z0 holds 4 (its best switch 3)
    zone, switch = "topology.kubernetes.io/zone", "example.com/switch"
    nodes = [node(f"a{i}", {zone: "z0", TAS_RACK: f"r{i % 2}", switch: "s1" if i == 3 else "s0"})
             for i in range(4)]
    nodes += [node(f"b{i}", {zone: "z1", TAS_RACK: "r9", switch: "s0"}) for i in range(2)]
    state = ClusterState.from_nodes(nodes, [zone, TAS_RACK], keys={switch})
    unit = group("job", [podset("job/w", 5, gpu=8)], topology=cons(zone, f"{switch}~"))
    d = place(unit, state)
    assert not d.admitted
    assert "the best zone (z0) holds 4" in d.reason


SWITCH = "gangsched.io/switch"  # a key outside the chain of levels (a crossing key)


def _switched(gpus: int, count: int = 2) -> ClusterState:
    nodes = [node(f"n{i}", {TAS_RACK: "r0", SWITCH: "s0"}, gpu=gpus) for i in range(count)]
    return ClusterState.from_nodes(nodes, None, keys={TAS_RACK})


def test_a_switch_count_keeps_the_per_node_cap() -> None:
    # 2 nodes x 2 GPUs on switch s0, 5 pods of 1 GPU at most 1 per node: s0 holds 2, not
    # the 4 its GPUs would take
    unit = group("job", [podset("job/w", 5, gpu=1, max_per_node=1)], topology=cons(SWITCH))
    d = place(unit, _switched(2))
    assert d.reason.startswith("job: needs 5 pods x 1 nvidia.com/gpu, 1 cpu (w) inside one "
                               "switch; the best switch (s0) holds 2;"), d.reason


def test_a_switch_count_of_replicas_is_in_replicas() -> None:
    # 2 nodes x 2 GPUs, 3 replicas of 2 pods x 1 GPU: s0 holds 4 pods, 2 replicas
    unit = replicas("job", 3, pods=2, gpu=1, topology=cons(SWITCH))
    d = place(unit, _switched(2))
    assert d.reason.startswith("job: needs 3 replicas of 2 pods x 1 nvidia.com/gpu, 1 cpu "
                               "inside one switch; the best switch (s0) holds 2"), d.reason
    # each replica on one host: 1 per 2-GPU host, so s0 holds 2 with 2 hosts, 1 with 1
    hosts = replicas("job", 3, pods=2, gpu=1, topology=cons(SWITCH),
                     replica_topology=cons("host"))
    d = place(hosts, _switched(2, count=1))
    assert "the best switch (s0) holds 1" in d.reason, d.reason


def test_a_level_only_preferred_is_not_called_a_need() -> None:
    # rack r0 = n0 (4 GPUs) + n1 (none): 5 pods x 1 GPU fit in no rack; the host level is
    # only preferred, so the reason counts the rack the group requires
    nodes = [node("n0", {TAS_RACK: "r0"}, gpu=4), node("n1", {TAS_RACK: "r0"}, gpu=0)]
    state = ClusterState.from_nodes(nodes, None, keys={TAS_RACK})
    unit = group("job", [podset("job/w", 5, gpu=1)], topology=cons(TAS_RACK, "host~"))
    d = place(unit, state)
    assert d.reason.startswith("job: needs 5 pods x 1 nvidia.com/gpu, 1 cpu (w) inside one "
                               "rack; the best rack (r0) holds 4"), d.reason
    loose = group("job", [podset("job/w", 5, gpu=1)], topology=cons("host~"))
    d = place(loose, state)
    assert "inside one" not in d.reason and "room for 4 pods" in d.reason, d.reason


def test_a_level_tried_for_locality_is_not_called_a_need() -> None:
    # 3 one-pod children, at most 1 pod per node, on 2 nodes: no constraint at all. A
    # search cut short in the host tier (tried first for locality) says so, not "needs
    # ... inside one host"
    from dataclasses import replace

    from gangsched.placement import Options

    state = ClusterState.from_nodes([node("n0", {TAS_RACK: "r0"}), node("n1", {TAS_RACK: "r0"})],
                                    None, keys={TAS_RACK})
    kids = [podset(f"u/c{i}", 1, gpu=1, cpu=1000 * (i + 1)) for i in range(3)]
    unit = replace(group("u", kids), max_pods_per_node=1)
    d = place(unit, state, Options(max_dry_runs=2, exact=0))
    assert not d.admitted and d.reason.startswith("u: needs 3 children of 1 pod"), d.reason
    assert "inside one host;" not in d.reason and "inside one rack;" not in d.reason, d.reason
