"""Reading within limits: file size, nesting depth before parsing, aliases counted as
go-yaml counts them and never re-expanded, repeated keys, names and escaping."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
import yaml

from gangsched.api import loader, names
from gangsched.api.errors import InputError
from gangsched.api.loader import MAX_DEPTH
from gangsched.frontends import load

NODE = "apiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n"


def write(tmp_path: Path, text: str, name: str = "in.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def error_of(path: Path, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as info:
        load([path], **kwargs)  # type: ignore[arg-type]
    return info.value


def documents(text: str, mode: loader.Mode = "strict") -> list[object]:
    warnings: list[str] = []
    return [d for _, d, _ in loader._parse(text, "t.yaml", mode, warnings)]


# -- size --------------------------------------------------------------------------------


def test_default_limit_fits_a_50000_node_cluster_file() -> None:
    """cluster generate writes ~470 bytes per node: 50,000 nodes are ~23 MB."""
    assert loader.DEFAULT_MAX_INPUT_BYTES == 128 * 1024**2 >= 5 * 50_000 * 470


def test_too_large_files_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, NODE.format(name="n1") * 1)
    monkeypatch.setenv(loader.MAX_INPUT_ENV, "32")
    err = error_of(path)
    assert err.file == str(path)
    assert err.message.startswith("file is too large (47 bytes; the limit is 32 bytes; set ")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x" * 100)))
    assert "more than 32 bytes" in error_of(Path("-")).message
    monkeypatch.setenv(loader.MAX_INPUT_ENV, "lots")
    assert error_of(path).field == "$GANGSCHED_MAX_INPUT_BYTES"


def test_a_limit_beyond_memory_reads_files_and_stdin_as_they_are(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A limit is a bound, not an allocation: 1Ei (2**60 bytes) reads a small file, and a
    file past the chunk size whole."""
    monkeypatch.setenv(loader.MAX_INPUT_ENV, "1Ei")
    path = write(tmp_path, NODE.format(name="n1"))
    assert [n.name for n in load([path]).nodes] == ["n1"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(NODE.format(name="n2").encode())))
    assert [n.name for n in load([Path("-")]).nodes] == ["n2"]
    monkeypatch.setattr(loader, "_CHUNK", 64)
    many = write(tmp_path, "---\n".join(NODE.format(name=f"n{i}") for i in range(20)), "m.yaml")
    assert len(load([many]).nodes) == 20
    monkeypatch.setenv(loader.MAX_INPUT_ENV, "100")
    assert "the limit is 100 bytes" in error_of(many).message


def test_binary_input_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert "not UTF-8 text" in error_of(path).message


# -- depth ---------------------------------------------------------------------------------


def block(depth: int) -> str:
    """A mapping nested ``depth`` levels deep, in block style."""
    return "".join("  " * i + f"k{i}:\n" for i in range(depth - 1)) + "  " * (depth - 1) + "k: v\n"


@pytest.mark.parametrize("style", ["flow", "block"])
def test_depth_limit_is_exact(style: str) -> None:
    def text(depth: int) -> str:
        return "[" * depth + "]" * depth if style == "flow" else block(depth)

    assert documents(text(MAX_DEPTH))
    with pytest.raises(InputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        documents(text(MAX_DEPTH + 1))


@pytest.mark.parametrize("text", [
    "[" * 200_000 + "]" * 200_000,
    "- " * 100_000 + "x\n",
    "? " * 100_000 + "x\n",
    "a: &a\n" + "".join(" " * (i + 2) + f"- &x{i} !!seq\n" for i in range(2000)),
], ids=["flow", "compact-sequences", "explicit-keys", "anchored-and-tagged"])
def test_hostile_nesting_is_refused_before_the_composer_runs(text: str) -> None:
    """libyaml's composer recurses in C and crashes the process beyond ~30,000 levels: the
    depth must be known before it runs."""
    start = time.perf_counter()
    with pytest.raises(InputError, match="nested deeper than"):
        documents(text)
    assert time.perf_counter() - start < 10


def test_cheap_bounds_let_ordinary_files_through() -> None:
    cluster = (Path(__file__).resolve().parents[2] / "examples" / "cluster-small.yaml")
    assert loader._yaml_depth_ok(cluster.read_text())
    assert not loader._yaml_depth_ok("[" * 1000)
    deep_indent = "a: |\n" + " " * 600 + "text inside a block scalar\n"
    assert not loader._yaml_depth_ok(deep_indent)  # not provably shallow: counted exactly
    assert documents(deep_indent) == [{"a": "text inside a block scalar\n"}]


def test_json_depth() -> None:
    deep = '{"a": ' * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)
    with pytest.raises(InputError, match="invalid JSON: nested deeper than 100 levels"):
        documents(deep)
    strings = '{"a": "' + "[" * 500 + '", "b": ' * 1 + "[" * 50 + "]" * 50 + "}"
    assert documents(strings) == [{"a": "[" * 500, "b": nested_list(50)}]


