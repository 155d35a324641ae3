"""The YAML loader: documents, lists, kinds, and errors that name file/doc/object/field."""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

import gangsched
from gangsched.api.errors import InputError
from gangsched.api.loader import BUILTIN_KINDS, Document, Inputs, Kind, load

WriteYaml = Callable[..., Path]


@pytest.fixture
def write_yaml(tmp_path: Path) -> WriteYaml:
    """Write dedented YAML text to a file in tmp_path and return its path."""

    def write(text: str, name: str = "input.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text).lstrip("\n"))
        return path

    return write


def load_error(path: Path, **kwargs: bool) -> InputError:
    with pytest.raises(InputError) as info:
        load([path], **kwargs)
    return info.value


NODE = """
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{zone: a}}
status:
  allocatable: {{cpu: "8", memory: 32Gi, nvidia.com/gpu: "4"}}
"""


def test_multi_document_file_with_empty_documents(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        "---\n"
        + NODE.format(name="n1")
        + "---\n"
        + "---\n# only a comment\n---\n"
        + NODE.format(name="n2")
        + textwrap.dedent(
            """
            ---
            apiVersion: v1
            kind: Pod
            metadata: {name: p1, namespace: ml}
            spec:
              containers: [{name: c, resources: {requests: {nvidia.com/gpu: 2}}}]
            """
        )
    )
    inputs = load([path])
    assert [n.name for n in inputs.nodes] == ["n1", "n2"]
    assert inputs.nodes[0].allocatable == {
        "cpu": 8000,
        "memory": 32 * 1024**3,
        "nvidia.com/gpu": 4,
        "pods": 110,
    }
    assert [p.key for p in inputs.pods] == ["ml/p1"]
    assert inputs.pods[0].requests == {"nvidia.com/gpu": 2, "pods": 1}
    # empty documents are skipped but still counted: the second node is document 3
    assert [(d.index, d.label) for d in inputs.documents] == [
        (0, "Node/n1"),
        (3, "Node/n2"),
        (4, "Pod/p1"),
    ]
    assert inputs.warnings == [] and inputs.topology_levels is None


def test_many_files_and_a_directory(write_yaml: WriteYaml, tmp_path: Path) -> None:
    write_yaml(NODE.format(name="b"), "b.yaml")
    write_yaml(NODE.format(name="a"), "a.yml")
    write_yaml("not: yaml for us", "notes.txt")
    other = write_yaml(NODE.format(name="c"), "c.yaml")
    assert [n.name for n in load([tmp_path]).nodes] == ["a", "b", "c"]
    assert [n.name for n in load([other, tmp_path / "a.yml"]).nodes] == ["c", "a"]


def test_stdin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(NODE.format(name="from-stdin")))
    assert [n.name for n in load(["-"]).nodes] == ["from-stdin"]


