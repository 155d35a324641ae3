"""Fuzzing the input path: every malformed file ends in a one-line error or a valid
result, within seconds, never a traceback, a crash or a hang.

The corpus is generated deterministically from every file in ``examples/`` (the Kthena,
Volcano PodGroup and Job, Workload API, Grove, KAI, Kueue and LWS ones) and from
``deploy/example-kthena-2p2d.yaml`` (dropped fields, wrong types, garbage and huge
quantities, counts beyond int32, bad and hostile names, unknown fields, deep nesting,
parent and member cycles, truncated and scrambled text, appended alias bombs), plus the
hand-written hostile files in ``corpus/``. Each case runs through ``gangsched validate``
and ``gangsched place`` in process, as a user would run them.
"""

from __future__ import annotations

import copy
import random
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
import typer
import typer.testing
import yaml
from typer.testing import CliRunner

from gangsched.api.errors import InputError
from gangsched.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CORPUS = Path(__file__).resolve().parent / "corpus"
HANG_SECONDS = 20  # a hang detector, not a performance bound

SOURCES: dict[str, tuple[Path, tuple[Path, ...]]] = {  # file, what place needs beside it
    "cluster": (EXAMPLES / "cluster-small.yaml", (EXAMPLES / "workload-gang.yaml",)),
    "kthena": (EXAMPLES / "kthena-2p2d.yaml", (EXAMPLES / "cluster-small.yaml",)),
    "hypernodes": (EXAMPLES / "volcano-hypernodes.yaml", (EXAMPLES / "volcano-podgroup.yaml",)),
    "podgroup": (EXAMPLES / "volcano-podgroup.yaml", (EXAMPLES / "volcano-hypernodes.yaml",)),
    "composite": (EXAMPLES / "workload-composite.yaml", (EXAMPLES / "cluster-small.yaml",)),
    "gang": (EXAMPLES / "workload-gang.yaml", (EXAMPLES / "cluster-small.yaml",)),
    "deploy": (ROOT / "deploy" / "example-kthena-2p2d.yaml",
               (EXAMPLES / "cluster-small.yaml",)),
    **{name: (EXAMPLES / f"{name}.yaml", (EXAMPLES / "cluster-small.yaml",)) for name in (
        "grove-podcliqueset", "grove-podgang", "kai-podgroup", "kueue-job", "kueue-jobset",
        "kueue-pod-group", "lws-exclusive", "volcano-job")},
    "kueue-queues": (EXAMPLES / "kueue-queues.yaml",
                     (EXAMPLES / "cluster-small.yaml", EXAMPLES / "kueue-job.yaml")),
}

WRONG_VALUES: list[Any] = ["x", "", 7, -1, 1.5, True, None, [], {}, ["x"], {"k": "v"},
                           2**31, 10**20, [[["deep"]]]]
GARBAGE_QUANTITIES: list[Any] = ["0x10", "1e2147483648", "1e-2147483648", "-1", "1Ki1",
                                 "１", "٣", "12 Gi", "1KiB", "Infinity", "nan", "", "+", ".",
                                 "Pi", "9" * 400, "1e99999999999999999999", 1e300, -5,
                                 "1.5", "0.0001", "\t1", "1\n"]
COUNTS: list[Any] = [-1, 0, 2**31 - 1, 2**31, 2**63, 10**30, "3", 3.5, True]
NAMES: list[Any] = ["Upper", "a" * 300, "bad name", "é", "x\x1b[31mred", "a\u202eb",
                    "", "-start", "dots..", "a/b/c", "ok.name", "\x00", 123]
QUOTA_KEYS = {"nominalQuota", "borrowingLimit", "lendingLimit"}  # Kueue ClusterQueue
COUNT_KEYS = {"replicas", "workerReplicas", "minMember", "minSubGroups", "subGroupSize",
              "minCount", "minGroupCount", "priority", "tier", "highestTierAllowed",
              "containerPort", "restartGracePeriodSeconds"}
