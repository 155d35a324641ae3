"""Kthena ModelServing: translation to Kthena's PodGroups and Pods, validation, and the
seed 2P2D example placed by the engine."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from frontend_helpers import (
    GOLDEN,
    deep,
    example,
    find,
    load_objects,
    outline,
    plan_of,
    slots,
    write,
)
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.api.types import Node
from gangsched.cli.main import app
from gangsched.cli.translate import Format, render
from gangsched.cluster.state import ClusterState
from gangsched.frontends import assemble
from gangsched.frontends.kthena import (
    ENTRY_LABEL,
    GROUP_LABEL,
    NAME_LABEL,
    ROLE_ID_LABEL,
    ROLE_LABEL,
    ModelServing,
    model_servings,
    parse_model_serving,
    translate,
)
from gangsched.frontends.volcano import GROUP_NAME_ANNOTATION, TASK_SPEC_KEY
from gangsched.gang import Constraint, Group, PodSet, validate
from gangsched.placement import place

SEED = example("kthena-2p2d.yaml")[0]


def seed(edit: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    obj = deep(SEED)
    if edit is not None:
        edit(obj)
    return obj


def template(obj: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = obj["spec"]["template"]
    return result


def parsed(edit: Callable[[dict[str, Any]], None] | None = None) -> ModelServing:
    return parse_model_serving(seed(edit))


# -- translate: exactly what Kthena creates ------------------------------------------------


def test_translate_matches_golden_file() -> None:
    podgroups, pods = translate(parsed())
    text = render(podgroups + pods, Format.yaml)
    golden = GOLDEN / "kthena-2p2d.yaml"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def test_seed_podgroup_is_the_one_the_kthena_docs_show() -> None:
    podgroups, _ = translate(parsed())
    assert len(podgroups) == 1
    pg = podgroups[0]
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert pg["metadata"]["name"] == "sample-0"
    assert pg["metadata"]["namespace"] == "default"
    assert pg["metadata"]["labels"] == {NAME_LABEL: "sample", GROUP_LABEL: "sample-0"}
    spec = pg["spec"]
    assert spec["minMember"] == 6
    assert spec["minResources"] == {"cpu": "600m"}
    assert spec["queue"] == "default"
    policies = {p["name"]: p for p in spec["subGroupPolicy"]}
    assert [p["name"] for p in spec["subGroupPolicy"]] == ["prefill", "decode"]
    assert (policies["prefill"]["minSubGroups"], policies["prefill"]["subGroupSize"]) == (2, 2)
    assert (policies["decode"]["minSubGroups"], policies["decode"]["subGroupSize"]) == (1, 2)
    assert policies["decode"]["labelSelector"] == {
        "matchLabels": {NAME_LABEL: "sample", ROLE_LABEL: "decode"}}
    assert policies["decode"]["matchLabelKeys"] == [ROLE_ID_LABEL]


def test_pods_are_named_and_labelled_as_kthena_does() -> None:
    _, pods = translate(parsed())
    names = [p["metadata"]["name"] for p in pods]
    assert names == [f"sample-0-{role}-{j}-{k}" for role in ("prefill", "decode")
                     for j in (0, 1) for k in (0, 1)]
    entry, worker = pods[2], pods[3]  # prefill replica 1
    assert entry["metadata"]["labels"] == {
        NAME_LABEL: "sample", GROUP_LABEL: "sample-0", ROLE_LABEL: "prefill",
        ROLE_ID_LABEL: "prefill-1", ENTRY_LABEL: "true"}
    assert ENTRY_LABEL not in worker["metadata"]["labels"]  # only the entry pod has it
    assert worker["metadata"]["annotations"] == {GROUP_NAME_ANNOTATION: "sample-0",
                                                 TASK_SPEC_KEY: "prefill-1"}
    assert worker["spec"]["schedulerName"] == "volcano"
    assert worker["spec"]["containers"][0]["name"] == "worker"
    env = {e["name"]: e["value"] for e in worker["spec"]["containers"][0]["env"]}
    assert env == {"GROUP_SIZE": "2", "ENTRY_ADDRESS": "sample-0-prefill-1-0.default",
                   "WORKER_INDEX": "1"}


def test_template_metadata_and_owner_reach_the_pods() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["metadata"]["uid"] = "u-1"
        role = template(obj)["roles"][0]
        role["entryTemplate"]["metadata"] = {"labels": {"app": "llm"},
                                             "annotations": {"note": "x"}}

    _, pods = translate(parsed(edit))
    meta = pods[0]["metadata"]
    assert meta["labels"]["app"] == "llm"
    assert meta["annotations"]["note"] == "x"
    assert meta["ownerReferences"] == [{
        "apiVersion": "workload.serving.volcano.sh/v1alpha1", "kind": "ModelServing",
        "name": "sample", "uid": "u-1", "blockOwnerDeletion": True, "controller": True}]


def test_replicas_give_one_podgroup_per_serving_group() -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["replicas"] = 2

    podgroups, pods = translate(parsed(edit))
    assert [p["metadata"]["name"] for p in podgroups] == ["sample-0", "sample-1"]
    assert len(pods) == 16
    assert pods[8]["metadata"]["annotations"][GROUP_NAME_ANNOTATION] == "sample-1"


def test_min_resources_sum_container_requests_of_the_minimum_pods() -> None:
    def edit(obj: dict[str, Any]) -> None:
        prefill = template(obj)["roles"][0]
        prefill["workerReplicas"] = 3
        container = prefill["workerTemplate"]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"},
                                  "limits": {"nvidia.com/gpu": "1"}}  # limits: not summed
        prefill["entryTemplate"]["spec"]["initContainers"] = [
            {"name": "init", "resources": {"requests": {"cpu": "50"}}}]  # not summed

    spec = translate(parsed(edit))[0][0]["spec"]
    # prefill: 2 replicas x (100m + 3 x (2 cpu, 1Gi)); decode: 1 replica x 2 x 100m
    assert spec["minResources"] == {"cpu": "12400m", "memory": "6Gi"}
    assert spec["minMember"] == 2 * 4 + 1 * 2


def test_no_gang_policy_means_every_replica_when_a_topology_is_set() -> None:
    def edit(obj: dict[str, Any]) -> None:
        del template(obj)["gangPolicy"]
        template(obj)["networkTopology"] = {
            "groupPolicy": {"mode": "soft"},
            "rolePolicy": {"mode": "hard", "highestTierAllowed": 1}}

    spec = translate(parsed(edit))[0][0]["spec"]
    assert spec["minMember"] == 8
    assert [p["minSubGroups"] for p in spec["subGroupPolicy"]] == [2, 2]
    assert spec["networkTopology"] == {"mode": "soft"}
    assert spec["subGroupPolicy"][1]["networkTopology"] == {"mode": "hard",
                                                           "highestTierAllowed": 1}


def test_without_gang_policy_every_role_replica_is_required(tmp_path: Path) -> None:
    # the documented default: no gangPolicy means all roles are gang-required
    podgroups, _ = translate(parsed(lambda o: template(o).pop("gangPolicy")))
    [pg] = podgroups
    assert pg["spec"]["minMember"] == 8
    assert [p["minSubGroups"] for p in pg["spec"]["subGroupPolicy"]] == [2, 2]


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda o: o["spec"].update(schedulerName="default-scheduler"),
                     id="not-a-gang-scheduler"),
    ],
)
def test_no_podgroup_without_a_gang_scheduler(edit: Callable[[Any], Any],
                                              tmp_path: Path) -> None:
    podgroups, pods = translate(parsed(edit))
    assert podgroups == []
    assert all(GROUP_NAME_ANNOTATION not in p["metadata"].get("annotations", {}) for p in pods)
    plan = plan_of(tmp_path, seed(edit))
    assert {w.kind for w in plan.workloads} == {"Pod"}  # every pod on its own
    assert len(plan.workloads) == 8


def test_min_role_replicas_above_replicas_is_a_validation_error(tmp_path: Path) -> None:
    """Kthena's admission webhook rejects it (volcano-sh/kthena 3cc0572,
    pkg/model-serving-controller/webhook/validator.go, validateGangPolicy: "minRoleReplicas
    (%d) for role %s cannot exceed replicas (%d)"); older gangsched clamped it."""
    def edit(obj: dict[str, Any]) -> None:
        template(obj)["gangPolicy"]["minRoleReplicas"]["decode"] = 5

    with pytest.raises(InputError) as info:
        load_objects(tmp_path, seed(edit))
    assert str(info.value) == (
        f"{tmp_path / 'in.yaml'}[doc 0]: ModelServing/sample: "
        "spec.template.gangPolicy.minRoleReplicas.decode: "
        "minRoleReplicas (5) for role decode cannot exceed replicas (2)")
    equal = seed(lambda o: template(o)["gangPolicy"]["minRoleReplicas"].update(decode=2))
    assert translate(parse_model_serving(equal))[0][0]["spec"]["minMember"] == 8


