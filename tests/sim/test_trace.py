"""JSON Lines traces: the role form becomes the documented gang tree, manifest lines go
through the front-ends, and every error is one line naming file, line and field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gangsched.api.errors import InputError
from gangsched.gang import Constraint, Group, PodSet, scheduling_units
from gangsched.sim.trace import (
    RoleSpec,
    Topology,
    WorkloadSpec,
    build,
    load_trace,
    parse_line,
    read_trace,
    spec_json,
    write_trace,
)

RACK = "gangsched.io/rack"
ZONE = "topology.kubernetes.io/zone"
BLOCK = "gangsched.io/block"
GiB = 1 << 30

ISSUE_LINE: dict[str, Any] = {
    "name": "app-7", "arrival": 120.0, "duration": 3600.0, "priority": 0,
    "topology": {"required": "zone"},
    "roles": [{"name": "prefill", "replicas": 4, "min_replicas": 1, "pods_per_replica": 2,
               "requests": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": 8},
               "entry_requests": {"cpu": "4"}, "max_pods_per_node": 2,
               "topology": {"preferred": "block"}, "replica_topology": {"required": "rack"}},
              {"name": "frontend", "replicas": 2, "requests": {"cpu": "2"}}],
}


def one(obj: dict[str, Any]) -> Group:
    (item,) = parse_line(obj, "t.jsonl", 3)
    tree = item.workload.tree
    assert isinstance(tree, Group)
    return tree


def test_the_issue_line_becomes_workload_role_replica_podsets() -> None:
    (item,) = parse_line(ISSUE_LINE, "t.jsonl", 3)
    assert (item.arrival, item.duration, item.source) == (120.0, 3600.0, "t.jsonl:3")
    root = item.workload.tree
    assert isinstance(root, Group)
    assert root.path == "default/app-7" and root.min_groups == 2
    assert root.topology == (Constraint(ZONE, "required"),)
    prefill, frontend = root.children
    assert isinstance(prefill, Group) and prefill.min_groups == 1
    assert prefill.max_pods_per_node == 2
    assert prefill.topology == (Constraint(BLOCK, "preferred"),)
    assert len(prefill.children) == 4
    rep = prefill.children[0]
    assert isinstance(rep, Group) and rep.topology == (Constraint(RACK, "required"),)
    entry, workers = rep.children
    assert isinstance(entry, PodSet) and isinstance(workers, PodSet)
    assert entry.requests == {"cpu": 4000, "pods": 1}
    assert workers.requests == {"cpu": 32000, "memory": 256 * GiB, "nvidia.com/gpu": 8,
                                "pods": 1}
    assert (entry.size, entry.min_pods, workers.size, workers.min_pods) == (1, 1, 1, 1)
    # a role of single-pod replicas is one PodSet; min_replicas defaults to replicas
    assert isinstance(frontend, PodSet)
    assert (frontend.size, frontend.min_pods) == (2, 2)
    # one Pod per pod key, with the pod's requests
    pods = item.workload.pods
    assert len(pods) == 4 * 2 + 2
    assert pods[entry.pods[0]].requests == entry.requests
    assert scheduling_units(root) == [root]


def test_defaults_null_duration_is_a_service_and_a_role_without_minimum_is_optional() -> None:
    line = {"name": "svc", "arrival": 0, "duration": None,
            "roles": [{"name": "a", "replicas": 3, "min_replicas": 0,
                       "requests": {"cpu": "1"}},
                      {"name": "b", "requests": {"nvidia.com/gpu": 1}}]}
    (item,) = parse_line(line)
    assert item.duration is None and item.kind == "workload"
    root = item.workload.tree
    assert isinstance(root, Group) and root.min_groups == 1
    a, b = root.children
    assert isinstance(a, PodSet) and a.min_pods == 0 and a.size == 3
    assert isinstance(b, PodSet) and b.size == 1 and b.min_pods == 1


def test_level_names_and_full_label_keys_are_both_accepted() -> None:
    line = dict(ISSUE_LINE, topology={"required": "example.com/pod", "preferred": "rack"})
    root = one(line)
    assert root.topology == (Constraint("example.com/pod", "required"),
                             Constraint(RACK, "preferred"))


@pytest.mark.parametrize(
    ("patch", "field", "fragment"),
    [
        ({"arrival": -1}, "arrival", "must be >= 0"),
        ({"arrival": "soon"}, "arrival", "must be a number"),
        ({"duration": 0}, "duration", "must be positive"),
        ({"name": "App_7"}, "name", "lowercase name"),
        ({"priority": 1.5}, "priority", "must be an integer"),
        ({"roles": []}, "roles", "non-empty list"),
        ({"colour": "red"}, "colour", "unknown field"),
        ({"topology": {"required": 3}}, "topology.required", "level name"),
        ({"topology": {"exact": "rack"}}, "topology.exact", "unknown field"),
        ({"roles": [{"name": "a", "replicas": 0, "requests": {}}]}, "roles[0].replicas",
         "must be >= 1"),
        ({"roles": [{"name": "a", "replicas": 2, "min_replicas": 3, "requests": {}}]},
         "roles[0].min_replicas", "must be <= replicas"),
        ({"roles": [{"name": "a"}]}, "roles[0].requests", "is required"),
        ({"roles": [{"name": "a", "requests": {"cpu": "lots"}}]}, "roles[0].requests.cpu",
         ""),
        ({"roles": [{"name": "a", "requests": {}}, {"name": "a", "requests": {}}]},
         "roles[1].name", "duplicate role"),
        ({"roles": [{"name": "a", "requests": {}, "max_pods_per_node": 0}]},
         "roles[0].max_pods_per_node", "must be >= 1"),
        ({"roles": [{"name": "a", "requests": {}, "gpus": 1}]}, "roles[0].gpus",
         "unknown field"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_errors_name_file_line_workload_and_field(patch: dict[str, Any], field: str,
                                                  fragment: str) -> None:
    line = {**ISSUE_LINE, **patch}
    with pytest.raises(InputError) as e:
        parse_line(line, "t.jsonl", 3)
    text = str(e.value)
    assert text.startswith("t.jsonl:3: ")
    assert f": {field}: " in text
    assert fragment in text
    assert "\n" not in text


def test_read_trace_sorts_by_arrival_skips_comments_and_rejects_duplicates(
        tmp_path: Path) -> None:
    a = dict(ISSUE_LINE, name="a", arrival=50.0)
    b = dict(ISSUE_LINE, name="b", arrival=10.0)
    path = tmp_path / "t.jsonl"
    path.write_text(f"# a comment\n{json.dumps(a)}\n\n{json.dumps(b)}\n")
    items = load_trace(path)
    assert [it.workload.name for it in items] == ["default/b", "default/a"]
    path.write_text(f"{json.dumps(a)}\n{json.dumps(a)}\n")
    with pytest.raises(InputError, match=r"t.jsonl:2: name: workload 'default/a' already "
                                         r"defined at .*t.jsonl:1"):
        load_trace(path)


def test_invalid_json_and_missing_files_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^x.jsonl:2: invalid JSON"):
        read_trace(["", "{nope"], "x.jsonl")
    with pytest.raises(InputError, match="file not found"):
        load_trace(tmp_path / "missing.jsonl")
    with pytest.raises(InputError, match=r"^x.jsonl:1: must be a JSON object"):
        read_trace(["[1, 2]"], "x.jsonl")
    # Python's own limits, said in the file's terms
    with pytest.raises(InputError, match=r"^x.jsonl:1: invalid JSON: an integer of more "
                                         r"than 4,300 digits$"):
        read_trace(['{"name": "a", "arrival": ' + "9" * 5000 + "}"], "x.jsonl")
    with pytest.raises(InputError, match=r"^x.jsonl:1: invalid JSON: nested too deeply$"):
        read_trace(["[" * 100_000 + "]" * 100_000], "x.jsonl")


def test_a_namespace_is_a_dns_label() -> None:
    with pytest.raises(InputError, match=r"namespace: must be a lowercase name \(letters, "
                                         r"digits, '-'\)"):
        read_trace([json.dumps(dict(ISSUE_LINE, namespace="a.b"))], "t.jsonl")
    got = read_trace([json.dumps(dict(ISSUE_LINE, namespace="team-a"))], "t.jsonl")
    assert got[0].workload.name.startswith("team-a/")


def test_trees_are_validated_against_the_cluster_levels() -> None:
    line = dict(ISSUE_LINE, topology={"required": "rack"})
    line["roles"] = [dict(ISSUE_LINE["roles"][0], topology={"required": "zone"})]
    with pytest.raises(InputError, match=r"t.jsonl:1: default/app-7: .*wider than its parent"):
        read_trace([json.dumps(line)], "t.jsonl", [ZONE, BLOCK, RACK])


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "namespace": "ml"},
       "spec": {"schedulerName": "gangsched",
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}


def test_manifest_lines_go_through_the_front_ends() -> None:
    items = parse_line({"manifest": POD, "arrival": 5, "duration": 60, "priority": 3},
                       "t.jsonl", 1)
    (item,) = items
    assert item.workload.name == "ml/solo" and item.workload.kind == "Pod"
    assert item.workload.priority == 3
    assert (item.arrival, item.duration) == (5.0, 60.0)
    tree = item.workload.tree
    assert isinstance(tree, PodSet) and tree.requests["cpu"] == 2000
    # a list of objects is accepted too
    other = dict(POD, metadata={"name": "two", "namespace": "ml"})
    assert len(parse_line({"manifest": [POD, other], "arrival": 0}, "t.jsonl", 1)) == 2


def test_manifest_errors_are_located_at_the_trace_line() -> None:
    bad = dict(POD, spec={"containers": [{"name": "c", "resources": {"requests": {
        "cpu": "many"}}}]})
    with pytest.raises(InputError) as e:
        parse_line({"manifest": bad, "arrival": 0}, "t.jsonl", 7)
    assert str(e.value).startswith("t.jsonl:7: ")
    assert "cpu" in str(e.value)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}
    with pytest.raises(InputError, match="workloads, not Nodes"):
        parse_line({"manifest": node, "arrival": 0}, "t.jsonl", 1)
    with pytest.raises(InputError, match="manifest"):
        parse_line({"manifest": "Pod", "arrival": 0}, "t.jsonl", 1)


def test_specs_round_trip_through_a_trace_file(tmp_path: Path) -> None:
    spec = WorkloadSpec(
        "rt", 7.5, [RoleSpec("p", 2, {"cpu": 1500, "memory": 3 * GiB, "nvidia.com/gpu": 2},
                             min_replicas=1, pods_per_replica=2, entry_requests={"cpu": 100},
                             max_pods_per_node=1, topology=Topology(preferred=BLOCK),
                             replica_topology=Topology(required=RACK),
                             node_selector={"pool": "a"})],
        duration=99.0, priority=4, topology=Topology(required=ZONE), kind="inference")
    path = tmp_path / "rt.jsonl"
    write_trace([spec], path)
    (item,) = load_trace(path)
    direct = build(spec)
    assert item.workload.tree == direct.workload.tree
    assert item.kind == "inference" and item.duration == 99.0
    assert json.loads(path.read_text()) == spec_json(spec)
