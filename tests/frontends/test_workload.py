"""Workload API front-end: parsing, validation, waiting, gang trees and placement."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from gangsched.api.errors import InputError
from gangsched.cluster.generate import generate_yaml
from gangsched.cluster.state import ClusterState
from gangsched.frontends import assemble, load
from gangsched.frontends.workload_types import GroupObject, Policy, WorkloadObject
from gangsched.gang import Group, PodSet, scheduling_units, validate
from gangsched.model import Plan, Workload
from gangsched.placement.engine import place
from gangsched.testing.builders import GPU, RACK, ZONE, levels_of, nodes, take

V3 = "scheduling.k8s.io/v1alpha3"
BETA = "scheduling.k8s.io/v1beta1"
NS = "ml"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

Obj = dict[str, Any]

# -- object builders -------------------------------------------------------------------


def gang(n: int) -> Obj:
    return {"gang": {"minCount": n}}


def cgang(n: int) -> Obj:
    return {"gang": {"minGroupCount": n}}


BASIC: Obj = {"basic": {}}
ALL: Obj = {"all": {}}
SINGLE: Obj = {"single": {}}


def topo(key: str) -> Obj:
    return {"topology": [{"key": key}]}


def template(name: str, policy: Obj | None = None, **fields: Any) -> Obj:
    """A template; ``podGroupTemplates`` / ``compositePodGroupTemplates`` as fields."""
    out: Obj = {"name": name, **fields}
    if policy is not None:
        out["schedulingPolicy"] = policy
    return out


def workload(name: str = "w", *, flat: Sequence[Obj] = (), nested: Sequence[Obj] = (),
             version: str = V3) -> Obj:
    spec: Obj = {}
    if flat:
        spec["podGroupTemplates"] = list(flat)
    if nested:
        spec["compositePodGroupTemplates"] = list(nested)
    return {"apiVersion": version, "kind": "Workload",
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def group(kind: str, name: str, policy: Obj | None = None, *, ref: tuple[str, str] | None = None,
          parent: str | None = None, version: str = V3, **fields: Any) -> Obj:
    spec: Obj = dict(fields)
    if policy is not None:
        spec["schedulingPolicy"] = policy
    if ref is not None:
        spec["workloadRef"] = {"workloadName": ref[0], "templateName": ref[1]}
    if parent is not None:
        spec["parentCompositePodGroupName"] = parent
    return {"apiVersion": version, "kind": kind,
            "metadata": {"name": name, "namespace": NS}, "spec": spec}


def pg(name: str, policy: Obj | None = None, **kw: Any) -> Obj:
    return group("PodGroup", name, policy, **kw)


def cpg(name: str, policy: Obj | None = None, **kw: Any) -> Obj:
    return group("CompositePodGroup", name, policy, **kw)


def pods(podgroup: str, n: int, *, gpu: int = 0, cpu: str = "1", node: str | None = None,
         start: int = 0, priority: int | None = None) -> list[Obj]:
    requests: Obj = {"cpu": cpu}
    if gpu:
        requests[GPU] = str(gpu)
    out = []
    for i in range(start, start + n):
        spec: Obj = {
            "schedulingGroup": {"podGroupName": podgroup},
            "containers": [{"name": "c", "resources": {"requests": requests}}],
        }
        if node:
            spec["nodeName"] = node
        if priority is not None:  # as admission sets it: with the class it came from
            spec["priority"] = priority
            spec["priorityClassName"] = f"p{priority}"
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": f"{podgroup}-{i}", "namespace": NS}, "spec": spec})
    return out


Write = Callable[..., Path]


@pytest.fixture
def write(tmp_path: Path) -> Write:
    def write(*objects: Obj | list[Obj], name: str = "in.yaml") -> Path:
        flat: list[Obj] = []
        for o in objects:
            flat.extend(o if isinstance(o, list) else [o])
        path = tmp_path / name
        path.write_text(yaml.safe_dump_all(flat, sort_keys=False))
        return path

    return write


def plan_of(path: Path, *more: Path) -> Plan:
    return assemble(load([path, *more]))


def the(plan: Plan, name: str) -> Workload:
    return next(w for w in plan.workloads if w.name == f"{NS}/{name}")


def child(node: Group, name: str) -> Group:
    found = next(c for c in node.children if c.name == name)
    assert isinstance(found, Group)
    return found


# A disaggregated-serving hierarchy used by several tests: a gang of prefill + decode.
def serving(prefill: int = 2, decode: int = 2, *, root_topology: str = ZONE,
            gpu: int = 8) -> list[Obj]:
    tmpl = template(
        "serving", cgang(2), schedulingConstraints=topo(root_topology), disruptionMode=ALL,
        podGroupTemplates=[
            template("prefill", gang(prefill), schedulingConstraints=topo(RACK),
                     disruptionMode=ALL),
            template("decode", gang(decode), schedulingConstraints=topo(RACK),
                     disruptionMode=ALL),
        ],
    )
    return [
        workload(nested=[tmpl]),
        cpg("srv", cgang(2), ref=("w", "serving")),
        pg("srv-prefill", gang(prefill), ref=("w", "prefill"), parent="srv"),
        pg("srv-decode", gang(decode), ref=("w", "decode"), parent="srv"),
        *pods("srv-prefill", prefill, gpu=gpu),
        *pods("srv-decode", decode, gpu=gpu),
    ]


# -- parsing -----------------------------------------------------------------------------


def test_flat_workload_and_podgroup_v1beta1(write: Write) -> None:
    path = write(
        workload(flat=[template("workers", gang(3), schedulingConstraints=topo(RACK))],
                 version=BETA),
        pg("train", gang(3), ref=("w", "workers"), version=BETA,
           schedulingConstraints=topo(RACK)),
        pods("train", 3, gpu=8),
    )
    inputs = load([path])
    [wl] = inputs.objects["Workload"]
    assert isinstance(wl, WorkloadObject)
    assert (wl.namespace, wl.name, [t.name for t in wl.templates]) == (NS, "w", ["workers"])
    assert wl.templates[0].settings.policy == Policy("gang", 3)
    [obj] = inputs.objects["PodGroup"]
    assert isinstance(obj, GroupObject)
    assert obj.workload_ref is not None and obj.workload_ref.template_name == "workers"

    plan = assemble(inputs)
    w = the(plan, "train")
    assert (w.kind, w.waiting, sorted(w.pods)) == (
        "PodGroup", "", [f"{NS}/train-0", f"{NS}/train-1", f"{NS}/train-2"])
    tree = w.tree
    assert isinstance(tree, Group)
    assert (tree.kind, tree.source, tree.min_pods, tree.topology[0].key) == (
        "PodGroup", f"{NS}/train", 3, RACK)
    [podset] = tree.children
    assert isinstance(podset, PodSet)
    assert (podset.min_pods, podset.requests[GPU], podset.size) == (3, 8, 3)
    assert all(wl.kind != "Pod" for wl in plan.workloads)  # every pod is claimed


def test_composite_hierarchy_builds_one_tree(write: Write) -> None:
    plan = plan_of(write(serving()))
    [w] = plan.workloads
    assert (w.name, w.kind, len(w.pods)) == (f"{NS}/srv", "CompositePodGroup", 4)
    root = w.tree
    assert isinstance(root, Group)
    assert (root.kind, root.min_groups, root.topology[0].key) == ("CompositePodGroup", 2, ZONE)
    assert [c.name for c in root.children] == ["srv-decode", "srv-prefill"]  # by name
    decode = child(root, "srv-decode")
    assert (decode.path, decode.min_pods, decode.topology[0].key) == (
        f"{NS}/srv/srv-decode", 2, RACK)
    assert scheduling_units(root) == [root]
    validate(root, [ZONE, RACK])


def test_nested_composites_three_levels(write: Write) -> None:
    leaf = template("worker", gang(1))
    replica = template("replica", cgang(1), podGroupTemplates=[leaf])
    root = template("job", cgang(2), compositePodGroupTemplates=[replica])
    path = write(
        workload(nested=[root]),
        cpg("job", cgang(2), ref=("w", "job")),
        cpg("rep-0", cgang(1), ref=("w", "replica"), parent="job"),
        cpg("rep-1", cgang(1), ref=("w", "replica"), parent="job"),
        pg("rep-0-w", gang(1), ref=("w", "worker"), parent="rep-0"),
        pg("rep-1-w", gang(1), ref=("w", "worker"), parent="rep-1"),
        pods("rep-0-w", 1), pods("rep-1-w", 1),
    )
    tree = the(plan_of(path), "job").tree
    assert isinstance(tree, Group)
    assert [c.path for c in tree.children] == [f"{NS}/job/rep-0", f"{NS}/job/rep-1"]
    assert child(child(tree, "rep-1"), "rep-1-w").min_pods == 1


def test_legacy_pod_group_template_ref_is_accepted(write: Write) -> None:
    legacy = pg("a", gang(1), version=BETA)
    legacy["spec"]["podGroupTemplateRef"] = {
        "workload": {"workloadName": "w", "podGroupTemplateName": "t"}}
    path = write(workload(flat=[template("t", gang(1))], version=BETA), legacy, pods("a", 1))
    [obj] = load([path]).objects["PodGroup"]
    assert isinstance(obj, GroupObject) and obj.workload_ref is not None
    assert obj.workload_ref.field == "spec.podGroupTemplateRef.workload"


def test_unset_fields_come_from_the_template_own_fields_win(write: Write) -> None:
    tmpl = template("t", gang(3), schedulingConstraints=topo(RACK), disruptionMode=ALL,
                    priority=7)
    path = write(
        workload(flat=[tmpl]),
        pg("inherits", gang(3), ref=("w", "t")),
        pg("overrides", gang(2), ref=("w", "t"), schedulingConstraints={"topology": []}),
        pods("inherits", 3), pods("overrides", 2),
    )
    plan = plan_of(path)
    inherits, overrides = the(plan, "inherits"), the(plan, "overrides")
    assert isinstance(inherits.tree, Group) and isinstance(overrides.tree, Group)
    assert (inherits.tree.min_pods, inherits.tree.topology[0].key) == (3, RACK)
    assert (inherits.tree.disruption, inherits.priority) == ("all", 7)
    assert (overrides.tree.min_pods, overrides.tree.topology) == (2, ())


def test_pods_split_into_podsets_by_shape(write: Write) -> None:
    path = write(pg("mixed", gang(3)), pods("mixed", 2, gpu=8), pods("mixed", 1, start=2))
    tree = the(plan_of(path), "mixed").tree
    assert isinstance(tree, Group)
    assert tree.min_pods == 3
    assert [(c.name, c.size, c.min_pods) for c in tree.children] == [
        ("pods-0", 2, 0), ("pods-1", 1, 0)]


def test_basic_pod_group_has_no_minimum_but_counts_inside_a_gang(write: Write) -> None:
    path = write(
        workload(nested=[template("root", cgang(2), podGroupTemplates=[
            template("loader", BASIC), template("trainer", gang(2))])]),
        cpg("job", cgang(2), ref=("w", "root")),
        pg("job-loader", BASIC, ref=("w", "loader"), parent="job"),
        pg("job-trainer", gang(2), ref=("w", "trainer"), parent="job"),
        pg("alone", BASIC),
        pods("job-loader", 3), pods("job-trainer", 2), pods("alone", 2),
    )
    plan = plan_of(path)
    alone = the(plan, "alone").tree
    assert isinstance(alone, Group) and alone.min_pods == 0
    assert len(scheduling_units(alone)) == 1  # the basic PodSet: pods placed one by one
    job = the(plan, "job").tree
    assert isinstance(job, Group)
    assert child(job, "job-loader").min_pods == 1


def test_disruption_mode_reaches_the_tree(write: Write) -> None:
    path = write(serving(), pg("plain", gang(1)), pods("plain", 1))
    plan = plan_of(path)
    root = the(plan, "srv").tree
    assert isinstance(root, Group)
    assert [root.disruption, *(c.disruption for c in root.children if isinstance(c, Group))] \
        == ["all", "all", "all"]
    plain = the(plan, "plain").tree
    assert isinstance(plain, Group) and plain.disruption == "single"


def test_priority_class_value_is_the_group_priority(write: Write) -> None:
    path = write(
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
         "metadata": {"name": "high"}, "value": 900},
        pg("classy", gang(1), priorityClassName="high"), pods("classy", 1),
        pg("system", gang(1), priorityClassName="system-cluster-critical"), pods("system", 1),
    )
    plan = plan_of(path)
    assert the(plan, "classy").priority == 900
    assert the(plan, "system").priority == 2_000_000_000


def test_priority_from_the_groups_else_from_the_pods(write: Write) -> None:
    path = write(
        pg("explicit", gang(1), priority=100), pods("explicit", 1, priority=5),
        pg("from-pods", gang(1)), pods("from-pods", 1, priority=42),
    )
    plan = plan_of(path)
    assert the(plan, "explicit").priority == 100
    explicit_tree = the(plan, "explicit").tree
    assert isinstance(explicit_tree, Group) and explicit_tree.priority == 100
    assert the(plan, "from-pods").priority == 42


def test_bound_pods_count_towards_the_minimum_and_are_not_placed(write: Write) -> None:
    path = write(
        pg("half", gang(4)), pods("half", 2, node="n1"), pods("half", 2, start=2),
        pg("all-bound", gang(2)), pods("all-bound", 2, node="n1"),
    )
    plan = plan_of(path)
    half = the(plan, "half")
    assert isinstance(half.tree, Group)
    assert (half.tree.min_pods, sorted(half.pods)) == (2, [f"{NS}/half-2", f"{NS}/half-3"])
    assert all(w.name != f"{NS}/all-bound" for w in plan.workloads)
    assert len(plan.bound) == 4


# -- waiting -----------------------------------------------------------------------------


def test_too_few_pods_waits(write: Write) -> None:
    plan = plan_of(write(pg("small", gang(4)), pods("small", 2)))
    [w] = plan.workloads
    assert (w.tree, w.waiting) == (None, "waiting for pods: 2 of minCount 4")
    assert sorted(w.pods) == [f"{NS}/small-0", f"{NS}/small-1"]  # claimed, not loose pods
    assert plan.ready == []


def test_missing_parent_waits(write: Write) -> None:
    path = write(pg("orphan", gang(1), ref=("w", "t"), parent="gone"), pods("orphan", 1))
    [w] = plan_of(path).workloads
    assert (w.name, w.kind, w.tree) == (f"{NS}/orphan", "PodGroup", None)
    assert w.waiting == f"waiting for parent CompositePodGroup {NS}/gone"
    assert list(w.pods) == [f"{NS}/orphan-0"]


def test_pods_of_a_missing_pod_group_wait(write: Write) -> None:
    [w] = plan_of(write(pods("nowhere", 2))).workloads
    assert (w.kind, w.tree, w.waiting) == ("PodGroup", None, f"waiting for PodGroup {NS}/nowhere")
    assert len(w.pods) == 2


def test_composite_waits_for_a_child_gang(write: Write) -> None:
    objects = serving()
    objects = [o for o in objects if o["metadata"]["name"] != "srv-decode-1"]
    [w] = plan_of(write(objects)).workloads
    assert w.tree is None
    assert w.waiting == (
        "waiting for child groups: 1 of minGroupCount 2 ready; "
        f"PodGroup {NS}/srv-decode: waiting for pods: 1 of minCount 2")
    assert len(w.pods) == 3  # every pending pod of the hierarchy is held


def test_composite_waits_for_child_groups_not_yet_created(write: Write) -> None:
    objects = [o for o in serving() if o["metadata"]["name"] != "srv-decode"]
    plan = plan_of(write(objects))
    srv = the(plan, "srv")
    assert srv.waiting == "waiting for child groups: 1 of minGroupCount 2 ready (1 exist)"
    assert the(plan, "srv-decode").waiting == f"waiting for PodGroup {NS}/srv-decode"


def test_waiting_child_left_out_when_the_parent_minimum_is_met(write: Write) -> None:
    path = write(
        cpg("any", cgang(1), ref=("w", "root")),
        pg("a", gang(1), ref=("w", "leaf"), parent="any"),
        pg("b", gang(3), ref=("w", "leaf"), parent="any"),
        pods("a", 1), pods("b", 1),
    )
    plan = plan_of(path)
    [w] = plan.workloads
    assert isinstance(w.tree, Group)
    assert ([c.name for c in w.tree.children], list(w.pods)) == (["a"], [f"{NS}/a-0"])
    assert any("PodGroup ml/b left out: waiting for pods: 1 of minCount 3" in m
               for m in plan.warnings)
    assert any("Workload ml/w" in m and "not in the inputs" in m for m in plan.warnings)
    assert all(wl.kind != "Pod" for wl in plan.workloads)  # b's pod stays claimed


# -- validation errors -------------------------------------------------------------------

DEEP = template("l1", cgang(1), compositePodGroupTemplates=[
    template("l2", cgang(1), compositePodGroupTemplates=[
        template("l3", cgang(1), compositePodGroupTemplates=[
            template("l4", cgang(1), podGroupTemplates=[template("leaf", gang(1))])])])])
LEAF = [template("leaf", gang(1))]


def nested(**fields: Any) -> list[Obj]:
    """A one-template composite Workload with the given template fields."""
    tmpl = {**template("root", cgang(1), podGroupTemplates=LEAF), **fields}
    return [workload(nested=[tmpl])]


def chain(depth: int) -> list[Obj]:
    """Runtime CompositePodGroups c1 <- c2 <- ... <- c{depth}."""
    return [cpg(f"c{i}", cgang(1), ref=("w", "x"), parent=f"c{i - 1}" if i > 1 else None)
            for i in range(1, depth + 1)]


ERRORS: list[tuple[str, list[Obj], str, str, str]] = [
    # (id, objects, Kind/name, field, message fragment)
    ("union-both", [workload(flat=LEAF, nested=[template("c", cgang(1), podGroupTemplates=[
        template("x", gang(1))])])], "Workload/w", "spec", "not both (a union)"),
    ("union-none", [workload()], "Workload/w", "spec", "must set one of podGroupTemplates"),
    ("too-many-templates", [workload(flat=[template(f"t{i}", gang(1)) for i in range(9)])],
     "Workload/w", "spec.podGroupTemplates", "at most 8 items, not 9"),
    ("template-depth", [workload(nested=[DEEP])], "Workload/w",
     "spec.compositePodGroupTemplates[0]" + ".compositePodGroupTemplates[0]" * 3,
     "at most 4 levels"),
    ("duplicate-template-name", nested(compositePodGroupTemplates=[
        template("leaf", cgang(1), podGroupTemplates=[template("x", gang(1))])]),
     "Workload/w", "spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0].name",
     "duplicate template name 'leaf'"),
    ("composite-template-without-children", [workload(nested=[template("c", cgang(1))])],
     "Workload/w", "spec.compositePodGroupTemplates[0]", "at least one child"),
    ("template-name-format", [workload(flat=[template("Bad_Name", gang(1))])], "Workload/w",
     "spec.podGroupTemplates[0].name", "must be a DNS label"),
    ("template-policy-missing", [workload(flat=[template("t")])], "Workload/w",
     "spec.podGroupTemplates[0].schedulingPolicy", "is required"),
    ("policy-both", [pg("p", {"basic": {}, "gang": {"minCount": 1}})], "PodGroup/p",
     "spec.schedulingPolicy", "set exactly one of basic, gang"),
    ("min-count-zero", [pg("p", gang(0))], "PodGroup/p", "spec.schedulingPolicy.gang.minCount",
     "must be a positive integer, not 0"),
    ("min-count-missing", [pg("p", {"gang": {}})], "PodGroup/p",
     "spec.schedulingPolicy.gang.minCount", "is required"),
    ("min-count-in-composite", [cpg("c", gang(2), ref=("w", "x"))], "CompositePodGroup/c",
     "spec.schedulingPolicy.gang.minCount",
     'unknown field "minCount" (did you mean "minGroupCount"?)'),
    ("min-group-count-in-podgroup", [pg("p", cgang(2))], "PodGroup/p",
     "spec.schedulingPolicy.gang.minGroupCount",
     'unknown field "minGroupCount" (did you mean "minCount"?)'),
    ("topology-two-keys", [pg("p", gang(1), schedulingConstraints={
        "topology": [{"key": ZONE}, {"key": RACK}]})], "PodGroup/p",
     "spec.schedulingConstraints.topology", "at most 1 item, not 2"),
    ("topology-key-missing", [pg("p", gang(1), schedulingConstraints={"topology": [{}]})],
     "PodGroup/p", "spec.schedulingConstraints.topology[0].key", "is required"),
    ("topology-key-format", [pg("p", gang(1), schedulingConstraints=topo("bad key!"))],
     "PodGroup/p", "spec.schedulingConstraints.topology[0].key", "invalid node label key"),
    ("disruption-both", [pg("p", gang(1), disruptionMode={"single": {}, "all": {}})],
     "PodGroup/p", "spec.disruptionMode", "set exactly one of single, all"),
    ("disruption-all-with-basic", [pg("p", BASIC, disruptionMode=ALL)], "PodGroup/p",
     "spec.disruptionMode.all", "not allowed with schedulingPolicy basic"),
    ("all-parent-single-child-template", nested(disruptionMode=ALL), "Workload/w",
     "spec.compositePodGroupTemplates[0].podGroupTemplates[0].disruptionMode",
     "must be all: parent CompositePodGroupTemplate 'root'"),
    ("template-priorities-differ", nested(priority=10), "Workload/w",
     "spec.compositePodGroupTemplates[0].podGroupTemplates[0].priority",
     "one hierarchy has one priority"),
    ("priority-too-high", [pg("p", gang(1), priority=2_000_000_000)], "PodGroup/p",
     "spec.priority", "at most 1000000000"),
    ("composite-without-workload-ref", [cpg("c", cgang(1))], "CompositePodGroup/c",
     "spec.workloadRef", "is required"),
    ("parent-without-workload-ref", [pg("p", gang(1), parent="c")], "PodGroup/p",
     "spec.workloadRef", "is required when spec.parentCompositePodGroupName is set"),
    ("both-references", [{**pg("p", gang(1), ref=("w", "t")), "spec": {
        **pg("p", gang(1), ref=("w", "t"))["spec"],
        "podGroupTemplateRef": {"workload": {"workloadName": "w",
                                             "podGroupTemplateName": "t"}}}}],
     "PodGroup/p", "spec", "set workloadRef or podGroupTemplateRef, not both"),
    ("policy-missing-without-template", [pg("p")], "PodGroup/p", "spec.schedulingPolicy",
     "is required"),
    ("unknown-template", [*nested(), pg("p", gang(1), ref=("w", "nope"))], "PodGroup/p",
     "spec.workloadRef.templateName", "has no template named 'nope'"),
    ("template-of-wrong-kind", [*nested(), pg("p", gang(1), ref=("w", "root"))], "PodGroup/p",
     "spec.workloadRef.templateName", "a PodGroup must reference a PodGroupTemplate"),
    ("cycle", [cpg("a", cgang(1), ref=("w", "x"), parent="b"),
               cpg("b", cgang(1), ref=("w", "x"), parent="a")],
     "CompositePodGroup/a", "spec.parentCompositePodGroupName",
     "parent references form a cycle: a -> b -> a"),
    ("self-parent", [cpg("a", cgang(1), ref=("w", "x"), parent="a")], "CompositePodGroup/a",
     "spec.parentCompositePodGroupName", "cycle: a -> a"),
    ("runtime-depth", [*chain(4), pg("leaf", gang(1), ref=("w", "y"), parent="c4")],
     "PodGroup/leaf", "spec.parentCompositePodGroupName", "level 5 of the hierarchy"),
    ("parent-in-another-workload", [cpg("c", cgang(1), ref=("w1", "x")),
                                    pg("p", gang(1), ref=("w2", "y"), parent="c")],
     "PodGroup/p", "spec.parentCompositePodGroupName", "belongs to Workload 'w1', not 'w2'"),
    # what kube-apiserver 1.37 refuses
    ("policy-not-taken-from-template", [workload(flat=[template("t", gang(1))]),
                                        pg("p", ref=("w", "t"))],
     "PodGroup/p", "spec.schedulingPolicy", "must specify one of: basic, gang"),
    ("priority-class-not-found", [pg("p", gang(1), priorityClassName="nope"), *pods("p", 1)],
     "PodGroup/p", "spec.priorityClassName", "no PriorityClass with name nope was found"),
    ("bare-pod-priority", [pg("p", gang(1)),
                           {"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "p-0", "namespace": NS},
                            "spec": {"priority": 5, "schedulingGroup": {"podGroupName": "p"},
                                     "containers": [{"name": "c"}]}}],
     "Pod/p-0", "spec.priority", "must not be set without spec.priorityClassName"),
    ("child-template-not-under-parent-template", [
        workload(nested=[template("r1", cgang(1), podGroupTemplates=[template("a", gang(1))]),
                         template("r2", cgang(1), podGroupTemplates=[template("b", gang(1))])]),
        cpg("c", cgang(1), ref=("w", "r1")), pg("p", gang(1), ref=("w", "b"), parent="c")],
     "PodGroup/p", "spec.workloadRef.templateName", "is not a child of template 'r1'"),
    ("runtime-all-parent-single-child", [cpg("c", cgang(1), ref=("w", "x"), disruptionMode=ALL),
                                         pg("p", gang(1), ref=("w", "y"), parent="c")],
     "PodGroup/p", "spec.disruptionMode", "must be all: parent CompositePodGroup ml/c"),
    ("runtime-priorities-differ", [cpg("c", cgang(1), ref=("w", "x"), priority=1),
                                   pg("p", gang(1), ref=("w", "y"), parent="c", priority=2)],
     "PodGroup/p", "spec.priority", "share one priority"),
    ("duplicate-pod-group", [pg("p", gang(1)), pg("p", gang(1), version=BETA)], "PodGroup/p",
     "", "duplicate PodGroup"),
]


@pytest.mark.parametrize(("objects", "obj", "field", "fragment"),
                         [pytest.param(*case[1:], id=case[0]) for case in ERRORS])
def test_validation_errors(write: Write, objects: list[Obj], obj: str, field: str,
                           fragment: str) -> None:
    """An object's own problem fails loading; a problem of a hierarchy (found when the
    builder links objects) makes that one workload invalid, with the same message."""
    path = write(objects)
    try:
        plan = assemble(load([path]))
    except InputError as err:
        message = str(err)
        assert err.field == (field or None)
    else:
        invalid = [w.invalid for w in plan.workloads if w.invalid]
        assert len(invalid) == 1, [(w.name, w.waiting) for w in plan.workloads]
        message = invalid[0]
        assert f": {field}: " in message
    assert "\n" not in message
    assert message.startswith(f"{path}[doc ")
    assert f" {obj}: " in message
    assert fragment in message


HIERARCHY_PROBLEMS = [
    # (id, the broken hierarchy's objects, the invalid workload, message fragment)
    ("cycle", [cpg("a", cgang(1), ref=("w", "x"), parent="b"),
               cpg("b", cgang(1), ref=("w", "x"), parent="a"),
               pg("p", gang(1), ref=("w", "y"), parent="a")],
     "ml/a", "parent references form a cycle: a -> b -> a"),
    ("depth", [*chain(4), pg("leaf", gang(1), ref=("w", "y"), parent="c4")],
     "ml/c1", "level 5 of the hierarchy"),
    ("mixed-workloads", [cpg("c", cgang(1), ref=("w1", "x")),
                         pg("p", gang(1), ref=("w2", "y"), parent="c")],
     "ml/c", "belongs to Workload 'w1', not 'w2'"),
]


@pytest.mark.parametrize(("objects", "name", "fragment"),
                         [pytest.param(*case[1:], id=case[0]) for case in HIERARCHY_PROBLEMS])
def test_invalid_hierarchy_marks_only_its_workload(write: Write, objects: list[Obj],
                                                   name: str, fragment: str) -> None:
    """KEP-6012 (shared/reference/keps/6012-composite-podgroup-api): a hierarchy that
    breaks its rules is that workload's problem; every other workload of the same input
    is still built and placed, and the invalid one's pods are never placed one by one."""
    good = [pg("g", gang(2)), *pods("g", 2)]
    bad_pods = [p for o in objects if o["kind"] == "PodGroup"
                for p in pods(o["metadata"]["name"], 1)]
    path = write([*objects, *bad_pods, *good])
    plan = assemble(load([path]))
    by_name = {w.name: w for w in plan.workloads}
    assert fragment in by_name[name].invalid
    assert by_name[name].tree is None
    assert by_name[name].waiting.startswith("invalid: ")
    assert set(by_name[name].pods) == {f"ml/{p['metadata']['name']}" for p in bad_pods}
    assert [w.name for w in plan.ready] == ["ml/g"]
    assert all(w.kind != "Pod" for w in plan.workloads)  # no pod of it is loose


