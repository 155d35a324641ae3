"""PriorityClasses as the API server checks them and the Priority admission plugin applies
them: pods take their class's value (or the global default's), a Volcano PodGroup ranks
by its own class, pods a controller creates from a template by theirs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from frontend_helpers import EXAMPLES, plan_of

from gangsched.api.errors import InputError


def pclass(name: str, value: int, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, "value": value, **extra}


def pod(name: str, cls: str | None = None, priority: int | None = None,
        group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x", "resources": {
        "requests": {"cpu": "6"}}}]}
    if cls:
        spec["priorityClassName"] = cls
    if priority is not None:
        spec["priority"] = priority
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if group:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
        spec["schedulerName"] = "volcano"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def podgroup(name: str, cls: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"minMember": 1, "priorityClassName": cls}}


def priorities(plan: Any) -> dict[str, int]:
    return {w.name: w.priority for w in plan.workloads}


def test_pods_take_their_class_value_or_the_global_default(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pclass("lo", 1), pclass("hi", 1_000_000),
                   pclass("base", 7, globalDefault=True),
                   pod("a", "lo"), pod("b", "hi"), pod("c"), pod("d", "system-node-critical"),
                   pod("e", "hi", priority=1_000_000))
    assert priorities(plan) == {"default/a": 1, "default/b": 1_000_000, "default/c": 7,
                                "default/d": 2_000_001_000, "default/e": 1_000_000}


def test_a_volcano_podgroup_ranks_by_its_own_class(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pclass("lo", 1), pclass("hi", 1_000_000),
                   podgroup("a-lo", "lo"), pod("a-lo-0", group="a-lo"),
                   podgroup("b-hi", "hi"), pod("b-hi-0", group="b-hi"))
    assert priorities(plan) == {"default/a-lo": 1, "default/b-hi": 1_000_000}


def test_pods_created_from_a_template_take_its_class(tmp_path: Path) -> None:
    docs = [d for d in yaml.safe_load_all((EXAMPLES / "lws-exclusive.yaml").read_text()) if d]
    for d in docs:
        if d["kind"] == "LeaderWorkerSet":
            spec = d["spec"]["leaderWorkerTemplate"]
            for key in ("leaderTemplate", "workerTemplate"):
                if key in spec:
                    spec[key]["spec"]["priorityClassName"] = "serving"
    plan = plan_of(tmp_path, pclass("serving", 5000), *docs)
    lws = [w for w in plan.workloads if w.kind == "LeaderWorkerSet"]
    assert lws and all(w.priority == 5000 for w in lws)
    assert all(p.priority == 5000 for w in lws for p in w.pods.values())


def test_a_class_the_inputs_lack_is_a_warning_when_they_hold_classes(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pclass("lo", 1), pod("a", "nope"))
    assert priorities(plan) == {"default/a": 0}
    assert any("'nope' names no PriorityClass" in w for w in plan.warnings)
    plan = plan_of(tmp_path, pod("a", "nope", priority=12))  # read back from a cluster
    assert priorities(plan) == {"default/a": 12} and not plan.warnings


@pytest.mark.parametrize(
    ("objects", "fragment"),
    [
        ([pclass("x", 1_000_000_001)], "PriorityClass/x: value: maximum allowed value of a "
                                       "user defined priority is 1000000000"),
        ([pclass("system-mine", 1)], "metadata.name: priority class names with 'system-' "
                                     "prefix are reserved"),
        ([pclass("x", 1, preemptionPolicy="Bogus")], "preemptionPolicy: unsupported value"),
        ([pclass("a", 1, globalDefault=True), pclass("b", 2, globalDefault=True)],
         "PriorityClass/b: globalDefault: PriorityClass a is already marked as default"),
        ([{**pclass("x", 1), "value": None}], "PriorityClass/x: value: is required"),
        ([pclass("ten", 10), pod("p", "ten", priority=99)],
         "Pod/p: spec.priority: the integer value of priority (99) must not be provided"),
    ],
    ids=["too high", "system prefix", "preemption policy", "two defaults", "no value",
         "contradicts its class"],
)
def test_what_the_api_server_refuses_is_an_error(tmp_path: Path, objects: list[Any],
                                                 fragment: str) -> None:
    with pytest.raises(InputError) as e:
        plan_of(tmp_path, *objects)
    assert fragment in str(e.value)
