"""Kueue's WorkloadPriorityClass: the ``kueue.x-k8s.io/priority-class`` label gives a
Kueue workload the class's value as its priority (its pods keep theirs); a label naming a
class that is not there makes the workload invalid, as Kueue creates no Workload for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tas_helpers import RACK, cluster, load_error, only, place, plan
from test_kueue import grouped_pod, job, jobset, rjob

from gangsched.frontends.kueue import REQUIRED
from gangsched.frontends.kueue_priority import PRIORITY_CLASS_LABEL
from gangsched.frontends.lws import API_VERSION as LWS_API_VERSION


def wpc(name: str, value: Any, version: str = "v1beta2", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "WorkloadPriorityClass",
            "metadata": {"name": name}, "value": value, **extra}


def labelled(obj: dict[str, Any], cls: str) -> dict[str, Any]:
    obj["metadata"].setdefault("labels", {})[PRIORITY_CLASS_LABEL] = cls
    return obj


def lws(cls: str | None) -> dict[str, Any]:
    labels = {"kueue.x-k8s.io/queue-name": "q"}
    if cls:
        labels[PRIORITY_CLASS_LABEL] = cls
    return {"apiVersion": LWS_API_VERSION, "kind": "LeaderWorkerSet",
            "metadata": {"name": "serve", "namespace": "ml", "labels": labels},
            "spec": {"replicas": 2, "leaderWorkerTemplate": {"size": 2, "workerTemplate": {
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                    "requests": {"cpu": "1"}}}]}}}}}


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
def test_the_class_value_is_the_workloads_priority_and_not_its_pods(
        tmp_path: Path, version: str) -> None:
    w = only(plan(tmp_path, wpc("high", 10_000, version),
                  labelled(job({REQUIRED: RACK}), "high")), "Job")
    assert w.priority == 10_000 and w.tree is not None and w.tree.priority == 10_000
    assert {p.priority for p in w.pods.values()} == {0}


def test_every_kueue_kind_reads_the_label(tmp_path: Path) -> None:
    pods = [labelled(grouped_pod(f"p{i}"), "high") for i in range(2)]
    p = plan(tmp_path, wpc("high", 7), labelled(jobset(rjob("w", 1, 2)), "high"), *pods,
             lws("high"))
    assert [w.priority for w in p.workloads if w.kind in ("JobSet", "Pod")] == [7, 7]
    assert [w.priority for w in p.workloads if w.kind == "LeaderWorkerSet"] == [7, 7]


def test_without_the_label_or_without_a_queue_the_pods_priority_stays(tmp_path: Path) -> None:
    p = plan(tmp_path, wpc("high", 7), job(name="plain"),
             labelled(job(name="unmanaged", queue=None), "missing"), lws(None))
    assert {w.name: w.priority for w in p.workloads if w.kind == "Job"} == {"ml/plain": 0}
    assert all(w.priority == 0 and not w.invalid for w in p.workloads)


def test_a_missing_class_makes_the_workload_invalid_naming_the_label(tmp_path: Path) -> None:
    pods = [labelled(grouped_pod(f"p{i}"), "gone") for i in range(2)]
    p = plan(tmp_path, wpc("high", 7), labelled(job(), "gone"), *pods, lws("gone"),
             labelled(jobset(rjob("w", 1, 2)), "gone"))
    assert {w.kind for w in p.workloads} == {"Job", "JobSet", "Pod", "LeaderWorkerSet"}
    for w in p.workloads:
        assert w.tree is None, w.name
        assert f"metadata.labels.{PRIORITY_CLASS_LABEL}" in w.invalid, w.invalid
        assert 'WorkloadPriorityClass "gone" not found' in w.invalid, w.invalid


def test_the_higher_class_is_placed_first_when_only_one_fits(tmp_path: Path) -> None:
    # two Jobs of 48 GPUs each, a cluster of 64: input order would favour "first"
    first = labelled(job(name="first", parallelism=24, completions=24), "low")
    second = labelled(job(name="second", parallelism=24, completions=24), "high")
    got = place(plan(tmp_path, wpc("low", 1), wpc("high", 1_000), first, second,
                     with_nodes=cluster()))
    assert (got["ml/second"].admitted, got["ml/first"].admitted) == (True, False)
    got = place(plan(tmp_path, wpc("low", 1_000), wpc("high", 1), first, second,
                     with_nodes=cluster()))
    assert (got["ml/second"].admitted, got["ml/first"].admitted) == (False, True)


@pytest.mark.parametrize(("obj", "field", "message"), [
    ({k: v for k, v in wpc("c", 1).items() if k != "value"}, "value", "Required value"),
    (wpc("c", "10"), "value", "integer"),
    (wpc("c", 1 << 31), "value", "32 bits"),
    (wpc("c", 1, description="x" * 2049), "description", "2048"),
    (wpc("c", 1, spec={}), "spec", "unknown field"),
])
def test_an_invalid_class_is_refused_naming_the_field(
        tmp_path: Path, obj: dict[str, Any], field: str, message: str) -> None:
    err = load_error(tmp_path, obj)
    assert f"WorkloadPriorityClass/c: {field}" in str(err) and message in str(err), str(err)