def test_composite_pod_group_is_alpha_only(write: Write) -> None:
    path = write(cpg("c", cgang(1), ref=("w", "x"), version=BETA))
    with pytest.raises(InputError) as info:
        load([path])
    assert "supported: scheduling.k8s.io/v1alpha3" in str(info.value)


# -- scheduling.k8s.io/v1alpha2 (Kubernetes 1.36) -------------------------------------------

A2 = "scheduling.k8s.io/v1alpha2"


def pg_a2(name: str, policy: Obj | None = None, *, ref: tuple[str, str] | None = None,
          **fields: Any) -> Obj:
    """A v1alpha2 PodGroup: its template named by ``podGroupTemplateRef.workload``."""
    obj = pg(name, policy, version=A2, **fields)
    if ref is not None:
        obj["spec"]["podGroupTemplateRef"] = {
            "workload": {"workloadName": ref[0], "podGroupTemplateName": ref[1]}}
    return obj


def test_v1alpha2_reads_its_own_field_names(write: Write) -> None:
    """release-1.36 ``scheduling/v1alpha2``: ``podGroupTemplateRef.workload``, a string
    ``disruptionMode`` (Pod | PodGroup), the template filling what the group leaves out."""
    tmpl = template("workers", gang(3), schedulingConstraints=topo(RACK),
                    disruptionMode="PodGroup", priority=7)
    path = write(workload(flat=[tmpl, template("loader", BASIC, disruptionMode="Pod")],
                          version=A2),
                 pg_a2("train", gang(3), ref=("w", "workers")), pods("train", 3, gpu=8),
                 pg_a2("load", BASIC, ref=("w", "loader")), pods("load", 1))
    inputs = load([path])
    [wl] = inputs.objects["Workload"]
    assert isinstance(wl, WorkloadObject)
    assert [t.settings.disruption for t in wl.templates] == ["all", "single"]
    plan = assemble(inputs)
    tree = the(plan, "train").tree
    assert isinstance(tree, Group)
    assert (tree.kind, tree.min_pods, tree.disruption, tree.priority) == (
        "PodGroup", 3, "all", 7)
    assert [(c.key, c.mode) for c in tree.topology] == [(RACK, "required")]
    loader = the(plan, "load").tree
    assert isinstance(loader, Group) and (loader.min_pods, loader.disruption) == (0, "single")


