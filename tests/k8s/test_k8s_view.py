"""The cluster view and KubeBackend, fed with deltas directly (no API server)."""

from __future__ import annotations

from typing import Any

import pytest
from k8s_fakes import pod_obj

from gangsched.api.types import Pod
from gangsched.k8s.api import NODES, PODS, VOLCANO_PODGROUPS, Kind, kueue_topology
from gangsched.k8s.backend import ClusterView, KubeBackend, parse_object
from gangsched.k8s.binder import UncertainBind
from gangsched.k8s.cache import Delta
from gangsched.scheduler import BindError, ClusterEvent, FakeClock, Scheduler

Obj = dict[str, Any]


def node_obj(name: str, cpu: str = "2", rv: str = "1", **labels: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": rv,
                         "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": cpu, "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pg_obj(name: str, min_member: int, rv: str = "1", status: Obj | None = None) -> Obj:
    obj: Obj = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "metadata": {"name": name, "namespace": "default", "resourceVersion": rv},
                "spec": {"minMember": min_member}}
    if status:
        obj["status"] = status
    return obj


def d(kind: Kind, obj: Obj, type_: str = "ADDED") -> Delta:
    meta = obj["metadata"]
    key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
    return Delta(kind, type_, key, obj)  # type: ignore[arg-type]


def gang_deltas(name: str = "g", size: int = 2) -> list[Delta]:
    return [d(PODS, pod_obj(f"{name}-{i}", group=name)) for i in range(size)] + [
        d(VOLCANO_PODGROUPS, pg_obj(name, size))]


class Recorder:
    def __init__(self, backend: KubeBackend) -> None:
        self.events: list[tuple[str, str]] = []
        backend.subscribe(self)

    def __call__(self, ev: ClusterEvent) -> None:
        self.events.append((ev.kind, ev.name))

    def take(self) -> list[tuple[str, str]]:
        out, self.events = self.events, []
        return out


def make_backend(**kw: Any) -> tuple[KubeBackend, list[tuple[str, str]], Recorder]:
    binds: list[tuple[str, str]] = []
    deleted: list[tuple[str, str]] = []

    def binder(pod: Pod, node: str) -> None:
        binds.append((pod.key, node))

    def deleter(pod: Pod, reason: str) -> None:
        deleted.append((pod.key, reason))

    backend = KubeBackend(ClusterView(), FakeClock(), binder=kw.pop("binder", binder),
                          deleter=kw.pop("deleter", deleter), **kw)
    backend.deleted = deleted  # type: ignore[attr-defined]
    return backend, binds, Recorder(backend)


def test_parse_object_uses_the_loaders_handlers() -> None:
    inputs = parse_object(pg_obj("g", 2))
    assert [type(o).__name__ for o in inputs.objects["PodGroup"]] == ["PodGroup"]
    assert parse_object(node_obj("n1")).nodes[0].allocatable["cpu"] == 2000


def test_a_podgroup_and_its_pods_become_one_gang() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")), *gang_deltas("g", 2)])
    (w,) = backend.workloads()
    assert (w.name, w.kind, sorted(w.pods)) == ("default/g", "PodGroup",
                                                ["default/g-0", "default/g-1"])
    assert ("WorkloadAdded", "default/g") in rec.events
    assert ("NodeAdded", "n1") in rec.events


def test_binding_does_not_change_the_gang_tree() -> None:
    backend, binds, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")), *gang_deltas("g", 2)])
    (before,) = backend.workloads()
    rec.take()
    backend.bind("default/g-0", "n1")
    assert binds == [("default/g-0", "n1")]
    assert rec.take() == [("PodBound", "default/g-0")]
    assert backend.view.pods["default/g-0"].node_name == "n1"
    # a stale watch event (before the bind) does not unbind it; the confirmation is quiet
    backend.apply([d(PODS, pod_obj("g-0", group="g", rv="2"), "MODIFIED")])
    assert backend.view.pods["default/g-0"].node_name == "n1"
    backend.apply([d(PODS, pod_obj("g-0", group="g", node="n1", rv="3"), "MODIFIED")])
    assert rec.take() == []
    (after,) = backend.workloads()
    assert after is before  # same object: the scheduler does not see a re-submission


