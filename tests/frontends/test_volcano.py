"""Volcano PodGroup and HyperNode: parsing, subgroups, waiting, topology, and placement."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from frontend_helpers import EXAMPLES, example, find, load_objects, outline, plan_of

from gangsched.api.errors import InputError
from gangsched.api.types import Node
from gangsched.cluster.state import ClusterState
from gangsched.frontends import assemble, load
from gangsched.frontends.networktopology import TIER_KEY_PREFIX, tier_key
from gangsched.gang import Constraint, Group, PodSet, validate
from gangsched.model import Workload
from gangsched.placement import place

TIER1, TIER2 = tier_key(1), tier_key(2)
PARTITION = "volcano.sh/partition-id"


def podgroup(name: str = "train", *, min_member: int = 0,
             policies: list[dict[str, Any]] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"minMember": min_member, **spec}
    if policies is not None:
        body["subGroupPolicy"] = policies
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": body}


def workers(size: int | None = 2, min_groups: int = 0, **extra: Any) -> dict[str, Any]:
    policy: dict[str, Any] = {"name": "workers", "minSubGroups": min_groups,
                              "labelSelector": {"matchLabels": {"role": "worker"}},
                              "matchLabelKeys": [PARTITION], **extra}
    if size is not None:
        policy["subGroupSize"] = size
    return policy


def pod(name: str, *, group: str | None = "train", cpu: str = "1", node: str | None = None,
        labels: dict[str, str] | None = None, task: str | None = None) -> dict[str, Any]:
    annotations = {} if group is None else {"scheduling.k8s.io/group-name": group}
    if task is not None:
        annotations["volcano.sh/task-spec"] = task
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if node is not None:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels or {},
                         "annotations": annotations},
            "spec": spec}


def worker(name: str, partition: str, **kw: Any) -> dict[str, Any]:
    return pod(name, labels={"role": "worker", PARTITION: partition}, **kw)


def hypernode(name: str, tier: int, *members: dict[str, Any],
              tier_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier, "members": list(members)}
    if tier_name is not None:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
            "metadata": {"name": name}, "spec": spec}


def member(kind: str, **selector: Any) -> dict[str, Any]:
    return {"type": kind, "selector": selector}


def exact(kind: str, name: str) -> dict[str, Any]:
    return member(kind, exactMatch={"name": name})


def node(name: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
            "status": {"allocatable": {"cpu": "8", "pods": "110"}}}


def only(plan_workloads: list[Workload]) -> Workload:
    assert len(plan_workloads) == 1, [w.name for w in plan_workloads]
    return plan_workloads[0]


def tree_of(workload: Workload) -> Group:
    assert workload.tree is not None, workload.waiting
    assert isinstance(workload.tree, Group)
    validate(workload.tree)
    return workload.tree


# -- parsing -----------------------------------------------------------------------------


INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("min-member-negative", podgroup(min_member=-1), "spec.minMember", ">= 0"),
    ("min-member-string", podgroup(min_member="6"),  # type: ignore[arg-type]
     "spec.minMember", "must be an integer"),
    ("min-task-member-negative", podgroup(minTaskMember={"t": -1}), "spec.minTaskMember.t",
     ">= 0"),
    ("min-resources", podgroup(minResources={"cpu": "x"}), "spec.minResources.cpu",
     "invalid quantity"),
    ("duplicate-policy", podgroup(policies=[workers(), workers()]),
     "spec.subGroupPolicy[1].name", "duplicate subGroupPolicy name 'workers'"),
    ("policy-without-name", podgroup(policies=[{"subGroupSize": 1}]),
     "spec.subGroupPolicy[0].name", "is required"),
    ("sub-group-size-zero", podgroup(policies=[workers(size=0)]),
     "spec.subGroupPolicy[0].subGroupSize", ">= 1"),  # the CRD's minimum
    ("min-member-beyond-int32", podgroup(min_member=2**31),
     "spec.minMember", "32 bits"),
    ("min-resources-hex", podgroup(minResources={"cpu": "0x10"}), "spec.minResources.cpu",
     "invalid quantity '0x10'"),
    ("min-resources-crd-pattern", podgroup(minResources={"cpu": " 1"}),
     "spec.minResources.cpu", "invalid quantity ' 1'"),
    ("unknown-spec-field", podgroup(minMembers=2), "spec.minMembers",
     'unknown field "minMembers" (did you mean "minMember"?)'),
    ("queue-name", podgroup(queue="Big Queue"), "spec.queue", "invalid queue name"),
    ("match-label-key-invalid", podgroup(policies=[workers(matchLabelKeys=["a/b/c"])]),
     "spec.subGroupPolicy[0].matchLabelKeys[0]", "invalid label key"),
    ("match-label-key-empty", podgroup(policies=[workers(matchLabelKeys=[""])]),
     "spec.subGroupPolicy[0].matchLabelKeys[0]", "non-empty"),
    ("selector-operator", podgroup(policies=[workers(labelSelector={"matchExpressions": [
        {"key": "a", "operator": "Gt", "values": ["1"]}]})]),
     "spec.subGroupPolicy[0].labelSelector.matchExpressions[0].operator", "unsupported"),
    ("topology-mode", podgroup(networkTopology={"mode": "strict"}),
     "spec.networkTopology.mode", "must be one of: hard, soft"),
    ("topology-tier-zero", podgroup(networkTopology={"highestTierAllowed": 0}),
     "spec.networkTopology.highestTierAllowed", "positive tier"),
    ("topology-tier-and-name", podgroup(policies=[workers(networkTopology={
        "highestTierAllowed": 1, "highestTierName": "leaf"})]),
     "spec.subGroupPolicy[0].networkTopology", "mutually exclusive"),
]


@pytest.mark.parametrize(("obj", "field", "message"),
                         [pytest.param(o, f, m, id=i) for i, o, f, m in INVALID])
def test_invalid_podgroup_is_a_one_line_error(obj: dict[str, Any], field: str, message: str,
                                              tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_objects(tmp_path, obj)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"{tmp_path / 'in.yaml'}[doc 0]: PodGroup/train: {field}: ")
    assert message in text


def test_duplicate_podgroup_in_one_namespace(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="duplicate PodGroup 'default/train"):
        load_objects(tmp_path, podgroup(), podgroup())


# -- subgroups ---------------------------------------------------------------------------


def test_subgroups_follow_match_label_keys_in_value_order(tmp_path: Path) -> None:
    pods = [worker(f"w{p}-{i}", str(p)) for p in (10, 2, 0) for i in range(2)]
    pods.append(pod("launcher"))  # in no policy: a root PodSet with no minimum
    pods.append(pod("stray", labels={"role": "worker"}))  # no partition label: not a member
    plan = plan_of(tmp_path, podgroup(min_member=7, policies=[workers(min_groups=2)]), *pods)
    tree = tree_of(only(plan.workloads))
    assert outline(tree) == [
        ("default/train", 2, 7, 8),
        ("default/train/workers", 2, 0, 6),
        ("default/train/workers/0", 1, 2, 2),
        ("default/train/workers/0/pods", -1, 2, 2),
        ("default/train/workers/2", 1, 2, 2),
        ("default/train/workers/2/pods", -1, 2, 2),
        ("default/train/workers/10", 1, 2, 2),
        ("default/train/workers/10/pods", -1, 2, 2),
        ("default/train/pods", -1, 0, 2),
    ]
    loose = find(tree, "default/train/pods")
    assert isinstance(loose, PodSet)
    assert loose.pods == ("default/launcher", "default/stray")
    assert plan.workloads[0].kind == "PodGroup"
    assert len(plan.workloads[0].pods) == 8


def test_subgroup_pods_of_different_shapes_are_separate_sets(tmp_path: Path) -> None:
    pods = [worker("a", "0", cpu="1"), worker("b", "0", cpu="2"), worker("c", "0", cpu="1")]
    plan = plan_of(tmp_path, podgroup(min_member=3, policies=[workers(size=3, min_groups=1)]),
                   *pods)
    sub = find(tree_of(only(plan.workloads)), "default/train/workers/0")
    assert isinstance(sub, Group)
    assert [(c.name, c.pods, c.min_pods) for c in sub.children if isinstance(c, PodSet)] == [
        ("pods-0", ("default/a", "default/c"), 2), ("pods-1", ("default/b",), 1)]


def test_subgroup_larger_than_its_size_puts_the_minimum_on_the_group(tmp_path: Path) -> None:
    pods = [worker(f"w{i}", "0") for i in range(3)]
    plan = plan_of(tmp_path, podgroup(policies=[workers(size=2, min_groups=1)]), *pods)
    sub = find(tree_of(only(plan.workloads)), "default/train/workers/0")
    assert isinstance(sub, Group)
    assert (sub.min_pods, [c.min_pods for c in sub.children]) == (2, [0])


def test_policy_without_match_label_keys_takes_no_pod(tmp_path: Path) -> None:
    # Volcano's getOrCreateSubJob uses a policy only when getSubJobMatchValues returns
    # values, and it returns none without matchLabelKeys: the pods stay the job's, the
    # policy's size and topology do not apply
    policy = workers(min_groups=0, networkTopology={"mode": "hard", "highestTierAllowed": 1})
    del policy["matchLabelKeys"]
    plan = plan_of(tmp_path, podgroup(policies=[policy]), worker("a", "0"), worker("b", "1"))
    tree = tree_of(only(plan.workloads))
    assert [c.path for c in tree.children] == ["default/train/pods"]
    assert tree.children[0].size == 2 and tree.topology == ()
    assert [w for w in plan.warnings if "no matchLabelKeys" in w and "stay the job's" in w]


def test_policy_without_match_label_keys_never_meets_min_sub_groups(tmp_path: Path) -> None:
    policy = workers(min_groups=1)
    del policy["matchLabelKeys"]
    plan = plan_of(tmp_path, podgroup(policies=[policy]), worker("a", "0"), worker("b", "0"))
    [workload] = plan.workloads
    assert workload.tree is None
    assert "subGroupPolicy workers has 0 complete subgroups" in workload.waiting
    assert [w for w in plan.warnings if "minSubGroups 1 is never met" in w]


def test_min_task_member_becomes_a_task_group(tmp_path: Path) -> None:
    pods = [pod(f"ps-{i}", task="ps") for i in range(3)]
    plan = plan_of(tmp_path, podgroup(min_member=2, minTaskMember={"ps": 2}), *pods)
    tree = tree_of(only(plan.workloads))
    assert outline(tree) == [("default/train", 1, 2, 3), ("default/train/ps", 1, 2, 3),
                             ("default/train/ps/pods", -1, 0, 3)]


def test_min_task_member_above_min_member_is_not_enforced(tmp_path: Path) -> None:
    """Volcano skips the task checks when minMember is below the tasks' total minimum
    (JobInfo.CheckTaskValid): the elastic vcjob whose tasks default to all replicas."""
    pods = [pod(f"ps-{i}", task="ps") for i in range(3)]
    plan = plan_of(tmp_path, podgroup(min_member=2, minTaskMember={"ps": 3}), *pods)
    tree = tree_of(only(plan.workloads))
    assert outline(tree) == [("default/train", 1, 2, 3), ("default/train/pods", -1, 0, 3)]


# -- waiting -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("objects", "waiting"),
    [
        pytest.param([podgroup(min_member=6), pod("a"), pod("b"), pod("c")],
                     "waiting for pods: has 3 of minMember 6", id="too-few-pods"),
        pytest.param([podgroup(min_member=2, policies=[workers(min_groups=2)]),
                      worker("a", "0"), worker("b", "0"), worker("c", "1")],
                     "waiting for pods: subGroupPolicy workers has 1 complete subgroups "
                     "(of 2 pods) of minSubGroups 2", id="too-few-complete-subgroups"),
        pytest.param([podgroup(min_member=3, policies=[workers()]),
                      worker("a", "0"), worker("b", "0"), worker("c", "1")],
                     "waiting for pods: only 2 of minMember 3 pods are outside incomplete "
                     "subgroups", id="pods-in-incomplete-subgroups"),
        pytest.param([podgroup(min_member=2, minTaskMember={"ps": 2}), pod("a", task="ps"),
                      pod("b")],
                     "waiting for pods: task ps has 1 of minTaskMember 2", id="task"),
    ],
)
def test_too_few_pods_is_waiting_not_an_error(objects: list[dict[str, Any]], waiting: str,
                                              tmp_path: Path) -> None:
    plan = plan_of(tmp_path, *objects)
    workload = only(plan.workloads)
    assert (workload.tree, workload.waiting) == (None, waiting)
    assert plan.ready == []


def test_pods_of_a_missing_podgroup_wait_for_it(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, pod("a", group="nope"), pod("b", group=None))
    kinds = sorted((w.kind, w.name, w.waiting) for w in plan.workloads)
    assert kinds == [("Pod", "default/b", ""),
                     ("PodGroup", "default/nope", "waiting for PodGroup default/nope: not found")]


def test_pods_join_only_the_podgroup_of_their_namespace(tmp_path: Path) -> None:
    other = pod("x")
    other["metadata"]["namespace"] = "other"
    plan = plan_of(tmp_path, podgroup(min_member=1), pod("a"), other)
    by_name = {w.name: w for w in plan.workloads}
    assert sorted(by_name) == ["default/train", "other/train"]
    assert by_name["other/train"].waiting == "waiting for PodGroup other/train: not found"


# -- bound pods --------------------------------------------------------------------------


def test_bound_pods_count_toward_minimums_but_stay_out_of_the_tree(tmp_path: Path) -> None:
    nodes = [node("n0"), node("n1")]
    pods = [worker("a", "0", node="n0"), worker("b", "0", node="n1"),  # subgroup 0 runs
            worker("c", "1", node="n0"), worker("d", "1"),  # subgroup 1 half runs
            worker("e", "2"), worker("f", "2"), pod("g", node="n1")]
    plan = plan_of(tmp_path, podgroup(min_member=6, policies=[workers(min_groups=2)]),
                   *pods, *nodes)
    tree = tree_of(only(plan.workloads))
    assert outline(tree) == [
        ("default/train", 1, 2, 3),  # minMember 6 - 4 bound
        ("default/train/workers", 1, 0, 3),  # minSubGroups 2 - 1 already running
        ("default/train/workers/1", 1, 1, 1),  # subGroupSize 2 - 1 bound
        ("default/train/workers/1/pods", -1, 1, 1),
        ("default/train/workers/2", 1, 2, 2),
        ("default/train/workers/2/pods", -1, 2, 2),
    ]
    assert sorted(only(plan.workloads).pods) == ["default/d", "default/e", "default/f"]
    assert len(plan.bound) == 4


# -- HyperNodes --------------------------------------------------------------------------


def test_hypernodes_define_levels_and_node_labels() -> None:
    plan = assemble(load([EXAMPLES / "volcano-hypernodes.yaml"]))
    assert plan.levels == [TIER2, TIER1]
    labels = {n.name: (n.labels.get(TIER2), n.labels.get(TIER1)) for n in plan.nodes}
    assert labels == {f"node-{i}": (f"spine-{i // 4}", f"leaf-{i // 2}") for i in range(8)}


def test_node_outside_wider_hypernodes_keeps_its_narrow_one_as_its_domain(
    tmp_path: Path,
) -> None:
    plan = plan_of(tmp_path,
                   hypernode("leaf-a", 1, exact("Node", "n0")),
                   hypernode("leaf-b", 1, exact("Node", "n1")),
                   hypernode("spine", 2, exact("HyperNode", "leaf-a")),
                   node("n0"), node("n1"), node("n2"))
    labels = {n.name: (n.labels.get(TIER2), n.labels.get(TIER1)) for n in plan.nodes}
    assert labels == {"n0": ("spine", "leaf-a"), "n1": ("leaf-b", "leaf-b"),
                      "n2": (None, None)}


def test_a_chain_of_hypernodes_deeper_than_the_recursion_limit_is_read(
    tmp_path: Path,
) -> None:
    """Volcano puts no bound on the tiers: 1,500 HyperNodes, each the only member of the
    next, are one node's domains at every tier (the walks were recursive)."""
    depth = 1_500
    chain = [hypernode(f"hn{t}", t, exact("HyperNode", f"hn{t - 1}")) for t in range(2, depth + 1)]
    plan = plan_of(tmp_path, hypernode("hn1", 1, exact("Node", "n0")), *chain, node("n0"))
    [n0] = plan.nodes
    assert len(plan.levels) == depth
    assert (n0.labels[tier_key(1)], n0.labels[tier_key(depth)]) == ("hn1", f"hn{depth}")


