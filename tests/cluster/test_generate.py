"""The synthetic cluster generator: level specs, names, labels, YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.cli.main import app
from gangsched.cluster.generate import (
    generate_nodes,
    generate_yaml,
    level_key,
    level_name,
    parse_levels_spec,
    parse_node_spec,
)

GPU_NODE = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8", "pods": "110"}
ZONE, BLOCK = "topology.kubernetes.io/zone", "gangsched.io/block"
RACK, HOST = "gangsched.io/rack", "kubernetes.io/hostname"


def test_parse_levels_spec() -> None:
    assert parse_levels_spec(" zone=2, block=2,rack=4 ,host=16") == [
        ("zone", 2), ("block", 2), ("rack", 4), ("host", 16)
    ]
    assert parse_levels_spec("example.com/rack=4") == [("example.com/rack", 4)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        pytest.param("zone=0", "positive integer", id="zero-count"),
        pytest.param("zone=-2", "positive integer", id="negative-count"),
        pytest.param("zone=x", "positive integer", id="non-numeric-count"),
        pytest.param("zone=1_0", "positive integer", id="underscore-count"),
        pytest.param("zone=\u0663", "positive integer", id="non-ascii-digit"),
        pytest.param("=3", "NAME=COUNT", id="empty-name"),
        pytest.param("zone", "NAME=COUNT", id="no-count"),
        pytest.param("", "at least one", id="empty"),
        pytest.param("zone=2,zone=3", "given twice", id="duplicate"),
        pytest.param("host=2,rack=2", "last", id="host-not-last"),
        pytest.param("bad key!=2", "not a valid label key", id="bad-key"),
        pytest.param("zone=1000,rack=1000,host=2", "at most 1,000,000", id="too-many-nodes"),
    ],
)
def test_parse_levels_spec_rejects(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_levels_spec(spec)
    assert "\n" not in str(info.value)
    assert "--levels" in str(info.value)


@pytest.mark.parametrize(
    "spec", ["cpu=-1", "cpu=lots", "nvidia.com/gpu=1.5", "cpu", "cpu=", "bad name!=1",
             "cpu=1,cpu=2", "", " , ", "cpu=4,gpu=1"]
)
def test_parse_node_spec_rejects(spec: str) -> None:
    with pytest.raises(InputError, match="--node"):
        parse_node_spec(spec)


def test_parse_node_spec_keeps_kubernetes_strings() -> None:
    assert parse_node_spec("cpu=500m,memory=1Ti") == {"cpu": "500m", "memory": "1Ti"}


@pytest.mark.parametrize(
    ("name", "key"),
    [("zone", ZONE), ("region", "topology.kubernetes.io/region"), ("host", HOST),
     ("rack", RACK), ("example.com/tier", "example.com/tier")],
)
def test_level_key_and_name(name: str, key: str) -> None:
    assert level_key(name) == key
    assert level_name(key) == name.rsplit("/", 1)[-1]


def test_nodes_in_topology_order_with_unique_domain_values() -> None:
    nodes = generate_nodes(parse_levels_spec("zone=2,block=2,rack=4,host=16"), GPU_NODE)
    names = [n["metadata"]["name"] for n in nodes]
    assert len(names) == 256 == len(set(names))
    assert names == sorted(names)
    assert names[0] == "node-z0-b0-r0-h00"
    assert names[-1] == "node-z1-b1-r3-h15"
    first = nodes[0]["metadata"]["labels"]
    assert first == {ZONE: "z0", BLOCK: "z0-b0", RACK: "z0-b0-r0", HOST: "node-z0-b0-r0-h00",
                     "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux"}
    assert len({n["metadata"]["labels"][RACK] for n in nodes}) == 16
    status = nodes[0]["status"]
    assert status["allocatable"] == status["capacity"] == GPU_NODE
    assert status["conditions"] == [{"type": "Ready", "status": "True"}]


def test_zero_padding_keeps_lexical_order() -> None:
    nodes = generate_nodes([("rack", 12), ("host", 2)], GPU_NODE, prefix="gpu")
    names = [n["metadata"]["name"] for n in nodes]
    assert names[:3] == ["gpu-r00-h0", "gpu-r00-h1", "gpu-r01-h0"]
    assert names == sorted(names)


def test_without_host_level_one_node_per_leaf_domain() -> None:
    nodes = generate_nodes([("zone", 2), ("rack", 3)], GPU_NODE)
    assert [n["metadata"]["name"] for n in nodes][:2] == ["node-z0-r0", "node-z0-r1"]
    assert nodes[0]["metadata"]["labels"][HOST] == "node-z0-r0"


def test_colliding_level_initials_get_longer_abbreviations() -> None:
    nodes = generate_nodes([("region", 1), ("rack", 1), ("example.com/row", 1)], GPU_NODE)
    assert nodes[0]["metadata"]["name"] == "node-re0-ra0-ro0"


def test_yaml_matches_dicts() -> None:
    levels = parse_levels_spec("zone=1,block=2,rack=2,host=3")
    docs = list(yaml.safe_load_all(generate_yaml(levels, GPU_NODE, prefix="n")))
    assert docs[0]["kind"] == "Topology"
    assert [lv["nodeLabel"] for lv in docs[0]["spec"]["levels"]] == [ZONE, BLOCK, RACK, HOST]
    assert docs[1:] == generate_nodes(levels, GPU_NODE, prefix="n")
    plain = list(yaml.safe_load_all(generate_yaml(levels, GPU_NODE, topology=False)))
    assert {d["kind"] for d in plain} == {"Node"}


def test_yaml_quotes_values_that_would_not_read_back_as_strings() -> None:
    docs = list(yaml.safe_load_all(generate_yaml([("host", 2)], {"pods": "110"}, prefix="1")))
    assert [d["metadata"]["name"] for d in docs[1:]] == ["1-h0", "1-h1"]
    assert docs[1]["status"]["allocatable"] == {"pods": "110"}


def test_limit_keeps_the_first_nodes() -> None:
    nodes = generate_nodes([("rack", 4), ("host", 4)], GPU_NODE, limit=5)
    assert [n["metadata"]["name"] for n in nodes][-1] == "node-r1-h0"


@pytest.mark.parametrize("prefix", ["Node", "-x", "a_b", ""])
def test_bad_prefix(prefix: str) -> None:
    with pytest.raises(InputError, match="--prefix"):
        generate_nodes([("host", 1)], GPU_NODE, prefix=prefix)


def test_names_longer_than_a_label_value_are_rejected() -> None:
    with pytest.raises(InputError, match="63 characters"):
        generate_nodes([("host", 1)], GPU_NODE, prefix="x" * 61)


def test_a_level_keyed_like_a_kubelet_label_takes_its_place() -> None:
    nodes = generate_nodes([("kubernetes.io/os", 2), ("host", 1)], GPU_NODE)
    assert [n["metadata"]["labels"]["kubernetes.io/os"] for n in nodes] == ["o0", "o1"]
    text = generate_yaml([("kubernetes.io/os", 2), ("host", 1)], GPU_NODE, topology=False)
    assert text.count("kubernetes.io/os") == 2


def test_manifests_selecting_the_kubelet_labels_fit_a_generated_cluster(tmp_path: Path) -> None:
    """A pod that selects ``kubernetes.io/os: linux`` (as many upstream manifests do) is
    placed on a generated cluster."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(generate_yaml([("rack", 2), ("host", 2)], GPU_NODE))
    pod = tmp_path / "pod.yaml"
    pod.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n"
        "  nodeSelector:\n    kubernetes.io/os: linux\n    kubernetes.io/arch: amd64\n"
        "  containers:\n  - name: c\n    image: busybox\n"
        "    resources:\n      requests:\n        cpu: 100m\n")
    got = CliRunner().invoke(app, ["place", "-f", str(cluster), "-f", str(pod)])
    assert got.exit_code == 0, got.output