def test_pods_of_other_schedulers_only_consume_capacity() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")),
                   d(PODS, pod_obj("theirs", scheduler="default-scheduler", node="n1")),
                   d(PODS, pod_obj("pending", scheduler="default-scheduler"))])
    assert backend.workloads() == []
    assert {p.key: p.node_name for p in backend.pods()} == {
        "default/theirs": "n1", "default/pending": None}
    assert ("PodBound", "default/theirs") in rec.events


def test_a_lone_pod_of_ours_is_a_one_pod_unit() -> None:
    backend, _, _ = make_backend()
    backend.apply([d(NODES, node_obj("n1")), d(PODS, pod_obj("solo"))])
    (w,) = backend.workloads()
    assert (w.name, w.kind) == ("default/solo", "Pod")


def test_finished_and_terminating_pods_are_gone() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")), d(PODS, pod_obj("a", node="n1")),
                   d(PODS, pod_obj("b", node="n1"))])
    rec.take()
    done = pod_obj("a", node="n1", phase="Succeeded", rv="2")
    going = pod_obj("b", node="n1", rv="2")
    going["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    backend.apply([d(PODS, done, "MODIFIED"), d(PODS, going, "MODIFIED")])
    assert ("PodDeleted", "default/a") in rec.events
    assert ("PodDeleted", "default/b") in rec.events
    assert backend.pods() == []


def test_status_only_changes_do_not_rebuild_trees_or_nodes() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")), *gang_deltas("g", 2)])
    (before,) = backend.workloads()
    rec.take()
    heartbeat = node_obj("n1", rv="9")
    heartbeat["status"]["conditions"][0]["lastHeartbeatTime"] = "2026-01-01T00:00:00Z"
    backend.apply([d(NODES, heartbeat, "MODIFIED"),
                   d(VOLCANO_PODGROUPS, pg_obj("g", 2, rv="9", status={"phase": "Running"}),
                     "MODIFIED")])
    assert rec.take() == []
    assert backend.workloads()[0] is before
    assert backend.view.statuses[(VOLCANO_PODGROUPS.id, "default/g")] == {"phase": "Running"}
    backend.apply([d(NODES, node_obj("n1", rv="10", rack="r1"), "MODIFIED")])
    assert rec.take() == [("NodeChanged", "n1")]


def test_a_podgroup_phase_change_rebuilds_trees_only_when_the_enqueue_gate_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend, _, _ = make_backend()
    view = backend.view
    assembled: list[int] = []
    real = ClusterView._assemble

    def counted(self: ClusterView) -> Any:
        assembled.append(1)
        return real(self)

    monkeypatch.setattr(ClusterView, "_assemble", counted)
    big = pg_obj("big", 2)
    big["spec"]["minResources"] = {"cpu": "100"}  # more than 1.2 x the node's 2 cpu
    backend.apply([d(NODES, node_obj("n1")), *gang_deltas("g", 2),
                   *[d(PODS, pod_obj(f"big-{i}", group="big")) for i in range(2)],
                   d(VOLCANO_PODGROUPS, big)])
    assert len(assembled) == 1 and any("overused" in w for w in view.warnings)
    # serve's own status write on a group without minResources: nothing to rebuild
    backend.apply([d(VOLCANO_PODGROUPS, pg_obj("g", 2, rv="2", status={"phase": "Running"}),
                     "MODIFIED")])
    assert len(assembled) == 1
    # past the enqueue gate, the group of minResources no longer draws the warning
    big = {**big, "metadata": {**big["metadata"], "resourceVersion": "3"},
           "status": {"phase": "Inqueue"}}
    backend.apply([d(VOLCANO_PODGROUPS, big, "MODIFIED")])
    assert len(assembled) == 2 and not any("overused" in w for w in view.warnings)
    big = {**big, "metadata": {**big["metadata"], "resourceVersion": "4"},
           "status": {"phase": "Running"}}
    backend.apply([d(VOLCANO_PODGROUPS, big, "MODIFIED")])  # still past it
    assert len(assembled) == 2


def test_an_invalid_object_is_skipped_not_fatal(caplog: pytest.LogCaptureFixture) -> None:
    backend, _, _ = make_backend()
    bad = pg_obj("bad", 2)
    bad["spec"]["minMember"] = "lots"
    backend.apply([d(NODES, node_obj("n1")), d(VOLCANO_PODGROUPS, bad), *gang_deltas("g", 1)])
    assert [w.name for w in backend.workloads()] == ["default/g"]
    assert "ignoring invalid PodGroup default/bad" in caplog.text


def test_evicted_pods_are_gone_at_once_and_their_late_events_ignored() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1")), d(PODS, pod_obj("a", node="n1"))])
    rec.take()
    backend.evict("default/a", "preempted by x")
    assert backend.deleted == [("default/a", "preempted by x")]  # type: ignore[attr-defined]
    assert rec.take() == [("PodDeleted", "default/a")]
    backend.apply([d(PODS, pod_obj("a", node="n1", rv="5"), "MODIFIED")])  # still there
    # its one-pod workload went with it; the late event is ignored
    assert rec.take() == [("WorkloadRemoved", "default/a")] and backend.pods() == []
    backend.apply([d(PODS, pod_obj("a", node="n1", rv="6"), "DELETED")])
    assert rec.take() == []
    backend.apply([d(PODS, pod_obj("a", uid="new-uid", rv="7"))])  # recreated
    assert rec.take() == [("WorkloadAdded", "default/a"), ("PodAdded", "default/a")]
    backend.evict("default/gone", "x")  # idempotent


def test_only_the_leader_binds_or_deletes() -> None:
    backend, binds, _ = make_backend(is_leader=lambda: False)
    backend.apply([d(NODES, node_obj("n1")), d(PODS, pod_obj("a")), d(PODS, pod_obj(
        "b", node="n1"))])
    with pytest.raises(BindError, match="not the leader"):
        backend.bind("default/a", "n1")
    backend.evict("default/b", "x")
    assert binds == [] and backend.deleted == []  # type: ignore[attr-defined]
    assert backend.view.pods["default/b"].node_name == "n1"


def test_bind_checks_like_the_in_memory_backend() -> None:
    backend, _, _ = make_backend()
    cordoned = node_obj("n2")
    cordoned["spec"] = {"unschedulable": True}
    backend.apply([d(NODES, node_obj("n1")), d(NODES, cordoned), d(PODS, pod_obj("a")),
                   d(PODS, pod_obj("b", node="n1"))])
    for key, node, match in [("default/x", "n1", "not found"), ("default/b", "n1", "already"),
                             ("default/a", "n9", "node n9 not found"),
                             ("default/a", "n2", "not schedulable")]:
        with pytest.raises(BindError, match=match):
            backend.bind(key, node)


def test_a_bind_reported_failed_that_applied_is_deleted_when_seen() -> None:
    def binder(pod: Pod, node: str) -> None:
        raise UncertainBind("lost reply")

    backend, _, rec = make_backend(binder=binder)
    backend.apply([d(NODES, node_obj("n1")), d(PODS, pod_obj("a"))])
    with pytest.raises(UncertainBind):
        backend.bind("default/a", "n1")
    rec.take()
    backend.apply([d(PODS, pod_obj("a", node="n1", rv="2"), "MODIFIED")])
    assert backend.deleted == [  # type: ignore[attr-defined]
        ("default/a", "rollback: a bind reported failed had applied")]
    assert rec.take() == [("WorkloadRemoved", "default/a"), ("PodDeleted", "default/a")]


def test_the_scheduler_runs_on_the_kube_backend() -> None:
    backend, binds, _ = make_backend()
    backend.apply([d(NODES, node_obj("n1")), d(NODES, node_obj("n2")), *gang_deltas("g", 3),
                   d(PODS, pod_obj("x", scheduler="default-scheduler", node="n1",
                                   cpu="1500m"))])
    sched = Scheduler(backend, backend.clock)
    sched.run_cycle()
    assert sorted(k for k, _ in binds) == ["default/g-0", "default/g-1", "default/g-2"]
    assert [e.kind for e in sched.events] == ["Admitted"]
    # restarted: a new scheduler adopts what is bound and binds nothing again
    for key, node in binds:
        name = key.partition("/")[2]
        backend.apply([d(PODS, pod_obj(name, group="g", node=node, rv="5"), "MODIFIED")])
    again = Scheduler(backend, backend.clock)
    again.run_cycle()
    assert len(binds) == 3
    assert [u.state.value for u in again.units.values()] == ["admitted"]


def test_deltas_applied_without_assembling_build_the_trees_once_asked() -> None:
    backend, _, rec = make_backend()
    backend.apply([d(NODES, node_obj("n1"))], assemble=False)
    backend.apply(gang_deltas("g", 2), assemble=False)
    assert backend.workloads() == [] and backend.nodes() == []
    assert ("WorkloadAdded", "default/g") not in rec.events
    backend.apply([])  # the first lists are all in: one assembly
    (w,) = backend.workloads()
    assert sorted(w.pods) == ["default/g-0", "default/g-1"]
    assert ("WorkloadAdded", "default/g") in rec.take()
    assert [n.name for n in backend.nodes()] == ["n1"]


def topology_obj(api_version: str, name: str, *levels: str) -> Obj:
    return {"apiVersion": api_version, "kind": "Topology", "metadata": {"name": name},
            "spec": {"levels": [{"nodeLabel": lv} for lv in levels]}}


def test_watched_topologies_give_the_chain_the_loader_would() -> None:
    """A KAI Topology gives way to Kueue's; of nested Kueue chains the longest is the
    chain; ``--topology`` levels win over all of them."""
    kai = Kind("kai.scheduler", "v1alpha1", "topologies", "Topology", namespaced=False)
    kueue = kueue_topology("v1beta1")
    zone, block, rack, host = ("topology.kubernetes.io/zone", "gangsched.io/block",
                               "gangsched.io/rack", "kubernetes.io/hostname")
    deltas = [d(kai, topology_obj("kai.scheduler/v1alpha1", "fabric", block, rack)),
              d(kueue, topology_obj("kueue.x-k8s.io/v1beta1", "a-racks", rack, host)),
              d(kueue, topology_obj("kueue.x-k8s.io/v1beta1", "b-full", zone, block, rack,
                                    host))]
    view = ClusterView()
    view.apply(deltas)
    assert view.inputs().topology_levels == [zone, block, rack, host]
    configured = ClusterView(levels=[rack, host])
    configured.apply(deltas)
    assert configured.inputs().topology_levels == [rack, host]


def test_a_watched_workload_priority_class_sets_the_kueue_workloads_priority() -> None:
    """The class is read from the watch as from a file: a Kueue pod group naming it takes
    its value; a new value is taken when the class changes; with the class deleted the
    workload is invalid (Kueue creates no Workload for it) and not scheduled."""
    wpc = Kind("kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", "WorkloadPriorityClass",
               namespaced=False)

    def cls(value: int, rv: str) -> Obj:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": "high", "resourceVersion": rv}, "value": value}

    pods = []
    for i in range(2):
        obj = pod_obj(f"p{i}")
        obj["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "q",
                                     "kueue.x-k8s.io/pod-group-name": "g",
                                     "kueue.x-k8s.io/priority-class": "high"}
        obj["metadata"]["annotations"] = {"kueue.x-k8s.io/pod-group-total-count": "2"}
        pods.append(d(PODS, obj))
    view = ClusterView()
    view.apply([d(NODES, node_obj("n1")), *pods, d(wpc, cls(500, "1"))])
    assert view.workloads["default/g"].priority == 500
    view.apply([d(wpc, cls(900, "2"), "MODIFIED")])
    assert view.workloads["default/g"].priority == 900
    view.apply([d(wpc, cls(900, "2"), "DELETED")])
    w = view.workloads["default/g"]
    assert w.tree is None and 'WorkloadPriorityClass "high" not found' in w.invalid