A2_ERRORS = [
    # (id, objects, object, field, message fragment): fields of other versions are unknown
    ("v1alpha3-workload-ref", [pg("p", gang(1), ref=("w", "x"), version=A2)],
     "PodGroup/p", "spec.workloadRef", "unknown field"),
    ("composite-templates", [workload(nested=[template("c", cgang(1), podGroupTemplates=[
        template("x", gang(1))])], version=A2)],
     "Workload/w", "spec.compositePodGroupTemplates", "unknown field"),
    ("parent", [pg_a2("p", gang(1), ref=("w", "x"), parentCompositePodGroupName="c")],
     "PodGroup/p", "spec.parentCompositePodGroupName", "unknown field"),
    ("union-disruption", [pg_a2("p", gang(1), disruptionMode=ALL)],
     "PodGroup/p", "spec.disruptionMode", "must be a string"),
    ("disruption-value", [pg_a2("p", gang(1), disruptionMode="All")],
     "PodGroup/p", "spec.disruptionMode", "unsupported value 'All'; must be one of: Pod, "
     "PodGroup"),
    ("basic-disrupted-whole", [pg_a2("p", BASIC, disruptionMode="PodGroup")],
     "PodGroup/p", "spec.disruptionMode", "only a gang can be disrupted as a whole"),
    ("no-templates", [workload(version=A2)],
     "Workload/w", "spec.podGroupTemplates", "is required"),
    ("empty-template-ref", [{**pg_a2("p", gang(1)), "spec": {
        "schedulingPolicy": gang(1), "podGroupTemplateRef": {}}}],
     "PodGroup/p", "spec.podGroupTemplateRef.workload", "is required"),
]


