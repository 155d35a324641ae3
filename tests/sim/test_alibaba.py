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
    GPU_NODE_FILE,
    MODEL_LABEL,
    NODE_FILE,
    POD_FILE,
    alibaba_scenario,
    load_alibaba,
    trace_paths,
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
    with pytest.raises(InputError, match="has a node list but no pod list"):
        load_alibaba(tmp_path)
    with pytest.raises(InputError, match="file not found"):
        load_alibaba(tmp_path / "openb_pod_list_gpushare20.csv")


# a published list without times (the multigpu ones): name and requests only
UNTIMED = """name,cpu_milli,memory_mib,num_gpu,gpu_milli
openb-pod-0000,12000,16384,1,1000
openb-pod-0001,6000,12288,1,460
openb-pod-0002,4000,8192,0,0
openb-pod-0003,8000,8192,2,1000
openb-pod-0004,8000,8192,8,1000
"""


def test_a_list_without_times_is_submitted_in_a_shuffled_order_none_finishing(
        tmp_path: Path) -> None:
    (tmp_path / GPU_NODE_FILE).write_text(NODES)
    pods = tmp_path / "openb_pod_list_multigpu50.csv"
    pods.write_text(UNTIMED)
    trace = load_alibaba(pods)
    assert not trace.timed and trace.source == str(pods)
    assert [it.arrival for it in trace.items] == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert all(it.duration is None for it in trace.items)
    orders = []
    for seed in (0, 1, 2, 0):
        sc = alibaba_scenario(pods, seed, 1.0)
        assert sc.parameters["pod_list"] == str(pods) and "window_start_hours" not in sc.parameters
        assert "without times" in sc.description
        arrivals = [it.arrival for it in sc.items]
        assert arrivals == [0.0] * len(arrivals)  # all at the start, in the shuffled order
        assert all(it.duration is None for it in sc.items)
        orders.append([it.workload.name for it in sc.items])
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert orders[0] == orders[3]  # a seed is one order
    assert len({tuple(o) for o in orders}) > 1  # seeds shuffle differently
    assert len(alibaba_scenario(pods, 0, 2.0).items) == 10  # load 2: every pod twice


def test_a_list_with_some_time_columns_names_the_missing_ones(tmp_path: Path) -> None:
    (tmp_path / NODE_FILE).write_text(NODES)
    pods = tmp_path / POD_FILE
    pods.write_text(UNTIMED.replace("gpu_milli\n", "gpu_milli,creation_time\n", 1)
                    .replace("1000\n", "1000,5\n").replace("460\n", "460,5\n")
                    .replace(",0,0\n", ",0,0,5\n"))
    with pytest.raises(InputError, match=r"missing column\(s\) deletion_time, scheduled_time"):
        load_alibaba(tmp_path)


def test_which_files_a_path_names(tmp_path: Path) -> None:
    # a directory with the default list: it, and every node
    write(tmp_path)
    (tmp_path / GPU_NODE_FILE).write_text(NODES)
    (tmp_path / "openb_pod_list_cpu050.csv").write_text(PODS)
    assert trace_paths(tmp_path) == (tmp_path / NODE_FILE, tmp_path / POD_FILE)
    # one named list, the node list beside it
    named = tmp_path / "openb_pod_list_cpu050.csv"
    assert trace_paths(named) == (tmp_path / NODE_FILE, named)
    # several lists and no default: name one
    (tmp_path / POD_FILE).unlink()
    (tmp_path / "openb_pod_list_gpushare20.csv").write_text(PODS)
    with pytest.raises(InputError, match=r"holds 2 pod lists and no openb_pod_list_default\.csv"):
        trace_paths(tmp_path)
    # a single list, only the GPU nodes, in the csv/ folder of a checkout of the data
    checkout = tmp_path / "cluster-trace-gpu-v2023"
    (checkout / "csv").mkdir(parents=True)
    (checkout / "csv" / GPU_NODE_FILE).write_text(NODES)
    (checkout / "csv" / "openb_pod_list_gpuspec33.csv").write_text(PODS)
    assert trace_paths(checkout) == (checkout / "csv" / GPU_NODE_FILE,
                                     checkout / "csv" / "openb_pod_list_gpuspec33.csv")
    # a list with no node list beside it
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / POD_FILE).write_text(PODS)
    with pytest.raises(InputError, match="no node list beside it"):
        trace_paths(alone / POD_FILE)