def test_queue_annotation_becomes_the_podgroup_queue(tmp_path: Path) -> None:
    """extractQueueName (volcano-sh/kthena 3cc0572, pkg/model-serving-controller/
    podgroupmanager/manager.go): the ModelServing's scheduling.volcano.sh/queue-name
    annotation is the PodGroup's spec.queue; without it Kthena leaves the queue empty and
    the PodGroup CRD's default, "default", applies."""
    def annotate(queue: str) -> Callable[[dict[str, Any]], None]:
        return lambda o: o["metadata"].setdefault("annotations", {}).update(
            {"scheduling.volcano.sh/queue-name": queue})

    assert translate(parsed())[0][0]["spec"]["queue"] == "default"
    assert translate(parsed(annotate("")))[0][0]["spec"]["queue"] == "default"
    [podgroup] = translate(parsed(annotate("inference-high")))[0]
    assert podgroup["spec"]["queue"] == "inference-high"
    assert "scheduling.volcano.sh/queue-name" not in podgroup["metadata"]["annotations"]
    with pytest.raises(InputError) as info:
        load_objects(tmp_path, seed(annotate("High Priority")))
    assert "metadata.annotations.scheduling.volcano.sh/queue-name: invalid queue name " \
        "'High Priority'" in str(info.value)