@pytest.mark.parametrize(("objects", "obj", "field", "fragment"),
                         [pytest.param(*case[1:], id=case[0]) for case in A2_ERRORS])
def test_v1alpha2_validation_errors(write: Write, objects: list[Obj], obj: str, field: str,
                                    fragment: str) -> None:
    path = write(objects)
    with pytest.raises(InputError) as info:
        load([path])
    err = info.value
    assert (err.obj, err.field) == (obj, field)
    assert fragment in err.message and str(err).startswith(f"{path}[doc 0]: {obj}: ")


def test_v1alpha2_has_no_composites_even_when_unknown_fields_are_ignored(
        write: Write) -> None:
    path = write(pg_a2("p", gang(1), parentCompositePodGroupName="c",
                       workloadRef={"workloadName": "w", "templateName": "x"}), pods("p", 1))
    inputs = load([path], validate="ignore")
    [obj] = inputs.objects["PodGroup"]
    assert isinstance(obj, GroupObject) and (obj.parent, obj.workload_ref) == (None, None)
    assert [w.name for w in assemble(inputs).ready] == [f"{NS}/p"]
    with pytest.raises(InputError) as info:
        load([write(cpg("c", cgang(1), ref=("w", "x"), version=A2))])
    assert "unsupported apiVersion 'scheduling.k8s.io/v1alpha2' for kind " in str(info.value)


