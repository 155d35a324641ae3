"""The in-memory backend (API server + controllers) and the clocks."""

from __future__ import annotations

import pytest

from gangsched.scheduler import (
    BindError,
    ClusterEvent,
    FakeClock,
    InMemoryBackend,
    Scheduler,
    make_workload,
)
from gangsched.testing.builders import GPU, cons, group, nodes, podset


def backend() -> tuple[InMemoryBackend, list[ClusterEvent], FakeClock]:
    clock = FakeClock(5.0)
    b = InMemoryBackend(nodes((("zone", 1), ("rack", 1), ("host", 2)),
                              {"cpu": 8000, GPU: 8, "pods": 110}), clock)
    seen: list[ClusterEvent] = []
    b.subscribe(seen.append)
    return b, seen, clock


def test_submit_bind_evict_and_recreate() -> None:
    b, seen, _ = backend()
    b.submit(make_workload(group("g", [podset("g/w", 2, gpu=1)]), priority=3))
    assert [(e.kind, e.name) for e in seen] == [
        ("WorkloadAdded", "g"), ("PodAdded", "default/g-w-0"), ("PodAdded", "default/g-w-1")]
    assert all(p.node_name is None and p.priority == 3 for p in b.pods())
    b.bind("default/g-w-0", "n-z0-r0-h0")
    assert b.bound() == {"default/g-w-0": "n-z0-r0-h0"}
    with pytest.raises(BindError, match="already bound"):
        b.bind("default/g-w-0", "n-z0-r0-h1")
    with pytest.raises(BindError, match="not found"):
        b.bind("default/nope", "n-z0-r0-h1")
    seen.clear()
    b.evict("default/g-w-0", "test")
    assert [(e.kind, e.name, e.time) for e in seen] == [
        ("PodDeleted", "default/g-w-0", 5.0), ("PodAdded", "default/g-w-0", 5.0)]
    assert b.bound() == {} and b.evictions == [(5.0, "default/g-w-0", "test")]


def test_node_failures_lose_pods_and_block_binds() -> None:
    b, seen, _ = backend()
    b.submit(make_workload(group("g", [podset("g/w", 2, gpu=1)])))
    b.bind("default/g-w-0", "n-z0-r0-h0")
    b.bind("default/g-w-1", "n-z0-r0-h1")
    seen.clear()
    b.set_node_ready("n-z0-r0-h0", False)
    assert [e.kind for e in seen] == ["PodDeleted", "PodAdded", "NodeChanged"]
    assert b.bound() == {"default/g-w-1": "n-z0-r0-h1"}
    with pytest.raises(BindError, match="not schedulable"):
        b.bind("default/g-w-0", "n-z0-r0-h0")
    b.remove_node("n-z0-r0-h1")
    assert b.bound() == {} and len(b.pods()) == 2 and len(b.nodes()) == 1
    b.fail_binds = lambda pod, node: True
    b.set_node_ready("n-z0-r0-h0", True)
    with pytest.raises(BindError, match="injected"):
        b.bind("default/g-w-0", "n-z0-r0-h0")


def test_resubmission_keeps_named_pods_and_removal_deletes_all() -> None:
    b, seen, _ = backend()
    b.submit(make_workload(group("g", [podset("g/w", 3, gpu=1)])))
    b.bind("default/g-w-2", "n-z0-r0-h0")
    b.submit(make_workload(group("g", [podset("g/w", 2, gpu=1)])))
    # the pending pod it no longer names is gone; the bound one waits for the scheduler
    assert sorted(p.key for p in b.pods()) == ["default/g-w-0", "default/g-w-1", "default/g-w-2"]
    b.evict("default/g-w-2", "scale down")
    assert sorted(p.key for p in b.pods()) == ["default/g-w-0", "default/g-w-1"]
    seen.clear()
    b.remove_workload("g")
    assert b.pods() == [] and [e.kind for e in seen][-1] == "WorkloadRemoved"


def test_fake_clock_moves_forward_only() -> None:
    c = FakeClock(1.0)
    c.advance(2.5)
    c.set(4.0)
    assert c.now() == 4.0
    with pytest.raises(ValueError):
        c.set(3.0)
    with pytest.raises(ValueError):
        c.advance(-1.0)


def test_levels_are_inferred_from_the_constraints_trees_name() -> None:
    clock = FakeClock()
    b = InMemoryBackend(nodes((("zone", 1), ("rack", 2), ("host", 2)),
                              {"cpu": 8000, GPU: 8, "pods": 110}), clock)
    s = Scheduler(b, clock)  # no levels configured
    b.submit(make_workload(group("g", [podset("g/w", 2, gpu=8)], topology=cons("rack"))))
    s.run_cycle()
    st = s.status()["g"]
    assert st.state == "admitted" and st.domain == "z0-r0"
    assert s.state.topology.keys == ["topology.kubernetes.io/zone", "gangsched.io/rack",
                                     "kubernetes.io/hostname"]
