"""``gangsched place`` on the upstream scheduler_perf TAS inputs and custom-label clusters,
with no Topology object and no --topology: the keys the workloads name are node labels
(KEP-5732), and the levels come from how the labels nest.

The node, PodGroup and pod documents follow kubernetes v1.37.2
test/integration/scheduler_perf/podgroup/tas/templates (node.yaml: 4 cpu, 32Gi, 110
pods, ``topology.kubernetes.io/rack: rack-{i/100}``; podgroup.yaml: gang minCount with
``schedulingConstraints.topology[].key: topology.kubernetes.io/rack``; gang-pod.yaml:
100m cpu, 100Mi, ``spec.schedulingGroup.podGroupName``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from cli_helpers import Run

RACK = "topology.kubernetes.io/rack"


def tas_nodes(count: int, per_rack: int = 100, rack_key: str = RACK) -> list[dict[str, Any]]:
    return [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"node-{i}", "labels": {
            "kubernetes.io/hostname": f"node-{i}",
            "topology.kubernetes.io/zone": f"zone-{i // per_rack}",
            rack_key: f"rack-{i // per_rack}"}},
        "status": {"capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                   "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]},
    } for i in range(count)]


def tas_gangs(groups: int, per_group: int, key: str = RACK,
              namespace: str = "tas-ns-0") -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": f"gang-{g}", "namespace": namespace},
        "spec": {"schedulingPolicy": {"gang": {"minCount": per_group}},
                 "schedulingConstraints": {"topology": [{"key": key}]}},
    } for g in range(groups)]
    docs += [{
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"test-tas-scheduling-{i}", "namespace": namespace},
        "spec": {"schedulerName": "gangsched",
                 "schedulingGroup": {"podGroupName": f"gang-{i // per_group}"},
                 "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                                 "resources": {"requests": {"cpu": "100m",
                                                            "memory": "100Mi"}}}]},
    } for i in range(groups * per_group)]
    return docs


def write(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))
    return path


def racks_of(result: dict[str, Any], nodes: dict[str, str]) -> dict[str, set[str]]:
    return {f"{w['namespace']}/{w['name']}": {nodes[p["node"]] for p in w["pods"]}
            for w in result["workloads"]}


def test_upstream_tas_shape_places_without_a_topology(run: Run, tmp_path: Path) -> None:
    nodes = tas_nodes(300)
    cluster = write(tmp_path / "nodes.yaml", nodes)
    # 10 gangs of 3 (the 100Nodes_10Gangs case) and 3 gangs of 3,000: a rack holds
    # 100 nodes x 40 pods of 100m, so each big gang needs a rack of its own
    gangs = tas_gangs(10, 3) + tas_gangs(3, 3000, namespace="tas-ns-1")
    work = write(tmp_path / "gangs.yaml", gangs)
    result = run("place", cluster, work, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert all(w["status"] == "Admitted" for w in doc["workloads"])
    rack_of = {n["metadata"]["name"]: n["metadata"]["labels"][RACK] for n in nodes}
    assert all(len(r) == 1 for r in racks_of(doc, rack_of).values())
    assert len(set().union(*(r for name, r in racks_of(doc, rack_of).items()
                             if name.startswith("tas-ns-1/")))) == 3


def test_a_gang_larger_than_any_rack_is_rejected_naming_the_rack(
        run: Run, tmp_path: Path) -> None:
    cluster = write(tmp_path / "nodes.yaml", tas_nodes(200))
    work = write(tmp_path / "gangs.yaml", tas_gangs(1, 4001))  # a rack holds 100 x 40
    result = run("place", cluster, work, "-o", "json")
    doc = json.loads(result.stdout)
    (w,) = doc["workloads"]
    assert w["status"] == "Rejected" and result.exit_code == 3
    assert "inside one rack" in w["reason"] and "holds 4000" in w["reason"]


def test_custom_label_keys_and_a_crossing_key(run: Run, tmp_path: Path) -> None:
    # racks under example.com labels, and a "plane" label that cuts across racks
    nodes = tas_nodes(40, per_rack=10, rack_key="example.com/rack")
    for i, n in enumerate(nodes):
        n["metadata"]["labels"]["example.com/plane"] = f"p{i % 2}"
    cluster = write(tmp_path / "nodes.yaml", nodes)
    gangs = tas_gangs(2, 400, key="example.com/rack") + tas_gangs(
        1, 400, key="example.com/plane", namespace="planes")
    work = write(tmp_path / "gangs.yaml", gangs)
    result = run("place", cluster, work, "-o", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert all(w["status"] == "Admitted" for w in doc["workloads"]), doc
    labels = {n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}
    for w in doc["workloads"]:
        key = "example.com/plane" if w["namespace"] == "planes" else "example.com/rack"
        assert len({labels[p["node"]][key] for p in w["pods"]}) == 1


def test_composite_pod_group_on_rack_labels(run: Run, tmp_path: Path) -> None:
    """A CompositePodGroup (KEP-6012) of two PodGroups, both in one upstream rack."""
    cluster = write(tmp_path / "nodes.yaml", tas_nodes(300))
    gang = {"gang": {"minCount": 1500}}
    docs: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload",
        "metadata": {"name": "serving", "namespace": "ns"},
        "spec": {"compositePodGroupTemplates": [{
            "name": "cpg",
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": RACK}]},
            "podGroupTemplates": [{"name": role, "schedulingPolicy": gang}
                                  for role in ("prefill", "decode")]}]},
    }, {
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
        "metadata": {"name": "cpg", "namespace": "ns"},
        "spec": {"workloadRef": {"workloadName": "serving", "templateName": "cpg"},
                 "schedulingPolicy": {"gang": {"minGroupCount": 2}},
                 "schedulingConstraints": {"topology": [{"key": RACK}]}},
    }]
    for role in ("prefill", "decode"):
        docs.append({
            "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
            "metadata": {"name": f"cpg-{role}", "namespace": "ns"},
            "spec": {"parentCompositePodGroupName": "cpg",
                     "workloadRef": {"workloadName": "serving", "templateName": role},
                     "schedulingPolicy": gang},
        })
        docs += [{
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{role}-{i}", "namespace": "ns"},
            "spec": {"schedulerName": "gangsched",
                     "schedulingGroup": {"podGroupName": f"cpg-{role}"},
                     "containers": [{"name": "c", "image": "x", "resources": {
                         "requests": {"cpu": "100m", "memory": "100Mi"}}}]},
        } for i in range(1500)]
    work = write(tmp_path / "cpg.yaml", docs)
    result = run("place", cluster, work, "-o", "json")
    assert result.exit_code == 0, result.output
    (w,) = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Admitted"
    rack_of = {f"node-{i}": f"rack-{i // 100}" for i in range(300)}
    assert len({rack_of[p["node"]] for p in w["pods"]}) == 1  # 3,000 pods, 4,000 per rack


def test_volcano_tiers_count_the_levels_given_by_the_topology_option(
        run: Run, tmp_path: Path) -> None:
    # no HyperNodes: a networkTopology's tiers count the cluster's levels from the
    # narrowest, and with --topology those are its levels (tier 1: example.com/rack)
    keys = ("topology.kubernetes.io/zone", "example.com/block", "example.com/rack")
    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"n{i}", "labels": {keys[0]: "z0", keys[1]: "b0",
                                                       keys[2]: f"b0-r{i}"}},
              "status": {"allocatable": {"cpu": "64", "memory": "256Gi",
                                         "nvidia.com/gpu": "8", "pods": "110"}}}
             for i in range(2)]
    cluster = write(tmp_path / "nodes.yaml", nodes)

    def gang(tier: int) -> list[dict[str, Any]]:
        name = f"train-{tier}"
        return [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                 "metadata": {"name": name, "namespace": "default"},
                 "spec": {"minMember": 2, "networkTopology": {
                     "mode": "hard", "highestTierAllowed": tier}}}] + [
            {"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"{name}-{i}", "namespace": "default",
                          "annotations": {"scheduling.k8s.io/group-name": name}},
             "spec": {"schedulerName": "volcano", "containers": [{
                 "name": "m", "image": "x",
                 "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}
            for i in range(2)]

    option = ("--topology", ",".join(keys))
    one = write(tmp_path / "rack.yaml", gang(1))
    result = run("place", cluster, one, *option, "-o", "json")
    (w,) = json.loads(result.stdout)["workloads"]
    assert result.exit_code == 3 and w["status"] == "Rejected"  # one 8-GPU node a rack
    assert "inside one rack" in w["reason"]
    assert "ignored" not in result.stderr
    two = write(tmp_path / "block.yaml", gang(2))
    result = run("place", cluster, two, *option, "-o", "json")
    assert result.exit_code == 0, result.output  # tier 2: the block holds both
    result = run("validate", cluster, one, *option)
    assert result.exit_code == 0, result.output


def zone_block_cpg(name: str) -> list[dict[str, Any]]:
    """A CompositePodGroup held to one zone, its one PodGroup to one example.com/block."""
    zone, block = "topology.kubernetes.io/zone", "example.com/block"
    gang = {"gang": {"minCount": 2}}
    docs: list[dict[str, Any]] = [{
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "Workload",
        "metadata": {"name": f"{name}-wl", "namespace": "ns"},
        "spec": {"compositePodGroupTemplates": [{
            "name": "comp", "schedulingPolicy": {"gang": {"minGroupCount": 1}},
            "schedulingConstraints": {"topology": [{"key": zone}]},
            "podGroupTemplates": [{"name": "t0", "schedulingPolicy": gang,
                                   "schedulingConstraints": {"topology": [{"key": block}]}}],
        }]},
    }, {
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "CompositePodGroup",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"workloadRef": {"workloadName": f"{name}-wl", "templateName": "comp"},
                 "schedulingPolicy": {"gang": {"minGroupCount": 1}},
                 "schedulingConstraints": {"topology": [{"key": zone}]}},
    }, {
        "apiVersion": "scheduling.k8s.io/v1alpha3", "kind": "PodGroup",
        "metadata": {"name": f"{name}-c0", "namespace": "ns"},
        "spec": {"parentCompositePodGroupName": name,
                 "workloadRef": {"workloadName": f"{name}-wl", "templateName": "t0"},
                 "schedulingPolicy": gang,
                 "schedulingConstraints": {"topology": [{"key": block}]}},
    }]
    docs += [{
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": "ns"},
        "spec": {"schedulerName": "gangsched", "schedulingGroup": {"podGroupName": f"{name}-c0"},
                 "containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": "1"}}}]},
    } for i in range(2)]
    return docs


def one_block_per_zone(tmp_path: Path) -> Path:
    # each zone has one block, and n2 has a block but no zone: block still nests in zone
    labels = [{"topology.kubernetes.io/zone": "z0", "example.com/block": "z0-b0"},
              {"topology.kubernetes.io/zone": "z1", "example.com/block": "z1-b0"},
              {"example.com/block": "z2-b0"}]
    return write(tmp_path / "nodes.yaml", [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}", **lab}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    } for i, lab in enumerate(labels)])


def test_a_block_nests_in_its_zone_though_a_node_lacks_the_zone_label(
        run: Run, tmp_path: Path) -> None:
    cluster = one_block_per_zone(tmp_path)
    work = write(tmp_path / "cpg.yaml", zone_block_cpg("cpg"))
    result = run("place", cluster, work, "-o", "json")
    assert result.exit_code == 0, result.output
    (w,) = json.loads(result.stdout)["workloads"]
    assert w["status"] == "Admitted"
    assert {p["node"] for p in w["pods"]} <= {"n0", "n1"}  # n2 is in no zone


def test_a_tree_the_cluster_levels_make_invalid_is_that_workload_alone(
        run: Run, tmp_path: Path) -> None:
    # block b0 spans zones z0 and z1, so the derived chain puts block above zone: the
    # child's block is wider than its parent's zone in this cluster. That workload is
    # Invalid; the other one is still placed
    labels = [("z0", "b0"), ("z1", "b0"), ("z2", "b1")]
    cluster = write(tmp_path / "nodes.yaml", [{
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": f"n{i}", "labels": {
            "kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": z,
            "example.com/block": b}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    } for i, (z, b) in enumerate(labels)])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "namespace": "ns"},
           "spec": {"schedulerName": "gangsched", "containers": [
               {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}]}}
    work = write(tmp_path / "work.yaml", [*zone_block_cpg("cpg"), pod])
    result = run("place", cluster, work, "-o", "json")
    assert result.exit_code == 1
    status = {w["name"]: w for w in json.loads(result.stdout)["workloads"]}
    assert status["cpg"]["status"] == "Invalid"
    assert "wider than its parent's" in status["cpg"]["reason"]
    assert "work.yaml[doc " in status["cpg"]["reason"]  # where it was read
    assert status["solo"]["status"] == "Admitted"
    assert not any(p["node"] for p in status["cpg"]["pods"])
    assert "wider than its parent's" in result.stderr and "Traceback" not in result.output