def test_an_empty_label_match_selects_no_node_as_in_volcano(tmp_path: Path) -> None:
    """Volcano's member selector returns no node for a labelMatch with neither
    matchLabels nor matchExpressions: it took every node, one switch over the cluster."""
    plan = plan_of(tmp_path,
                   hypernode("empty", 1, member("Node", labelMatch={})),
                   hypernode("racked", 1, member("Node", labelMatch={
                       "matchLabels": {"rack": "a"}})),
                   node("n0", rack="a"), node("n1", rack="b"))
    labels = {n.name: n.labels.get(TIER1) for n in plan.nodes}
    assert labels == {"n0": "racked", "n1": None}


def test_network_topology_becomes_constraints_on_tier_keys(tmp_path: Path) -> None:
    topology = example("volcano-hypernodes.yaml")
    group = podgroup(min_member=2, networkTopology={"highestTierName": "spine"},
                     policies=[workers(networkTopology={"mode": "soft",
                                                        "highestTierAllowed": 1})])
    plan = plan_of(tmp_path, *topology, group, worker("a", "0"), worker("b", "0"))
    tree = tree_of(only(plan.workloads))
    assert tree.topology == (Constraint(TIER2, "required"),)
    sub = find(tree, "default/train/workers/0")
    assert sub.topology == (Constraint(TIER1, "preferred"),)


