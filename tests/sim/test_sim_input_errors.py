"""Bad simulator inputs, from the reader functions' side: every mistake in a JSON Lines
trace, an Alibaba gpu-v2023 directory or a scenario knob is one :class:`InputError`
naming the file, the line (or object) and the field; never a traceback, a hang or a
silently wrong replay. Real traces (the published files, when present) still load."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gangsched.api.errors import InputError
from gangsched.sim.alibaba import NODE_FILE, POD_FILE, load_alibaba, load_nodes, load_pods
from gangsched.sim.inputs import ScenarioRequest, build_scenario, check_request, parse_params
from gangsched.sim.trace import load_trace

REAL_V2023 = Path("/work/shared/data/alibaba-gpu-v2023")

ROLE = {"name": "w", "replicas": 2, "requests": {"nvidia.com/gpu": 8}}


def line(**fields: object) -> str:
    obj: dict[str, object] = {"name": "a", "arrival": 0, "duration": 60, "roles": [ROLE]}
    obj.update(fields)
    return json.dumps(obj)


def trace_error(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "t.jsonl"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(InputError) as info:
        load_trace(path)
    message = str(info.value)
    assert "\n" not in message
    return message


# -- JSON Lines traces ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"],
                         ids=["empty", "blank lines", "comment"])
def test_a_trace_without_workloads_is_an_error(tmp_path: Path, text: str) -> None:
    assert "no workloads" in trace_error(tmp_path, text)


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        ({"arrival": 1e30}, ["t.jsonl:1", "arrival", "at most"]),
        ({"duration": 1e30}, ["t.jsonl:1", "duration", "at most"]),
        ({"priority": 10**23}, ["t.jsonl:1", "priority", "<="]),
        ({"roles": [{**ROLE, "replicas": 10**12}]}, ["t.jsonl:1", "roles[0]", "pods"]),
        ({"roles": [{**ROLE, "pods_per_replica": 10**8}]}, ["t.jsonl:1", "roles[0]", "pods"]),
        ({"roles": [{**ROLE, "name": "x", "replicas": 50_000}, {**ROLE, "replicas": 60_000}]},
         ["t.jsonl:1", "roles[1]", "pods"]),
    ],
    ids=["arrival", "duration", "priority", "replicas", "pods_per_replica", "two roles"],
)
def test_absurd_trace_quantities_are_errors(tmp_path: Path, fields: dict[str, object],
                                            fragments: list[str]) -> None:
    message = trace_error(tmp_path, line(**fields) + "\n")
    for f in fragments:
        assert f in message, message


def test_a_repeated_json_key_is_an_error(tmp_path: Path) -> None:
    text = ('{"name": "a", "arrival": 0, "roles": [{"name": "w", "requests": '
            '{"cpu": 1, "cpu": 2}}]}\n')
    message = trace_error(tmp_path, line() + "\n" + text.replace('"a"', '"b"'))
    assert "t.jsonl:2" in message and "'cpu'" in message and "repeated" in message


def test_a_gzip_trace_says_so(tmp_path: Path) -> None:
    message = trace_error(tmp_path, gzip.compress(line().encode()))
    assert "t.jsonl" in message and "gzip" in message


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    message = trace_error(tmp_path, (line() + "\n").encode() + b'{"name": "\xe9"}\n')
    assert "t.jsonl" in message and "line 2" in message and "UTF-8" in message


def test_a_directory_is_not_a_trace(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        load_trace(tmp_path / "d.jsonl")


def test_a_truncated_last_line_names_it(tmp_path: Path) -> None:
    message = trace_error(tmp_path, line() + "\n" + line(name="b")[:30])
    assert "t.jsonl:2" in message and "invalid JSON" in message
