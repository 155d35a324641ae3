"""Volcano's and KAI's Queue objects: they load (with their workloads, as people apply
them) and, when the inputs hold queues of a kind, a gang whose queue would not admit it
waits, saying why; without queues nothing changes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.api.errors import InputError
from gangsched.frontends import assemble, load
from gangsched.model import Plan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def vqueue(name: str, state: str | None = None, **spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                           "metadata": {"name": name}, "spec": {"weight": 1, **spec}}
    if state is not None:
        obj["status"] = {"state": state}
    return obj


def kqueue(name: str, parent: str = "", resources: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if resources:  # as KAI's quick start writes them: no quota, no limit
        spec["resources"] = {r: {"quota": -1, "limit": -1, "overQuotaWeight": 1}
                             for r in ("cpu", "gpu", "memory")}
    if parent:
        spec["parentQueue"] = parent
    return {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue",
            "metadata": {"name": name}, "spec": spec}


def plan_of(tmp_path: Path, example: str, *queues: dict[str, Any]) -> Plan:
    shutil.copy(EXAMPLES / example, tmp_path / example)
    files = [EXAMPLES / "cluster-small.yaml", tmp_path / example]
    if queues:
        (tmp_path / "queues.yaml").write_text(yaml.safe_dump_all(queues))
        files.append(tmp_path / "queues.yaml")
    return assemble(load(files))


def waiting(p: Plan) -> set[str]:
    return {w.waiting for w in p.workloads if w.tree is None}


VOLCANO_EXAMPLES = ["volcano-podgroup.yaml", "volcano-job.yaml"]


@pytest.mark.parametrize("example", VOLCANO_EXAMPLES)
def test_an_open_volcano_queue_changes_nothing(tmp_path: Path, example: str) -> None:
    before = plan_of(tmp_path, example)
    after = plan_of(tmp_path, example, vqueue("default", "Open"), vqueue("other", "Closed"))
    assert [w.tree is not None for w in after.workloads] == [
        w.tree is not None for w in before.workloads]
    assert all(w.tree is not None for w in after.workloads)


@pytest.mark.parametrize("example", VOLCANO_EXAMPLES)
@pytest.mark.parametrize("state", ["Closed", "Closing"])
def test_a_volcano_gang_of_a_queue_not_open_waits(tmp_path: Path, example: str,
                                                  state: str) -> None:
    p = plan_of(tmp_path, example, vqueue("default", state))
    assert all(w.tree is None for w in p.workloads)
    assert waiting(p) == {"waiting for queue default: can only submit PodGroup to queue "
                          f"with state `Open`, queue `default` status is `{state}`"}
    assert all(w.pods for w in p.workloads)  # its pending pods wait with it


def test_a_volcano_gang_of_a_queue_not_in_the_inputs_waits(tmp_path: Path) -> None:
    text = (EXAMPLES / "volcano-podgroup.yaml").read_text().replace("queue: default",
                                                                     "queue: research")
    (tmp_path / "pg.yaml").write_text(text)
    (tmp_path / "queues.yaml").write_text(yaml.safe_dump(vqueue("training")))
    p = assemble(load([EXAMPLES / "cluster-small.yaml", tmp_path / "pg.yaml",
                       tmp_path / "queues.yaml"]))
    assert waiting(p) == {"waiting for queue research: not found (Volcano admits PodGroups "
                          "only to a queue that exists)"}
    p = assemble(load([EXAMPLES / "cluster-small.yaml", tmp_path / "pg.yaml"]))
    assert all(w.tree is not None for w in p.workloads)  # no queues: taken to exist


def test_kai_queues_of_the_quick_start_load_and_a_leaf_queue_admits(tmp_path: Path) -> None:
    p = plan_of(tmp_path, "kai-podgroup.yaml", kqueue("default-parent-queue"),
                kqueue("team-a", parent="default-parent-queue"))
    assert all(w.tree is not None for w in p.workloads)


@pytest.mark.parametrize(("queues", "why"), [
    ([kqueue("default-parent-queue"), kqueue("other", "default-parent-queue")],
     "Queue 'team-a' does not exist"),
    ([kqueue("team-a"), kqueue("child", "team-a")],
     "not a leaf queue (KAI schedules only the PodGroups of leaf queues)"),
    ([kqueue("team-a", "gone")], "its parent queue 'gone' does not exist"),
])
def test_a_kai_gang_that_kai_would_skip_for_its_queue_waits(
        tmp_path: Path, queues: list[dict[str, Any]], why: str) -> None:
    p = plan_of(tmp_path, "kai-podgroup.yaml", *queues)
    assert waiting(p) == {f"waiting for queue team-a: {why}"}


@pytest.mark.parametrize(("obj", "field", "message"), [
    (vqueue("q", weight=0), "spec.weight", "must be between 1 and 65535"),
    (vqueue("q", priority=-1), "spec.priority", "must be at least 0"),
    (vqueue("q", dequeueStrategy="lifo"), "spec.dequeueStrategy", "fifo, traverse"),
    (vqueue("q", parent="q"), "spec.parent", "cannot use itself as parent"),
    (vqueue("q", "Paused"), "status.state", "queue state must be in Open"),
    (vqueue("q", capability={"cpu": "lots"}), "spec.capability", "lots"),
    (vqueue("q", colour="red"), "spec.colour", "unknown field"),
    (kqueue("q", resources=False), "spec.resources", "resources must be specified"),
    (kqueue("q", parent="q"), "spec.parentQueue", "cannot be its own parent"),
])
def test_a_bad_queue_is_one_error_naming_its_field(tmp_path: Path, obj: dict[str, Any],
                                                   field: str, message: str) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(obj))
    with pytest.raises(InputError) as info:
        load([path])
    text = str(info.value)
    assert "Queue/q" in text and field in text and message in text, text


def test_a_queue_name_once_per_project(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump_all([vqueue("q"), kqueue("q")]))
    load([path])  # a Volcano and a KAI queue may share a name
    path.write_text(yaml.safe_dump_all([vqueue("q"), vqueue("q")]))
    with pytest.raises(InputError, match="duplicate Queue"):
        load([path])