def test_tier_without_hypernodes_counts_from_the_narrowest_level(tmp_path: Path) -> None:
    inputs = load_objects(tmp_path, podgroup(networkTopology={"highestTierAllowed": 2},
                                             policies=[workers(networkTopology={
                                                 "highestTierAllowed": 1})]),
                          worker("a", "0"), worker("b", "0"))
    inputs.topology_levels = ["zone", "block", "rack", "kubernetes.io/hostname"]
    tree = tree_of(only(assemble(inputs).workloads))
    assert tree.topology == (Constraint("block", "required"),)
    assert find(tree, "default/train/workers/0").topology == (Constraint("rack", "required"),)


def test_a_tier_beyond_the_widest_level_without_hypernodes_is_the_whole_cluster(
        tmp_path: Path) -> None:
    """Tiers count up from the narrowest level: with zone and rack, tier 3 is past the
    widest level, so the job may use the whole cluster (it was held inside one zone)."""
    inputs = load_objects(tmp_path, podgroup(networkTopology={"highestTierAllowed": 3},
                                             policies=[workers(networkTopology={
                                                 "highestTierAllowed": 2})]),
                          worker("a", "0"), worker("b", "0"))
    inputs.topology_levels = ["zone", "rack", "kubernetes.io/hostname"]
    tree = tree_of(only(assemble(inputs).workloads))
    assert tree.topology == ()
    assert find(tree, "default/train/workers/0").topology == (Constraint("zone", "required"),)


