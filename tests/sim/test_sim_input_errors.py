"""Bad simulator inputs, from the reader functions' side: every mistake in a JSON Lines
trace, an Alibaba gpu-v2023 directory or a scenario knob is one :class:`InputError`
naming the file, the line (or object) and the field; never a traceback, a hang or a
silently wrong replay. Real traces (the published files, when present) still load."""

from __future__ import annotations

import gzip
import json
import time
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
        ({"roles": [{**ROLE, "max_pods_per_node": 10**30}]},
         ["t.jsonl:1", "roles[0].max_pods_per_node", "<="]),
    ],
    ids=["arrival", "duration", "priority", "replicas", "pods_per_replica", "two roles",
         "max_pods_per_node"],
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


def test_a_gzip_trace_reads_as_the_plain_one(tmp_path: Path) -> None:
    text = line() + "\n" + line(name="b", arrival=5) + "\n"
    plain, packed, two = tmp_path / "p.jsonl", tmp_path / "p.jsonl.gz", tmp_path / "two.gz"
    plain.write_text(text)
    packed.write_bytes(gzip.compress(text.encode()))
    # two gzip members (files concatenated with cat), as gzip -d reads them
    two.write_bytes(gzip.compress(line().encode() + b"\n")
                    + gzip.compress(line(name="b", arrival=5).encode() + b"\n"))
    want = [(i.workload.name, i.arrival) for i in load_trace(plain)]
    assert [(n.split("/")[-1], t) for n, t in want] == [("a", 0.0), ("b", 5.0)]
    assert [(i.workload.name, i.arrival) for i in load_trace(packed)] == want
    assert [(i.workload.name, i.arrival) for i in load_trace(two)] == want


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (gzip.compress(line().encode())[:-12], "truncated gzip"),
        (gzip.compress(line().encode())[:10] + b"\xff" * 40, "damaged gzip"),
    ],
    ids=["truncated", "damaged"],
)
def test_a_bad_gzip_trace_is_one_line_error(tmp_path: Path, data: bytes,
                                            fragment: str) -> None:
    message = trace_error(tmp_path, data)
    assert "t.jsonl" in message and fragment in message


def test_a_gzip_bomb_is_refused_before_it_fills_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.textfile as trace_mod

    monkeypatch.setattr(trace_mod, "MAX_TEXT_BYTES", 1 << 20)
    message = trace_error(tmp_path, gzip.compress(b" " * (4 << 20)))
    assert "t.jsonl" in message and "decompresses to more than 1,048,576 bytes" in message


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


# -- Alibaba gpu-v2023 ------------------------------------------------------------------

NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"
POD_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
              "creation_time,deletion_time,scheduled_time\n")
NODE = "n0,32000,65536,2,T4\n"
POD = "p0,1000,1024,1,500,,LS,Running,0,600,0\n"


def csv_error(tmp_path: Path, name: str, text: str | bytes) -> str:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    with pytest.raises(InputError) as info:
        (load_nodes if name == NODE_FILE else load_pods)(path)
    message = str(info.value)
    assert "\n" not in message and name in message
    return message


