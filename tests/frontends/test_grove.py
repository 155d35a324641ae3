"""Grove: a PodCliqueSet's base and scaled gangs, its constraints resolved through the
ClusterTopologyBinding (or the legacy ClusterTopology), the pods the operator creates,
PodGangs, and the webhook's rules."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tas_helpers import (
    BLOCK,
    HOST,
    RACK,
    cluster,
    domains,
    load_error,
    only,
    outline,
    place,
    plan,
    tree,
)

from gangsched.frontends.grove import (
    LABEL_BASE_PODGANG,
    LABEL_PCSG_REPLICA,
    LABEL_PODCLIQUE,
    LABEL_PODGANG,
)
from gangsched.gang import Constraint

BINDING = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
           "metadata": {"name": "fabric"},
           "spec": {"levels": [{"domain": "zone", "key": "topology.kubernetes.io/zone"},
                               {"domain": "block", "key": BLOCK},
                               {"domain": "rack", "key": RACK},
                               {"domain": "host", "key": HOST}]}}


def clique(name: str, replicas: int, gpu: int = 2, minimum: int | None = None,
           topology: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"roleName": name, "replicas": replicas, "podSpec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1",
                                                                "nvidia.com/gpu": str(gpu)}}}]}}
    if minimum is not None:
        spec["minAvailable"] = minimum
    out: dict[str, Any] = {"name": name, "spec": spec}
    if topology is not None:
        out["topologyConstraint"] = topology
    return out


def pcs(cliques: list[dict[str, Any]], groups: list[dict[str, Any]] | None = None,
        topology: dict[str, Any] | None = None, replicas: int | None = 1,
        name: str = "llm") -> dict[str, Any]:
    template: dict[str, Any] = {"cliques": cliques}
    if groups:
        template["podCliqueScalingGroups"] = groups
    if topology is not None:
        template["topologyConstraint"] = topology
    spec: dict[str, Any] = {"template": template}
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
            "metadata": {"name": name, "namespace": "serving"}, "spec": spec}


def disagg() -> dict[str, Any]:
    """The notes' example: router, and a prefill scaling group of 3 (2 in the base gang)."""
    return pcs(
        [clique("router", 2, gpu=0, minimum=1), clique("pl", 1),
         clique("pw", 2, topology={"pack": {"preferred": "host"}})],
        [{"name": "prefill", "cliqueNames": ["pl", "pw"], "replicas": 3, "minAvailable": 2,
          "topologyConstraint": {"pack": {"required": "rack"}}}],
        topology={"topologyName": "fabric", "pack": {"required": "block"}})


# -- gangs ------------------------------------------------------------------------------------


def test_base_gang_and_scaled_gangs(tmp_path: Path) -> None:
    p = plan(tmp_path, BINDING, disagg())
    assert [(w.kind, w.name) for w in p.workloads] == [
        ("PodCliqueSet", "serving/llm-0"), ("PodCliqueSet", "serving/llm-0-prefill-0")]
    base, scaled = (tree(w) for w in p.workloads)
    assert outline(base) == [
        ("serving/llm-0", 3, 0, 8), ("serving/llm-0/router", -1, 1, 2),
        ("serving/llm-0/prefill-0", 2, 0, 3), ("serving/llm-0/prefill-0/pl", -1, 1, 1),
        ("serving/llm-0/prefill-0/pw", -1, 2, 2),
        ("serving/llm-0/prefill-1", 2, 0, 3), ("serving/llm-0/prefill-1/pl", -1, 1, 1),
        ("serving/llm-0/prefill-1/pw", -1, 2, 2)]
    assert base.topology == (Constraint(BLOCK),)
    assert base.children[1].topology == (Constraint(RACK),)
    assert base.children[1].children[1].topology == (  # type: ignore[union-attr]
        Constraint(HOST, "preferred"),)
    assert outline(scaled)[0] == ("serving/llm-0-prefill-0", 2, 0, 3)
    assert scaled.topology == (Constraint(RACK),)  # its group's constraint, not the PCS's