def test_child_constraint_wider_than_its_parent_is_implied(tmp_path: Path) -> None:
    group = podgroup(networkTopology={"highestTierAllowed": 1},
                     policies=[workers(networkTopology={"highestTierAllowed": 2})])
    plan = plan_of(tmp_path, *example("volcano-hypernodes.yaml"), group,
                   worker("a", "0"), worker("b", "0"))
    tree = tree_of(only(plan.workloads))
    assert tree.topology == (Constraint(TIER1, "required"),)
    assert find(tree, "default/train/workers/0").topology == ()
    validate(tree, plan.levels or [])


def _nodes(*names: str) -> list[dict[str, Any]]:
    return [node(n) for n in names]


HYPERNODE_ERRORS: list[tuple[str, Callable[[], list[dict[str, Any]]], str, str]] = [
    ("missing-member", lambda: [hypernode("spine", 2, exact("HyperNode", "leaf-9"))],
     "HyperNode/spine: spec.members[0].selector.exactMatch.name",
     "member HyperNode 'leaf-9' not found"),
    ("cycle", lambda: [hypernode("a", 1, exact("HyperNode", "b")),
                       hypernode("b", 2, exact("HyperNode", "a"))],
     "spec.members", "HyperNode members form a cycle: "),
    ("node-twice-in-a-tier", lambda: [hypernode("l1", 1, exact("Node", "n0")),
                                      hypernode("l2", 1, member("Node", regexMatch={
                                          "pattern": "^n"})), *_nodes("n0")],
     "HyperNode/l2: spec.members", "node 'n0' is in HyperNodes 'l1' and 'l2', both of tier 1"),
    ("member-tier-not-lower", lambda: [hypernode("a", 2, exact("Node", "n0")),
                                       hypernode("b", 2, exact("HyperNode", "a"))],
     "HyperNode/b: spec.members", "has tier 2, not lower than this HyperNode's tier 2"),
    ("not-nested", lambda: [hypernode("l1", 1, exact("Node", "n0"), exact("Node", "n1")),
                            hypernode("s1", 2, exact("Node", "n0")),
                            hypernode("s2", 2, exact("Node", "n1")), *_nodes("n0", "n1")],
     "HyperNode/l1: spec.members", "is not inside one HyperNode of tier <= 2"),
    ("tier-name-two-tiers", lambda: [hypernode("a", 1, exact("Node", "n0"), tier_name="x"),
                                     hypernode("b", 2, exact("Node", "n1"), tier_name="x")],
     "HyperNode/b: spec.tierName", "tierName 'x' is used by tier 1 and tier 2"),
]