@pytest.mark.parametrize(
    ("name", "text", "fragments"),
    [
        (NODE_FILE, NODE_HEADER, ["no nodes"]),
        (POD_FILE, POD_HEADER, ["no pods"]),
        (NODE_FILE, NODE_HEADER + NODE + NODE, [":3", "sn", "duplicate", "line 2"]),
        (POD_FILE, POD_HEADER + POD + POD, [":3", "name", "duplicate", "line 2"]),
        (NODE_FILE, NODE_HEADER + "n0,32000,65536,1000000000000000000000000000000,T4\n",
         [":2", "gpu", "at most"]),
        (POD_FILE, POD_HEADER + POD.replace(",1,500,", ",1000000000000000000000000000000,500,"),
         [":2", "num_gpu", "at most"]),
        (POD_FILE, POD_HEADER + POD.replace("p0,1000,", "p0,inf,"), [":2", "cpu_milli"]),
        (POD_FILE, POD_HEADER + POD.replace("p0,1000,", "p0,1e400,"), [":2", "cpu_milli"]),
        (POD_FILE, POD_HEADER + POD.replace("p0,1000,", "p0,nan,"), [":2", "cpu_milli"]),
        (POD_FILE, POD_HEADER + "p0,1000,1024,1,500,,LS,Running,0,600,900\n",
         [":2", "deletion_time", "before"]),
        (POD_FILE, POD_HEADER + "p0,1000,1024,1,500,,LS,Running,500,600,100\n",
         [":2", "scheduled_time", "before"]),
        (POD_FILE, POD_HEADER + "p0,1000,1024,1,500,,LS,Running,0,1e30,0\n",
         [":2", "deletion_time", "at most"]),
        (POD_FILE, POD_HEADER + "p0,1000,1024,1,500,,LS,Running,0\n", [":2", "fields"]),
        (POD_FILE, POD_HEADER + POD.strip() + ",extra\n", [":2", "fields"]),
        (POD_FILE, POD_HEADER + POD + POD.replace("p0", "p1")[:12], [":3", "fields"]),
        (POD_FILE, POD_HEADER + '"p0' + POD * 3, ["unterminated"]),
        (POD_FILE, POD_HEADER + POD.replace("p0", "p\x000"), [":2", "name"]),
        (POD_FILE, (POD_HEADER + POD).encode() + b"p\xe9,1\n", ["line 3", "UTF-8"]),
        (POD_FILE, b"\x00\x01\x02garbage\xff\xfe" * 50, ["UTF-8"]),
        (NODE_FILE, "sn,cpu\nn0,1\n", ["header", "missing column"]),
    ],
    ids=["nodes header only", "pods header only", "duplicate node", "duplicate pod",
         "absurd node gpus", "absurd pod gpus", "inf", "overflowing float", "nan",
         "deleted before scheduled", "scheduled before created", "absurd time",
         "short row", "long row", "truncated last line", "unterminated quote",
         "control character", "non-utf8", "binary garbage", "missing column"],
)
def test_bad_alibaba_files_are_one_line_errors(tmp_path: Path, name: str, text: str | bytes,
                                               fragments: list[str]) -> None:
    message = csv_error(tmp_path, name, text)
    for f in fragments:
        assert f in message, message


def test_a_gzip_alibaba_file_reads_as_the_plain_one(tmp_path: Path) -> None:
    (tmp_path / POD_FILE).write_bytes(gzip.compress((POD_HEADER + POD).encode()))
    items, _, _ = load_pods(tmp_path / POD_FILE)
    assert len(items) == 1


def test_extra_columns_in_the_header_are_fine(tmp_path: Path) -> None:
    path = tmp_path / POD_FILE
    path.write_text(POD_HEADER.strip() + ",note\n" + POD.strip() + ",x\n")
    items, _, _ = load_pods(path)
    assert len(items) == 1


def test_a_file_that_is_a_directory_says_so(tmp_path: Path) -> None:
    (tmp_path / NODE_FILE).mkdir()
    with pytest.raises(InputError, match="is a directory"):
        load_nodes(tmp_path / NODE_FILE)


@pytest.mark.skipif(not REAL_V2023.is_dir(), reason="the published trace is not here")
def test_the_real_v2023_trace_and_a_few_rows_of_it_load(tmp_path: Path) -> None:
    trace = load_alibaba(REAL_V2023)
    assert len(trace.nodes) == 1523 and len(trace.items) == 8152
    pods = (REAL_V2023 / POD_FILE).read_text().splitlines(keepends=True)
    (tmp_path / NODE_FILE).write_text((REAL_V2023 / NODE_FILE).read_text())
    (tmp_path / POD_FILE).write_text("".join(pods[:6]))
    assert len(load_alibaba(tmp_path).items) == 5
    (tmp_path / POD_FILE).write_text("".join(pods[:6]) + pods[6][:20])
    with pytest.raises(InputError, match=f"{POD_FILE}:7"):
        load_alibaba(tmp_path)