def test_a_closed_stdin_is_an_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gangsched validate -f - <&-``: Python starts with ``sys.stdin`` None."""
    monkeypatch.setattr("sys.stdin", None)
    with pytest.raises(InputError, match="<stdin>: cannot read file: standard input is closed"):
        load(["-"])


def test_json_input(write_yaml: WriteYaml) -> None:
    path = write_yaml('{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "j"}}', "n.json")
    assert [n.name for n in load([path]).nodes] == ["j"]


def test_list_of_nodes(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        """
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Node, metadata: {name: n1}}
        - {apiVersion: v1, kind: Node, metadata: {name: n2}}
        """
    )
    inputs = load([path])
    assert [n.name for n in inputs.nodes] == ["n1", "n2"]
    assert [(d.index, d.path) for d in inputs.documents] == [(0, "items[0]"), (0, "items[1]")]


def test_typed_list_items_inherit_kind(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        """
        apiVersion: v1
        kind: NodeList
        items:
        - metadata: {name: n1}
        - metadata: {name: n2}
          status: {allocatable: {cpu: 1}}
        """
    )
    assert [n.allocatable.get("cpu") for n in load([path]).nodes] == [None, 1000]


def test_error_inside_a_list_names_the_item(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        """
        apiVersion: v1
        kind: List
        items:
        - {apiVersion: v1, kind: Node, metadata: {name: n1}}
        - {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {allocatable: {cpu: "-1"}}}
        """
    )
    err = load_error(path)
    assert str(err) == (
        f"{path}[doc 0]: Node/n2: items[1].status.allocatable.cpu: must not be negative, got '-1'"
    )


def test_empty_list_and_list_without_items(write_yaml: WriteYaml) -> None:
    path = write_yaml("apiVersion: v1\nkind: List\nitems: []\n---\napiVersion: v1\nkind: List\n")
    assert load([path]).documents == []


def test_invalid_yaml_names_the_line(write_yaml: WriteYaml) -> None:
    path = write_yaml(NODE.format(name="n1") + "---\napiVersion: v1\nkind: Node\nmetadata: [a\n")
    err = load_error(path)
    assert (err.file, err.doc) == (str(path), 1)
    assert "invalid YAML at line 12" in err.message


@pytest.mark.parametrize(("value", "message"), [
    ("!!timestamp 2001-99-99", "cannot read timestamp '2001-99-99': month must be in 1..12"),
    ("!!timestamp 2001-02-30", "cannot read timestamp '2001-02-30': day is out of range"),
    ("!!float abc", "cannot read float 'abc'"),
    ("!!int abc", "cannot read int 'abc': not an integer"),
    ("!!int 0x1_0", None),  # an integer: read, then refused by the schema (not a string)
])
def test_a_tagged_value_its_tag_cannot_read_is_invalid_yaml_at_its_line(
        write_yaml: WriteYaml, value: str, message: str | None) -> None:
    """PyYAML's constructors raise ValueError on these (a traceback, before)."""
    for mode in ("strict", "warn"):  # the fast path and the aliases' path
        path = write_yaml(f"apiVersion: v1\nkind: Node\nmetadata: {{name: {value}}}\n"
                          + ("x: &a 1\ny: *a\n" if mode == "warn" else ""))
        err = load_error(path, validate=mode)  # type: ignore[arg-type]
        if message is None:
            assert "metadata.name: must be a string, not an integer (16)" in str(err), str(err)
        else:
            assert err.message.startswith("invalid YAML at line 3, column 18: ") and \
                message in err.message, err.message


def test_a_control_character_is_one_line_naming_its_place(write_yaml: WriteYaml) -> None:
    path = write_yaml("apiVersion: v1\nkind: Node\nmetadata:\n  name: a\x00b\n")
    err = load_error(path)
    assert err.message == ("invalid YAML at character 46: unacceptable character #x0000: "
                           "control characters are not allowed"), err.message


def test_tab_indentation_is_invalid_yaml(write_yaml: WriteYaml) -> None:
    path = write_yaml("apiVersion: v1\nkind: Node\nmetadata:\n\tname: n1\n")
    err = load_error(path)
    assert err.doc == 0 and "invalid YAML at line 4" in err.message


ERROR_CASES = [
    pytest.param(
        NODE.format(name="n1").replace('cpu: "8"', "cpu: [1]"),
        "Node/n1",
        "status.allocatable.cpu",
        "must be a quantity such as 2, 500m or 16Gi, not a list",
        id="list-for-quantity",
    ),
    pytest.param(
        NODE.format(name="n1").replace('cpu: "8"', 'cpu: "-8"'),
        "Node/n1",
        "status.allocatable.cpu",
        "must not be negative",
        id="negative-cpu",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {priority: high}\n",
        "Pod/p",
        "spec.priority",
        "must be an integer, not a string ('high')",
        id="string-priority",
    ),
    pytest.param(
        "apiVersion: v1\nkind: Node\nmetadata: {labels: {a: b}}\n",
        "Node",
        "metadata.name",
        "is required",
        id="node-without-name",
    ),
    pytest.param(
        "kind: Node\nmetadata: {name: n1}\n",
        "Node/n1",
        "apiVersion",
        "is required",
        id="missing-apiVersion",
    ),
    pytest.param(
        "apiVersion: v1\nmetadata: {name: n1}\n",
        "n1",
        "kind",
        "is required",
        id="missing-kind",
    ),
    pytest.param(
        "apiVersion: v1\nkind: [Node]\nmetadata: {name: n1}\n",
        "n1",
        "kind",
        "must be a string, not a list",
        id="kind-not-a-string",
    ),
    pytest.param(
        "- apiVersion: v1\n  kind: Node\n",
        None,
        None,
        "must be a Kubernetes object (a mapping), not a list",
        id="document-is-a-list",
    ),
    pytest.param(
        "just a string\n",
        None,
        None,
        "must be a Kubernetes object (a mapping), not a str",
        id="document-is-a-string",
    ),
    pytest.param(
        "apiVersion: v1\nkind: List\nitems: {a: 1}\n",
        "List",
        "items",
        "must be a list, not a mapping",
        id="items-not-a-list",
    ),
    pytest.param(
        "apiVersion: v2\nkind: Node\nmetadata: {name: n1}\n",
        "Node/n1",
        None,
        "unsupported apiVersion 'v2' for kind Node; supported: v1",
        id="wrong-version-of-known-kind",
    ),
    pytest.param(
        NODE.format(name="n1") + "---\n" + NODE.format(name="n1"),
        "Node/n1",
        None,
        "duplicate Node 'n1', first defined at",
        id="duplicate-node",
    ),
]


