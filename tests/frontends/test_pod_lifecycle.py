"""Pods as kube-scheduler sees them: a finished pod (Succeeded, Failed) holds no capacity, a
pod being deleted is not scheduled, and a pod with scheduling gates holds its gang back
until they are removed (but for the gates of a controller gangsched plays: Kueue's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from frontend_helpers import plan_of, write
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.cli.main import app


def run(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner(env={"COLUMNS": "200"}).invoke(app, [str(a) for a in args])
    return result.exit_code, result.stdout, result.stderr


def node(name: str, gpus: int = 8) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "64", "memory": "256Gi",
                                       "nvidia.com/gpu": str(gpus), "pods": "110"}}}


def pod(name: str, gpus: int = 8, group: str | None = "g", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {"schedulerName": "volcano", "containers": [{
        "name": "c", "image": "x",
        "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}
    for key, value in extra.items():
        where, _, field = key.partition("__")
        obj.setdefault(where, {})[field] = value
    return obj


def podgroup(name: str = "g", min_member: int = 2) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": min_member}}


@pytest.mark.parametrize("phase", ["Succeeded", "Failed"])
def test_a_finished_pod_holds_no_capacity(tmp_path: Path, phase: str) -> None:
    done = pod("done", group=None, spec__nodeName="n0", status__phase=phase)
    path = write(tmp_path, [node("n0"), node("n1"), done, podgroup(), pod("a"), pod("b")])
    code, out, err = run("place", "-o", "wide", path)
    assert code == 0, err
    assert "Admitted" in out and "done" not in out
    # still running, it holds its node: the gang of two 8-GPU pods no longer fits
    running = pod("done", group=None, spec__nodeName="n0", status__phase="Running")
    path = write(tmp_path, [node("n0"), node("n1"), running, podgroup(), pod("a"), pod("b")])
    code, out, _ = run("place", path)
    assert code == 3 and "Rejected" in out


def test_a_pod_being_deleted_is_not_scheduled(tmp_path: Path) -> None:
    leaving = pod("b", metadata__deletionTimestamp="2026-11-28T00:00:00Z")
    plan = plan_of(tmp_path, node("n0"), node("n1"), podgroup(), pod("a"), leaving)
    (w,) = plan.workloads
    assert w.tree is None and list(w.pods) == ["default/a"]
    assert "has 1 of minMember 2" in w.waiting


def test_a_gated_pod_holds_its_gang_back(tmp_path: Path) -> None:
    gated = pod("b", spec__schedulingGates=[{"name": "example.com/wait"}])
    path = write(tmp_path, [node("n0"), node("n1"), podgroup(), pod("a"), gated])
    code, out, err = run("place", "-o", "wide", path)
    assert code == 3, err
    assert "Waiting" in out
    assert "waiting for scheduling gates: pod default/b has example.com/wait" in out
    assert "n0" not in out and "n1" not in out  # no pod of the gang is placed
    # gates removed: placed whole
    path = write(tmp_path, [node("n0"), node("n1"), podgroup(), pod("a"), pod("b")])
    code, out, err = run("place", path)
    assert code == 0 and "Admitted" in out, err


def test_a_gated_lone_pod_waits(tmp_path: Path) -> None:
    gated = pod("p", group=None, spec__schedulingGates=[{"name": "a.io/x"}, {"name": "b"}])
    plan = plan_of(tmp_path, node("n0"), gated)
    (w,) = plan.workloads
    assert w.tree is None and w.waiting.endswith("pod default/p has a.io/x, b")


def test_kueues_own_gate_does_not_hold_a_group_kueue_admits(tmp_path: Path) -> None:
    group = {"kueue.x-k8s.io/pod-group-name": "grp", "kueue.x-k8s.io/queue-name": "q"}
    pods = []
    for name in ("a", "b"):
        p = pod(name, group=None, metadata__labels=group,
                metadata__annotations={"kueue.x-k8s.io/pod-group-total-count": "2"},
                spec__schedulingGates=[{"name": "kueue.x-k8s.io/admission"}])
        p["metadata"].update(namespace="default", name=name)
        p["spec"]["schedulerName"] = "default-scheduler"
        pods.append(p)
    plan = plan_of(tmp_path, node("n0"), node("n1"), *pods)
    (w,) = [w for w in plan.workloads if w.pods]
    assert w.tree is not None, w.waiting
    # another controller's gate still holds it
    pods[1]["spec"]["schedulingGates"].append({"name": "example.com/wait"})
    plan = plan_of(tmp_path, node("n0"), node("n1"), *pods)
    (w,) = [w for w in plan.workloads if w.pods]
    assert w.tree is None and "example.com/wait" in w.waiting
    assert "kueue.x-k8s.io/admission" not in w.waiting


@pytest.mark.parametrize(
    ("gates", "fragment"),
    [
        ([{"name": "bad name"}], "schedulingGates[0].name: invalid scheduling gate name"),
        ([{"name": "x"}, {"name": "x"}], "schedulingGates[1].name: Duplicate value: 'x'"),
        ([{}], "schedulingGates[0].name: is required"),
        (["x"], "schedulingGates[0]: must be a mapping"),
    ],
)
def test_bad_scheduling_gates_are_refused(tmp_path: Path, gates: list[Any],
                                          fragment: str) -> None:
    with pytest.raises(InputError) as e:
        plan_of(tmp_path, node("n0"), pod("p", group=None, spec__schedulingGates=gates))
    assert fragment in str(e.value)


def test_constraints_gangsched_does_not_model_are_a_warning_once(tmp_path: Path) -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
        "labelSelector": {"matchLabels": {"app": "x"}},
        "topologyKey": "kubernetes.io/hostname"}]}}
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
               "labelSelector": {"matchLabels": {"app": "x"}}}]
    pods = [pod("a", spec__affinity=anti), pod("b", spec__affinity=anti),
            pod("c", group=None, spec__topologySpreadConstraints=spread),
            pod("d", group=None, spec__topologySpreadConstraints=[
                {**spread[0], "whenUnsatisfiable": "ScheduleAnyway"}])]
    plan = plan_of(tmp_path, node("n0"), node("n1"), podgroup(), *pods)
    unmodelled = [w for w in plan.warnings if "not modelled" in w]
    assert len(unmodelled) == 2, plan.warnings
    assert "Pod/a: spec.affinity.podAntiAffinity.requiredDuringScheduling" in unmodelled[0]
    assert "Pod/c: spec.topologySpreadConstraints" in unmodelled[1]


@pytest.mark.parametrize(
    ("ports", "fragment"),
    [
        ([{"containerPort": -1}], "containers[0].ports[0].containerPort: must be between 1 "
                                  "and 65535, inclusive, not -1"),
        ([{"containerPort": 0}], "containers[0].ports[0].containerPort: Required value"),
        ([{"containerPort": 80, "hostPort": 65536}], "ports[0].hostPort: must be between"),
        ([{"containerPort": 80}, {"containerPort": 81, "protocol": "HTTP"}],
         "ports[1].protocol: unsupported value 'HTTP'; must be one of: TCP, UDP, SCTP"),
    ],
)
def test_bad_container_ports_are_refused(tmp_path: Path, ports: list[Any],
                                         fragment: str) -> None:
    bad = pod("p", group=None)
    bad["spec"]["containers"][0]["ports"] = ports
    with pytest.raises(InputError) as e:
        plan_of(tmp_path, node("n0"), bad)
    assert "Pod/p" in str(e.value) and fragment in str(e.value)
    # the same in a template (a Job's), and a valid port goes through
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
           "spec": {"template": {"spec": {**bad["spec"], "restartPolicy": "Never"}}}}
    with pytest.raises(InputError) as e:
        plan_of(tmp_path, node("n0"), job)
    assert "spec.template.spec.containers[0]" in str(e.value)
    bad["spec"]["containers"][0]["ports"] = [{"containerPort": 8080, "hostPort": 0,
                                              "protocol": "SCTP"}]
    assert plan_of(tmp_path, node("n0"), bad).workloads
