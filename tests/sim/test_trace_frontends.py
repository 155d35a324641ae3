"""Trace lines carrying KAI, Grove, LeaderWorkerSet and Kueue objects as ``manifest``: the
front-ends turn them into workloads, and the simulator runs them (exclusive racks kept
across running groups)."""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.api.errors import InputError
from gangsched.gang import Constraint, Group
from gangsched.sim.policies import make_policy
from gangsched.sim.runner import RunConfig, run_policy
from gangsched.sim.scenarios import GPU_NODE, cluster
from gangsched.sim.trace import parse_line

RACK = "gangsched.io/rack"
GPU = "nvidia.com/gpu"


def containers(gpu: int = 8) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1", GPU: str(gpu)}}}]


def lws(name: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
            "metadata": {"name": name, "namespace": "infer",
                         "annotations": {"leaderworkerset.sigs.k8s.io/exclusive-topology": RACK}},
            "spec": {"replicas": replicas, "leaderWorkerTemplate": {
                "size": 2, "workerTemplate": {"spec": {"containers": containers(1)}}}}}


def test_a_leader_worker_set_line_is_a_workload_per_group() -> None:
    items = parse_line({"manifest": lws("a", 2), "arrival": 3, "duration": 50}, "t.jsonl", 1)
    assert [(i.workload.kind, i.workload.name, i.source) for i in items] == [
        ("LeaderWorkerSet", "infer/a-0", "t.jsonl:1"),
        ("LeaderWorkerSet", "infer/a-1", "t.jsonl:1")]
    tree = items[0].workload.tree
    assert isinstance(tree, Group) and tree.topology[0].exclusive is not None


def test_kai_kueue_and_grove_lines() -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "train", "namespace": "ml",
                        "labels": {"kueue.x-k8s.io/queue-name": "q"}},
           "spec": {"parallelism": 2, "completions": 2, "template": {
               "metadata": {"annotations": {"kueue.x-k8s.io/podset-required-topology": RACK}},
               "spec": {"restartPolicy": "Never", "containers": containers()}}}}
    (item,) = parse_line({"manifest": job, "arrival": 0}, "t.jsonl", 2)
    assert item.workload.kind == "Job" and len(item.workload.pods) == 2

    topology = {"apiVersion": "kai.scheduler/v1alpha1", "kind": "Topology",
                "metadata": {"name": "t"}, "spec": {"levels": [{"nodeLabel": RACK}]}}
    podgroup = {"apiVersion": "scheduling.run.ai/v2alpha2", "kind": "PodGroup",
                "metadata": {"name": "pg", "namespace": "ml"},
                "spec": {"minMember": 2, "topologyConstraint": {
                    "topology": "t", "requiredTopologyLevel": RACK}}}
    pods = [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"p{i}", "namespace": "ml",
                          "annotations": {"pod-group-name": "pg"}},
             "spec": {"containers": containers()}} for i in range(2)]
    (item,) = parse_line({"manifest": [topology, podgroup, *pods], "arrival": 0}, "t.jsonl", 3)
    assert item.workload.kind == "PodGroup"
    assert isinstance(item.workload.tree, Group)
    assert item.workload.tree.topology == (Constraint(RACK),)

    binding = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
               "metadata": {"name": "b"}, "spec": {"levels": [{"domain": "rack", "key": RACK}]}}
    pcs = {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
           "metadata": {"name": "s", "namespace": "ml"},
           "spec": {"replicas": 1, "template": {
               "topologyConstraint": {"topologyName": "b", "pack": {"required": "rack"}},
               "cliques": [{"name": "w", "spec": {"roleName": "w", "replicas": 2,
                                                  "podSpec": {"containers": containers()}}}]}}}
    (item,) = parse_line({"manifest": [binding, pcs], "arrival": 0}, "t.jsonl", 4)
    assert item.workload.kind == "PodCliqueSet" and item.workload.name == "ml/s-0"


def test_an_invalid_object_on_a_line_is_an_error_at_the_line() -> None:
    bad = lws("a")
    bad["spec"]["leaderWorkerTemplate"]["size"] = 0
    with pytest.raises(InputError) as e:
        parse_line({"manifest": bad, "arrival": 0}, "t.jsonl", 9)
    assert str(e.value).startswith("t.jsonl:9")
    assert "size" in str(e.value)


def test_exclusive_groups_never_share_a_rack_in_a_simulation() -> None:
    """Three racks; four exclusive groups of tiny pods arrive at once: three run, one in
    each rack, the fourth waits until one finishes and takes its rack."""
    nodes, levels = cluster([("rack", 3), ("host", 1)], GPU_NODE)
    items = [item for i in range(4) for item in parse_line(
        {"manifest": lws(f"g{i}"), "arrival": float(i), "duration": 100.0}, "t.jsonl", i + 1)]
    run = run_policy(make_policy("gangsched"), nodes, levels, items,
                     RunConfig(horizon=400.0, sample_interval=50.0))
    admitted = sorted((u.admitted for u in run.units), key=lambda t: (t is None, t))
    assert admitted[:3] == [0.0, 1.0, 2.0]
    assert admitted[3] is not None and admitted[3] >= 100.0