@pytest.mark.parametrize(("objects", "where", "message"),
                         [pytest.param(o, w, m, id=i) for i, o, w, m in HYPERNODE_ERRORS])
def test_inconsistent_hypernodes_are_errors(objects: Callable[[], list[dict[str, Any]]],
                                            where: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        plan_of(tmp_path, *objects())
    text = str(info.value)
    assert "\n" not in text
    assert where in text
    assert message in text
    assert f"{tmp_path / 'in.yaml'}[doc " in text


HYPERNODE_INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    ("tier-negative", hypernode("h", -1, exact("Node", "n")), "spec.tier",
     "must be at least 0, not -1"),
    ("tier-string", hypernode("h", "1", exact("Node", "n")),  # type: ignore[arg-type]
     "spec.tier", "must be an integer"),
    ("tier-missing", {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
                      "metadata": {"name": "h"}, "spec": {"members": [exact("Node", "n")]}},
     "spec.tier", "is required"),
    ("no-members", hypernode("h", 1), "spec.members", "at least one member"),
    ("two-selectors", hypernode("h", 1, member("Node", exactMatch={"name": "n"},
                                               regexMatch={"pattern": "n"})),
     "spec.members[0].selector", "takes only one of"),
    ("no-selector", hypernode("h", 1, member("Node")), "spec.members[0].selector",
     "needs one of"),
    ("bad-type", hypernode("h", 1, member("Rack", exactMatch={"name": "n"})),
     "spec.members[0].type", "must be one of: Node, HyperNode"),
    ("bad-regex", hypernode("h", 1, member("Node", regexMatch={"pattern": "("})),
     "spec.members[0].selector.regexMatch.pattern", "invalid regular expression"),
    ("label-match-hypernode", hypernode("h", 2, member("HyperNode", labelMatch={})),
     "spec.members[0].selector.labelMatch", "only selects members of type Node"),
]