def test_hard_policy_without_a_tier_is_valid_and_limits_nothing(tmp_path: Path) -> None:
    """Kthena's webhook has no rule for it (validator.go at 3cc0572), and Volcano treats
    hard mode without highestTierAllowed as not hard (JobInfo.IsHardTopologyMode,
    pkg/scheduler/api/job_info.go): no constraint."""
    def edit(obj: dict[str, Any]) -> None:
        template(obj)["networkTopology"] = {"groupPolicy": {"mode": "hard"},
                                            "rolePolicy": {"mode": "hard"}}

    [podgroup] = translate(parsed(edit))[0]
    assert podgroup["spec"]["networkTopology"] == {"mode": "hard"}
    plan = plan_of(tmp_path, seed(edit), nodes=slots(8))
    [workload] = plan.ready
    assert workload.tree is not None
    assert all(not n.topology for n in _walk(workload.tree))


def _walk(node: Group | PodSet) -> list[Group | PodSet]:
    out: list[Group | PodSet] = [node]
    if isinstance(node, Group):
        for child in node.children:
            out.extend(_walk(child))
    return out


def test_too_many_generated_pods_are_refused_before_any_is_made(tmp_path: Path) -> None:
    def edit(obj: dict[str, Any]) -> None:
        obj["spec"]["replicas"] = 2**31 - 1
        template(obj)["roles"][0]["workerReplicas"] = 2**31 - 1

    with pytest.raises(InputError) as info:
        load_objects(tmp_path, seed(edit))
    assert ": ModelServing/sample: spec: would create" in str(info.value)
    assert "at most 100,000 per ModelServing" in str(info.value)


