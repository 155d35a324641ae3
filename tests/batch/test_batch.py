"""``gangsched place`` as one batch: every unit's minimum before anyone's extras, then the
extras in fair rounds (issue 14)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gangsched.batch import place_plan
from gangsched.cluster.state import ClusterState
from gangsched.gang import Constraint, Group, PodSet
from gangsched.model import Plan, Workload
from gangsched.placement.engine import place as engine_place
from gangsched.testing.builders import GPU, RACK, cons, group, levels_of, nodes, podset

ONE_RACK = (("zone", 1), ("rack", 1), ("host", 4))  # 4 nodes of 8 GPUs


def serving_group(name: str, prefill: int = 3) -> Group:
    """prefill: ``prefill`` replicas wanted, 1 required; decode: 1 required; 8 GPUs a pod."""
    reps = [podset(f"{name}/prefill/r{i}", 1, gpu=8) for i in range(prefill)]
    return group(name, [group(f"{name}/prefill", reps, min_groups=1),
                        group(f"{name}/decode", [podset(f"{name}/decode/r0", 1, gpu=8)])])


def plan(*trees: Group, hosts: int = 4) -> tuple[Plan, ClusterState]:
    shape = (("zone", 1), ("rack", 1), ("host", hosts))
    ns = nodes(shape, {"cpu": 64_000, GPU: 8, "pods": 110})
    workloads = [Workload(t.path, "ServingGroup", t) for t in trees]
    return Plan(workloads, ns, None, []), ClusterState.from_nodes(ns, levels_of(shape))


def test_two_serving_groups_whose_minimums_fit_only_if_extras_wait() -> None:
    p, state = plan(serving_group("sg0"), serving_group("sg1"))
    out = place_plan(p, state)
    assert [o.admitted for o in out] == [True, True]
    assert [len(o.pods) for o in out] == [2, 2]
    # the ablation: extras with each unit, in order: the first starves the second
    p, state = plan(serving_group("sg0"), serving_group("sg1"))
    eager = place_plan(p, state, min_first=False)
    assert [o.admitted for o in eager] == [True, False]
    assert len(eager[0].pods) == 4


def test_extras_are_shared_in_rounds() -> None:
    # 8 nodes: both minimums (4 pods), then 4 nodes of extras; each asks for 2 more
    # prefills: the rounds give each unit half of what it lacks first, then the rest
    p, state = plan(serving_group("sg0", prefill=5), serving_group("sg1", prefill=5), hosts=8)
    out = place_plan(p, state)
    assert [len(o.pods) for o in out] == [4, 4]
    prefill = [next(g for g in o.groups if g.path.endswith("/prefill")) for o in out]
    assert [g.satisfied_children for g in prefill] == [3, 3]


def test_a_unit_with_nothing_required_comes_after_every_minimum() -> None:
    loose = group("loose", [podset("loose/w", 4, gpu=8, min_pods=0)], min_groups=0)
    p, state = plan(loose, serving_group("sg0"))
    out = place_plan(p, state)
    assert out[1].admitted and len(out[1].pods) >= 2  # its minimum first
    assert out[0].admitted and len(out[0].pods) >= 1  # the loose pods take what is left
    assert len(out[0].pods) + len(out[1].pods) == 4


def test_a_minimum_goes_where_its_extras_fit_and_they_grow_beside_it() -> None:
    # two racks of two nodes; a one-node job takes a node of rack 0 first. The rack-bound
    # service needs one replica and wants two: alone, its minimum fits rack 0 tightest,
    # where its extra could never join it; it goes to rack 1 and grows to both replicas
    shape = (("zone", 1), ("rack", 2), ("host", 2))
    ns = nodes(shape, {"cpu": 64_000, GPU: 8, "pods": 110})
    job = group("job", [podset("job/w", 1, gpu=8)], priority=1)
    svc = group("svc", [group("svc/prefill", [podset(f"svc/prefill/r{i}", 1, gpu=8)
                                              for i in range(2)], min_groups=1)],
                topology=cons("rack"))
    workloads = [Workload("job", "PodGroup", job, priority=1),
                 Workload("svc", "ServingGroup", svc)]
    out = place_plan(Plan(workloads, ns, None, []), ClusterState.from_nodes(ns, levels_of(shape)))
    assert [o.admitted for o in out] == [True, True]
    assert out[0].pods["default/job-w-0"].startswith("n-z0-r0-")
    assert len(out[1].pods) == 2
    assert {n.rsplit("-", 1)[0] for n in out[1].pods.values()} == {"n-z0-r1"}


# -- look-ahead ------------------------------------------------------------------------

TWO_RACKS = (("zone", 1), ("rack", 2), ("host", 2))  # 2 racks of 2 nodes of 8 GPUs


def rack_gang(name: str, pods: int, priority: int = 0) -> Group:
    return group(name, [podset(f"{name}/w", pods, gpu=8)], topology=cons("rack"),
                 priority=priority)


def racks_plan(*trees: Group) -> tuple[Plan, ClusterState]:
    ns = nodes(TWO_RACKS, {"cpu": 64_000, GPU: 8, "pods": 110})
    workloads = [Workload(t.path, "PodGroup", t, priority=t.priority) for t in trees]
    return Plan(workloads, ns, None, []), ClusterState.from_nodes(ns, levels_of(TWO_RACKS))


def test_look_ahead_admits_more_when_a_later_workload_packs_better() -> None:
    # in input order the single pod takes half a rack and one of the two whole-rack gangs
    # is left out (24 of 32 GPUs); leaving the single pod out places all 32
    trees = (rack_gang("one", 1), rack_gang("a", 2), rack_gang("b", 2))
    p, state = racks_plan(*trees)
    plain = place_plan(p, state, lookahead=0)
    assert [o.admitted for o in plain] == [True, True, False]
    p, state = racks_plan(*trees)
    out = place_plan(p, state)
    assert [o.admitted for o in out] == [False, True, True]
    assert sum(len(o.pods) for o in out) == 4
    assert {len(set(o.pods.values())) for o in out if o.admitted} == {2}


def test_look_ahead_never_trades_a_higher_priority_for_more_pods() -> None:
    p, state = racks_plan(rack_gang("one", 1, priority=10), rack_gang("a", 2), rack_gang("b", 2))
    out = place_plan(p, state)
    assert out[0].admitted
    assert [o.admitted for o in out[1:]].count(True) == 1


def test_look_ahead_keeps_the_input_order_when_everything_fits() -> None:
    p, state = racks_plan(rack_gang("a", 1), rack_gang("b", 1))
    out = place_plan(p, state)
    assert all(o.admitted for o in out)
    # best fit in input order: the second pod joins the first one's rack
    assert out[0].pods and out[1].pods
    first = next(iter(out[0].pods.values()))
    second = next(iter(out[1].pods.values()))
    assert first.rsplit("-h", 1)[0] == second.rsplit("-h", 1)[0]


def test_look_ahead_tries_larger_workloads_first_and_more_pods_among_equals() -> None:
    # one node of 8 GPUs, asked for by one 8-GPU pod and, later, by eight 1-GPU pods: the
    # same GPUs, so the first trial (largest first; among equals, more pods) admits the
    # eight pods, as an exact optimum of GPUs and then pods would
    trees = (group("one", [podset("one/w", 1, gpu=8)]),
             group("eight", [podset("eight/w", 8, gpu=1)]))
    p, state = plan(*trees, hosts=1)
    assert [o.admitted for o in place_plan(p, state, lookahead=0)] == [True, False]
    p, state = plan(*trees, hosts=1)
    out = place_plan(p, state, lookahead=1)
    assert [o.admitted for o in out] == [False, True] and len(out[1].pods) == 8


def test_look_ahead_also_starts_from_the_smallest_pods_first() -> None:
    # one node of 8 GPUs. Largest first admits the gang of four 2-GPU pods (8 GPUs, 4
    # pods), and no single move of one gang does better; the smallest pods first fill the
    # node with two gangs of four 1-GPU pods (8 GPUs, 8 pods)
    trees = (group("big", [podset("big/w", 3, gpu=4)]),  # never fits
             group("two", [podset("two/w", 4, gpu=2)]),
             group("three", [podset("three/w", 3, gpu=1)]),
             group("whole", [podset("whole/w", 1, gpu=8)]),
             group("a", [podset("a/w", 4, gpu=1)]),
             group("b", [podset("b/w", 4, gpu=1)]))
    p, state = plan(*trees, hosts=1)
    out = place_plan(p, state)
    assert [o.admitted for o in out] == [False, False, False, False, True, True]
    assert sum(len(o.pods) for o in out) == 8


def test_look_ahead_moves_an_admitted_workload_to_the_back_to_pack_more() -> None:
    # one node of 8 GPUs: a gang of two 2-GPU pods, and gangs of 2, 3 and 3 one-GPU pods.
    # Largest first admits the 4 GPUs and one 3 (7 GPUs, 5 pods), and no rejected gang
    # moved to the front does better; moving the admitted 4-GPU gang to the back lets the
    # three small gangs fill the node (8 GPUs, 8 pods)
    trees = (group("two", [podset("two/w", 2, gpu=2)]),
             group("a", [podset("a/w", 2, gpu=1)]),
             group("b", [podset("b/w", 3, gpu=1)]),
             group("c", [podset("c/w", 3, gpu=1)]))
    p, state = plan(*trees, hosts=1)
    out = place_plan(p, state)
    assert [o.admitted for o in out] == [False, True, True, True]
    assert sum(len(o.pods) for o in out) == 8


def _counting_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every engine search a batch runs (the look-ahead's trials and the batch itself)."""
    import gangsched.placement.engine.minimum as minimum

    calls: list[str] = []
    real = minimum.place

    def counted(unit: Any, *args: Any, **kw: Any) -> Any:
        calls.append(unit.path)
        return real(unit, *args, **kw)

    monkeypatch.setattr(minimum, "place", counted)
    return calls