@pytest.mark.parametrize(("obj", "field", "message"),
                         [pytest.param(o, f, m, id=i) for i, o, f, m in HYPERNODE_INVALID])
def test_invalid_hypernode_is_a_one_line_error(obj: dict[str, Any], field: str, message: str,
                                               tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_objects(tmp_path, obj)
    text = str(info.value)
    assert text.startswith(f"{tmp_path / 'in.yaml'}[doc 0]: HyperNode/h: {field}: ")
    assert message in text


def test_unknown_tier_name_is_a_warning_and_no_constraint(tmp_path: Path) -> None:
    """Volcano's scheduler does not fail on it: translateHighestTierNameToAllowed
    (volcano-sh/volcano ed72c7c, pkg/scheduler/framework/session.go) logs "failed to find
    hypernode tier name" and skips the translation, so highestTierAllowed stays nil and the
    job has no tier limit."""
    group = podgroup(min_member=2, networkTopology={"highestTierName": "core"},
                     policies=[workers(networkTopology={"highestTierName": "rack"})])
    plan = plan_of(tmp_path, *example("volcano-hypernodes.yaml"), group,
                   worker("a", "0"), worker("b", "0"))
    tree = tree_of(only(plan.workloads))
    assert tree.topology == ()
    assert find(tree, "default/train/workers/0").topology == ()
    notes = [w for w in plan.warnings if "unknown tier name" in w]
    assert len(notes) == 2
    assert "PodGroup/train: spec.networkTopology.highestTierName: unknown tier name 'core'" in (
        notes[0])
    assert "spec.subGroupPolicy[0].networkTopology.highestTierName" in notes[1]


def test_hard_mode_without_a_tier_imposes_no_limit(tmp_path: Path) -> None:
    """JobInfo.IsHardTopologyMode (volcano-sh/volcano ed72c7c, pkg/scheduler/api/
    job_info.go) and SubJobInfo.IsHardTopologyMode return false when highestTierAllowed is
    nil, and the PodGroup CRD gives it no default: "hard" alone constrains nothing."""
    group = podgroup(min_member=2, networkTopology={"mode": "hard"},
                     policies=[workers(networkTopology={"mode": "hard"})])
    plan = plan_of(tmp_path, *example("volcano-hypernodes.yaml"), group,
                   worker("a", "0"), worker("b", "0"))
    tree = tree_of(only(plan.workloads))
    assert tree.topology == ()
    assert find(tree, "default/train/workers/0").topology == ()
    soft = podgroup(min_member=2, networkTopology={"mode": "soft"})
    plan = plan_of(tmp_path, *example("volcano-hypernodes.yaml"), soft,
                   worker("a", "0"), worker("b", "0"))
    assert tree_of(only(plan.workloads)).topology == (Constraint(TIER1, "preferred"),)


@pytest.mark.parametrize(("pattern", "why"), [
    ("(a)\\1", "invalid escape sequence"),  # a backreference: not in Go's regexp
    ("(?=n)", "invalid perl operator"),  # lookahead
    ("a{1001}", "invalid repetition size"),  # Go's limit is 1000 as well
])
def test_regex_match_rejects_what_go_regexp_rejects(pattern: str, why: str,
                                                     tmp_path: Path) -> None:
    obj = hypernode("h", 1, member("Node", regexMatch={"pattern": pattern}))
    with pytest.raises(InputError) as info:
        load_objects(tmp_path, obj)
    text = str(info.value)
    assert "HyperNode/h: spec.members[0].selector.regexMatch.pattern: invalid regular " \
        "expression" in text
    assert why in text


def test_regex_match_is_linear_time(tmp_path: Path) -> None:
    """(a+)+$ backtracks exponentially in Python's re; RE2, like Go, matches in linear
    time, so a hostile pattern cannot stall the CLI or serve."""
    name = "a" * 60 + "b"
    objects = [hypernode("h", 1, member("Node", regexMatch={"pattern": "^(a+)+$"})),
               hypernode("g", 1, member("Node", regexMatch={"pattern": "b$"})), node(name)]
    plan = plan_of(tmp_path, *objects)
    assert plan.nodes[0].labels[TIER1] == "g"


# -- placement ---------------------------------------------------------------------------


def test_example_partitions_each_land_under_one_leaf_of_one_spine() -> None:
    plan = assemble(load([EXAMPLES / "volcano-hypernodes.yaml",
                          EXAMPLES / "volcano-podgroup.yaml"]))
    [workload] = plan.ready
    assert workload.tree is not None
    state = ClusterState.from_nodes(plan.nodes, plan.levels, plan.bound)
    decision = place(workload.tree, state)
    assert decision.admitted, decision.reason
    assert len(decision.assignments) == 5
    labels = {n.name: n.labels for n in plan.nodes}
    spines = {labels[n][TIER2] for n in decision.assignments.values()}
    assert len(spines) == 1
    for partition in ("0", "1"):
        leaves = {labels[n][TIER1] for p, n in decision.assignments.items()
                  if p in (f"default/train-worker-{2 * int(partition)}",
                           f"default/train-worker-{2 * int(partition) + 1}")}
        assert len(leaves) == 1


def test_partition_that_fits_no_leaf_blocks_the_whole_group(tmp_path: Path) -> None:
    # two leaves of one 8-cpu node each: a 2-pod partition of 8-cpu pods fits no leaf
    objects = [hypernode("leaf-a", 1, exact("Node", "n0")),
               hypernode("leaf-b", 1, exact("Node", "n1")),
               node("n0"), node("n1"),
               podgroup(min_member=2, policies=[workers(min_groups=1, networkTopology={
                   "highestTierAllowed": 1})]),
               worker("a", "0", cpu="8"), worker("b", "0", cpu="8")]
    plan = plan_of(tmp_path, *objects)
    [workload] = plan.ready
    assert workload.tree is not None
    decision = place(workload.tree, ClusterState.from_nodes(plan.nodes, plan.levels, plan.bound))
    assert not decision.admitted
    assert decision.assignments == {}


def test_assemble_claims_member_pods(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, podgroup(min_member=1), pod("a"), pod("loose", group=None))
    assert sorted((w.kind, w.name) for w in plan.workloads) == [
        ("Pod", "default/loose"), ("PodGroup", "default/train")]


def test_unbound_nodes_have_no_labels_when_no_hypernodes(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, node("n0"))
    assert plan.levels is None
    assert plan.nodes == [Node("n0", {"kubernetes.io/hostname": "n0"},
                               allocatable={"cpu": 8000, "pods": 110})]


def test_a_hypernode_of_tier_zero_is_read_as_the_crd_allows(tmp_path: Path) -> None:
    # the CRD's minimum is 0: a tier-0 HyperNode is one more (the lowest) tier
    plan = plan_of(tmp_path, node("n"), hypernode("h0", 0, exact("Node", "n")),
                   hypernode("h1", 1, exact("HyperNode", "h0")))
    assert plan.levels is not None
    assert [k for k in plan.levels if k.startswith(TIER_KEY_PREFIX)] == [
        f"{TIER_KEY_PREFIX}1", f"{TIER_KEY_PREFIX}0"]
    assert {k: v for k, v in plan.nodes[0].labels.items() if k.startswith(TIER_KEY_PREFIX)} \
        == {f"{TIER_KEY_PREFIX}0": "h0", f"{TIER_KEY_PREFIX}1": "h1"}


def test_min_resources_volcano_would_not_enqueue_are_a_warning(tmp_path: Path) -> None:
    # two ready nodes of 8 cpu, 3 cpu used: Volcano's overcommit plugin sees 2 x 8 x 1.2
    # - 3 = 16.2 cpu idle, so minResources of 17 cpu keep the job Pending there
    objects = [node("n0"), node("n1"), pod("busy", group=None, cpu="3", node="n0"),
               pod("p0"), pod("p1")]
    def warned(**status: Any) -> list[str]:
        pg = podgroup(min_member=2, minResources={"cpu": "17"})
        if status:
            pg["status"] = status
        plan = plan_of(tmp_path, pg, *objects)
        return [w for w in plan.warnings if "overused" in w]
    [text] = warned()
    assert "PodGroup/train: resource in cluster is overused: cpu (minResources 17, idle " \
           "16200m)" in text
    assert warned(phase="Inqueue") == []  # already through the enqueue action
    pg = podgroup(min_member=2, minResources={"cpu": "16"})
    assert not [w for w in plan_of(tmp_path, pg, *objects).warnings if "overused" in w]
