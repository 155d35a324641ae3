"""The policies: how each splits a workload into units, the trees the emulations hand the
engine, and the behaviours they exist to show."""

from __future__ import annotations

import random

import pytest

from gangsched.api.types import NodeRequirements
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet, podsets
from gangsched.sim.policies import (
    POLICIES,
    CpgAlpha,
    FlatGang,
    Gangsched,
    PodByPod,
    Volcano,
    flat_gangs,
    kube_pick,
    lowest_tier_first,
    make_policy,
    nodes_to_score,
    signature,
    two_levels,
)
from gangsched.sim.trace import RoleSpec, Topology, TraceItem, WorkloadSpec, build
from gangsched.testing.builders import GPU, cluster, take

ZONE = "topology.kubernetes.io/zone"
BLOCK = "gangsched.io/block"
RACK = "gangsched.io/rack"
G8 = {"cpu": 8000, GPU: 8}


def disagg() -> TraceItem:
    return build(WorkloadSpec("d", 0.0, [
        RoleSpec("prefill", 2, G8, min_replicas=1, pods_per_replica=2,
                 replica_topology=Topology(required=RACK), topology=Topology(preferred=BLOCK)),
        RoleSpec("decode", 3, {"cpu": 4000, GPU: 4}, min_replicas=1,
                 topology=Topology(required=BLOCK)),
        RoleSpec("frontend", 2, {"cpu": 2000}, min_replicas=1),
    ], topology=Topology(required=ZONE), priority=5))


def keys(units: list[Group | PodSet]) -> list[str]:
    return sorted(k for u in units for ps in podsets(u) for k in ps.pods)


def test_every_policy_covers_every_pod_exactly_once() -> None:
    item = disagg()
    everything = sorted(item.workload.pods)
    for name in POLICIES:
        units = make_policy(name).units(item.workload)
        assert keys(units) == everything, name
        assert make_policy(name).description.startswith(name), name


def test_gangsched_and_cpg_alpha_schedule_the_whole_tree() -> None:
    item = disagg()
    assert Gangsched().units(item.workload) == [item.workload.tree]
    assert CpgAlpha().units(item.workload) == [item.workload.tree]


def test_pod_by_pod_makes_one_unconstrained_unit_per_pod() -> None:
    units = PodByPod().units(disagg().workload)
    assert len(units) == 2 * 2 + 3 + 2
    assert all(isinstance(u, PodSet) and u.size == 1 and u.min_pods == 1 and not u.topology
               for u in units)
    assert len({u.path for u in units}) == len(units)


def test_flat_gang_makes_each_podgroup_and_replica_its_own_gang() -> None:
    units = FlatGang().units(disagg().workload)
    # two prefill replicas (each a gang of its 2 pods, rack), decode and frontend roles of
    # single-pod replicas (one PodGroup each, minCount = min replicas)
    paths = [u.path for u in units]
    assert paths == ["default/d/prefill/prefill-0", "default/d/prefill/prefill-1",
                     "default/d/decode", "default/d/frontend"]
    rep, _, decode, frontend = units
    assert isinstance(rep, Group) and rep.topology == (Constraint(RACK, "required"),)
    assert rep.priority == 5
    assert isinstance(decode, PodSet) and decode.min_pods == 1
    assert decode.topology == (Constraint(BLOCK, "required"),)
    # the frontend inherits the workload's zone as its own constraint
    assert frontend.topology == (Constraint(ZONE, "required"),)


def test_flat_gang_treats_training_slices_as_independent_replicas() -> None:
    job = build(WorkloadSpec("t", 0.0, [RoleSpec("w", 4, G8, pods_per_replica=2,
                                                 replica_topology=Topology(required=RACK))],
                             topology=Topology(required=BLOCK)))
    assert job.workload.tree is not None
    units = flat_gangs(job.workload.tree, None, 0)
    assert len(units) == 4
    # a workload of single-pod roles: every role its own gang
    pd = build(WorkloadSpec("pd", 0.0, [RoleSpec("prefill", 2, G8), RoleSpec("decode", 1, G8)]))
    assert pd.workload.tree is not None
    assert [u.path for u in flat_gangs(pd.workload.tree, None, 0)] == [
        "default/pd/prefill", "default/pd/decode"]
    assert all(u.topology == (Constraint(RACK, "required"),) for u in units)


def test_flat_gang_keeps_a_group_of_single_pod_replicas_together() -> None:
    reps = [Group(f"r{i}", f"w/r/r{i}", [PodSet("p", f"w/r/r{i}/p", (f"ns/p{i}",), G8,
                                                min_pods=1)], min_groups=1) for i in range(3)]
    role = Group("r", "w/r", list(reps), min_groups=2)
    (unit,) = flat_gangs(role, Constraint(BLOCK, "required"), 1, top=False)
    assert unit.path == "w/r" and isinstance(unit, Group) and unit.min_groups == 2
    assert unit.topology == (Constraint(BLOCK, "required"),)


def test_volcano_moves_role_constraints_to_each_subgroup() -> None:
    item = disagg()
    (unit,) = Volcano().units(item.workload)
    assert isinstance(unit, Group) and unit.topology == (Constraint(ZONE, "required"),)
    prefill, decode, _ = unit.children
    assert isinstance(prefill, Group) and prefill.topology == ()  # preferred role level gone
    assert all(r.topology == (Constraint(RACK, "required"),) for r in prefill.children)
    # a role of single pods: its subgroups are single pods, a constraint on them is moot
    assert isinstance(decode, PodSet)
    assert two_levels(decode) is decode