def test_many_equal_workloads_that_do_not_all_fit_are_not_searched_again_and_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 60 serving groups of 2 whole-node pods on 8 nodes: 4 fit. Reordering equal
    # workloads changes nothing, so the look-ahead tries no such order, and within a
    # trial one rejection stands for every later workload like it (the trial only ever
    # loses free capacity): a handful of searches each, not 60 per trial
    trees = [serving_group(f"sg{i:02d}", prefill=1) for i in range(60)]
    calls = _counting_searches(monkeypatch)
    p, state = plan(*trees, hosts=8)
    out = place_plan(p, state)
    assert [o.admitted for o in out].count(True) == 4
    assert all(o.admitted for o in out[:4])  # input order among equals
    assert all(o.reason for o in out[4:])  # each rejection explained by its own search
    assert len(calls) < 3 * 60, len(calls)  # 1,400+ before
    monkeypatch.undo()
    p, state = plan(*trees, hosts=8)
    plain = place_plan(p, state, lookahead=0)
    assert [o.admitted for o in plain] == [o.admitted for o in out]
    assert [o.pods for o in plain] == [o.pods for o in out]


def test_a_minimum_whose_root_asks_no_domain_takes_one_search(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from gangsched.placement.engine import Options, place, place_minimum

    calls = _counting_searches(monkeypatch)
    unit = serving_group("sg")  # 1 of 3 prefill replicas required: extras to come
    _, state = plan(unit)
    d = place_minimum(unit, state, Options(extras=False), commit=False)
    assert d.admitted and len(d.assignments) == 2 and calls == ["sg"]
    monkeypatch.undo()
    assert d == place(unit, state, Options(extras=False), commit=False)


def test_equal_workloads_owning_their_rack_are_searched_once_per_trial_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 one-pod gangs that each own a rack of one exclusive set, on two racks: 2 fit
    owned = (Constraint(RACK, "required", exclusive="ns/group-key"),)
    trees = [group(f"g{i:02d}", [podset(f"g{i:02d}/w", 1, gpu=8)], topology=owned)
             for i in range(40)]
    calls = _counting_searches(monkeypatch)
    p, state = racks_plan(*trees)
    out = place_plan(p, state)
    assert [o.admitted for o in out].count(True) == 2 and out[0].admitted and out[1].admitted
    assert len({next(iter(o.pods.values())).rsplit("-h", 1)[0] for o in out[:2]}) == 2
    assert len(calls) < 3 * 40, len(calls)


def test_a_workload_whose_owner_already_holds_a_rack_is_not_taken_for_a_fresh_one() -> None:
    from gangsched.batch import _signature

    owned = (Constraint(RACK, "required", exclusive="set"),)
    a = group("a", [podset("a/w", 1, gpu=8)], topology=owned)
    b = group("b", [podset("b/w", 1, gpu=8)], topology=owned)
    assert _signature(a, set()) == _signature(b, set()) is not None
    assert _signature(a, {"a"}) is None  # a's pods already hold a rack: a is not b
    assert _signature(b, {"a"}) is not None


def test_independent_units_of_a_basic_root_that_fit_are_admitted_with_their_pods() -> None:
    # a basic root (no minimum of its own): each replica is its own gang. Two fit, the
    # third (more GPUs than any node has) does not: the workload is admitted with the two,
    # and the reason names the one left out
    reps = [group(f"ms/r{i}", [podset(f"ms/r{i}/pods", 2, gpu=4)]) for i in range(2)]
    big = group("ms/big", [podset("ms/big/pods", 1, gpu=16)])
    root = Group("ms", "ms", [*reps, big], min_groups=0)
    p, state = plan(root)
    (out,) = place_plan(p, state)
    assert out.admitted
    assert len(out.pods) == 4 and all(k.startswith("default/ms-r") for k in out.pods)
    assert "16 nvidia.com/gpu" in out.reason
    # when none of them fits, the workload is rejected and holds nothing
    p, state = plan(Group("ms", "ms", [big], min_groups=0))
    free = state.free.copy()
    (out,) = place_plan(p, state)
    assert not out.admitted and not out.pods and (state.free == free).all()


def test_extras_stay_in_the_domain_a_pinned_value_names_among_several() -> None:
    """A required rack pinned to ``r0``, a name two blocks use: the minimum goes to
    b0's r0, and the extra pod must not go to b1's r0 (two racks; sound-s29 r4)."""
    from gangsched.api.types import Node
    from gangsched.batch import place_plan
    from gangsched.cluster.state import ClusterState
    from gangsched.gang import Constraint, Group, PodSet
    from gangsched.model import Plan, Workload
    from gangsched.placement.verify import verify

    gpu, block, rack = "nvidia.com/gpu", "gangsched.io/block", "gangsched.io/rack"
    nodes = [Node(f"n-b{b}", {block: f"b{b}", rack: "r0", "kubernetes.io/hostname": f"n-b{b}"},
                  allocatable={"cpu": 64000, gpu: 8, "pods": 110}) for b in range(2)]
    ps = PodSet("pods", "job/pods", ("ns/p0", "ns/p1"), {"cpu": 1000, gpu: 8, "pods": 1},
                min_pods=1)
    unit = Group("job", "job", [ps], min_groups=1, topology=(Constraint(rack, value="r0"),))
    [out] = place_plan(Plan([Workload("job", "PodGroup", unit)], nodes, [block, rack], []),
                       ClusterState.from_nodes(nodes, [block, rack]))
    assert out.admitted and len(out.pods) == 1
    assert verify(unit, ClusterState.from_nodes(nodes, [block, rack]), out.pods) == []


def test_whatever_still_fits_is_tried_again_while_it_grows(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # an engine whose extras try places one pod (its first-feasible choices can leave room
    # a next try fills): the unit grows in each "whatever still fits" round, up to
    # FIT_ROUNDS of them, not only in the first
    import gangsched.batch as batch

    def first_pod_only(node: Any) -> Any:
        if isinstance(node, PodSet):
            return replace(node, pods=node.pods[:1])
        return replace(node, children=[first_pod_only(c) for c in node.children])

    def one_pod_a_try(unit: Any, state: ClusterState, opts: Any = None, **kw: Any) -> Any:
        return engine_place(first_pod_only(unit), state, opts, **kw)

    monkeypatch.setattr(batch, "place", one_pod_a_try)
    monkeypatch.setattr(batch, "EXTRA_ROUNDS", ())  # only the rounds of whatever fits
    p, state = plan(group("loose", [podset("loose/w", 8, gpu=8, min_pods=1)]), hosts=8)
    out = place_plan(p, state)
    assert out[0].admitted
    assert len(out[0].pods) == 1 + batch.FIT_ROUNDS  # the minimum, then a pod a round