def nested_list(depth: int) -> object:
    value: object = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_lists_nest_at_most_eight_deep(tmp_path: Path) -> None:
    item = "{apiVersion: v1, kind: Node, metadata: {name: n}}"
    for _ in range(9):
        item = f"{{apiVersion: v1, kind: List, items: [{item}]}}"
    assert "Lists nested more than 8 deep" in error_of(write(tmp_path, item)).message


# -- aliases ---------------------------------------------------------------------------------


def test_an_alias_is_built_once_and_shared() -> None:
    [doc] = documents("a: &x {b: [1, 2]}\nc: *x\nd: [*x, *x]\n")
    assert isinstance(doc, dict)
    assert doc["a"] is doc["c"] is doc["d"][0] is doc["d"][1]


def test_alias_limits_are_go_yamls() -> None:
    """go.yaml.in/yaml/v2 v2.4.2 decode.go (sigs.k8s.io/yaml, kubectl, the API server):
    more than 100 aliased decodes, more than 1000 decodes, and an aliased share above
    allowedAliasRatio (0.99 up to 400,000 decodes, falling to 0.10 at 4,000,000)."""
    def doc(items: int, uses: int) -> str:
        return (f"a: &a [{', '.join(['x'] * items)}]\n"
                f"b: [{', '.join(['*a'] * uses)}]\n")

    assert documents(doc(10, 100))  # 11,000 aliased of 12,100: 0.91
    assert documents(doc(100, 1000))  # 101,000 of 102,110: 0.989
    start = time.perf_counter()
    with pytest.raises(InputError, match="document contains excessive aliasing"):
        documents(doc(500, 1000))  # 501,000 of 502,510: above the 0.965 allowed there
    assert time.perf_counter() - start < 5
    assert loader._allowed_alias_ratio(400_000) == 0.99
    assert loader._allowed_alias_ratio(4_000_000) == 0.10
    assert loader._allowed_alias_ratio(2_200_000) == pytest.approx(0.545)


def test_merge_keys_merge_as_yaml_says_without_copying() -> None:
    [doc] = documents("base: &b {x: 1, y: 2}\nmore: &m {y: 3, z: 4}\n"
                      "c: {<<: [*b, *m], z: 5}\nd: {<<: *b}\n")
    assert isinstance(doc, dict)
    assert doc["c"] == {"x": 1, "y": 2, "z": 5}  # earlier merged mappings win, own keys too
    assert doc["d"] == {"x": 1, "y": 2} and doc["d"] is not doc["base"]
    with pytest.raises(InputError, match="expected a mapping for merging"):
        documents("a: &a [1]\nb: {<<: *a}\n")


def test_recursive_alias_is_an_error() -> None:
    with pytest.raises(InputError, match="contains an alias to itself"):
        documents("a: &a [1, *a]\n")


# -- scalars and keys ------------------------------------------------------------------------


def test_timestamps_stay_strings() -> None:
    """Kubernetes converts YAML to JSON, where a timestamp is text."""
    [doc] = documents("t: 2026-01-02T03:04:05Z\nd: 2026-01-02\n")
    assert doc == {"t": "2026-01-02T03:04:05Z", "d": "2026-01-02"}


def test_base_60_numbers_stay_strings() -> None:
    """YAML 1.1 reads ``1:30`` as 90; Kubernetes' YAML (go-yaml) reads text, so
    ``minMember: 1:30`` is a wrong type, not 90."""
    [doc] = documents("a: 1:30\nb: -1:30\nc: 190:20:30.15\nd: 130\ne: 1.5\n")
    assert doc == {"a": "1:30", "b": "-1:30", "c": "190:20:30.15", "d": 130, "e": 1.5}


def test_repeated_keys_follow_the_mode(tmp_path: Path) -> None:
    text = NODE.format(name="n1") + "  name: n2\n"
    path = write(tmp_path, text)
    err = error_of(path)
    assert err.message == ('invalid YAML at line 5, column 3: key "name" already set in map '
                           "(--validate=warn allows it)")
    warned = load([path], validate="warn")
    assert [n.name for n in warned.nodes] == ["n2"]
    assert warned.warnings == [f'{path}[doc 0]: line 5: key "name" already set in map; '
                               "the last value is used"]
    quiet = load([path], validate="ignore")
    assert [n.name for n in quiet.nodes] == ["n2"] and quiet.warnings == []