@pytest.mark.parametrize(("text", "obj", "field", "message"), ERROR_CASES)
def test_load_errors(
    write_yaml: WriteYaml, text: str, obj: str | None, field: str | None, message: str
) -> None:
    path = write_yaml(text)
    err = load_error(path)
    assert err.file == str(path)
    assert err.doc is not None
    assert (err.obj, err.field) == (obj, field)
    assert message in err.message


def test_error_renders_on_one_line(write_yaml: WriteYaml) -> None:
    path = write_yaml(
        "---\n"
        + NODE.format(name="n1")
        + "---\n"
        + NODE.format(name="gpu-7").replace('cpu: "8"', "cpu: 1.5.2")
    )
    assert str(load_error(path)) == (
        f"{path}[doc 1]: Node/gpu-7: status.allocatable.cpu: "
        "invalid quantity '1.5.2' (expected e.g. 2, 500m, 1.5, 16Gi, 1e3)"
    )


def test_missing_file(tmp_path: Path) -> None:
    err = load_error(tmp_path / "nope.yaml")
    assert str(err) == f"{tmp_path / 'nope.yaml'}: file not found"


UNKNOWN = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"


def test_unknown_kind_lists_supported_kinds(write_yaml: WriteYaml) -> None:
    err = load_error(write_yaml(UNKNOWN))
    assert err.obj == "Widget/w"
    assert "unsupported kind example.com/v1/Widget; --ignore-unknown skips it" in err.message
    assert "v1/Node" in err.message and "v1/Pod" in err.message
    assert "kueue.x-k8s.io/v1beta1/Topology" in err.message


def test_ignore_unknown_turns_it_into_a_warning(write_yaml: WriteYaml) -> None:
    path = write_yaml(NODE.format(name="n1") + "---\n" + UNKNOWN)
    inputs = load([path], ignore_unknown=True)
    assert [n.name for n in inputs.nodes] == ["n1"]
    assert inputs.warnings == [
        f"{path}[doc 1]: Widget/w: unsupported kind example.com/v1/Widget; skipped"
    ]


SERVICE = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {ports: [{port: 80}]}\n"
CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: conf}\ndata: {a: b}\n"
ROLE = ("apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: r}\n"
        "rules: []\n")


def test_kinds_that_carry_nothing_to_schedule_are_skipped_with_a_warning(
    write_yaml: WriteYaml,
) -> None:
    # a bundle as people apply it: the workload beside its Service, ConfigMap and RBAC
    path = write_yaml("---\n".join([SERVICE, NODE.format(name="n1"), CONFIG_MAP, ROLE]))
    inputs = load([path])
    assert [n.name for n in inputs.nodes] == ["n1"]
    assert [d.kind for d in inputs.documents] == ["Node"]
    assert inputs.warnings == [
        f"{path}[doc 0]: Service/web: v1/Service carries nothing gangsched schedules; skipped",
        f"{path}[doc 2]: ConfigMap/conf: v1/ConfigMap carries nothing gangsched schedules; "
        "skipped",
        f"{path}[doc 3]: Role/r: rbac.authorization.k8s.io/v1/Role carries nothing gangsched "
        "schedules; skipped",
    ]


def test_a_known_kind_at_an_unknown_version_is_still_refused(write_yaml: WriteYaml) -> None:
    err = load_error(write_yaml(SERVICE.replace("apiVersion: v1", "apiVersion: v2")))
    assert err.obj == "Service/web"
    assert "unsupported kind v2/Service" in err.message