@pytest.mark.parametrize("field", ["replicas", "workerReplicas"])
def test_counts_beyond_int32_are_errors(field: str, tmp_path: Path) -> None:
    def edit(obj: dict[str, Any]) -> None:
        holder = obj["spec"] if field == "replicas" else template(obj)["roles"][0]
        holder[field] = 2**31

    with pytest.raises(InputError, match="32 bits"):
        load_objects(tmp_path, seed(edit))


# -- validation --------------------------------------------------------------------------


def _role(name: str) -> dict[str, Any]:
    return {"name": name, "workerReplicas": 0,
            "entryTemplate": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}


INVALID: list[tuple[str, Callable[[dict[str, Any]], Any], str, str]] = [
    ("no-roles", lambda o: template(o).update(roles=[]),
     "spec.template.roles", "at least one role"),
    ("five-roles", lambda o: template(o).update(roles=[_role(f"r{i}") for i in range(5)]),
     "spec.template.roles", "at most 4 roles"),
    ("duplicate-role", lambda o: template(o)["roles"][1].update(name="prefill"),
     "spec.template.roles[1].name", "duplicate role name 'prefill'"),
    ("role-name-13-chars", lambda o: template(o)["roles"][0].update(name="a" * 13),
     "spec.template.roles[0].name", "longer than 12 characters"),
    ("role-name-uppercase", lambda o: template(o)["roles"][0].update(name="Prefill"),
     "spec.template.roles[0].name", "DNS-1035"),
    ("min-role-missing-role", lambda o: template(o)["gangPolicy"]["minRoleReplicas"].update(
        router=1), "spec.template.gangPolicy.minRoleReplicas.router",
     "role router does not exist"),
    ("min-role-negative", lambda o: template(o)["gangPolicy"]["minRoleReplicas"].update(
        prefill=-1), "spec.template.gangPolicy.minRoleReplicas.prefill", "non-negative"),
    ("replicas-negative", lambda o: o["spec"].update(replicas=-1), "spec.replicas",
     "non-negative"),
    ("role-replicas-negative", lambda o: template(o)["roles"][0].update(replicas=-2),
     "spec.template.roles[0].replicas", "non-negative"),
    ("worker-replicas-negative", lambda o: template(o)["roles"][1].update(workerReplicas=-1),
     "spec.template.roles[1].workerReplicas", "non-negative"),
    ("worker-replicas-missing", lambda o: template(o)["roles"][1].pop("workerReplicas"),
     "spec.template.roles[1].workerReplicas", "is required"),
    ("worker-template-missing", lambda o: template(o)["roles"][0].pop("workerTemplate"),
     "spec.template.roles[0].workerTemplate", "workerReplicas is greater than 0"),
    ("entry-template-missing", lambda o: template(o)["roles"][0].pop("entryTemplate"),
     "spec.template.roles[0].entryTemplate", "is required"),
    ("bad-request", lambda o: template(o)["roles"][0]["entryTemplate"]["spec"]["containers"][0]
     ["resources"]["requests"].update(cpu="lots"),
     "spec.template.roles[0].entryTemplate.spec.containers[0].resources.requests.cpu",
     "invalid quantity"),
    ("unknown-field", lambda o: template(o)["roles"][0].update(replica=3),
     "spec.template.roles[0].replica", 'unknown field "replica"'),
    ("template-metadata-name", lambda o: template(o)["roles"][0]["entryTemplate"].update(
        metadata={"name": "x"}),
     "spec.template.roles[0].entryTemplate.metadata.name", 'unknown field "name"'),
    ("template-bad-label", lambda o: template(o)["roles"][0]["entryTemplate"].update(
        metadata={"labels": {"a b": "c"}}),
     "spec.template.roles[0].entryTemplate.metadata.labels", "invalid label key 'a b'"),
    ("ports-as-string", lambda o: template(o)["roles"][0]["entryTemplate"]["spec"]
     ["containers"][0].update(ports="8080"),
     "spec.template.roles[0].entryTemplate.spec.containers[0].ports",
     "must be a list, not a string"),
    ("min-role-above-replicas", lambda o: template(o)["gangPolicy"]["minRoleReplicas"].update(
        prefill=3), "spec.template.gangPolicy.minRoleReplicas.prefill",
     "minRoleReplicas (3) for role prefill cannot exceed replicas (2)"),
    ("tier-and-name", lambda o: template(o).update(networkTopology={
        "rolePolicy": {"highestTierAllowed": 1, "highestTierName": "leaf"}}),
     "spec.template.networkTopology.rolePolicy", "mutually exclusive"),
    ("generated-name-too-long", lambda o: o["metadata"].update(name="s" * 60),
     "metadata.name", "DNS-1035"),
]


