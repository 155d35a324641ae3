"""A workload whose input is invalid makes every command that reads it exit 1 with one
``error:`` line on standard error naming the file, the object and the field, whatever the
output format (docs/cli.md, exit status 1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Run

CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "cluster-small.yaml"
FIELD = "spec.parentCompositePodGroupName: parent references form a cycle"


def cycle(tmp_path: Path) -> Path:
    """Two CompositePodGroups (KEP-6012) each naming the other as parent: the workload of
    each is Invalid, its input fails validation."""
    path = tmp_path / "cycle.yaml"
    path.write_text("".join(
        f"---\napiVersion: scheduling.k8s.io/v1alpha3\nkind: CompositePodGroup\n"
        f"metadata: {{name: {name}, namespace: inference}}\n"
        f"spec:\n  parentCompositePodGroupName: {parent}\n"
        f"  workloadRef: {{workloadName: llm-serving, templateName: serving}}\n"
        f"  schedulingPolicy: {{gang: {{minGroupCount: 1}}}}\n"
        for name, parent in (("loop-a", "loop-b"), ("loop-b", "loop-a"))))
    return path


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if not line.startswith("warning: ")]


@pytest.mark.parametrize("args", [
    ("explain", "compositepodgroup/loop-a"),
    ("explain", "compositepodgroup/loop-a", "-o", "json"),
    ("explain", "compositepodgroup/loop-a", "-o", "yaml"),
    ("explain", "loop-a", "-n", "inference", "-v"),
    ("place",),
    ("place", "-o", "json"),
    ("place", "-o", "name"),
    ("validate",),
], ids=lambda a: " ".join(a))
def test_an_invalid_workload_is_one_error_line_naming_file_object_and_field(
        args: tuple[str, ...], run: Run, tmp_path: Path) -> None:
    path = cycle(tmp_path)
    result = run(*args, "-f", CLUSTER, "-f", path)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    [line] = errors(result.stderr)
    assert line.startswith(f"error: {path}[doc 0]: CompositePodGroup/loop-a: {FIELD}"), line


def test_explain_still_prints_the_verdict_on_standard_output(run: Run, tmp_path: Path) -> None:
    result = run("explain", "compositepodgroup/loop-a", "-f", CLUSTER, "-f", cycle(tmp_path),
                 "-o", "json")
    data = json.loads(result.stdout)
    assert data["workload"]["status"] == "Invalid"
    assert FIELD in data["workload"]["reason"]


def test_explain_of_a_valid_workload_beside_an_invalid_one_keeps_its_own_status(
        run: Run, tmp_path: Path) -> None:
    """As place's status for this workload: the other's invalid input is not its error."""
    gang = CLUSTER.parent / "workload-gang.yaml"
    result = run("explain", "podgroup/llama-pretrain-workers-0", "-f", CLUSTER, "-f", gang,
                 "-f", cycle(tmp_path))
    assert result.exit_code == 0, result.output
    assert errors(result.stderr) == []
