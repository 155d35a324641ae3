"""Load Kubernetes YAML into typed inputs, dispatching each object by apiVersion/kind.

Front-end modules add kinds with :func:`register`; a handler parses one
:class:`Document` and adds what it found to the :class:`Inputs` being built. Every error
names the file, the document (0-based YAML document index), ``Kind/name`` and the field.
:func:`load` either returns complete inputs or raises: nothing is half-applied.
"""

from __future__ import annotations

import functools
import importlib
import json
import operator
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from gangsched.api.errors import InputError
from gangsched.api.objects import (
    as_list,
    as_mapping,
    mappings,
    parse_node,
    parse_pod,
    required_str,
)
from gangsched.api.types import Node, Pod

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available
_STR, _SEQ, _MAP = (f"tag:yaml.org,2002:{t}" for t in ("str", "seq", "map"))
_MERGE = "tag:yaml.org,2002:merge"


@functools.lru_cache(maxsize=8192)
def _plain_scalar_tag(value: str) -> str:
    """The implicit tag of a plain scalar (``SafeLoader`` rules); values repeat a lot."""
    for tag, regexp in yaml.SafeLoader.yaml_implicit_resolvers.get(value[:1], ()):
        if regexp.match(value):
            return str(tag)
    return _STR


class _Loader(_BaseLoader):
    """``SafeLoader`` semantics, more than twice as fast on Kubernetes manifests.

    Strings, mappings and sequences (nearly every node) are built directly instead of
    through the generic constructor; anything else (ints, bools, timestamps, merge keys,
    explicit tags) goes to ``SafeConstructor`` unchanged.
    """

    # libyaml's composer calls these around every node; SafeLoader has no path resolvers,
    # so they do nothing. Built-ins of the right arity skip ~1M Python calls per 15k nodes.
    descend_resolver = staticmethod(operator.is_)
    ascend_resolver = staticmethod(tuple)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # BaseResolver.resolve without path resolvers.
        if kind is yaml.ScalarNode:
            return _plain_scalar_tag(value) if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def construct_document(self, node: yaml.Node) -> Any:
        try:
            return self._build(node)
        except RecursionError:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                "document is recursive (an alias inside itself) or too deep",
                node.start_mark,
            ) from None
        finally:  # what BaseConstructor.construct_document resets
            self.constructed_objects: dict[yaml.Node, Any] = {}
            self.recursive_objects: dict[yaml.Node, None] = {}

    def _build(self, node: yaml.Node) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        if tag == _MAP and isinstance(node, yaml.MappingNode):
            return self._build_mapping(node)
        if tag == _SEQ and isinstance(node, yaml.SequenceNode):
            return [item.value if item.tag == _STR else self._build(item) for item in node.value]
        return self.construct_object(node, deep=True)

    def _build_mapping(self, node: yaml.MappingNode) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in node.value:  # string keys and values inline: most of the nodes
            if key.tag == _STR:
                name = key.value
            elif key.tag == _MERGE:
                return dict(self.construct_object(node, deep=True))
            else:
                name = self._hashable_key(node, key)
            result[name] = value.value if value.tag == _STR else self._build(value)
        return result

    def _hashable_key(self, mapping: yaml.MappingNode, key: yaml.Node) -> Any:
        name = self._build(key)
        try:
            hash(name)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                mapping.start_mark,
                "found an unhashable key",
                key.start_mark,
            ) from None
        return name


YAML_SUFFIXES = (".yaml", ".yml", ".json")

FRONT_ENDS_PACKAGE = "gangsched.frontends"
"""Its ``load_front_ends()`` imports the front-end modules, which register their kinds."""


