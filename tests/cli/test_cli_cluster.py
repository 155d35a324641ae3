"""``gangsched cluster generate`` and ``gangsched cluster show`` from the user's side."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_helpers import Run, assert_one_line_error

LEVELS_256 = "zone=2,block=2,rack=4,host=16"
NODE = "cpu=64,memory=512Gi,nvidia.com/gpu=8,pods=110"
KEYS = "topology.kubernetes.io/zone,gangsched.io/block,gangsched.io/rack,kubernetes.io/hostname"


def test_version(run: Run) -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("gangsched ")


def test_generate_prints_256_nodes_in_topology_order(run: Run) -> None:
    result = run("cluster", "generate", "--levels", LEVELS_256, "--node", NODE)
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.stdout))
    nodes = [d for d in docs if d["kind"] == "Node"]
    assert len(nodes) == 256
    assert all(d["apiVersion"] == "v1" for d in nodes)
    names = [d["metadata"]["name"] for d in nodes]
    assert names == sorted(names) and len(set(names)) == 256
    assert names[0] == "node-z0-b0-r0-h00" and names[-1] == "node-z1-b1-r3-h15"
    assert nodes[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"


def test_generate_prefix_and_output_file(run: Run, tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.yaml"
    result = run("cluster", "generate", "--levels", "example.com/rack=2,host=2",
                 "--prefix", "gpu", "--output-file", path)
    assert result.exit_code == 0, result.output
    assert "wrote 4 nodes" in result.stderr
    nodes = [d for d in yaml.safe_load_all(path.read_text()) if d["kind"] == "Node"]
    assert nodes[1]["metadata"]["labels"]["example.com/rack"] == "r0"
    assert nodes[1]["metadata"]["name"] == "gpu-r0-h1"


@pytest.mark.parametrize(
    ("option", "value", "fragment"),
    [
        pytest.param("--levels", "zone=0", "positive integer", id="levels-zero"),
        pytest.param("--levels", "zone=x", "positive integer", id="levels-not-a-number"),
        pytest.param("--levels", "=3", "NAME=COUNT", id="levels-no-name"),
        pytest.param("--levels", "zone=1000,rack=1001", "1,000,000", id="levels-too-many"),
        pytest.param("--node", "cpu=-1", "negative", id="node-negative-cpu"),
        pytest.param("--node", "memory=lots", "invalid quantity", id="node-bad-quantity"),
    ],
)
def test_generate_rejects_bad_specs(run: Run, option: str, value: str, fragment: str) -> None:
    args = {"--levels": "zone=1,host=2", "--node": "cpu=1", option: value}
    result = run("cluster", "generate", *(x for kv in args.items() for x in kv))
    assert_one_line_error(result, option, fragment)
    assert result.stdout == ""


def test_show_reports_domains_per_level(run: Run, cluster_256: Path) -> None:
    result = run("cluster", "show", "-f", cluster_256)
    assert result.exit_code == 0, result.output
    assert "256 nodes: 2 zones, 4 blocks, 16 racks, 256 hosts" in result.stdout
    assert "z0-b1-r3" in result.stdout  # table mode still lists the first domains
    assert result.stderr == ""


def test_show_tree_with_depth(run: Run, cluster_256: Path) -> None:
    result = run("cluster", "show", "-f", cluster_256, "--depth", "3")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "rack z1-b1-r3" in out and "block z0-b1" in out
    assert "node-z0-b0-r0-h00" not in out  # hosts are below the depth
    # a rack: 16 nodes x 8 GPUs, all free
    rack_line = next(line for line in out.splitlines() if "rack z1-b1-r3" in line)
    assert "16 nodes" in rack_line and "gpu 128/128" in rack_line
    assert "mem Gi 8192/8192" in rack_line and "cpu 1024/1024" in rack_line


def _nodes_only(run: Run, tmp_path: Path, levels: str) -> Path:
    path = tmp_path / "nodes.yaml"
    result = run("cluster", "generate", "--levels", levels, "--node", NODE,
                 "--no-topology-object", "--output-file", path)
    assert result.exit_code == 0, result.output
    return path


def test_show_levels_from_topology_option_or_well_known_labels(
    run: Run, tmp_path: Path
) -> None:
    path = _nodes_only(run, tmp_path, LEVELS_256)
    inferred = run("cluster", "show", "-f", path)
    assert "256 nodes: 2 zones, 256 hosts" in inferred.stdout
    assert "(from well-known node labels)" in inferred.stdout.splitlines()[0]
    explicit = run("cluster", "show", "-f", path, "--topology", KEYS)
    assert explicit.exit_code == 0, explicit.output
    assert "2 zones, 4 blocks, 16 racks, 256 hosts" in explicit.stdout
    assert "(from --topology)" in explicit.stdout.splitlines()[0]


def test_topology_object_wins_over_option(run: Run, cluster_256: Path) -> None:
    result = run("cluster", "show", "-f", cluster_256, "--topology", "kubernetes.io/hostname")
    assert result.exit_code == 0, result.output
    assert "2 zones, 4 blocks, 16 racks" in result.stdout
    assert "(from --topology)" not in result.stdout.splitlines()[0]
    assert result.stderr.count("--topology ignored") == 1


def test_node_without_rack_label_is_reported_not_dropped(run: Run, tmp_path: Path) -> None:
    path = _nodes_only(run, tmp_path, "zone=1,rack=2,host=2")
    docs = list(yaml.safe_load_all(path.read_text()))
    del docs[3]["metadata"]["labels"]["gangsched.io/rack"]  # node-z0-r1-h1
    path.write_text(yaml.safe_dump_all(docs))
    keys = "topology.kubernetes.io/zone,gangsched.io/rack,kubernetes.io/hostname"
    result = run("cluster", "show", "-f", path, "--topology", keys)
    assert result.exit_code == 0, result.output
    warning = result.stderr.strip()
    assert warning.startswith("warning: 1 node lacks label gangsched.io/rack")
    assert "node-z0-r1-h1" in warning and len(warning.splitlines()) == 1
    assert "4 nodes: 1 zone, 2 racks" in result.stdout
    assert "rack (no gangsched.io/rack)  1 node " in result.stdout


def test_show_rejects_bad_topology_option(run: Run, cluster_256: Path, tmp_path: Path) -> None:
    path = _nodes_only(run, tmp_path, "zone=1,host=2")
    assert_one_line_error(run("cluster", "show", "-f", path, "--topology", "a,a"), "twice")


def test_show_missing_file_is_one_line_error(run: Run, tmp_path: Path) -> None:
    assert_one_line_error(run("cluster", "show", "-f", tmp_path / "nope.yaml"), "nope.yaml")


def test_show_sums_capacities_past_int64(run: Run, tmp_path: Path) -> None:
    """Each node within the per-quantity limit (2**62), the cluster's sum beyond int64:
    the total is exact, not wrapped to a negative number."""
    big = str(2**62)
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": f"big{i}", "labels": {"kubernetes.io/hostname": f"big{i}"}},
         "status": {"allocatable": {"cpu": "1", "nvidia.com/gpu": big}}} for i in range(2)]))
    result = run("cluster", "show", path)
    assert result.exit_code == 0, result.output
    assert f"gpu {2**63}/{2**63}" in result.stdout
    assert f"gpu {big}/{big}" in result.stdout