def test_pods_are_named_and_labelled_as_the_operator_does(tmp_path: Path) -> None:
    p = plan(tmp_path, BINDING, disagg())
    base, scaled = p.workloads
    names = [x.name.rsplit("-", 1)[0] for x in base.pods.values()]
    assert names[:4] == ["llm-0-router", "llm-0-router", "llm-0-prefill-0-pl",
                         "llm-0-prefill-0-pw"]
    pod = next(x for x in scaled.pods.values())
    assert pod.labels[LABEL_PODCLIQUE] == "llm-0-prefill-2-pl"
    assert pod.labels[LABEL_PODGANG] == "llm-0-prefill-0"
    assert pod.labels[LABEL_BASE_PODGANG] == "llm-0"
    assert pod.labels[LABEL_PCSG_REPLICA] == "2"


def test_replicas_default_to_zero(tmp_path: Path) -> None:
    assert plan(tmp_path, pcs([clique("a", 1)], replicas=None)).workloads == []


def test_the_disaggregated_set_lands_as_its_constraints_say(tmp_path: Path) -> None:
    p = plan(tmp_path, BINDING, disagg(), with_nodes=cluster())
    out = place(p)
    base = out["serving/llm-0"]
    assert base.admitted, base.reason
    assert len(domains(p, base, BLOCK)) == 1
    for j in range(2):
        assert len(domains(p, base, RACK, f"llm-0-prefill-{j}-")) == 1
    assert out["serving/llm-0-prefill-0"].admitted


def test_a_base_gang_too_big_for_a_block_is_rejected(tmp_path: Path) -> None:
    obj = pcs([clique("w", 5, gpu=8)], topology={"topologyName": "fabric",
                                                 "pack": {"required": "rack"}})
    p = plan(tmp_path, BINDING, obj, with_nodes=cluster())
    out = place(p)["serving/llm-0"]
    assert not out.admitted and "rack" in out.reason


def test_legacy_cluster_topology_and_pack_domain(tmp_path: Path) -> None:
    legacy = {"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopology",
              "metadata": {"name": "grove-topology"},
              "spec": {"levels": [{"domain": "rack", "key": RACK},
                                  {"domain": "zone", "key": "topology.kubernetes.io/zone"}]}}
    obj = pcs([clique("w", 2)], topology={"packDomain": "rack"})
    p = plan(tmp_path, legacy, obj)
    assert tree(only(p)).topology == (Constraint(RACK),)
    assert any("packDomain is deprecated" in x for x in p.warnings)


# -- rejected on load -------------------------------------------------------------------------