@dataclass
class Document:
    """One Kubernetes object from a YAML document (or an item of a ``*List``)."""

    file: str
    index: int  # YAML document index in the file (0-based), also for List items
    obj: Mapping[str, Any]
    api_version: str
    kind: str
    name: str  # metadata.name, "" when missing
    path: str = ""  # field path of the object inside the document, e.g. "items[3]"

    @property
    def label(self) -> str | None:
        """``Kind/name``, or whichever of the two is known."""
        return "/".join(part for part in (self.kind, self.name) if part) or None

    @property
    def where(self) -> str:
        return f"{self.file}[doc {self.index}]" + (f" {self.path}" if self.path else "")

    def locate(self, err: InputError) -> InputError:
        """``err`` (raised while parsing this object) located at this document.

        An error that already names a file is returned unchanged.
        """
        if err.file is not None:
            return err
        return err.located(
            file=self.file, doc=self.index, obj=self.label, field_prefix=self.path or None
        )

    def error(self, message: str, field: str | None = None) -> InputError:
        """An error about ``field`` (a path inside the object) of this document."""
        return self.locate(InputError(message, field=field))


@dataclass
class Inputs:
    """Everything loaded: nodes, pods, topology levels and front-end objects."""

    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)
    topology_levels: list[str] | None = None  # node label keys, widest first
    topology_source: str | None = None  # where topology_levels came from
    objects: dict[str, list[object]] = field(default_factory=dict)  # other kinds, by kind
    documents: list[Document] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _claimed: dict[tuple[str, str], Document] = field(default_factory=dict, repr=False)

    def claim(self, doc: Document, key: str | None = None) -> None:
        """Record that ``doc`` defines ``doc.kind`` ``key`` (default: its name).

        Raises an InputError when an earlier document already defined it.
        """
        ident = (doc.kind, key or doc.name)
        first = self._claimed.setdefault(ident, doc)
        if first is not doc:
            raise doc.error(f"duplicate {doc.kind} {ident[1]!r}, first defined at {first.where}")

    def add_object(self, doc: Document, value: object) -> None:
        """Keep a parsed front-end object under its kind."""
        self.objects.setdefault(doc.kind, []).append(value)


Handler = Callable[[Document, Inputs], None]


@dataclass(frozen=True)
class _Registration:
    kind: str
    api_versions: tuple[str, ...] | None  # None: any group version
    handler: Handler


_REGISTRY: dict[str, list[_Registration]] = {}


def register(kind: str, api_versions: tuple[str, ...] | None, handler: Handler) -> None:
    """Handle objects of ``kind`` with these apiVersions (``None``: any).

    Registering the same kind and versions again replaces the handler.
    """
    entries = _REGISTRY.setdefault(kind, [])
    entries[:] = [e for e in entries if e.api_versions != api_versions]
    entries.append(_Registration(kind, api_versions, handler))


def _ensure_front_ends() -> None:
    """Register the front-ends' kinds. Imported lazily: front-ends sit above ``api``."""
    try:
        package = importlib.import_module(FRONT_ENDS_PACKAGE)
    except ModuleNotFoundError as err:
        if err.name != FRONT_ENDS_PACKAGE:
            raise
        return
    package.load_front_ends()


def supported_kinds() -> list[str]:
    """``apiVersion/Kind`` of everything :func:`load` understands (``*/Kind`` for any)."""
    _ensure_front_ends()
    return sorted(
        f"{version}/{entry.kind}"
        for entries in _REGISTRY.values()
        for entry in entries
        for version in (entry.api_versions or ("*",))
    )


def _handler_for(api_version: str, kind: str) -> Handler | None:
    entries = _REGISTRY.get(kind, [])
    for entry in entries:
        if entry.api_versions is not None and api_version in entry.api_versions:
            return entry.handler
    return next((e.handler for e in entries if e.api_versions is None), None)


# -- built-in kinds --------------------------------------------------------------------


def _handle_node(doc: Document, inputs: Inputs) -> None:
    node = parse_node(doc.obj)
    inputs.claim(doc)
    inputs.nodes.append(node)


def _handle_pod(doc: Document, inputs: Inputs) -> None:
    pod = parse_pod(doc.obj)
    inputs.claim(doc, pod.key)
    inputs.pods.append(pod)