# -- names and escaping ------------------------------------------------------------------


@pytest.mark.parametrize(("check", "valid", "invalid"), [
    (names.dns1123_subdomain, ["a", "a.b-c", "0-a", "a" * 253],
     ["", "A", "a_b", "-a", "a-", "a..b", "a" * 254, "a\n", "é"]),
    (names.dns1123_label, ["a", "a-b", "0", "a" * 63], ["a.b", "a" * 64, "A", "a\n"]),
    (names.dns1035_label, ["a", "a-0"], ["0a", "a.b", "a-"]),
    (names.qualified_name, ["a", "A_b.c-D", "example.com/Name", "a" * 63],
     ["", "/a", "a/", "a/b/c", "-a", "a" * 64, "Example.com/a", "a b", "a\n"]),
    (names.label_value, ["", "a", "A_b.c-D", "a" * 63], ["-a", "a b", "a" * 64, "\u0661"]),
])
def test_kubernetes_name_rules(check: names.Rule, valid: list[str],
                               invalid: list[str]) -> None:
    assert [v for v in valid if check(v)] == []
    assert [v for v in invalid if not check(v)] == []


def test_messages_are_kubernetes_own() -> None:
    assert names.dns1123_label("a.b") == ("must not contain dots",)
    assert names.qualified_name("a/b/c")[0].startswith("a valid label key must consist of")
    assert names.label_value("a" * 64)[0] == "must be no more than 63 bytes"


def test_errors_print_control_characters_escaped() -> None:
    err = InputError("invalid name 'x\x1b[2J'", file="f\u202e.yaml", doc=0,
                     obj="Node/x\x1b[2J", field="metadata.name")
    assert str(err) == ("f\\u202e.yaml[doc 0]: Node/x\\x1b[2J: metadata.name: "
                        "invalid name 'x\\x1b[2J'")
    assert names.printable("plain text: ok") == "plain text: ok"
    assert names.printable("a\nb\tc\x00") == "a\\nb\\tc\\x00"


def test_yaml_errors_stay_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, 'apiVersion: v1\nkind: Node\nmetadata: {name: "a\x07b"}\n')
    text = str(error_of(path))
    assert "\n" not in text and "\x07" not in text
    assert yaml.__version__  # PyYAML rejects the control character itself


@pytest.mark.parametrize("spacing", ["", "  "], ids=["compact", "spaced"])
def test_repeated_keys_in_json_follow_the_mode_too(tmp_path: Path, spacing: str) -> None:
    """A file starting with ``{`` is read by the JSON parser, which kept the last of two
    equal keys silently, even in strict mode."""
    text = spacing + ('{"apiVersion": "v1", "kind": "Node", '
                      '"metadata": {"name": "n1", "name": "n2"}}')
    path = write(tmp_path, text, "in.json")
    err = error_of(path)
    assert 'key "name" already set in map' in err.message, err.message
    warned = load([path], validate="warn")
    assert [n.name for n in warned.nodes] == ["n2"] and len(warned.warnings) == 1
    quiet = load([path], validate="ignore")
    assert [n.name for n in quiet.nodes] == ["n2"] and quiet.warnings == []


def test_a_huge_value_in_a_message_is_cut(tmp_path: Path) -> None:
    """A 5 MB label value is quoted in its error: the line stays short enough to read,
    with its start (where and what) and its end (the rule broken)."""
    value = "a" * 5_000_000
    path = write(tmp_path, NODE.format(name="n1") + f"  labels: {{x: {value}}}\n")
    text = str(error_of(path))
    assert len(text) < 3000, len(text)
    assert text.startswith(f"{path}[doc 0]: Node/n1: metadata.labels.x: invalid label value")
    assert "characters left out" in text
    assert text.endswith("aaa': must be no more than 63 bytes")


@pytest.mark.parametrize("kind", [
    "apiVersion: v1\nkind: Node\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nvalue: 1\n",
    "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\n",
])
def test_an_object_without_a_name_is_refused(tmp_path: Path, kind: str) -> None:
    """As the API server refuses it; a Queue without one was even taken for its own
    parent (an empty parent)."""
    err = error_of(write(tmp_path, kind + "metadata: {labels: {a: b}}\n"))
    assert "metadata.name: Required value: name or generateName is required" in str(err)
