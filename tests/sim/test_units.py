"""The policy-independent bookkeeping: minimum satisfaction from bound pods, GPU-hours and
waste between changes, locality, prefill-decode distance, fragmentation, deadlocks."""

from __future__ import annotations

import pytest

from gangsched.cluster.topology import build_topology
from gangsched.sim.result import UnitRecord
from gangsched.sim.scenarios import GPU_NODE, cluster
from gangsched.sim.trace import RoleSpec, WorkloadSpec, build
from gangsched.sim.units import Geometry, Tracked, Workset

GPU = "nvidia.com/gpu"
G8 = {"cpu": 1000, GPU: 8}
NODES, LEVELS = cluster([("block", 2), ("rack", 2), ("host", 2)], GPU_NODE)  # 8 nodes
NAMES = sorted(n.name for n in NODES)  # topology order: b0-r0-h0, b0-r0-h1, b0-r1-h0 ...


def workset() -> Workset:
    return Workset(Geometry(build_topology(NODES, LEVELS), GPU, 1.0))


def add(ws: Workset, name: str, roles: list[RoleSpec]) -> tuple[Tracked, list[str]]:
    item = build(WorkloadSpec(name, 0.0, roles))
    tree = item.workload.tree
    assert tree is not None
    rec = UnitRecord(tree.path, item.workload.name, "t", 0, 0, 0, 0, 0.0)
    t = ws.add(tree, rec, 0.0)
    return t, [k for ps in t.sets for k in ps.pods]


def settle(ws: Workset, now: float) -> list[tuple[bool, bool]]:
    return [(was, ok) for _, was, ok in ws.settle(now)]


def test_minimum_holds_once_enough_pods_are_bound_and_waste_accrues_before() -> None:
    ws = workset()
    t, pods = add(ws, "a", [RoleSpec("w", 2, G8)])
    assert (t.record.pods_min, t.record.pods_desired, t.record.gpus_min) == (2, 2, 16)
    ws.bound(pods[0], NAMES[0], 0.0)
    assert settle(ws, 0.0) == []  # still below its minimum
    ws.bound(pods[1], NAMES[1], 3600.0)  # one pod held for an hour below the minimum
    assert settle(ws, 3600.0) == [(False, True)]
    assert t.record.admitted == 3600.0
    assert t.record.wasted_gpu_hours == pytest.approx(8.0)
    assert t.record.partial_seconds == 3600.0
    ws.close(7200.0)
    assert t.record.gpu_hours == pytest.approx(8.0 + 16.0)
    assert t.record.wasted_gpu_hours == pytest.approx(8.0)  # nothing more once admitted
    assert ws.unbound(pods[0], 7200.0) is t
    assert settle(ws, 7200.0) == [(True, False)]
    assert ws.unbound("default/nobody", 7200.0) is None


def test_locality_is_one_inside_the_narrowest_domain_that_fits() -> None:
    ws = workset()
    near, p1 = add(ws, "near", [RoleSpec("w", 2, G8)])
    far, p2 = add(ws, "far", [RoleSpec("w", 2, G8)])
    for pod, node in zip(p1, NAMES[0:2], strict=True):  # one rack
        ws.bound(pod, node, 0.0)
    for pod, node in zip(p2, (NAMES[2], NAMES[4]), strict=True):  # two blocks
        ws.bound(pod, node, 0.0)
    settle(ws, 0.0)
    assert near.record.locality == 1.0
    assert far.record.locality == pytest.approx(1 / 3)  # rack needed, cluster used


def test_locality_held_follows_the_pods_a_unit_holds_after_admission() -> None:
    ws = workset()
    t, pods = add(ws, "grow", [RoleSpec("w", 3, G8, min_replicas=1)])  # one needed, three wanted
    _, more = add(ws, "near", [RoleSpec("w", 2, G8)])
    ws.bound(pods[0], NAMES[0], 0.0)  # admitted alone on a host
    for pod, node in zip(more, NAMES[2:4], strict=True):  # one rack
        ws.bound(pod, node, 0.0)
    settle(ws, 0.0)
    s = ws.sample(0.0)
    assert (s.units_held, s.units_local) == (2, 2)
    ws.bound(pods[1], NAMES[4], 60.0)  # an extra in the other block: one rack could hold both
    settle(ws, 60.0)
    s = ws.sample(60.0)
    assert (s.units_held, s.units_local) == (2, 1)
    assert t.record.locality == 1.0  # at admission it was local: that does not change


def test_prefill_decode_distance_counts_levels_from_the_host() -> None:
    ws = workset()
    t, pods = add(ws, "pd", [RoleSpec("prefill", 1, {"cpu": 1000, GPU: 4}),
                             RoleSpec("decode", 1, {"cpu": 1000, GPU: 4})])
    ws.bound(pods[0], NAMES[0], 0.0)
    ws.bound(pods[1], NAMES[2], 0.0)  # another rack of the same block
    settle(ws, 0.0)
    assert t.record.pd_distance == 2  # host 0, rack 1, block 2


def test_samples_count_allocation_useful_partial_fragmentation_and_deadlocks() -> None:
    ws = workset()
    _, okp = add(ws, "ok", [RoleSpec("w", 1, {"cpu": 1000, GPU: 4})])
    _, ap = add(ws, "a", [RoleSpec("w", 4, G8)])
    _, bp = add(ws, "b", [RoleSpec("w", 4, G8)])
    ws.bound(okp[0], NAMES[0], 0.0)
    for pod, node in zip(ap[:3], NAMES[1:4], strict=True):
        ws.bound(pod, node, 0.0)
    for pod, node in zip(bp[:3], NAMES[4:7], strict=True):
        ws.bound(pod, node, 0.0)
    settle(ws, 0.0)
    s = ws.sample(0.0)
    assert s.gpu_allocated == pytest.approx((4 + 48) / 64)
    assert s.gpu_useful == pytest.approx(4 / 64)
    assert (s.pending_units, s.partial_units) == (2, 2)
    # 12 GPUs free: 4 on a partly used node, 8 on the one empty node
    assert s.fragmentation == pytest.approx(4 / 12)
    # each of a and b misses 8 GPUs; 12 are free, so neither is deadlocked yet
    assert s.deadlocked_units == 0
    ws.bound(okp[0], NAMES[0], 0.0)  # already bound: ignored
    extra, ep = add(ws, "filler", [RoleSpec("w", 1, G8)])
    ws.bound(ep[0], NAMES[7], 0.0)
    settle(ws, 0.0)
    # with the empty node taken 4 GPUs are free: each needs 8 more, which only the other's
    # release would give
    assert ws.sample(0.0).deadlocked_units == 2
    ws.retire(extra, 10.0)
    assert ws.sample(10.0).pending_units == 2