def _topology_levels(doc: Document) -> list[str]:
    spec = as_mapping(doc.obj.get("spec"), "spec")
    entries = mappings(spec.get("levels"), "spec.levels")
    levels = [required_str(item, "nodeLabel", path) for item, path in entries]
    if not levels:
        raise InputError("must list at least one level", field="spec.levels")
    for i, label in enumerate(levels):
        if label in levels[:i]:
            raise InputError(f"duplicate {label!r}", field=f"spec.levels[{i}].nodeLabel")
    return levels


def _handle_topology(doc: Document, inputs: Inputs) -> None:
    """Kueue or KAI ``Topology``: ``spec.levels[].nodeLabel``, widest level first."""
    levels = _topology_levels(doc)
    source = f"{doc.where} {doc.api_version} {doc.label}"
    if inputs.topology_levels is not None and inputs.topology_levels != levels:
        raise InputError(
            f"topology levels {levels} disagree with {inputs.topology_levels} "
            f"from {inputs.topology_source}",
            field="spec.levels",
        )
    if inputs.topology_levels is None:
        inputs.topology_levels, inputs.topology_source = levels, source
    inputs.add_object(doc, levels)


register("Node", ("v1",), _handle_node)
register("Pod", ("v1",), _handle_pod)
register(
    "Topology",
    ("kueue.x-k8s.io/v1alpha1", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"),
    _handle_topology,
)
register("Topology", ("kai.scheduler/v1alpha1",), _handle_topology)


# -- reading YAML ----------------------------------------------------------------------


def _expand_paths(paths: Sequence[str | Path]) -> Iterator[str]:
    """Files to read: directories expand to their YAML/JSON files, sorted."""
    for raw in paths:
        path = str(raw)
        if path != "-" and Path(path).is_dir():
            files = sorted(p for p in Path(path).iterdir() if p.suffix in YAML_SUFFIXES)
            yield from (str(p) for p in files if p.is_file())
        else:
            yield path


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=path) from None
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read file: {err}", file=path) from None


def _yaml_documents(text: str, file: str) -> Iterator[tuple[int, object]]:
    """(index, document) pairs; invalid YAML becomes an InputError with its line."""
    if text.lstrip().startswith("{"):  # JSON (kubectl -o json) parses much faster as JSON
        try:
            yield 0, json.loads(text)
            return
        except ValueError:
            pass  # not JSON after all: let the YAML parser explain (or accept) it
    index = 0  # of the document being parsed when an error occurs
    try:
        for data in yaml.load_all(text, Loader=_Loader):
            yield index, data
            index += 1
    except yaml.YAMLError as err:
        raise _yaml_error(err, file, index) from None


def _yaml_error(err: yaml.YAMLError, file: str, index: int) -> InputError:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    detail = f"{context}, {problem}" if context else problem
    return InputError(f"invalid YAML{where}: {detail}", file=file, doc=index)


