"""Names the loader derives from ``metadata.generateName``: deterministic, independent of
how a file's path is spelled, unique within one load, valid Kubernetes names."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangsched.api.errors import InputError
from gangsched.api.loader import load, load_object

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"generateName": "worker-", "namespace": "ml", "labels": {"app": "x"}},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}


def write(path: Path, *objects: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def names(*paths: str | Path) -> list[str]:
    return [p.name for p in load(list(paths)).pods]


def test_the_name_does_not_depend_on_the_path_spelling(tmp_path: Path) -> None:
    path = write(tmp_path / "pods.yaml", POD)
    spellings = [path, str(path), os.path.relpath(path), str(tmp_path / "." / "pods.yaml"),
                 str(tmp_path / "sub" / ".." / "pods.yaml")]
    (tmp_path / "sub").mkdir()
    found = {tuple(names(s)) for s in spellings}
    assert len(found) == 1
    [[name]] = found
    assert name.startswith("worker-") and len(name) == len("worker-") + 5


def test_the_document_and_its_errors_carry_the_name(tmp_path: Path) -> None:
    path = write(tmp_path / "pods.yaml", POD)
    inputs = load([path])
    [doc] = inputs.documents
    assert doc.name == inputs.pods[0].name and doc.label == f"Pod/{doc.name}"
    bad = {**POD, "spec": {"containers": [{"name": "c", "resources": {
        "requests": {"cpu": "lots"}}}]}}
    with pytest.raises(InputError) as info:
        load([write(tmp_path / "bad.yaml", bad)])
    assert info.value.obj is not None and info.value.obj.startswith("Pod/worker-")


def test_names_are_unique_within_one_load(tmp_path: Path) -> None:
    one = write(tmp_path / "a" / "pods.yaml", POD, POD)
    other = write(tmp_path / "b" / "pods.yaml", POD, POD)  # same base name and content
    found = names(one, other)
    assert len(found) == 4 and len(set(found)) == 4
    assert found == names(one, other)  # and the same on every load


def test_other_namespace_or_content_gets_its_own_name(tmp_path: Path) -> None:
    other_ns = {**POD, "metadata": {**POD["metadata"], "namespace": "dev"}}
    path = write(tmp_path / "pods.yaml", POD)
    [first] = names(path)
    [second] = names(write(tmp_path / "pods.yaml", other_ns))
    assert first != second


def test_objects_read_one_by_one_from_different_sources_differ() -> None:
    """A trace names each manifest by its line: identical manifests stay distinct."""
    first = load_object(POD, "trace.jsonl:1").pods[0].name
    again = load_object(POD, "trace.jsonl:1").pods[0].name
    second = load_object(POD, "trace.jsonl:2").pods[0].name
    assert first == again != second


def test_a_long_prefix_is_cut_as_the_api_server_cuts_it(tmp_path: Path) -> None:
    long = {**POD, "metadata": {**POD["metadata"], "generateName": "w" * 70}}
    [name] = names(write(tmp_path / "pods.yaml", long))
    assert name.startswith("w" * 58) and len(name) == 63


def test_an_invalid_generate_name_is_a_one_line_error(tmp_path: Path) -> None:
    bad = {**POD, "metadata": {**POD["metadata"], "generateName": "Worker_"}}
    path = write(tmp_path / "pods.yaml", bad)
    with pytest.raises(InputError) as info:
        load([path])
    err = info.value
    assert err.field == "metadata.generateName" and err.file == str(path)
    assert "invalid name 'Worker_" in err.message and "\n" not in str(err)