# -- placement ---------------------------------------------------------------------------

SHAPE = (("zone", 2), ("rack", 2), ("host", 2))


def scenario_state(plan: Plan) -> ClusterState:
    return ClusterState.from_nodes(plan.nodes, levels_of(SHAPE), plan.bound)


def test_composite_disaggregated_deployment_is_placed_whole_with_topology(
    write: Write,
) -> None:
    plan = plan_of(write(serving()))
    plan.nodes.extend(nodes(SHAPE))
    state = scenario_state(plan)
    take(state, "n-z0-r0-h0", gpu=8)  # zone z0 now lacks a free rack for a gang of two
    [w] = plan.workloads
    assert w.tree is not None
    decision = place(w.tree, state)
    assert decision.admitted, decision.reason
    assert sorted(decision.assignments) == sorted(w.pods)
    labels = {n.name: n.labels for n in plan.nodes}
    zones = {labels[n][ZONE] for n in decision.assignments.values()}
    assert zones == {"z1"}
    for role in ("srv-prefill", "srv-decode"):
        racks = {labels[n][RACK] for p, n in decision.assignments.items() if role in p}
        assert len(racks) == 1
    assert len({labels[n][RACK] for n in decision.assignments.values()}) == 2


def test_composite_is_all_or_nothing_when_no_zone_fits(write: Write) -> None:
    plan = plan_of(write(serving()))
    plan.nodes.extend(nodes(SHAPE))
    state = scenario_state(plan)
    take(state, "n-z0-r0-h0", gpu=8)
    take(state, "n-z1-r1-h1", gpu=8)
    free = state.free.copy()
    [w] = plan.workloads
    assert w.tree is not None
    decision = place(w.tree, state)
    assert not decision.admitted
    assert decision.assignments == {}
    assert np.array_equal(state.free, free)  # nothing half-applied


# -- examples ----------------------------------------------------------------------------


@pytest.mark.parametrize("example", ["workload-gang.yaml", "workload-composite.yaml"])
def test_examples_load_assemble_and_place(tmp_path: Path, example: str) -> None:
    levels = [("zone", 1), ("block", 2), ("rack", 2), ("host", 4)]
    node = {"cpu": "64", "memory": "512Gi", GPU: "8", "pods": "110"}
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(generate_yaml(levels, node))
    plan = assemble(load([cluster, EXAMPLES / example]))
    assert plan.warnings == []
    assert plan.workloads and plan.ready == plan.workloads
    assert all(w.kind in ("PodGroup", "CompositePodGroup") for w in plan.workloads)
    assert plan.levels is not None
    state = ClusterState.from_nodes(plan.nodes, plan.levels, plan.bound)
    for w in plan.workloads:
        assert w.tree is not None
        validate(w.tree, plan.levels)
        for unit in scheduling_units(w.tree):
            assert place(unit, state).admitted