def _tmpl(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["spec"]["template"].update(fields)


def _clique(i: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["spec"]["template"]["cliques"][i]["spec"].update(fields)


def _group(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda o: o["spec"]["template"]["podCliqueScalingGroups"][0].update(fields)


C = "spec.template.cliques"
G = "spec.template.podCliqueScalingGroups[0]"
BAD = [
    pytest.param(_clique(0, minAvailable=3), f"{C}[0].spec.minAvailable",
                 "must not be greater than replicas", id="min-over-replicas"),
    pytest.param(_clique(0, minAvailable=0), f"{C}[0].spec.minAvailable",
                 "must be greater than 0", id="min-zero"),
    pytest.param(_group(minAvailable=4), f"{G}.minAvailable", "must not be greater than replicas",
                 id="group-min-over-replicas"),
    pytest.param(_group(cliqueNames=["pl", "nope"]), f"{G}.cliqueNames[1]", "is not defined",
                 id="unknown-clique"),
    pytest.param(_tmpl(cliques=[]), C, "at least one PodClique", id="no-cliques"),
    pytest.param(lambda o: o["spec"]["template"]["cliques"].append(clique("pl", 1)),
                 f"{C}[3].name", "duplicate clique name", id="duplicate-clique"),
    pytest.param(_group(topologyConstraint={"packDomain": "rack", "pack": {"required": "rack"}}),
                 f"{G}.topologyConstraint.packDomain", "cannot both be set",
                 id="pack-domain-and-required"),
    pytest.param(_group(topologyConstraint={"topologyName": "fabric"}), f"{G}.topologyConstraint",
                 "must specify pack or deprecated packDomain", id="no-pack"),
    pytest.param(_group(topologyConstraint={"pack": {}}), f"{G}.topologyConstraint.pack",
                 "must specify required or preferred", id="empty-pack"),
    pytest.param(_tmpl(topologyConstraint=None), f"{G}.topologyConstraint.topologyName",
                 "topologyName is required", id="topology-name-not-inherited"),
    pytest.param(_group(topologyConstraint={"topologyName": "other", "pack": {"required": "rack"}}),
                 f"{G}.topologyConstraint.topologyName", "must name the same topology",
                 id="two-topologies"),
    pytest.param(lambda o: o["spec"]["template"]["cliques"][0]["spec"]["podSpec"].update(
        nodeName="n1"), f"{C}[0].spec.podSpec.nodeName", "must not be set", id="node-name"),
]


@pytest.mark.parametrize(("edit", "field", "message"), BAD)
def test_bad_podcliquesets_are_one_line_errors(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None], field: str, message: str) -> None:
    obj = copy.deepcopy(disagg())
    edit(obj)
    if obj["spec"]["template"].get("topologyConstraint", "") is None:
        del obj["spec"]["template"]["topologyConstraint"]
    err = load_error(tmp_path, BINDING, obj)
    assert (err.doc, err.obj, err.field) == (1, "PodCliqueSet/llm", field), str(err)
    assert message in err.message


# -- invalid against the binding ----------------------------------------------------------


@pytest.mark.parametrize(("edit", "field", "message"), [
    pytest.param(_group(topologyConstraint={"pack": {"required": "zone"}}),
                 f"{G}.topologyConstraint.pack.required",
                 "domain 'zone' is looser than PodCliqueSet topology constraint domain 'block'",
                 id="child-looser-than-parent"),
    pytest.param(lambda o: o["spec"]["template"]["cliques"][1].update(
        topologyConstraint={"pack": {"required": "block"}}),
        f"{C}[1].topologyConstraint.pack.required",
        "looser than PodCliqueScalingGroup 'prefill'", id="clique-looser-than-group"),
    pytest.param(_group(topologyConstraint={"pack": {"required": "row"}}),
                 f"{G}.topologyConstraint.pack.required",
                 "topology domain 'row' does not exist in cluster topology fabric",
                 id="unknown-domain"),
    pytest.param(_tmpl(topologyConstraint={"topologyName": "nope", "pack": {"required": "block"}}),
                 "spec.template.topologyConstraint.topologyName",
                 "cluster topology 'nope' not found", id="missing-binding"),
])
def test_constraints_the_binding_refuses_make_the_set_invalid(
        tmp_path: Path, edit: Callable[[dict[str, Any]], None], field: str, message: str) -> None:
    obj = copy.deepcopy(disagg())
    edit(obj)
    w = only(plan(tmp_path, BINDING, obj))
    assert w.tree is None
    assert f"in.yaml[doc 1]: PodCliqueSet/llm: {field}: " in w.invalid, w.invalid
    assert message in w.invalid


# -- PodGang ----------------------------------------------------------------------------------


def gang_pod(name: str, clique: str, gpu: int = 2) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "serving",
                         "labels": {LABEL_PODGANG: "g-0", LABEL_PODCLIQUE: clique}},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"nvidia.com/gpu": str(gpu)}}}]}}


def podgang(refs: bool = True) -> dict[str, Any]:
    def refs_of(*names: str) -> list[dict[str, str]]:
        return [{"namespace": "serving", "name": n} for n in names] if refs else []

    return {"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
            "metadata": {"name": "g-0", "namespace": "serving"},
            "spec": {
                "topologyConstraint": {"packConstraint": {"required": BLOCK}},
                "topologyConstraintGroupConfigs": [
                    {"name": "g-0-pre-0", "podGroupNames": ["g-0-pre-0-l", "g-0-pre-0-w"],
                     "topologyConstraint": {"packConstraint": {"required": RACK}}}],
                "podgroups": [
                    {"name": "g-0-router", "minReplicas": 1, "podReferences": refs_of("r-a")},
                    {"name": "g-0-pre-0-l", "minReplicas": 1, "podReferences": refs_of("l-a")},
                    {"name": "g-0-pre-0-w", "minReplicas": 2,
                     "podReferences": refs_of("w-a", "w-b", "w-c"),
                     "topologyConstraint": {"packConstraint": {"preferred": HOST}}}]}}


