"""``spec.activeDeadlineSeconds`` of pods becomes ``Workload.limit`` (how long a workload
holds capacity once bound, what lets it backfill ahead of a reservation), for every
front-end: the largest deadline of its pods when every pod has one, else no limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from frontend_helpers import EXAMPLES, example, plan_of, write

from gangsched.api.errors import InputError
from gangsched.frontends import assemble, load

FRONT_END_EXAMPLES = sorted(
    p.name for p in EXAMPLES.glob("*.yaml")
    if not p.name.startswith("cluster")
    and p.name not in ("volcano-hypernodes.yaml", "kueue-queues.yaml")  # no workloads
)


def with_deadlines(obj: Any, seconds: int | None) -> Any:
    """``obj`` with ``activeDeadlineSeconds`` set (None: removed) in every pod spec (any
    mapping with ``containers``), templates included."""
    if isinstance(obj, list):
        return [with_deadlines(item, seconds) for item in obj]
    if not isinstance(obj, dict):
        return obj
    out = {k: with_deadlines(v, seconds) for k, v in obj.items()}
    if "containers" in out:
        out.pop("activeDeadlineSeconds", None)
        if seconds is not None:
            out["activeDeadlineSeconds"] = seconds
    return out


def pod(name: str, group: str | None, seconds: int | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulerName": "gangsched", "containers": [
        {"name": "main", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    if seconds is not None:
        spec["activeDeadlineSeconds"] = seconds
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def gang(name: str, size: int) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": size}}}}


@pytest.mark.parametrize("name", FRONT_END_EXAMPLES)
def test_every_front_end_takes_the_pods_deadline_as_its_limit(tmp_path: Path,
                                                              name: str) -> None:
    objects = with_deadlines(example(name), 3600)
    plan = assemble(load([write(tmp_path, objects)]))
    with_pods = [w for w in plan.workloads if w.pods]
    assert with_pods, name
    assert all(w.limit == 3600 for w in with_pods), [(w.name, w.limit) for w in with_pods]


@pytest.mark.parametrize("name", FRONT_END_EXAMPLES)
def test_without_deadlines_no_front_end_sets_a_limit(tmp_path: Path, name: str) -> None:
    plan = assemble(load([write(tmp_path, with_deadlines(example(name), None))]))
    assert all(w.limit is None for w in plan.workloads)


def test_the_largest_deadline_of_a_gang_is_its_limit(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, gang("g", 3), pod("a", "g", 600), pod("b", "g", 900),
                   pod("c", "g", 30))
    [w] = plan.workloads
    assert w.limit == 900


def test_one_pod_without_a_deadline_means_no_limit(tmp_path: Path) -> None:
    """A pod without a deadline may run forever, so the gang holds capacity for ever."""
    plan = plan_of(tmp_path, gang("g", 2), pod("a", "g", 600), pod("b", "g", None))
    [w] = plan.workloads
    assert w.limit is None


def test_a_loose_pod_has_its_own_deadline(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pod("solo", None, 120), pod("free", None, None))
    limits = {w.name: w.limit for w in plan.workloads}
    assert limits == {"default/solo": 120, "default/free": None}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "must be between 1 and 2147483647, inclusive, not 0"),
        (-30, "must be between 1 and 2147483647, inclusive, not -30"),
        (2**31, "must be between 1 and 2147483647, inclusive, not 2147483648"),
        (2**63, "must fit in 64 bits"),
        ("60", "must be an integer, not a string ('60')"),
        (1.5, "must be an integer, not a number (1.5)"),
        (True, "must be an integer, not a boolean (true)"),
    ],
    ids=["zero", "negative", "above-int32", "above-int64", "string", "float", "bool"],
)
def test_a_bad_deadline_is_an_error_naming_the_field(
        tmp_path: Path, value: object, message: str) -> None:
    """``ValidatePodSpec``: 1 <= activeDeadlineSeconds <= math.MaxInt32 (an int64)."""
    path = write(tmp_path, [gang("g", 1), pod("a", "g", None) | {"spec": {
        **pod("a", "g", None)["spec"], "activeDeadlineSeconds": value}}])
    with pytest.raises(InputError) as caught:
        load([path])
    text = str(caught.value)
    assert text.startswith(f"{path}[doc 1]: Pod/a: spec.activeDeadlineSeconds: "), text
    assert message in text and "\n" not in text


def test_a_bad_deadline_in_a_template_names_the_template_field(tmp_path: Path) -> None:
    objects = with_deadlines(example("kthena-2p2d.yaml"), 0)
    with pytest.raises(InputError) as caught:
        load([write(tmp_path, objects)])
    text = str(caught.value)
    assert "ModelServing/" in text and ".spec.activeDeadlineSeconds: must be between 1" in text
