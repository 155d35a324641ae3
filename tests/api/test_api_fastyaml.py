"""The fast reader of plain block YAML (:mod:`gangsched.api.fastyaml`) reads a text
exactly as libyaml and the loader's constructor do, or leaves it to them: on the examples,
the generated benchmark inputs, hand-picked edge cases and thousands of random mutations
of manifests, whatever it accepts equals the reference's documents (values and types),
and it accepts nothing the reference rejects. Through the loader, inputs and errors are
the same with and without it."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

import pytest

from gangsched.api import fastyaml
from gangsched.api import loader as loader_module
from gangsched.api.errors import InputError
from gangsched.api.loader import _Loader
from gangsched.api.schema import Mode
from gangsched.bench.place_e2e import write_inputs
from gangsched.frontends import load

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))


def reference(text: str) -> list[Any]:
    """libyaml and the loader's constructor (repeated keys allowed: the fast reader
    leaves those to the reference anyway)."""
    loader = _Loader(text, "ignore")
    try:
        docs = []
        while loader.check_data():
            docs.append(loader.get_data())
        return docs
    finally:
        loader.dispose()


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (True is not 1) and keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def agrees(text: str) -> bool:
    """The fast reader's documents equal the reference's, or it declined; True if it read
    the text."""
    got = fastyaml.documents(text)
    if got is None:
        return False
    try:
        want = reference(text)
    except Exception as err:
        pytest.fail(f"accepted what the reference rejects ({err}):\n{text}")
    assert same(got, want), f"read differently:\n{text}\nfast: {got!r}\nreference: {want!r}"
    return True


# -- what it reads --------------------------------------------------------------------------

READ = [
    "",
    "# only a comment\n",
    "---\n",
    "---\n---\n",
    "a: 1\n---\n",
    "# head\n---\na: 1\n",
    "a: 1\n---\nb: 2\n",
    "--- # comment\na: 1\n",
    "a:\n  b:\n    c: d\n  e: f\ng: h\n",
    "a:\n- x\n- y\nb: z\n",
    "a:\n  - x\n  -   y\n",
    "a:\n- b: 1\n  c: 2\n- d: 3\n",
    "a:\n- b:\n  - c\n  d: e\n",
    "a:\nb:\n",
    "a:\n# comment\n  b: 1\n",
    "a: 'x'\nb: \"y\"\nc: ''\nd: \"\"\ne: {}\nf: []\n",
    "a: x y  z\nb: a#b\nc: http://x:80/p?q=1&r=[2]\nd: a,b\ne: -1\nf: +1\n",
    "a: yes\nb: No\nc: on\nd: ~\ne: null\nf: 1e3\ng: 0x1F\nh: 0o17\ni: 1_000\n",
    "a: 1:30\nb: .inf\nc: -.inf\nd: .nan\ne: 2024-01-01\nf: 2024-01-01T00:00:00Z\n",
    "a: 010\nb: 0b101\nc: 1.\nd: .5\ne: 1e\nf: TRUE\ng: Null\nh: nan\n",
    "\"quoted key\": 1\n'single': 2\nkubernetes.io/hostname: n\n",
    "a: x # trailing comment\nb: 'y' # c\nc: # nothing\n",
    "a: x   \nb:   y\n",
    "a: b\n  # indented comment\nc: d\n",
    "key: value\nlist:\n- - nested\n",
    "a: (x)\nb: $x\nc: ^x\nd: \\x\ne: =\nf: <<\ng: <x\nh: x~\ni: ~x\n",
]


@pytest.mark.parametrize("text", READ)
def test_reads_as_the_reference_or_declines(text: str) -> None:
    agrees(text)


@pytest.mark.parametrize("text", [
    "a: 1\n", "a:\n  b: []\n", "a:\n- x\n", "---\na: 1\n",
    "a: 'x'\n", "a: x y\n", "a: b\n---\n",
])
def test_reads_the_plain_block_yaml_of_manifests(text: str) -> None:
    assert agrees(text)


DECLINED = [
    "a: &x 1\nb: *x\n",  # anchors and aliases
    "a: !!str 1\n",  # tags
    "a: |\n  text\n",  # block scalars
    "a: >\n  text\n",
    "a: {b: 1}\n",  # flow collections
    "a: [1, 2]\n",
    "a: \"esc\\\"aped\"\n",  # escapes
    "a: 'it''s'\n",
    "a: multi\n  line\n",  # continuation
    "a: 1\na: 2\n",  # repeated key
    "a: 1\n\"a\": 2\n",
    "1: a\n",  # keys that are not strings
    "true: a\n",
    "null: a\n",
    "<<: {a: 1}\n",
    "a:\tb\n",  # tabs, CR, control characters, non-ASCII
    "a: b\r\n",
    "a: \x1b[31m\n",
    "a: é\n",
    "%YAML 1.1\n---\na: 1\n",  # directives, document end
    "a: 1\n...\n",
    "--- a: 1\n",
    "  ---\n",
    "- a\n- b\n",  # a root that is no mapping
    "scalar\n",
    "  a: 1\n",
    "a: 1\n  b: 2\n",  # bad indentation
    "a:\n  b: 1\n  - c\n",
    "a:\n  - b\n  c: d\n",
    "? a\n: b\n",  # explicit keys
    "a: b: c\n",
    "a:b\n",
    "a: -\n",
    "-\n",
    "a: @x\n",
    "a: `x`\n",
    "a: %x\n",
    "a: =\n",  # the YAML 1.1 value tag
    "x" * 5000 + ": 1\n",  # long lines
]


@pytest.mark.parametrize("text", DECLINED)
def test_declines_what_only_the_reference_reads_or_rejects(text: str) -> None:
    assert fastyaml.documents(text) is None


def test_declines_nesting_beyond_its_limit() -> None:
    deep = "".join(f"{'  ' * i}k{i}:\n" for i in range(fastyaml.MAX_NESTING + 5)) + (
        "  " * (fastyaml.MAX_NESTING + 5) + "v: 1\n")
    assert fastyaml.documents(deep) is None
    assert agrees("".join(f"{'  ' * i}k{i}:\n" for i in range(20)) + "  " * 20 + "v: 1\n")


def test_reads_the_examples_and_the_benchmark_inputs(tmp_path: Path) -> None:
    read = sum(agrees(p.read_text()) for p in EXAMPLES)
    assert read >= len(EXAMPLES) // 2  # the others use flow mappings, anchors, ...
    for fmt in ("workload", "volcano"):
        (tmp_path / fmt).mkdir()
        for path in write_inputs(tmp_path / fmt, 250, 4, 4, fmt):
            assert agrees(path.read_text()), path


# -- random mutations of manifests ----------------------------------------------------------

SCALARS = [
    "yes", "No", "on", "OFF", "y", "n", "~", "null", "Null", "1e3", "0x1F", "0o17", "1_000",
    "1:30", ".inf", "-.inf", ".nan", "2024-01-01", "2024-01-01T00:00:00Z", "'q'", '"dq"',
    "\"a'b\"", "'a\"b'", "{}", "[]", "[a]", "{a: 1}", "a b", "a  b", "a#b", "a #b", "a:b",
    "a: b", "-1", "+1", ".5", "=", "<<", "~x", "x~", "(x)", "$x", "^x", "\\x", "-", "- x",
    "--", "---", "...", "'", '"', "''", '""', "'a''b'", '"a\\"b"', "|", ">", "&a x", "*a",
    "!t x", "%x", "@x", "`x`", "? x", ": x", "0", "00", "010", "0b101", "+.5", "1.", "1e",
    "true", "True", "TRUE", "nan", "x:", "# c", "0.0001", "1Ki", "32Gi", "100m", "-x", "?x",
    ":x", ",x", "[x", "x]", "{x", "x}", "x,y", "1,000", "0:0", "1e-3", "+1e3", "0b2",
]
KEYS = ['"q k"', "'s'", "1", "true", "null", "~", "<<", "=", "a b", "-k", ".k", "k.", "_k",
        "k:x", "'k: v'", '"k#"', "K", "name", "kind", "k-1", "a/b", "é", "y"]
TOKENS = ["#", " #", ": ", ":", "- ", "-", "'", '"', "{", "}", "[", "]", ",", "&", "*", "!",
          "|", ">", "%", "@", "`", "?", " ", "  ", "\t", "---", "...", "\\", "~", "<<"]
LINES = ["---", "--- # doc", "  ---", "---x", "...", "%YAML 1.1", "# comment", "   # c",
         "", "   ", "-", "- ", "- x", "  - x", "x", "k:", "  k:", "k: v", "    k: v",
         "- k: v", "  - - x", "? k", ": v"]


def _mutate(rng: random.Random, lines: list[str]) -> None:
    i = rng.randrange(len(lines))
    line = lines[i]
    what = rng.randrange(9)
    if what == 0:  # indentation
        lines[i] = " " * rng.randint(0, 3) + line.lstrip(" ") if rng.random() < 0.5 else (
            " " * rng.randint(1, 3) + line)
    elif what == 1 and ": " in line:  # a value
        lines[i] = line.split(": ", 1)[0] + ": " + rng.choice(SCALARS)
    elif what == 2 and ":" in line:  # a key
        indent = line[: len(line) - len(line.lstrip(" -"))]
        lines[i] = indent + rng.choice(KEYS) + ":" + line.split(":", 1)[1]
    elif what == 3:  # a token somewhere
        at = rng.randint(0, len(line))
        lines[i] = line[:at] + rng.choice(TOKENS) + line[at:]
    elif what == 4:
        lines.insert(i, rng.choice(LINES))
    elif what == 5:
        lines.insert(i, line)
    elif what == 6 and len(lines) > 1:
        del lines[i]
    elif what == 7:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    else:  # a scalar item, or a key without its value
        lines[i] = line.rstrip() + rng.choice(["", " ", "  # c", ":", " x", " - y"])


def _bases(tmp: Path) -> list[str]:
    texts = [p.read_text() for p in EXAMPLES]
    for fmt in ("workload", "volcano"):
        (tmp / fmt).mkdir()
        texts += [p.read_text() for p in write_inputs(tmp / fmt, 12, 3, 2, fmt)]
    texts.append("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n"
                 "  metadata:\n    name: a\n    labels: {}\n  status:\n    conditions:\n"
                 "    - type: Ready\n      status: \"True\"\n    allocatable:\n"
                 "      cpu: '4'\n      pods: 110\n")
    return texts


def test_random_mutations_are_read_as_the_reference_reads_them(tmp_path: Path) -> None:
    rng = random.Random("gangsched-fastyaml")
    bases = _bases(tmp_path)
    read = declined = 0
    for _ in range(2500):
        lines = rng.choice(bases).split("\n")
        for _ in range(rng.randint(1, 3)):
            _mutate(rng, lines)
        if agrees("\n".join(lines)):
            read += 1
        else:
            declined += 1
    assert read > 300 and declined > 300  # both sides of the line were exercised


# -- through the loader ---------------------------------------------------------------------


def _loaded(paths: list[Path], validate: Mode | None = None) -> Any:
    try:
        inputs = load(paths, validate=validate)
    except InputError as err:
        return str(err)
    return ([(d.index, d.kind, d.name, d.path) for d in inputs.documents], inputs.nodes,
            inputs.pods, inputs.warnings, sorted(inputs.objects))


def _load_both(monkeypatch: pytest.MonkeyPatch, paths: list[Path],
               validate: Mode | None = None) -> tuple[Any, Any]:
    """(loaded with the fast reader, loaded without it); with it, also the same as with
    the fast reader but every document checked by schema.check (no plans)."""
    fast = _loaded(paths, validate)
    with monkeypatch.context() as m:
        m.setattr(loader_module._Judge, "__call__", lambda self, doc, skeleton, values: False)
        unplanned = _loaded(paths, validate)
        m.setattr(fastyaml, "checked_documents", lambda text, judge: None)
        slow = _loaded(paths, validate)
    assert fast == unplanned
    return fast, slow


def test_loads_the_same_inputs_with_and_without_it(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    paths = write_inputs(tmp_path, 300, 5, 4, "workload")
    fast, slow = _load_both(monkeypatch, paths)
    assert not isinstance(fast, str) and fast == slow
    fast, slow = _load_both(monkeypatch, EXAMPLES)
    assert fast == slow


BAD = [
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nstatus:\n  allocatable:\n"
    "    cpu: 4x\n",
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nstatus:\n  allocatabel: {}\n",
    "---\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: Bad_Name\nspec:\n"
    "  containers: []\n",
    "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n"
    "  - name: c\n    resources:\n      requests:\n        cpu: 2\n      limits:\n"
    "        cpu: 1\n",
    "apiVersion: v1\nkind: Nodes\nmetadata:\n  name: n\n",
    "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata:\n    name: n\n"
    "    labels:\n      bad.key-: x\n",
    "kind: Node\nmetadata:\n  name: n\n",
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\n  labels: x\n",
    "apiVersion: v1\nkind: Node\nmetadata:\n  name: n\nspec:\n  unschedulable: \"yes\"\n",
]


@pytest.mark.parametrize("text", BAD)
def test_bad_input_gives_the_same_error(text: str, monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert fastyaml.documents(text) is not None  # the fast reader reads it
    fast, slow = _load_both(monkeypatch, [path])
    assert isinstance(fast, str) and fast == slow


def test_checked_documents_are_judged_as_schema_check_judges_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A document whose skeleton's plan passes it skips schema.check: on random
    mutations of the values, keys and lines of the benchmark inputs and the examples,
    the loader gives the same inputs, warnings or error with plans, without them (every
    document checked by schema.check) and without the fast reader, in every mode."""
    rng = random.Random("gangsched-plans")
    bases = _bases(tmp_path)
    path = tmp_path / "mutated.yaml"
    loaded = failed = 0
    for n in range(400):
        lines = rng.choice(bases).split("\n")
        for _ in range(rng.randint(1, 2)):
            if n % 4:  # a value or a key late in the file: its skeleton was seen before
                i = rng.randrange(len(lines) // 2, len(lines))
                if ": " in lines[i]:
                    key, _, _ = lines[i].partition(": ")
                    lines[i] = key + ": " + rng.choice(SCALARS) if n % 4 != 3 else (
                        key.rsplit(" ", 1)[0] + " " + rng.choice(KEYS) + ": x")
            else:
                _mutate(rng, lines)
        text = "\n".join(lines)
        path.write_text(text)
        mode: Mode = ("strict", "warn", "ignore")[n % 3]
        fast, slow = _load_both(monkeypatch, [path], mode)
        assert fast == slow, text
        if fastyaml.documents(text) is not None:
            loaded += not isinstance(fast, str)
            failed += isinstance(fast, str)
    assert loaded > 50 and failed > 50  # both sides of the line were exercised


@pytest.mark.parametrize(("value", "message"), [
    ("cpu: 4x", "status.allocatable.cpu"),
    ("cpu: 4\n    pods: true", "status.allocatable.pods"),
    ("cpu: '1'\n    pods: [1]", "status.allocatable.pods"),
])
def test_a_bad_scalar_in_a_known_skeleton_is_still_an_error(
        tmp_path: Path, value: str, message: str) -> None:
    """Two nodes of one skeleton: the first plans it, the second breaks the plan."""
    node = ("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n"
            "  labels:\n    rack: {rack}\nstatus:\n  allocatable:\n    {value}\n")
    good = node.format(name="a", rack="r1", value="cpu: '4'\n    pods: '9'")
    path = tmp_path / "nodes.yaml"
    path.write_text(good + node.format(name="b", rack="r2", value=value))
    with pytest.raises(InputError, match=re.escape(message)) as caught:
        load([path])
    assert "[doc 1]: Node/b" in str(caught.value)
    path.write_text(good + node.format(name="b", rack="-bad-", value="cpu: '4'\n    pods: '9'"))
    with pytest.raises(InputError, match=r"metadata\.labels\.rack"):
        load([path])


@pytest.mark.parametrize("bad", [0, 2], ids=["first-node", "a-later-node"])
def test_a_node_resource_without_a_domain_must_be_standard(tmp_path: Path, bad: int) -> None:
    """Kubernetes' validateResourceName: ``gpu`` is neither standard nor fully qualified
    (a Pod asking for it is refused too), on the fast path and the long one alike."""
    node = ("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n{i}\n"
            "status:\n  allocatable:\n    cpu: '4'\n    {gpu}: '1'\n    hugepages-2Mi: 1Gi\n")
    path = tmp_path / "nodes.yaml"
    path.write_text("".join(node.format(i=i, gpu="gpu" if i == bad else "nvidia.com/gpu")
                            for i in range(3)))
    with pytest.raises(InputError, match="must be a standard resource type") as caught:
        load([path])
    assert f"[doc {bad}]: Node/n{bad}: status.allocatable.gpu" in str(caught.value)
