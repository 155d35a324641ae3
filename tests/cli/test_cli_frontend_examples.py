"""The KAI, Grove, LeaderWorkerSet, Kueue and Volcano Job examples through the CLI: ``translate -o
tree`` shows the gang tree each becomes, ``place`` puts them as recorded (golden files,
regenerate with UPDATE_GOLDEN=1), ``validate`` reports an invalid one in one line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import Run

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GOLDEN = Path(__file__).parent / "golden"
CLUSTER = EXAMPLES / "cluster-small.yaml"
NEW = ["kai-podgroup.yaml", "grove-podcliqueset.yaml", "grove-podgang.yaml",
       "lws-exclusive.yaml", "kueue-job.yaml", "kueue-jobset.yaml", "kueue-pod-group.yaml",
       "volcano-job.yaml"]


@pytest.mark.parametrize("example", NEW)
def test_translate_tree_shows_the_gang_tree(run: Run, example: str) -> None:
    result = run("translate", "-o", "tree", CLUSTER, EXAMPLES / example)
    assert result.exit_code == 0, result.output
    golden = GOLDEN / f"tree-{example.removesuffix('.yaml')}.txt"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(result.stdout)
    assert result.stdout == golden.read_text()


@pytest.mark.parametrize("example", NEW)
def test_examples_place_as_recorded(run: Run, example: str) -> None:
    result = run("place", "-f", CLUSTER, "-f", EXAMPLES / example, "-o", "json")
    assert result.exit_code == 0, result.output  # every workload admitted
    data = json.loads(result.stdout)
    golden = GOLDEN / f"place-{example.removesuffix('.yaml')}.json"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert data == json.loads(golden.read_text())


def test_tree_of_exclusive_groups_names_the_owned_domain(run: Run) -> None:
    result = run("translate", "-o", "tree", EXAMPLES / "lws-exclusive.yaml")
    assert "owns gangsched.io/rack (set infer/leaderworkerset.sigs.k8s.io/group-key)" in \
        result.stdout
    assert "LeaderWorkerSet infer/dsr1-1" in result.stdout


def test_validate_reports_an_unknown_level_in_one_line(run: Run, tmp_path: Path) -> None:
    text = (EXAMPLES / "kai-podgroup.yaml").read_text().replace(
        "requiredTopologyLevel: block", "requiredTopologyLevel: row")
    bad = tmp_path / "kai.yaml"
    bad.write_text(text)
    result = run("validate", CLUSTER, bad)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"{bad}[doc 1]: PodGroup/disagg-llm: spec.topologyConstraint.requiredTopologyLevel: " \
        "level 'row' is not a level of topology small-fabric" in lines[0]


def test_validate_reports_a_dangling_parent_in_one_line(run: Run, tmp_path: Path) -> None:
    text = (EXAMPLES / "kai-podgroup.yaml").read_text().replace(
        "parent: prefill\n    minMember: 2\n    topologyConstraint:\n      topology: small-fabric"
        "\n      requiredTopologyLevel: rack", "parent: prefil\n    minMember: 2")
    bad = tmp_path / "kai.yaml"
    bad.write_text(text)
    result = run("validate", bad)
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert f"{bad}[doc 1]: PodGroup/disagg-llm: spec.subGroups[2].parent: parent prefil of " \
        "prefill-1 was not found" in line


def test_tree_of_an_invalid_workload_shows_it_and_exits_1(run: Run, tmp_path: Path) -> None:
    text = (EXAMPLES / "kai-podgroup.yaml").read_text().replace(
        "requiredTopologyLevel: block", "requiredTopologyLevel: row")
    bad = tmp_path / "kai.yaml"
    bad.write_text(text)
    result = run("translate", "-o", "tree", CLUSTER, bad)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"PodGroup team-a/disagg-llm  invalid: {bad}[doc 1]")
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "spec.topologyConstraint.requiredTopologyLevel" in lines[0]


def test_place_of_many_equal_model_servings_searches_each_few_times(
        run: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the Kthena example with 400 ServingGroups on the small cluster: some fit, the
    # rest are rejected, each with its reason; the look-ahead does not search for every
    # one of them in each of its trials (before: over 20 searches a workload)
    import gangsched.placement.engine.minimum as minimum

    many = tmp_path / "many.yaml"
    many.write_text((EXAMPLES / "kthena-2p2d.yaml").read_text().replace(
        "  replicas: 1  # ServingGroups", "  replicas: 400  # ServingGroups"))
    searches: list[str] = []
    real = minimum.place
    monkeypatch.setattr(minimum, "place", lambda unit, *a, **kw: (
        searches.append(unit.path), real(unit, *a, **kw))[1])
    result = run("place", "--no-headers", CLUSTER, many)
    assert result.exit_code == 3, result.output  # some rejected
    rows = [line.split() for line in result.stdout.splitlines()]
    assert len(rows) == 400
    admitted = [r for r in rows if r[3] == "Admitted"]
    rejected = [r for r in rows if r[3] == "Rejected"]
    assert admitted and rejected and len(admitted) + len(rejected) == 400
    assert all(len(r) > 6 for r in rejected)  # a reason each
    assert len(searches) < 5 * 400, len(searches)


def test_kueue_examples_follow_their_queue_to_the_flavors_nodes(run: Run, tmp_path: Path) -> None:
    queues = EXAMPLES / "kueue-queues.yaml"
    jobs = [EXAMPLES / f"kueue-{k}.yaml" for k in ("job", "jobset", "pod-group")]
    result = run("place", "-f", CLUSTER, "-f", queues, *(a for j in jobs for a in ("-f", j)),
                 "-o", "json")
    assert result.exit_code == 0, result.output
    placed = [p["node"] for w in json.loads(result.stdout)["workloads"] for p in w["pods"]]
    assert len(placed) == 19 and all(n.startswith("node-z0-b1-") for n in placed)  # h100
    no_local = tmp_path / "queues.yaml"
    no_local.write_text(queues.read_text().replace("kind: LocalQueue", "kind: LocalQueue\n"
                                                   "# renamed").replace("name: ml-queue",
                                                                        "name: other"))
    result = run("place", CLUSTER, no_local, jobs[0])
    assert result.exit_code == 3
    assert "Waiting" in result.stdout and "LocalQueue ml-queue doesn't exist" in result.stdout