@pytest.mark.parametrize(("edit", "field", "message"),
                         [pytest.param(e, f, m, id=i) for i, e, f, m in INVALID])
def test_invalid_model_serving_is_a_one_line_error(
    edit: Callable[[dict[str, Any]], Any], field: str, message: str, tmp_path: Path
) -> None:
    with pytest.raises(InputError) as info:
        load_objects(tmp_path, seed(edit))
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'in.yaml'}[doc 0]: ModelServing/")
    assert f": {field}: " in text
    assert message in text


def test_duplicate_model_serving_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="duplicate ModelServing 'default/sample'"):
        load_objects(tmp_path, seed(), seed())


# -- the builder -------------------------------------------------------------------------


def test_builder_makes_one_workload_per_serving_group(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, seed())
    [workload] = plan.workloads
    assert (workload.name, workload.kind, workload.waiting) == ("default/sample-0",
                                                                "ModelServing", "")
    assert workload.tree is not None
    validate(workload.tree)
    assert outline(workload.tree) == [
        ("default/sample-0", 2, 6, 8),
        ("default/sample-0/prefill", 2, 0, 4),
        ("default/sample-0/prefill/prefill-0", 1, 2, 2),
        ("default/sample-0/prefill/prefill-0/pods", -1, 2, 2),
        ("default/sample-0/prefill/prefill-1", 1, 2, 2),
        ("default/sample-0/prefill/prefill-1/pods", -1, 2, 2),
        ("default/sample-0/decode", 1, 0, 4),
        ("default/sample-0/decode/decode-0", 1, 2, 2),
        ("default/sample-0/decode/decode-0/pods", -1, 2, 2),
        ("default/sample-0/decode/decode-1", 1, 2, 2),
        ("default/sample-0/decode/decode-1/pods", -1, 2, 2),
    ]
    assert sorted(workload.pods) == sorted(f"default/{n}" for n in (
        f"sample-0-{r}-{j}-{k}" for r in ("prefill", "decode") for j in (0, 1) for k in (0, 1)))
    leaf = find(workload.tree, "default/sample-0/prefill/prefill-0/pods")
    assert isinstance(leaf, PodSet)
    assert leaf.requests == {"cpu": 100, "pods": 1}


def test_translated_objects_give_the_same_tree_through_the_volcano_front_end(
    tmp_path: Path,
) -> None:
    podgroups, pods = translate(parsed())
    through_volcano = plan_of(tmp_path, *podgroups, *pods).workloads[0]
    direct = plan_of(tmp_path, seed()).workloads[0]
    assert through_volcano.tree is not None and direct.tree is not None
    assert outline(through_volcano.tree) == outline(direct.tree)
    assert through_volcano.kind == "PodGroup"


def test_role_policy_constrains_each_role_replica(tmp_path: Path) -> None:
    def edit(obj: dict[str, Any]) -> None:
        template(obj)["networkTopology"] = {
            "groupPolicy": {"mode": "soft", "highestTierAllowed": 2},
            "rolePolicy": {"mode": "hard", "highestTierAllowed": 1}}

    inputs = load_objects(tmp_path, seed(edit))
    inputs.topology_levels = ["topology.kubernetes.io/zone", "example.com/rack",
                              "kubernetes.io/hostname"]
    tree = assemble(inputs).workloads[0].tree
    assert isinstance(tree, Group)
    assert tree.topology == (Constraint("topology.kubernetes.io/zone", "preferred"),)
    replica = find(tree, "default/sample-0/prefill/prefill-0")
    assert replica.topology == (Constraint("example.com/rack", "required"),)