def test_nothing_is_half_applied(write_yaml: WriteYaml) -> None:
    good = write_yaml(NODE.format(name="n1"), "good.yaml")
    bad = write_yaml(NODE.format(name="n2").replace('"8"', "eight"), "bad.yaml")
    with pytest.raises(InputError):
        load([good, bad])
    assert [n.name for n in load([good]).nodes] == ["n1"]


# -- topology --------------------------------------------------------------------------

KUEUE_TOPOLOGY = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: topology.kubernetes.io/zone
  - nodeLabel: example.com/rack
  - nodeLabel: kubernetes.io/hostname
"""


def test_kueue_topology(write_yaml: WriteYaml) -> None:
    path = write_yaml(KUEUE_TOPOLOGY)
    inputs = load([path])
    assert inputs.topology_levels == [
        "topology.kubernetes.io/zone",
        "example.com/rack",
        "kubernetes.io/hostname",
    ]
    assert inputs.topology_source is not None and "Topology/default" in inputs.topology_source


def test_kai_topology_that_agrees_is_fine(write_yaml: WriteYaml) -> None:
    kai = KUEUE_TOPOLOGY.replace("kueue.x-k8s.io/v1beta1", "kai.scheduler/v1alpha1")
    inputs = load([write_yaml(KUEUE_TOPOLOGY + "---\n" + kai)])
    assert inputs.topology_levels is not None and len(inputs.topology_levels) == 3


@pytest.mark.parametrize("kai_first", [True, False])
def test_a_kai_topology_that_disagrees_leaves_the_kueue_chain_in_any_order(
        write_yaml: WriteYaml, kai_first: bool) -> None:
    kai = KUEUE_TOPOLOGY.replace("kueue.x-k8s.io/v1beta1", "kai.scheduler/v1alpha1").replace(
        "  - nodeLabel: topology.kubernetes.io/zone\n", "").replace("default", "fabric")
    kueue, kai_file = write_yaml(KUEUE_TOPOLOGY, "kueue.yaml"), write_yaml(kai, "kai.yaml")
    inputs = load([kai_file, kueue] if kai_first else [kueue, kai_file])
    assert inputs.topology_levels == [
        "topology.kubernetes.io/zone", "example.com/rack", "kubernetes.io/hostname"]
    assert inputs.topology_source is not None and "Topology/default" in inputs.topology_source
    assert len(inputs.objects["Topology"]) == 2  # the KAI one kept for its workloads


def test_a_kai_topology_alone_gives_the_chain(write_yaml: WriteYaml) -> None:
    kai = KUEUE_TOPOLOGY.replace("kueue.x-k8s.io/v1beta1", "kai.scheduler/v1alpha1")
    inputs = load([write_yaml(kai)])
    assert inputs.topology_levels is not None and len(inputs.topology_levels) == 3


def test_topologies_that_disagree(write_yaml: WriteYaml) -> None:
    other = KUEUE_TOPOLOGY.replace("example.com/rack", "example.com/block").replace(
        "default", "other"
    )
    err = load_error(write_yaml(KUEUE_TOPOLOGY + "---\n" + other))
    assert (err.doc, err.obj, err.field) == (1, "Topology/other", "spec.levels")
    assert "disagree" in err.message



@pytest.mark.parametrize("short_first", [True, False])
def test_nested_kueue_topologies_give_the_longest_chain_in_any_order(
        write_yaml: WriteYaml, short_first: bool) -> None:
    short = KUEUE_TOPOLOGY.replace("  - nodeLabel: topology.kubernetes.io/zone\n", "").replace(
        "default", "racks")
    files = [write_yaml(short, "short.yaml"), write_yaml(KUEUE_TOPOLOGY, "long.yaml")]
    inputs = load(files if short_first else files[::-1])
    assert inputs.topology_levels == [
        "topology.kubernetes.io/zone", "example.com/rack", "kubernetes.io/hostname"]
    assert len(inputs.objects["Topology"]) == 2  # each kept for the flavors naming it
    swapped = KUEUE_TOPOLOGY.replace("  - nodeLabel: topology.kubernetes.io/zone\n", "").replace(
        "  - nodeLabel: example.com/rack\n", "  - nodeLabel: example.com/rack\n"
        "  - nodeLabel: topology.kubernetes.io/zone\n").replace("default", "upside-down")
    err = load_error(write_yaml(KUEUE_TOPOLOGY + "---\n" + swapped))
    assert "disagree" in err.message and err.obj == "Topology/upside-down"

@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        pytest.param("spec: {levels: []}", "spec.levels", "at least one level", id="no-levels"),
        pytest.param("spec: {levels: [{}]}", "spec.levels[0].nodeLabel", "required", id="label"),
        pytest.param(
            "spec: {levels: [{nodeLabel: a}, {nodeLabel: a}]}",
            "spec.levels[1].nodeLabel",
            "duplicate",
            id="duplicate",
        ),
        pytest.param("spec: levels", "spec", "must be a mapping", id="spec-string"),
        pytest.param(
            "spec: {levels: [{nodeLabel: kubernetes.io/hostname}, {nodeLabel: example.com/rack}]}",
            "spec.levels[0].nodeLabel",
            "the kubernetes.io/hostname label can only be used at the lowest level",
            id="hostname-not-lowest",
        ),
        pytest.param(
            "spec: {levels: [" + ", ".join(f"{{nodeLabel: example.com/l{i}}}" for i in range(17))
            + "]}",
            "spec.levels",
            "must have at most 16 items, got 17",
            id="seventeen-levels",
        ),
    ],
)
def test_topology_errors(write_yaml: WriteYaml, spec: str, field: str, message: str) -> None:
    head = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\n"
    err = load_error(write_yaml(head + spec + "\n"))
    assert err.field == field and message in err.message


# -- registry --------------------------------------------------------------------------


def test_a_kind_passed_to_load_is_dispatched(write_yaml: WriteYaml) -> None:
    def handle(doc: Document, inputs: Inputs) -> None:
        if doc.obj.get("spec") is None:
            raise InputError("is required", field="spec")
        inputs.add_object(doc, doc.name)

    kinds = BUILTIN_KINDS.extended([Kind("TestGadget", ("test.gangsched.io/v1",), handle)])
    assert "test.gangsched.io/v1/TestGadget" in kinds.supported()
    assert "test.gangsched.io/v1/TestGadget" not in BUILTIN_KINDS.supported()
    ok = "apiVersion: test.gangsched.io/v1\nkind: TestGadget\nmetadata: {name: g}\nspec: {}\n"
    assert load([write_yaml(ok)], kinds=kinds).objects == {"TestGadget": ["g"]}
    with pytest.raises(InputError, match="unsupported kind"):
        load([write_yaml(ok)])  # the built-in kinds alone do not read it
    with pytest.raises(InputError) as info:
        load([write_yaml(ok.replace("spec: {}\n", ""), "bad.yaml")], kinds=kinds)
    err = info.value
    assert (err.obj, err.field, err.message) == ("TestGadget/g", "spec", "is required")


def test_a_kind_defined_twice_is_refused() -> None:
    def handle(doc: Document, inputs: Inputs) -> None:
        pass

    with pytest.raises(ValueError, match="defined twice"):
        BUILTIN_KINDS.extended([Kind("Node", ("v1",), handle)])


def test_package_exports_the_composed_load() -> None:
    from gangsched.frontends import load as composed

    assert gangsched.load is composed


@pytest.mark.parametrize("text", [
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations:\n    a: null\n"
    "spec:\n  containers: []\n",
    "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: {a: null, b: x}}\n"
    "spec: {containers: []}\n",
], ids=["block", "flow"])
def test_a_null_annotation_is_the_empty_string(write_yaml: WriteYaml, text: str) -> None:
    """JSON/YAML null in a map[string]string decodes as "" (it crashed the check)."""
    [pod] = load([write_yaml(text)]).pods
    assert pod.annotations["a"] == ""


def test_a_load_leaves_the_garbage_collector_as_it_found_it(
        write_yaml: WriteYaml, monkeypatch: pytest.MonkeyPatch) -> None:
    """Collection is off while a file is read and back on after, also after an error;
    only a large load (FREEZE_AFTER new objects) freezes what it built."""
    import gc

    from gangsched.api import loader

    good = write_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: n}\n", "good.yaml")
    bad = write_yaml("apiVersion: v1\nkind: Node\nmetadata: {name: [n]}\n", "bad.yaml")
    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    load([good])
    with pytest.raises(InputError):
        load([bad])
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    monkeypatch.setattr(loader, "FREEZE_AFTER", 1)
    try:
        [node] = load([good]).nodes
        assert gc.isenabled() and gc.get_freeze_count() > frozen
        assert node.name == "n"
    finally:
        gc.unfreeze()
