"""``gangsched translate`` from the user's side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli_helpers import Result, assert_one_line_error
from typer.testing import CliRunner

from gangsched.cli.common import App
from gangsched.cli.translate import translate_cmd
from gangsched.frontends import assemble, load

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "kthena-2p2d.yaml"
GOLDEN = ROOT / "tests" / "frontends" / "golden" / "kthena-2p2d.yaml"

app = App()
app.command("translate")(translate_cmd)


@app.callback()
def _main() -> None:
    """The translate command, registered the way the gangsched app registers it."""


def run(*args: str | Path) -> Result:
    result: Result = CliRunner().invoke(app, ["translate", *map(str, args)])
    return result


def test_prints_podgroups_and_pods_as_yaml() -> None:
    result = run("-f", EXAMPLE)
    assert result.exit_code == 0, result.output
    assert result.stdout == GOLDEN.read_text()
    kinds = [d["kind"] for d in yaml.safe_load_all(result.stdout)]
    assert kinds == ["PodGroup"] + ["Pod"] * 8


def test_prints_a_json_list() -> None:
    result = run("-f", EXAMPLE, "-o", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert (document["apiVersion"], document["kind"]) == ("v1", "List")
    assert [i["metadata"]["name"] for i in document["items"]][:3] == [
        "sample-0", "sample-0-prefill-0-0", "sample-0-prefill-0-1"]
    assert document["items"][0]["spec"]["minResources"] == {"cpu": "600m"}


def test_output_loads_back_as_volcano_objects(tmp_path: Path) -> None:
    out = tmp_path / "out.yaml"
    out.write_text(run("-f", EXAMPLE).stdout)
    plan = assemble(load([out]))
    assert [(w.kind, w.name, w.waiting) for w in plan.workloads] == [
        ("PodGroup", "default/sample-0", "")]


def test_min_role_replicas_above_replicas_is_the_webhooks_error(tmp_path: Path) -> None:
    # Kthena's webhook (validateGangPolicy) rejects it; gangsched no longer clamps it
    text = EXAMPLE.read_text().replace("decode: 1", "decode: 3")
    path = tmp_path / "ms.yaml"
    path.write_text(text)
    result = run("-f", path)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "spec.template.gangPolicy.minRoleReplicas.decode" in lines[0]
    assert "minRoleReplicas (3) for role decode cannot exceed replicas (2)" in lines[0]


@pytest.mark.parametrize(
    ("old", "new", "fragments"),
    [
        pytest.param("- name: decode", "- name: decode-role-long",
                     ("ModelServing/sample", "spec.template.roles[1].name", "12 characters"),
                     id="role-name-too-long"),
        pytest.param("prefill: 2", "router: 2",
                     ("spec.template.gangPolicy.minRoleReplicas.router", "does not exist"),
                     id="min-role-replicas-unknown-role"),
        pytest.param("workerReplicas: 1", "workerReplicas: -1",
                     ("spec.template.roles[0].workerReplicas", "non-negative"),
                     id="negative-workers"),
    ],
)
def test_invalid_model_serving_is_one_error_line(old: str, new: str, fragments: tuple[str, ...],
                                                 tmp_path: Path) -> None:
    path = tmp_path / "ms.yaml"
    path.write_text(EXAMPLE.read_text().replace(old, new, 1))
    result = run("-f", path)
    assert_one_line_error(result, f"{path}[doc 0]", *fragments)
    assert result.stdout == ""


def test_no_model_serving_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("apiVersion: v1\nkind: Node\nmetadata:\n  name: n0\n")
    assert_one_line_error(run("-f", path), "no ModelServing objects")


def test_missing_file_is_an_error(tmp_path: Path) -> None:
    assert_one_line_error(run("-f", tmp_path / "nope.yaml"), "file not found")