# -- the seed on the engine --------------------------------------------------------------


def _place_seed(tmp_path: Path, nodes: list[Node]) -> tuple[bool, dict[str, str], str]:
    plan = plan_of(tmp_path, seed(), nodes=nodes)
    state = ClusterState.from_nodes(plan.nodes, plan.levels or [], plan.bound)
    decisions = [place(w.tree, state) for w in plan.ready if w.tree is not None]
    assert len(decisions) == 1
    d = decisions[0]
    return d.admitted, d.assignments, d.reason


def test_seed_with_room_for_six_runs_both_prefills_and_one_decode(tmp_path: Path) -> None:
    admitted, assignments, _ = _place_seed(tmp_path, slots(6))
    assert admitted
    placed = {p.removeprefix("default/sample-0-").rsplit("-", 1)[0] for p in assignments}
    assert placed == {"prefill-0", "prefill-1", "decode-0"} or placed == {
        "prefill-0", "prefill-1", "decode-1"}
    assert len(assignments) == 6
    assert len(set(assignments.values())) == 6  # one pod per node


def test_seed_with_room_for_five_places_nothing(tmp_path: Path) -> None:
    admitted, assignments, reason = _place_seed(tmp_path, slots(5))
    assert not admitted
    assert assignments == {}
    assert reason.startswith("sample-0: ")
    assert "room for 5 pods" in reason


def test_seed_with_room_for_five_names_the_role(tmp_path: Path) -> None:
    # prefill's two replicas (4 pods) are placed first; decode's replica no longer fits
    _, _, reason = _place_seed(tmp_path, slots(5))
    assert "decode: needs 1 replica of 2 pods x 100m cpu" in reason


def test_model_servings_lists_the_loaded_objects(tmp_path: Path) -> None:
    inputs = load_objects(tmp_path, seed())
    [ms] = model_servings(inputs)
    assert (ms.name, ms.namespace, ms.replicas, ms.scheduler_name) == ("sample", "default", 1,
                                                                      "volcano")
    assert [r.name for r in ms.roles] == ["prefill", "decode"]


# -- networkTopology with nothing to map it onto: a warning, as for a Volcano PodGroup ----


def test_network_topology_without_levels_or_hypernodes_is_a_warning(tmp_path: Path) -> None:
    """The user's side: a ModelServing asking for tiers, placed on nodes that have no
    topology levels and no HyperNodes: placed, with one warning per policy on stderr naming
    the file, the ModelServing and the field (the PodGroup's warning, shared)."""
    def edit(obj: dict[str, Any]) -> None:
        template(obj)["networkTopology"] = {
            "groupPolicy": {"mode": "hard", "highestTierAllowed": 2},
            "rolePolicy": {"mode": "soft", "highestTierAllowed": 1}}

    nodes = [{"apiVersion": "v1", "kind": "Node",
              "metadata": {"name": f"n{i}", "labels": {"kubernetes.io/hostname": f"n{i}"}},
              "status": {"allocatable": {"cpu": "8", "pods": "110"}}} for i in range(2)]
    path = write(tmp_path, [*nodes, seed(edit)])
    result = CliRunner().invoke(app, ["place", str(path)])
    assert result.exit_code == 0, result.output
    lines = [x for x in result.stderr.splitlines() if x.startswith("warning:")]
    field = "spec.template.networkTopology"
    assert [x.split(": ")[1:4] for x in lines] == [
        [f"{path}[doc 2]", "ModelServing/sample", f"{field}.groupPolicy"],
        [f"{path}[doc 2]", "ModelServing/sample", f"{field}.rolePolicy"]]
    assert all("no constraint" in x for x in lines)