def test_volcano_tries_the_lowest_tier_first_up_to_the_required_level() -> None:
    tree = disagg().workload.tree
    assert tree is not None
    out = lowest_tier_first(tree, (ZONE, BLOCK, RACK), RACK)
    assert out.topology == (Constraint(ZONE, "required"), Constraint(RACK, "preferred"))
    assert isinstance(out, Group)
    decode = out.children[1]
    assert decode.topology == (Constraint(BLOCK, "required"), Constraint(RACK, "preferred"))
    rep = out.children[0]
    assert isinstance(rep, Group)
    # already at the lowest tier: unchanged
    assert rep.children[0].topology == (Constraint(RACK, "required"),)


def stealing() -> TraceItem:
    """3 prefill replicas wanted, 1 required; 1 decode required; every pod 8 GPUs."""
    return build(WorkloadSpec("s", 0.0, [
        RoleSpec("prefill", 3, G8, min_replicas=1),
        RoleSpec("decode", 1, G8),
    ]))


def test_cpg_alpha_is_robbed_by_greedy_siblings_where_gangsched_is_not() -> None:
    state = cluster((("rack", 1), ("host", 3)))  # 24 GPUs: room for 3 pods
    unit = stealing().workload.tree
    assert unit is not None
    ours = Gangsched().place(unit, state)
    assert ours.admitted and ours.placed == 3  # 1 decode + 2 prefill, one decision
    alone = Gangsched(whole=False).place(unit, state)
    assert alone.admitted and alone.placed == 2  # admission: the minimum, extras after
    theirs = CpgAlpha().place(unit, state)
    assert not theirs.admitted  # prefill took all 3 nodes before decode's minimum


def test_identical_rejected_units_are_answered_from_the_cache() -> None:
    state = cluster((("rack", 1), ("host", 2)))
    policy = PodByPod()
    big = build(WorkloadSpec("b", 0.0, [RoleSpec("w", 3, {"cpu": 1000, GPU: 16})]))
    a, b, c = policy.units(big.workload)
    first = policy.place(a, state)
    second = policy.place(b, state)
    assert not first.admitted and not second.admitted
    assert second.unit == b.path and second.reason == first.reason
    assert policy.cache_hits == 1
    take(state, state.topology.names[0], gpu=1)  # the state changed: search again
    policy.place(c, state)
    assert policy.cache_hits == 1


def test_signature_ignores_names_but_not_shape() -> None:
    one = PodSet("a", "x/a", ("ns/a",), G8, min_pods=1)
    same = PodSet("b", "y/b", ("ns/b",), G8, min_pods=1)
    other = PodSet("a", "x/a", ("ns/a",), {"cpu": 1}, min_pods=1)
    assert signature(one) == signature(same) != signature(other)


def _kube_reference(state: ClusterState, ps: PodSet, start: int, scoring: str, sampling: bool
                    ) -> tuple[int, int] | None:
    """kube-scheduler's default profile for one pod, node by node in plain Python: walk
    the ring from ``start``, keep the feasible nodes until enough are found, score each
    (LeastAllocated or MostAllocated, plus BalancedAllocation, on cpu and memory) and
    take the first highest."""
    n = state.n_nodes
    fit = state.capacity(state.shape(ps.requests), ps.requirements, 1)
    want = nodes_to_score(n, sampling)
    ring = [(start + i) % n for i in range(n)]
    feasible = [j for j in ring if fit[j] > 0]
    if not feasible:
        return None
    found = feasible[:want]  # it stops looking once enough are found
    processed = n if len(feasible) <= want else ring.index(found[-1]) + 1
    best, best_score = -1, -1.0
    for j in found:
        fr = []
        for res in ("cpu", "memory"):
            r = state.rindex[res]
            alloc = float(state.alloc[r, j])
            used = alloc - float(state.free[r, j]) + ps.requests.get(res, 0)
            fr.append(min(used / max(alloc, 1), 1.0) if alloc > 0 else 1.0)
        a, b = fr
        fa, fb = (a, b) if scoring == "most" else (1.0 - a, 1.0 - b)
        mean = (a + b) / 2.0
        std = (((a - mean) ** 2 + (b - mean) ** 2) / 2.0) ** 0.5
        score = (fa + fb) / 2.0 * 100.0 + (1.0 - std) * 100.0
        if score > best_score:
            best, best_score = j, score
    return best, processed


@pytest.mark.parametrize("seed", range(40))
def test_pod_by_pod_picks_nodes_as_kube_scheduler_scores_them(seed: int) -> None:
    rng = random.Random(seed)
    hosts = rng.choice([4, 16, 60])  # 16 to 240 nodes: sampling starts at 100
    state = cluster((("rack", rng.randint(1, 4)), ("host", hosts)))
    names = list(state.topology.names)
    for name in rng.sample(names, len(names) // 2):  # pods already bound, of mixed sizes
        take(state, name, gpu=rng.choice([1, 2, 4, 8]), cpu=rng.randrange(0, 64_000, 500),
             memory=rng.randrange(0, 512 << 30, 1 << 28))
    for _ in range(5):
        requests = {"cpu": rng.choice([500, 4_000, 16_000]), GPU: rng.choice([0, 1, 4, 8]),
                    "memory": rng.choice([1 << 30, 64 << 30])}
        ps = PodSet("p", "u/p#0", ("u-p-0",), requests, NodeRequirements(), min_pods=1)
        start = rng.randrange(state.n_nodes)
        for scoring in ("least", "most"):
            for sampling in (True, False):
                assert kube_pick(state, ps, start, scoring, sampling) == _kube_reference(
                    state, ps, start, scoring, sampling)