# -- scenario knobs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scenario", "params", "fragments"),
    [
        ("disagg", ["hours=-2"], ["hours", "> 0"]),
        ("disagg", ["hours=0"], ["hours", "> 0"]),
        ("disagg", ["hours=nan"], ["hours", "number"]),
        ("disagg", ["hours=inf"], ["hours", "number"]),
        ("disagg", ["hours=1e30"], ["hours", "at most"]),
        ("disagg", ["hours=abc"], ["hours", "number"]),
        ("disagg", ["zones=1.5"], ["zones", "integer"]),
        ("disagg", ["zones=0"], ["zones", ">= 1"]),
        ("disagg", ["zones=1000", "blocks=1000", "racks=1000"], ["nodes", "at most"]),
        ("disagg", ["warmup_hours=-1"], ["warmup_hours", ">= 0"]),
        ("disagg", ["hours=2", "warmup_hours=5"], ["warmup_hours", "hours"]),
        ("disagg", ["inference_share=2"], ["inference_share", "at most 1"]),
        ("disagg", ["colour=red"], ["unknown knob 'colour'", "zones"]),
        ("training", ["hosts=0"], ["hosts", ">= 1"]),
        ("perf-parity", ["large_pods=0"], ["large_pods", ">= 1"]),
        ("perf-parity", ["large_pods=-3"], ["large_pods", ">= 1"]),
        ("perf-parity", ["small=-5"], ["small", ">= 0"]),
        ("perf-parity", ["blocks=2"], ["unknown knob 'blocks'", "racks"]),
        ("alibaba-disagg-2025", ["days=0"], ["days", "> 0"]),
        ("alibaba-disagg-2025", ["scale=0"], ["scale", "> 0"]),
        ("alibaba-disagg-2025", ["scale=2"], ["scale", "at most 1"]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_scenario_knobs_are_errors_before_anything_runs(
        scenario: str, params: list[str], fragments: list[str]) -> None:
    request = ScenarioRequest(scenario=scenario, knobs=parse_params(params))
    with pytest.raises(InputError) as info:
        check_request(request)
    message = str(info.value)
    assert message.startswith("--param: ") or message.startswith("--param "), message
    for f in fragments:
        assert f in message, message


def test_too_many_arrivals_is_an_error_not_a_hang() -> None:
    request = ScenarioRequest(load=100, knobs=parse_params(["hours=8000"]))
    with pytest.raises(InputError, match="workloads"):
        build_scenario(request)


@pytest.mark.parametrize(
    ("request_", "fragments"),
    [
        (ScenarioRequest(seed=-1), ["--seed", ">= 0"]),
        (ScenarioRequest(horizon=1e30), ["--horizon", "at most"]),
        (ScenarioRequest(alibaba="x", alibaba_limit=0), ["--alibaba-limit", ">= 1"]),
        (ScenarioRequest(alibaba="x", alibaba_limit=-1), ["--alibaba-limit", ">= 1"]),
        (ScenarioRequest(alibaba_limit=5), ["--alibaba-limit", "--alibaba"]),
    ],
    ids=["seed", "horizon", "limit 0", "limit -1", "limit alone"],
)
def test_bad_request_values(request_: ScenarioRequest, fragments: list[str]) -> None:
    with pytest.raises(InputError) as info:
        check_request(request_)
    for f in fragments:
        assert f in str(info.value), str(info.value)


def test_a_required_level_no_node_carries_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line(topology={"required": "nolevel"}) + "\n")
    request = ScenarioRequest(trace=str(path), cluster_spec="zone=1,rack=2,host=2")
    with pytest.raises(InputError) as info:
        build_scenario(request)
    message = str(info.value)
    assert "t.jsonl:1" in message and "nolevel" in message and "no node" in message


@pytest.mark.parametrize(("fields", "field"), [
    ({"topology": {"required": "nolevel"}}, "topology.required"),
    ({"roles": [ROLE, {**ROLE, "name": "v", "topology": {"required": "nolevel"}}]},
     "roles[1].topology.required"),
    ({"roles": [{**ROLE, "pods_per_replica": 2, "replica_topology": {"required": "nolevel"}}]},
     "roles[0].replica_topology.required"),
], ids=["workload", "role", "replica"])
def test_a_required_level_no_node_carries_names_its_field(
        tmp_path: Path, fields: dict[str, object], field: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line(**fields) + "\n")
    with pytest.raises(InputError) as info:
        build_scenario(ScenarioRequest(trace=str(path), cluster_spec="zone=1,rack=2,host=2"))
    assert info.value.field == field


@pytest.mark.parametrize("key", ["Bad Key!!", "\u0000\u001b[31m", "a/b/c"])
def test_a_preferred_level_that_is_no_label_key_is_an_error(tmp_path: Path, key: str) -> None:
    message = trace_error(tmp_path, line(roles=[{**ROLE, "topology": {"preferred": key}}]))
    assert "t.jsonl:1" in message and "roles[0].topology.preferred" in message


def test_a_preferred_level_no_node_carries_is_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(line(name="a", topology={"preferred": "example.com/nope"}) + "\n"
                    + line(name="b", topology={"preferred": "example.com/nope"}) + "\n")
    sc = build_scenario(ScenarioRequest(trace=str(path), cluster_spec="zone=1,rack=2,host=2"))
    [warning] = sc.warnings  # once per label
    assert "t.jsonl:1" in warning and "topology.preferred" in warning
    assert "'example.com/nope'" in warning


# -- sizes: what a small file may ask for ---------------------------------------------------


def test_a_plain_trace_over_the_limit_is_refused_before_it_fills_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only gzip input was bounded: ``--trace /dev/zero`` read until a MemoryError."""
    import gangsched.sim.textfile as trace_mod

    monkeypatch.setattr(trace_mod, "MAX_TEXT_BYTES", 1 << 20)
    message = trace_error(tmp_path, b" " * (2 << 20))
    assert "t.jsonl" in message and "more than 1,048,576 bytes" in message
    if Path("/dev/zero").exists():  # no size to stat: the read itself must stop
        with pytest.raises(InputError, match="more than 1,048,576 bytes"):
            load_trace("/dev/zero")


def test_too_many_pods_in_the_whole_trace_are_refused_before_any_is_built(
        tmp_path: Path) -> None:
    """Each line may have 100,000 pods; 11 such lines (a 1 KB file) built 1.1 million pod
    objects (over a gigabyte) before anything said no, and 200 lines ran out of memory."""
    big = {**ROLE, "replicas": 100_000}
    text = "".join(line(name=f"w{i}", roles=[big]) + "\n" for i in range(11))
    start = time.perf_counter()
    message = trace_error(tmp_path, text)
    assert time.perf_counter() - start < 5
    assert "t.jsonl:11" in message and "1,100,000 pods" in message
    assert "at most 1,000,000" in message


def test_manifest_lines_count_towards_the_trace_pods(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.trace as trace_mod

    monkeypatch.setattr(trace_mod, "MAX_TRACE_PODS", 3)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c"}]}}
    manifest = json.dumps({"arrival": 0, "manifest": pod})
    text = line() + "\n" + manifest + "\n" + manifest.replace('"p"', '"q"') + "\n"
    message = trace_error(tmp_path, text)
    assert "t.jsonl:3" in message and "4 pods" in message


def test_a_blank_line_bomb_is_refused_quickly(tmp_path: Path) -> None:
    """20 KB of gzip holding twenty million newlines: counted, not split into a list."""
    start = time.perf_counter()
    message = trace_error(tmp_path, gzip.compress(b"\n" * 20_000_000 + line().encode()))
    assert time.perf_counter() - start < 10
    assert "t.jsonl" in message and "lines" in message and "10,000,000" in message


def test_a_line_separator_inside_a_json_string_is_not_a_line_break(tmp_path: Path) -> None:
    """JSON allows a raw U+2028 in a string; str.splitlines broke the line there."""
    path = tmp_path / "t.jsonl"
    path.write_text(line(kind="in\u2028ference") + "\n" + line(name="b") + "\n",
                    encoding="utf-8")
    items = load_trace(path)
    assert [it.kind for it in items] == ["in\u2028ference", "workload"]
    assert items[1].source.endswith("t.jsonl:2")


@pytest.mark.parametrize(
    ("fields", "fragments"),
    [
        ({"roles": [{**ROLE, "node_selector": {"bad key!": "x"}}]},
         ["t.jsonl:1", "roles[0].node_selector", "bad key!"]),
        ({"roles": [{**ROLE, "node_selector": {"gpu": "not a value"}}]},
         ["t.jsonl:1", "roles[0].node_selector.gpu", "not a value"]),
        ({"name": "a" * 300}, ["t.jsonl:1", "name", "at most"]),
        ({"namespace": "n" * 100}, ["t.jsonl:1", "namespace", "at most"]),
        ({"roles": [{**ROLE, "name": "r" * 300}]}, ["t.jsonl:1", "roles[0].name", "at most"]),
    ],
    ids=["selector key", "selector value", "long name", "long namespace", "long role"],
)
def test_names_and_labels_in_a_trace_follow_kubernetes_rules(
        tmp_path: Path, fields: dict[str, object], fragments: list[str]) -> None:
    message = trace_error(tmp_path, line(**fields) + "\n")
    for f in fragments:
        assert f in message, message


def test_the_name_of_a_manifest_line_must_be_a_string(tmp_path: Path) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c"}]}}
    message = trace_error(tmp_path, json.dumps({"arrival": 0, "name": 5, "manifest": pod}))
    assert "t.jsonl:1" in message and "name" in message and "string" in message


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (POD.replace("p0,1000,", "p0,1_000,"), [":2", "cpu_milli", "1_000"]),
        (POD.replace("p0,1000,", "p0,\u0663,"), [":2", "cpu_milli"]),
        (POD.replace("p0,1000,", "p0,1.5,"), [":2", "cpu_milli", "whole number"]),
        (POD.replace("p0,1000,", "p0, 1000 ,"), None),
        (POD.replace("p0,1000,", "p0,1e3,"), None),
        (POD.replace("p0,1000,", "p0,1000.0,"), None),
    ],
    ids=["underscore", "arabic-indic digit", "fraction", "spaces", "exponent", "point zero"],
)
def test_alibaba_numbers_are_plain_decimal(tmp_path: Path, text: str,
                                           fragments: list[str] | None) -> None:
    """Python's int() reads '1_000' and other scripts' digits; a CSV number is neither."""
    if fragments is None:
        path = tmp_path / POD_FILE
        path.write_text(POD_HEADER + text)
        items, _, _ = load_pods(path)
        assert items[0].workload.pods["openb/p0"].requests["cpu"] == 1000
        return
    message = csv_error(tmp_path, POD_FILE, POD_HEADER + text)
    for f in fragments:
        assert f in message, message


def test_too_many_alibaba_rows_are_refused_while_reading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gangsched.sim.csvrows as csvrows_mod

    monkeypatch.setattr(csvrows_mod, "MAX_ROWS", 3)
    rows = "".join(POD.replace("p0", f"p{i}") for i in range(4))
    message = csv_error(tmp_path, POD_FILE, POD_HEADER + rows)
    assert ":4" in message and "more than 3 lines" in message
    message = csv_error(tmp_path, POD_FILE, POD_HEADER + "\n" * 10 + POD)  # blank ones too
    assert ":4" in message and "more than 3 lines" in message