def gang_pods() -> list[dict[str, Any]]:
    return [gang_pod("r-a", "g-0-router", 0), gang_pod("l-a", "g-0-pre-0-l"),
            *(gang_pod(f"w-{x}", "g-0-pre-0-w") for x in "abc")]


@pytest.mark.parametrize("refs", [True, False], ids=["references", "labels"])
def test_a_podgang_is_one_gang_with_its_group_configs(tmp_path: Path, refs: bool) -> None:
    p = plan(tmp_path, podgang(refs), *gang_pods(), with_nodes=cluster())
    w = only(p)
    assert (w.kind, w.name) == ("PodGang", "serving/g-0")
    assert outline(tree(w)) == [
        ("serving/g-0", 2, 0, 5), ("serving/g-0/g-0-pre-0", 2, 0, 4),
        ("serving/g-0/g-0-pre-0/g-0-pre-0-l", -1, 1, 1),
        ("serving/g-0/g-0-pre-0/g-0-pre-0-w", -1, 2, 3), ("serving/g-0/g-0-router", -1, 1, 1)]
    out = place(p)["serving/g-0"]
    assert out.admitted and len(domains(p, out, RACK, "w-") | domains(p, out, RACK, "l-")) == 1


def test_a_podgang_short_of_pods_waits(tmp_path: Path) -> None:
    w = only(plan(tmp_path, podgang(), *gang_pods()[:3]))
    assert w.waiting == "waiting for pods: podgroup g-0-pre-0-w has 1 of minReplicas 2"


@pytest.mark.parametrize(("edit", "field", "message"), [
    pytest.param(lambda s: s["podgroups"][0].update(minReplicas=0), "spec.podgroups[0].minReplicas",
                 "must be greater than 0", id="min-replicas"),
    pytest.param(lambda s: s["topologyConstraintGroupConfigs"][0]["podGroupNames"].append("x"),
                 "spec.topologyConstraintGroupConfigs[0].podGroupNames[2]", "not in spec.podgroups",
                 id="unknown-podgroup"),
    pytest.param(lambda s: s["podgroups"][0]["podReferences"][0].update(namespace="other"),
                 "spec.podgroups[0].podReferences[0].namespace", "not the PodGang's",
                 id="cross-namespace"),
])
def test_bad_podgangs_are_one_line_errors(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                          field: str, message: str) -> None:
    obj = podgang()
    edit(obj["spec"])
    err = load_error(tmp_path, obj)
    assert (err.obj, err.field) == ("PodGang/g-0", field) and message in err.message


def test_grove_sample_shapes_load(tmp_path: Path) -> None:
    """operator/samples: autoScalingConfig, startup order, a scaling group without
    replicas or minAvailable (CRD defaults 1 and 1)."""
    obj = pcs([clique("pca", 3), clique("pcb", 2), clique("pcc", 2)],
              [{"name": "sga", "cliqueNames": ["pcb", "pcc"],
                "scaleConfig": {"maxReplicas": 6}}])
    obj["spec"]["template"]["cliques"][0]["spec"]["autoScalingConfig"] = {
        "maxReplicas": 5, "metrics": [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}
    obj["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeExplicit"
    obj["spec"]["template"]["cliques"][1]["spec"]["startsAfter"] = ["pca"]
    w = only(plan(tmp_path, obj))
    assert [n[0] for n in outline(tree(w))] == [
        "serving/llm-0", "serving/llm-0/pca", "serving/llm-0/sga-0", "serving/llm-0/sga-0/pcb",
        "serving/llm-0/sga-0/pcc"]