def _text(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def _check_type_fields(doc: Document) -> None:
    """apiVersion and kind: required non-empty strings."""
    for key in ("apiVersion", "kind"):
        try:
            required_str(doc.obj, key, "")
        except InputError as err:
            raise doc.locate(err) from None


def _document(file: str, index: int, obj: object, path: str) -> Document:
    """A Document for one object, checking it is a mapping with apiVersion and kind."""
    if not isinstance(obj, Mapping):
        shown = "a list" if isinstance(obj, list) else f"a {type(obj).__name__}"
        raise InputError(
            f"must be a Kubernetes object (a mapping), not {shown}",
            file=file,
            doc=index,
            field=path or None,
        )
    meta = obj.get("metadata")
    name = _text(meta, "name") if isinstance(meta, Mapping) else ""
    doc = Document(file, index, obj, _text(obj, "apiVersion"), _text(obj, "kind"), name, path)
    _check_type_fields(doc)
    return doc


def _with_defaults(item: object, api_version: str, kind: str) -> object:
    """Items of a typed list (``NodeList``) may omit their apiVersion and kind."""
    if not isinstance(item, Mapping) or kind == "List":
        return item
    defaults = {"apiVersion": api_version, "kind": kind.removesuffix("List")}
    missing = {k: v for k, v in defaults.items() if not item.get(k)}
    return {**item, **missing} if missing else item


def _objects(file: str, index: int, obj: object, path: str = "") -> Iterator[Document]:
    """The Documents in one YAML document, expanding ``List`` / ``*List`` recursively."""
    doc = _document(file, index, obj, path)
    if not (doc.kind == "List" or (doc.kind.endswith("List") and "items" in doc.obj)):
        yield doc
        return
    items_path = f"{path}.items" if path else "items"
    try:
        items = as_list(doc.obj.get("items"), "items")
    except InputError as err:
        raise doc.locate(err) from None
    for i, item in enumerate(items):
        item = _with_defaults(item, doc.api_version, doc.kind)
        yield from _objects(file, index, item, f"{items_path}[{i}]")


def _unsupported(doc: Document) -> tuple[str, str]:
    """Why ``doc`` has no handler, and what would have one."""
    if doc.kind in _REGISTRY:
        versions = sorted(v for e in _REGISTRY[doc.kind] for v in e.api_versions or ())
        return (
            f"unsupported apiVersion {doc.api_version!r} for kind {doc.kind}",
            f"supported: {', '.join(versions)}",
        )
    return (
        f"unsupported kind {doc.api_version}/{doc.kind}",
        f"supported kinds: {', '.join(supported_kinds())}",
    )


def _dispatch(doc: Document, inputs: Inputs, ignore_unknown: bool) -> None:
    handler = _handler_for(doc.api_version, doc.kind)
    if handler is None:
        reason, supported = _unsupported(doc)
        if not ignore_unknown:
            raise doc.error(f"{reason}; {supported}")
        inputs.warnings.append(str(doc.error(f"{reason}; skipped")))
        return
    inputs.documents.append(doc)
    try:
        handler(doc, inputs)
    except InputError as err:
        raise doc.locate(err) from None


def load(
    paths: Sequence[str | Path],
    *,
    ignore_unknown: bool = False,
    errors: list[InputError] | None = None,
) -> Inputs:
    """Load Kubernetes objects from YAML files (``-`` is stdin; directories expand).

    Multi-document files, ``List``/``*List`` objects and empty documents are handled.
    Raises :class:`InputError` naming the file, document, object and field. With an
    ``errors`` list, problems are appended there instead and loading goes on (a bad
    document is skipped, a bad file is left after its first YAML error): for reporting
    every problem at once; the returned inputs then hold only the good objects.
    """
    _ensure_front_ends()
    inputs = Inputs()
    for file in _expand_paths(paths):
        name = "<stdin>" if file == "-" else file
        try:
            for index, data in _yaml_documents(_read(file), name):
                if data is None:
                    continue
                for doc in _objects_or_error(name, index, data, errors):
                    try:
                        _dispatch(doc, inputs, ignore_unknown)
                    except InputError as err:
                        if errors is None:
                            raise
                        errors.append(err)
        except InputError as err:
            if errors is None:
                raise
            errors.append(err)
    return inputs


def load_object(obj: Mapping[str, Any], source: str = "api") -> Inputs:
    """One object (say, from the API server) parsed as :func:`load` would parse it from a
    file; raises :class:`InputError` when it is invalid or its kind unknown."""
    _ensure_front_ends()
    inputs = Inputs()
    _dispatch(_document(source, 0, obj, ""), inputs, ignore_unknown=False)
    return inputs


def _objects_or_error(
    name: str, index: int, data: object, errors: list[InputError] | None
) -> list[Document]:
    try:
        return list(_objects(name, index, data))
    except InputError as err:
        if errors is None:
            raise
        errors.append(err)
        return []
