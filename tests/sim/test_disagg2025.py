"""The Alibaba v2025 disaggregated DLRM trace as a scenario: the shipped data, the node
assumptions, apps as gangs of their CN and HN roles, windows per seed; the published
files read from a directory, and their mistakes as one-line errors."""

from __future__ import annotations

import gzip
import re
from importlib import resources
from pathlib import Path

import pytest

from gangsched.api.errors import InputError
from gangsched.gang import Group, PodSet
from gangsched.sim.disagg2025 import (
    GPU,
    INSTANCE_FILE,
    INSTANCES,
    MEMORY_PER_CORE,
    NODE_FILE,
    NODES,
    RDMA,
    disagg2025,
    instances,
    nodes,
    trace_files,
)
from gangsched.sim.inputs import ScenarioRequest, build_scenario


def test_the_shipped_trace_is_complete() -> None:
    every = instances()
    assert len(every) == 23_871
    assert len({i.app for i in every}) == 156
    assert {i.role for i in every} == {"CN", "HN"}
    ns = nodes()
    assert len(ns) == 4_278
    assert sum(n.allocatable[GPU] for n in ns) == 10_412
    n = ns[0]
    assert n.allocatable["memory"] == n.allocatable["cpu"] // 1000 * MEMORY_PER_CORE
    assert n.allocatable[RDMA] == 100


def test_apps_at_the_start_are_gangs_of_both_roles() -> None:
    sc = disagg2025(0, days=0.25, scale=0.1)
    bases = [it for it in sc.items if it.kind == "deployment"]
    assert bases and all(it.arrival == 0.0 for it in bases)
    both = [it for it in bases if len(it.workload.tree.children) == 2]  # type: ignore[union-attr]
    assert both, "some app has both roles at the start"
    tree = both[0].workload.tree
    assert isinstance(tree, Group) and tree.min_groups == 2
    roles = {c.name: c for c in tree.children}
    assert set(roles) == {"cn", "hn"}
    hn = roles["hn"]
    assert isinstance(hn, PodSet) and hn.min_pods == hn.size  # every instance required
    assert hn.requests[GPU] == 1 and RDMA in hn.requests
    ups = [it for it in sc.items if it.kind == "scale-up"]
    assert all(0 < it.arrival < sc.horizon for it in ups)


def test_seeds_are_consecutive_windows_and_it_runs() -> None:
    req = ScenarioRequest(scenario="alibaba-disagg-2025",
                          knobs=(("days", 0.25), ("scale", 0.05), ("warmup_hours", 0.5)))
    a, b = build_scenario(req), build_scenario(req.with_seed(1))
    assert a.parameters["window_start_days"] == 0.0
    assert b.parameters["window_start_days"] == 0.25
    assert a.gpu_resource == "cpu"  # cores are what these pods compete for


# -- the published files, from a directory ------------------------------------------------

def _published(tmp_path: Path, gz: bool) -> Path:
    """The packaged copy written under the published names (``gz``: compressed)."""
    data = resources.files("gangsched.data")
    for packaged, published in ((INSTANCES, INSTANCE_FILE), (NODES, NODE_FILE)):
        raw = data.joinpath(packaged).read_bytes()
        if gz:
            (tmp_path / f"{published}.gz").write_bytes(raw)
        else:
            (tmp_path / published).write_bytes(gzip.decompress(raw))
    return tmp_path


@pytest.mark.parametrize("gz", [False, True])
def test_a_directory_of_the_published_files_is_the_same_trace(tmp_path: Path,
                                                              gz: bool) -> None:
    d = _published(tmp_path, gz)
    found = trace_files(d)
    assert found is not None and all(f.exists() for f in found)
    assert instances(found[0]) == instances()
    assert [(n.name, n.labels, n.allocatable) for n in nodes(found[1])] == \
        [(n.name, n.labels, n.allocatable) for n in nodes()]
    a = disagg2025(0, days=0.25, scale=0.1)
    b = disagg2025(0, days=0.25, scale=0.1, source=d)
    assert b.specs == a.specs and b.parameters["source"] == str(d)


INSTANCE_HEADER = ("instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,"
                   "rdma_request,rdma_limit,memory_request,memory_limit,disk_request,"
                   "disk_limit,max_instance_per_node,creation_time,scheduled_time,"
                   "deletion_time\n")
GOOD = "i0,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,,,\n"


@pytest.mark.parametrize(("row", "where", "message"), [
    ("i1,HN,app_0,abc,12,1,1,25,25,120.0,120.0,1,1,8,,,", "cpu_request", "must be a number"),
    ("i1,HN,app_0,12,12,-1,1,25,25,120.0,120.0,1,1,8,,,", "gpu_request", "must be >= 0"),
    ("i1,HN,app_0,12,12,1,1,25,25,nan,120.0,1,1,8,,,", "memory_request", "must be a number"),
    ("i1,HN,app_0,1e300,12,1,1,25,25,1,1,1,1,8,,,", "cpu_request", "must be at most"),
    ("i1,HN,app_0,12,12,1,1,25,25,1,1,1,1,-2,,,", "max_instance_per_node", "must be >= -1"),
    ("i1,HN,app_0,12,12,1,1,25,25,1,1,1,1,8,50,,40", "deletion_time", "is before"),
    ("i0,HN,app_0,12,12,1,1,25,25,1,1,1,1,8,,,", "instance_sn", "duplicate 'i0'"),
    ("i1,,app_0,12,12,1,1,25,25,1,1,1,1,8,,,", "role", "is empty"),
    ("i1,HN,app_0,1_000,12,1,1,25,25,1,1,1,1,8,,,", "cpu_request", "must be a number"),
    ("i1,HN,app_0,\u0661\u0662,12,1,1,25,25,1,1,1,1,8,,,", "cpu_request",
     "must be a number"),
    ("i1,HN,app_0,12,12,1.5,1,25,25,1,1,1,1,8,,,", "gpu_request", "must be a whole number"),
    ("i1,HN,app_0,12", None, "has 4 fields, the header 17"),
])
def test_a_bad_instance_row_is_one_line_naming_file_line_and_column(
        tmp_path: Path, row: str, where: str | None, message: str) -> None:
    path = tmp_path / INSTANCE_FILE
    path.write_text(INSTANCE_HEADER + GOOD + row + "\n")
    with pytest.raises(InputError) as info:
        instances(path)
    text = str(info.value)
    assert "\n" not in text and f"{path}:3" in text and message in text
    if where is not None:
        assert where in text


def test_a_directory_without_the_trace_or_with_half_of_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"holds no disaggregated_DLRM_trace\.csv"):
        disagg2025(0, source=tmp_path)
    (tmp_path / INSTANCE_FILE).write_text(INSTANCE_HEADER + GOOD)
    with pytest.raises(InputError, match=rf"{re.escape(NODE_FILE)}.*file not found"):
        disagg2025(0, source=tmp_path)
    (tmp_path / NODE_FILE).write_text("gpu_model,gpu_capacity_num,cpu_num\nA,1,8\n")
    with pytest.raises(InputError, match=r"missing column.*node_name"):
        disagg2025(0, source=tmp_path)
    (tmp_path / NODE_FILE).write_text("gpu_model,gpu_capacity_num,cpu_num,node_name\n")
    with pytest.raises(InputError, match="no nodes in the file"):
        disagg2025(0, source=tmp_path)
