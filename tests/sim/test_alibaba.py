"""The Alibaba openb loader: nodes with milli-GPUs, single-pod units, fractional GPUs,
run times and services, and one-line errors for bad CSVs."""

from __future__ import annotations

from pathlib import Path

import pytest

from gangsched.api.errors import InputError
from gangsched.gang import PodSet
from gangsched.sim.alibaba import (
    GPU,
    GPU_MILLI,
    MODEL_LABEL,
    NODE_FILE,
    POD_FILE,
    load_alibaba,
)

MiB = 1 << 20
NODES = """sn,cpu_milli,memory_mib,gpu,model
openb-node-0000,32000,262144,0,
openb-node-0001,96000,393216,8,G2
"""
PODS = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
        "deletion_time,scheduled_time\n") + """\
openb-pod-0000,12000,16384,1,1000,,LS,Running,100,5000,200
openb-pod-0001,6000,12288,1,460,,LS,Running,0,9000,0
openb-pod-0002,4000,8192,0,0,,BE,Succeeded,50,60,50
openb-pod-0003,8000,8192,2,1000,V100M16|V100M32,LS,Pending,70,170,
"""


def write(tmp_path: Path, nodes: str = NODES, pods: str = PODS) -> Path:
    (tmp_path / NODE_FILE).write_text(nodes)
    (tmp_path / POD_FILE).write_text(pods)
    return tmp_path


def test_nodes_offer_whole_and_milli_gpus(tmp_path: Path) -> None:
    trace = load_alibaba(write(tmp_path))
    cpu_node, gpu_node = trace.nodes
    assert cpu_node.allocatable == {"cpu": 32000, "memory": 262144 * MiB, GPU: 0,
                                    GPU_MILLI: 0, "pods": 110}
    assert gpu_node.allocatable[GPU] == 8 and gpu_node.allocatable[GPU_MILLI] == 8000
    assert gpu_node.labels[MODEL_LABEL] == "G2"
    assert cpu_node.labels[MODEL_LABEL] == "none"


def test_pods_become_single_pod_units_in_arrival_order(tmp_path: Path) -> None:
    trace = load_alibaba(write(tmp_path))
    names = [it.workload.name for it in trace.items]
    assert names == ["openb/openb-pod-0001", "openb/openb-pod-0002", "openb/openb-pod-0003",
                     "openb/openb-pod-0000"]
    by = {it.workload.name.split("/")[1]: it for it in trace.items}
    whole = by["openb-pod-0000"]
    tree = whole.workload.tree
    assert isinstance(tree, PodSet) and tree.size == 1 and tree.min_pods == 1
    assert tree.requests == {"cpu": 12000, "memory": 16384 * MiB, "pods": 1, GPU: 1,
                             GPU_MILLI: 1000}
    assert whole.arrival == 100.0 and whole.duration == 4800.0  # deletion - scheduled
    frac = by["openb-pod-0001"]
    ftree = frac.workload.tree
    assert isinstance(ftree, PodSet)
    assert GPU not in ftree.requests and ftree.requests[GPU_MILLI] == 460
    assert frac.duration is None  # still running when the trace was taken: a service
    cpu_only = by["openb-pod-0002"].workload.tree
    assert isinstance(cpu_only, PodSet)
    assert GPU not in cpu_only.requests and GPU_MILLI not in cpu_only.requests
    assert by["openb-pod-0002"].duration == 10.0
    never = by["openb-pod-0003"]
    assert never.duration == 100.0  # never scheduled: deletion - creation
    tree3 = never.workload.tree
    assert isinstance(tree3, PodSet) and tree3.requests[GPU_MILLI] == 2000
    (term,) = tree3.requirements.affinity
    assert term.match_expressions[0].values == ("V100M16", "V100M32")
    assert trace.horizon == 9000.0


def test_limit_keeps_the_first_pods(tmp_path: Path) -> None:
    trace = load_alibaba(write(tmp_path), limit=2)
    assert len(trace.items) == 2


@pytest.mark.parametrize(
    ("nodes", "pods", "fragment"),
    [
        ("sn,cpu_milli\nx,1\n", PODS, "missing column(s) memory_mib, gpu, model"),
        (NODES.replace("32000", "lots"), PODS, f"{NODE_FILE}:2: cpu_milli: must be a number"),
        (NODES, PODS.replace(",100,5000", ",-5,5000"), f"{POD_FILE}:2: creation_time: must "
                                                        "be >= 0"),
    ],
    ids=["missing column", "bad number", "negative"],
)
def test_bad_csvs_are_one_line_errors(tmp_path: Path, nodes: str, pods: str,
                                      fragment: str) -> None:
    with pytest.raises(InputError) as e:
        load_alibaba(write(tmp_path, nodes, pods))
    assert fragment in str(e.value)


def test_a_missing_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        load_alibaba(tmp_path / "nope")
    (tmp_path / NODE_FILE).write_text(NODES)
    with pytest.raises(InputError, match="file not found"):
        load_alibaba(tmp_path)