QUANTITY_PARENTS = {"requests", "limits", "allocatable", "capacity", "minResources",
                    "overhead"}
WEIRD_TEXT = ["\t", "\x00", "\x1b", "\u202e", "{", "[", "]", "*a", "&a ", "!!binary ",
              "'", '"', ": ", "- ", "\n  ", "<<: *x\n", "%", "@", "\ufeff", "? "]
BOMB = (
    "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: bomb\n  annotations:\n"
    "    a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"    a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 8))
)

Path_ = tuple[Any, ...]


# -- generating variants -----------------------------------------------------------------


def walk(obj: Any, prefix: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every nested value with its path (keys and list indices)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield (*prefix, key), value
            yield from walk(value, (*prefix, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield (*prefix, i), value
            yield from walk(value, (*prefix, i))


def parent_of(docs: list[Any], path: Path_) -> Any:
    node = docs
    for step in path[:-1]:
        node = node[step]
    return node


def set_at(docs: list[Any], path: Path_, value: Any) -> None:
    parent_of(docs, path)[path[-1]] = value


def drop_at(docs: list[Any], path: Path_) -> None:
    parent = parent_of(docs, path)
    if isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent.pop(path[-1])


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


Mutator = Callable[[random.Random, list[Any]], bool]  # False: nothing to mutate


def _pick(rng: random.Random, docs: list[Any],
          want: Callable[[Path_, Any], bool]) -> Path_ | None:
    found = [p for p, v in walk(docs) if len(p) > 1 and want(p, v)]
    return rng.choice(found) if found else None


def drop_field(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: isinstance(p[-1], str))
    if path is not None:
        drop_at(docs, path)
    return path is not None


def wrong_type(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: True)
    if path is not None:
        set_at(docs, path, copy.deepcopy(rng.choice(WRONG_VALUES)))
    return path is not None


def garbage_quantity(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: len(p) > 2 and (
        p[-2] in QUANTITY_PARENTS or p[-1] in QUOTA_KEYS))
    if path is not None:
        set_at(docs, path, rng.choice(GARBAGE_QUANTITIES))
    return path is not None


def huge_count(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: p[-1] in COUNT_KEYS)
    if path is not None:
        set_at(docs, path, rng.choice(COUNTS))
    return path is not None


def bad_name(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: p[-1] in ("name", "namespace", "nodeLabel", "key")
                 or (len(p) > 2 and p[-2] in ("labels", "matchLabels", "nodeSelector")))
    if path is None:
        return False
    name = rng.choice(NAMES)
    if len(path) > 2 and path[-2] in ("labels", "matchLabels") and rng.random() < 0.5:
        parent = parent_of(docs, path)
        parent[name if isinstance(name, str) else str(name)] = parent.pop(path[-1])
    else:
        set_at(docs, path, name)
    return True


def unknown_field(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: isinstance(v, dict) and bool(v))
    if path is None:
        return False
    holder = parent_of(docs, (*path, None))
    key = rng.choice(list(holder))
    holder[rng.choice([f"{key}s", key.lower() if key != key.lower() else key.upper(),
                       "bogusField", f"x-{key}"])] = "surprise"
    return True


def deep_value(rng: random.Random, docs: list[Any]) -> bool:
    path = _pick(rng, docs, lambda p, v: True)
    if path is not None:
        set_at(docs, path, nested(rng.choice([95, 101, 140])))
    return path is not None


def cycle(rng: random.Random, docs: list[Any]) -> bool:
    """Parent references (CompositePodGroups) or HyperNode members that loop."""
    groups = [d for d in docs if isinstance(d, dict)
              and d.get("kind") in ("CompositePodGroup", "PodGroup")
              and "parentCompositePodGroupName" in (d.get("spec") or {})]
    composites = [d for d in docs if isinstance(d, dict) and d.get("kind") == "CompositePodGroup"]
    hypernodes = [d for d in docs if isinstance(d, dict) and d.get("kind") == "HyperNode"]
    if composites:
        target = rng.choice(composites)
        if rng.random() < 0.5 or len(composites) == 1:  # itself, or a child made its parent
            other = target if rng.random() < 0.5 or not groups else rng.choice(groups)
            other_kind = "CompositePodGroup"
            other = {**copy.deepcopy(other), "kind": other_kind} if other is not target else other
            if other is not target:
                other["spec"].pop("schedulingPolicy", None)
                docs.append(other)
        else:
            other = rng.choice([c for c in composites if c is not target])
        target["spec"]["parentCompositePodGroupName"] = other["metadata"]["name"]
        if other is not target:
            other["spec"]["parentCompositePodGroupName"] = target["metadata"]["name"]
        return True
    if hypernodes:
        low = min(hypernodes, key=lambda h: h["spec"]["tier"])
        high = max(hypernodes, key=lambda h: h["spec"]["tier"])
        low["spec"]["members"].append(
            {"type": "HyperNode", "selector": {"exactMatch": {"name": high["metadata"]["name"]}}})
        if rng.random() < 0.5:
            low["spec"]["tier"] = high["spec"]["tier"] + 1
        return True
    return False


STRUCTURED: dict[str, tuple[Mutator, int]] = {  # name: (mutator, variants per source)
    "drop": (drop_field, 8),
    "type": (wrong_type, 10),
    "quantity": (garbage_quantity, 7),
    "count": (huge_count, 7),
    "name": (bad_name, 7),
    "unknown": (unknown_field, 5),
    "deep": (deep_value, 3),
    "cycle": (cycle, 4),
}


def text_variants(rng: random.Random, text: str) -> Iterator[tuple[str, str]]:
    lines = text.splitlines(keepends=True)
    for i in range(4):
        yield f"truncate-{i}", text[: rng.randrange(len(text))]
    for i in range(3):
        at = rng.randrange(len(lines))
        yield f"drop-line-{i}", "".join(lines[:at] + lines[at + 1:])
    for i in range(3):
        at = rng.randrange(len(lines))
        yield f"repeat-line-{i}", "".join(lines[: at + 1] + lines[at:])
    for i in range(6):
        at = rng.randrange(len(text))
        yield f"insert-{i}", text[:at] + rng.choice(WEIRD_TEXT) + text[at:]
    yield "alias-bomb", text + "\n" + BOMB
    yield "deep-flow", text + "\n---\n" + "[" * 40_000 + "]" * 40_000 + "\n"
    yield "deep-block", text + "\n---\n" + "- " * 40_000 + "x\n"
    yield "deep-json", '{"a": ' * 40_000 + "1" + "}" * 40_000


@dataclass(frozen=True)
class Case:
    id: str
    data: bytes
    context: tuple[Path, ...]


def cases() -> list[Case]:
    out: list[Case] = []
    for source, (path, context) in SOURCES.items():
        text = path.read_text()
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
        rng = random.Random(f"gangsched-fuzz-{source}")
        for kind, (mutate, count) in STRUCTURED.items():
            for i in range(count):
                variant = copy.deepcopy(docs)
                if not mutate(rng, variant):
                    break
                data = yaml.safe_dump_all(variant, sort_keys=False, allow_unicode=True)
                out.append(Case(f"{source}-{kind}-{i}", data.encode(), context))
        for name, data in text_variants(rng, text):
            out.append(Case(f"{source}-{name}", data.encode("utf-8", "surrogatepass"),
                            context))
    for path in sorted(CORPUS.iterdir()):
        out.append(Case(f"corpus-{path.stem}", path.read_bytes(),
                        (EXAMPLES / "cluster-small.yaml",)))
    return out


CASES = cases()


# -- running them ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def invoke() -> Iterator[Callable[..., Any]]:
    """``gangsched`` in process, its click command built once (typer rebuilds it on every
    invoke otherwise, which would dominate the run)."""
    command = typer.main.get_command(app)
    patch = pytest.MonkeyPatch()
    patch.setattr(typer.testing, "_get_command", lambda _app: command)
    runner = CliRunner(env={"COLUMNS": "200"})

    def run(*args: str | Path) -> Any:
        return runner.invoke(app, [str(a) for a in args])

    yield run
    patch.undo()


def _hang(signum: int, frame: FrameType | None) -> None:
    raise TimeoutError(f"no answer within {HANG_SECONDS} s")


def check(result: Any, command: str, case: Case) -> None:
    """Exit 0 or 1 (place: 3 too); every stderr line one ``error:`` or ``warning:`` line;
    on 1, one error (validate lists every problem, one line each); never a traceback."""
    where = f"{command} {case.id}: {result.output[-2000:]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        where, result.exception)
    # place exits 3 when a workload is rejected or waiting: a result, not an error
    assert result.exit_code in ((0, 1, 3) if command == "place" else (0, 1)), where
    assert "Traceback" not in result.output, where
    lines = result.stderr.splitlines()
    assert all(line.startswith(("error: ", "warning: ")) for line in lines), where
    errors = [line for line in lines if line.startswith("error: ")]
    if result.exit_code in (0, 3):
        assert errors == [], where
    elif command == "place":
        assert len(errors) == 1, where
    else:
        assert errors, where
    assert "\x1b" not in result.output and "\u202e" not in result.output, where


def test_corpus_is_several_hundred_cases() -> None:
    assert len(CASES) >= 400
    assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_input_ends_in_one_line_or_a_result(case: Case, invoke: Callable[..., Any],
                                                      tmp_path: Path) -> None:
    path = tmp_path / f"{case.id}.yaml"
    path.write_bytes(case.data)
    previous = signal.signal(signal.SIGALRM, _hang)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    try:
        check(invoke("validate", path), "validate", case)
        check(invoke("place", *case.context, path), "place", case)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_fast_checked_parse_never_accepts_what_the_reference_check_rejects(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader checks YAML documents against their kind's schema while building them and
    leaves anything doubtful to ``schema.check``; on every variant, what the fast path
    accepted must pass the reference check in strict mode. (Every variant goes through
    libyaml here: the plain block YAML reader, which leaves the check to ``schema.check``,
    is switched off.)"""
    from gangsched.api import fastyaml, loader, schema
    from gangsched.frontends import KINDS
    monkeypatch.setattr(fastyaml, "documents", lambda text: None)
    accepted = 0
    for case in CASES:
        try:
            text = case.data.decode("utf-8")
            parsed = list(loader._parse(text, case.id, "strict", [], KINDS))
        except (InputError, UnicodeDecodeError):
            continue
        for _, data, checked in parsed:
            if not checked:
                continue
            assert isinstance(data, dict)
            root = KINDS.entry(data["apiVersion"], data["kind"])
            assert root is not None and root.schema is not None
            schema.check(data, root.schema, "strict")  # raises if the fast path was wrong
            accepted += 1
    assert accepted > 1000


def test_fast_yaml_reader_reads_every_variant_as_libyaml_or_declines() -> None:
    """The loader reads plain block YAML without libyaml (:mod:`gangsched.api.fastyaml`);
    on every variant, what that reader accepts is exactly what libyaml and the loader's
    constructor build, and nothing they reject."""
    from gangsched.api import fastyaml, loader

    read = 0
    for case in CASES:
        try:
            text = case.data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        got = fastyaml.documents(text)
        if got is None:
            continue
        parser = loader._Loader(text, "ignore")
        try:
            want = []
            while parser.check_data():  # raises if the fast reader accepted bad YAML
                want.append(parser.get_data())
        finally:
            parser.dispose()
        assert got == want, case.id
        assert repr(got) == repr(want), case.id  # the same types (True is not 1)
        read += 1
    assert read > 150
