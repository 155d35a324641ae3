"""Load Kubernetes YAML into typed inputs, dispatching each object by apiVersion/kind.

The kinds a load understands are a value, :class:`Kinds`, passed to :func:`load`: the
built-in ones (:data:`BUILTIN_KINDS`: Node, Pod, Kueue's and KAI's Topology) plus those
of the front-ends, which :mod:`gangsched.frontends` (the composition root) adds. A
:class:`Kind`'s handler parses one :class:`Document` and adds what it found to the
:class:`Inputs` being built. Every error
names the file, the document (0-based YAML document index), ``Kind/name`` and the field.
:func:`load` either returns complete inputs or raises: nothing is half-applied.

Before a handler sees an object it is checked as the API server would decode it
(:mod:`gangsched.api.schema`: unknown fields, types, integer ranges, every quantity) and
its metadata as the API server validates it (name, namespace, label keys and values,
annotation keys). Unknown fields are errors unless the validation mode (``validate=``,
the CLI's ``--validate``, default ``$GANGSCHED_VALIDATE`` or ``strict``) says otherwise.

Reading is bounded, so that no file can crash or stall gangsched:

* a file larger than :func:`max_input_bytes` (default 128 MiB, about five times a
  50,000-node cluster file; ``$GANGSCHED_MAX_INPUT_BYTES`` raises it, e.g. ``1Gi``) is
  refused before it is read;
* nesting deeper than :data:`MAX_DEPTH` levels is refused *before* parsing: a linear scan
  bounds the depth from the text (flow brackets, structural line prefixes) and, when the
  bound is not small, the YAML events are counted without building anything (libyaml's
  composer recurses in C and would crash on ~30,000 levels); JSON brackets are counted
  outside strings;
* an alias is never expanded again: a YAML node used twice is built once and shared, and
  the decoding work aliases stand for is counted as ``go-yaml`` (which kubectl and the API
  server use) counts it, rejecting "excessive aliasing" with its limits
  (``allowedAliasRatio`` in ``go.yaml.in/yaml/v2`` v2.4.2 ``decode.go``, the fix for
  the "billion laughs" CVE-2019-11253): a billion-laughs file fails in milliseconds;
* a key repeated in one mapping is an error in strict mode (go-yaml's strict decoder:
  ``key "x" already set in map``), a warning in ``warn`` mode; YAML timestamps stay
  strings, as in Kubernetes' YAML-to-JSON conversion.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import yaml

from gangsched.api import fastyaml, names, schema
from gangsched.api.errors import InputError
from gangsched.api.objects import (
    as_list,
    as_mapping,
    as_str,
    check_name,
    check_object_meta,
    container_ports,
    mappings,
    parse_node,
    parse_pod,
    pod_gone,
    required_str,
)
from gangsched.api.schema import Mode
from gangsched.api.types import Node, Pod

_BaseLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available
_STR, _SEQ, _MAP = (f"tag:yaml.org,2002:{t}" for t in ("str", "seq", "map"))
_MERGE = "tag:yaml.org,2002:merge"

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists accepted (a Pod nests about 12 levels)."""

DEFAULT_MAX_INPUT_BYTES = 128 * 1024**2
MAX_INPUT_ENV = "GANGSCHED_MAX_INPUT_BYTES"
MAX_LIST_NESTING = 8  # a List inside a List inside ...
_SAFE_BOUND = 400  # the cheap depth bounds are ~3x this: far below a crash (~30,000)
_ALIAS_LOW, _ALIAS_HIGH = 400_000, 4_000_000  # go-yaml's alias_ratio_range_low/high


def max_input_bytes() -> int:
    """The largest input file read: ``$GANGSCHED_MAX_INPUT_BYTES`` (bytes or a quantity
    such as ``512Mi``), else :data:`DEFAULT_MAX_INPUT_BYTES`."""
    raw = os.environ.get(MAX_INPUT_ENV)
    if not raw:
        return DEFAULT_MAX_INPUT_BYTES
    from gangsched.api.quantity import parse_quantity

    try:
        return parse_quantity(raw, "memory")
    except InputError as err:
        raise InputError(err.message, field=f"${MAX_INPUT_ENV}") from None


def _allowed_alias_ratio(decoded: int) -> float:
    if decoded <= _ALIAS_LOW:
        return 0.99
    if decoded >= _ALIAS_HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _ALIAS_LOW) / (_ALIAS_HIGH - _ALIAS_LOW)


_plain_scalar_tag = fastyaml.plain_scalar_tag


class _Bail(Exception):
    """The fast checked build met something only the reference check may judge."""


_BAIL = _Bail()
_NULL = "tag:yaml.org,2002:null"
_MAPPING_NODE, _SEQUENCE_NODE = yaml.MappingNode, yaml.SequenceNode
_STRUCT, _LIST, _MAPOF = schema.Struct, schema.ListOf, schema.MapOf
_LABELS, _ANNOTATIONS, _STRING = schema.Labels, schema.Annotations, schema.STRING
_QUANTITY, _QUANTITY_TEXT = schema.QUANTITY, schema.QUANTITY_TEXT


class _Building:
    """Marks a node whose construction is under way (an alias to it is recursive)."""


_BUILDING = _Building()


class _Loader(_BaseLoader):
    """``SafeLoader`` semantics, more than twice as fast on Kubernetes manifests, with
    bounded depth, shared (never re-expanded) aliases and repeated-key detection.

    Strings, mappings and sequences (nearly every node) are built directly instead of
    through the generic constructor; other scalars (ints, bools, explicit tags) go to
    ``SafeConstructor``. Merge keys (``<<``) are merged here, from the shared mappings.
    When the text has no ``*`` there is no alias and nothing needs counting.
    """

    # libyaml's composer calls these around every node; SafeLoader has no path resolvers,
    # so they do nothing. Built-ins of the right arity skip ~1M Python calls per 15k nodes.
    descend_resolver = staticmethod(operator.is_)
    ascend_resolver = staticmethod(tuple)

    def __init__(self, stream: str, mode: Mode = "strict", kinds: Kinds | None = None
                 ) -> None:
        super().__init__(stream)
        self.mode = mode
        self.kinds = kinds
        self.counted = "*" in stream  # aliases are possible
        self.checked = False  # the last document passed the fast checked build
        self.warnings: list[str] = []
        self._memo: dict[int, Any] = {}
        self._decoded = self._aliased = 0

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        # BaseResolver.resolve without path resolvers.
        if kind is yaml.ScalarNode:
            return _plain_scalar_tag(value) if implicit[0] else _STR
        return _SEQ if kind is yaml.SequenceNode else _MAP

    def construct_document(self, node: yaml.Node) -> Any:
        self._memo, self._decoded, self._aliased = {}, 0, 0
        self.checked = False
        try:
            if self.counted:
                return self._counted(node, 0)[0]
            root = None if self.kinds is None else _root_schema(node, self.kinds)
            if root is not None:
                try:
                    value = self._fast(node, 0, root)
                except _Bail:
                    pass  # built again below; the loader's schema check explains it
                else:
                    self.checked = True
                    return value
            return self._build(node, 0)
        except RecursionError:
            raise self._error("nesting too deep", node) from None
        finally:  # what BaseConstructor.construct_document resets
            self._memo = {}
            self.constructed_objects: dict[yaml.Node, Any] = {}
            self.recursive_objects: dict[yaml.Node, None] = {}

    @staticmethod
    def _error(problem: str, node: yaml.Node) -> yaml.constructor.ConstructorError:
        return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)

    def _construct(self, node: yaml.Node) -> Any:
        """A tagged or resolved scalar (or set, pairs...), built by PyYAML's constructor;
        a text its tag cannot read (``!!timestamp 2001-99-99``, ``!!float abc``) is an
        error at its line, as a YAML error, not the constructor's ValueError."""
        try:
            return self.construct_object(node, deep=True)
        except (ValueError, TypeError, OverflowError) as err:
            tag = node.tag.rsplit(":", 1)[-1]
            raise self._error(f"cannot read {tag} {_shown(node)}: {err}", node) from None

    def _too_deep(self, node: yaml.Node) -> yaml.constructor.ConstructorError:
        return self._error(f"nested deeper than {MAX_DEPTH} levels", node)

    # -- without aliases: the fast path --------------------------------------------------

    def _build(self, node: yaml.Node, depth: int) -> Any:
        tag = node.tag
        if tag == _STR:
            return node.value
        if depth >= MAX_DEPTH:
            raise self._too_deep(node)
        if tag == _MAP and isinstance(node, yaml.MappingNode):
            return self._build_mapping(node, depth + 1)
        if tag == _SEQ and isinstance(node, yaml.SequenceNode):
            return [item.value if item.tag == _STR else self._build(item, depth + 1)
                    for item in node.value]
        return self._construct(node)

    def _build_mapping(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key, value in node.value:  # string keys and values inline: most of the nodes
            if key.tag == _STR:
                name = key.value
            elif key.tag == _MERGE:
                return self._merged(node, depth)
            else:
                name = self._hashable_key(node, key, depth)
            result[name] = value.value if value.tag == _STR else self._build(value, depth)
        if len(result) < len(node.value):
            self._repeated(node)
        return result

    def _hashable_key(self, mapping: yaml.MappingNode, key: yaml.Node, depth: int) -> Any:
        name = self._build(key, depth) if not self.counted else self._counted(key, depth)[0]
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

    def _repeated(self, node: yaml.MappingNode) -> None:
        """A key given twice in one mapping: an error unless the mode allows it."""
        seen: set[tuple[str, Any]] = set()
        for key, _ in node.value:
            if key.tag == _MERGE or not isinstance(key, yaml.ScalarNode):
                continue
            if (key.tag, key.value) in seen:
                problem = f'key "{key.value}" already set in map'
                if self.mode == "strict":
                    raise self._error(f"{problem} (--validate=warn allows it)", key)
                if self.mode == "warn":
                    self.warnings.append(f"line {key.start_mark.line + 1}: {problem}; "
                                         "the last value is used")
                return
            seen.add((key.tag, key.value))

    def _merged(self, node: yaml.MappingNode, depth: int) -> dict[Any, Any]:
        """A mapping with merge keys: merged mappings first (earlier ones win), then its
        own keys; the merged mappings are built once and only copied shallowly."""
        build = (lambda n: self._counted(n, depth)[0]) if self.counted else (
            lambda n: self._build(n, depth))
        sources: list[Mapping[Any, Any]] = []
        own: list[tuple[yaml.Node, yaml.Node]] = []
        for key, value in node.value:
            if key.tag != _MERGE:
                own.append((key, value))
                continue
            items = value.value if isinstance(value, yaml.SequenceNode) else [value]
            merged = []
            for item in items:
                if not isinstance(item, yaml.MappingNode):
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"expected a mapping for merging, but found {item.id}",
                        item.start_mark)
                merged.append(build(item))
            sources.extend(reversed(merged))
        result: dict[Any, Any] = {}
        for source in sources:
            result.update(source)
        for key, value in own:
            name = key.value if key.tag == _STR else self._hashable_key(node, key, depth)
            result[name] = value.value if value.tag == _STR else build(value)
        return result

    # -- the fast path: checked against the kind's schema while built -------------------

    def _fast(self, node: yaml.Node, depth: int, container: Any) -> Any:
        """Build ``node`` as ``container`` (a compiled schema type) wants it, or raise
        _Bail at anything the reference check (``schema.check``) might reject: an
        unknown field, a wrong type, a bad quantity, label or annotation, a repeated key,
        a merge key, too much depth. What this accepts, ``schema.check`` accepts, so the
        loader skips it; anything else is built again and checked the reference way."""
        if depth >= MAX_DEPTH:
            raise _BAIL
        kind = type(container)
        if kind is _STRUCT:
            if type(node) is not _MAPPING_NODE or node.tag != _MAP:
                raise _BAIL
            result: dict[str, Any] = {}
            fields = container.fields
            for key, value in node.value:
                if key.tag != _STR:
                    raise _BAIL
                entry = fields.get(key.value)
                if entry is None:
                    raise _BAIL
                scalar, inner = entry
                tag = value.tag
                if tag == _STR:
                    if scalar is not _STRING and (scalar is None or scalar(value.value)):
                        raise _BAIL
                    result[key.value] = value.value
                elif inner is not None and tag != _NULL:
                    result[key.value] = self._fast(value, depth + 1, inner)
                else:
                    result[key.value] = self._fast_value(value, depth, entry)
        elif kind is _LIST:
            if type(node) is not _SEQUENCE_NODE or node.tag != _SEQ:
                raise _BAIL
            entry = container._entry or schema.item_entry(container)
            scalar, inner = entry
            if inner is not None:
                return [None if item.tag == _NULL else self._fast(item, depth + 1, inner)
                        for item in node.value]
            return [self._fast_value(item, depth, entry) for item in node.value]
        elif type(node) is not _MAPPING_NODE or node.tag != _MAP:
            raise _BAIL
        elif kind is _MAPOF:
            result = {}
            entry = container._entry or schema.item_entry(container)
            scalar = entry[0]
            if scalar is _QUANTITY:
                scalar = _QUANTITY_TEXT  # strings only below: the cached check itself
            for key, value in node.value:
                if key.tag != _STR:
                    raise _BAIL
                if value.tag == _STR and scalar is not None:  # strings, quantities
                    if scalar is not _STRING and scalar(value.value) is not None:
                        raise _BAIL
                    result[key.value] = value.value
                else:
                    result[key.value] = self._fast_value(value, depth, entry)
        elif kind is _LABELS:
            result = {}
            qualified, valid_value = names.is_qualified_name, names.is_label_value
            good_keys, good_values = names.KNOWN_GOOD_KEYS, names.KNOWN_GOOD_VALUES
            for key, value in node.value:
                if key.tag != _STR or value.tag != _STR:
                    raise _BAIL
                name, text = key.value, value.value
                if ((name not in good_keys and not qualified(name))
                        or (text not in good_values and not valid_value(text))):
                    raise _BAIL
                result[name] = text
        elif kind is _ANNOTATIONS:
            result = {}
            size = 0
            for key, value in node.value:
                if (key.tag != _STR or value.tag != _STR
                        or names.qualified_name(key.value.lower())):
                    raise _BAIL
                result[key.value] = value.value
                size += len(key.value) + len(value.value)
            if size * 4 > names.ANNOTATIONS_MAX_BYTES:  # maybe too large in UTF-8: check
                raise _BAIL
        else:
            raise _BAIL
        if len(result) < len(node.value):
            raise _BAIL  # a repeated key
        return result

    def _fast_value(self, node: yaml.Node, depth: int, entry: Any) -> Any:
        scalar, container = entry
        if node.tag == _STR:
            value = node.value
            if scalar is not _STRING and (scalar is None or scalar(value) is not None):
                raise _BAIL
            return value
        if container is not None:
            return None if node.tag == _NULL else self._fast(node, depth + 1, container)
        value = self._build(node, depth + 1)  # ints, booleans, nulls; anything under "any"
        if value is not None and scalar(value) is not None:
            raise _BAIL
        return value

    # -- with aliases: every node built once, decoding work counted ------------------------

    def _counted(self, node: yaml.Node, depth: int) -> tuple[Any, int]:
        """(value, expanded size) of ``node``, its decoding work counted as go-yaml counts
        it: an alias to a node of expanded size s costs 1 + s decodes, s of them aliased."""
        if node.tag == _STR:
            self._decoded += 1
            return node.value, 1
        memo = self._memo.get(id(node))
        if memo is not None:
            if memo is _BUILDING:
                raise self._error("an anchor's value contains an alias to itself", node)
            value, size = memo
            self._decoded += 1 + size
            self._aliased += size
            if (self._aliased > 100 and self._decoded > 1000
                    and self._aliased / self._decoded > _allowed_alias_ratio(self._decoded)):
                raise self._error("document contains excessive aliasing (aliases expand to "
                                  f"{self._decoded:,} nodes)", node)
            return value, 1 + size
        if depth >= MAX_DEPTH:
            raise self._too_deep(node)
        self._memo[id(node)] = _BUILDING
        before = self._decoded
        self._decoded += 1
        if node.tag == _MAP and isinstance(node, yaml.MappingNode):
            if any(key.tag == _MERGE for key, _ in node.value):
                value = self._merged(node, depth + 1)
            else:
                value = {}
                for key, item in node.value:
                    name = self._counted(key, depth + 1)[0]
                    try:
                        hash(name)
                    except TypeError:
                        raise self._error("found an unhashable key", key) from None
                    value[name] = self._counted(item, depth + 1)[0]
                if len(value) < len(node.value):
                    self._repeated(node)
        elif node.tag == _SEQ and isinstance(node, yaml.SequenceNode):
            value = [self._counted(item, depth + 1)[0] for item in node.value]
        else:
            value = self._construct(node)
        size = self._decoded - before
        self._memo[id(node)] = (value, size)
        return value, size


def _shown(node: yaml.Node) -> str:
    """A scalar's text, short, for a message; a collection's kind."""
    if isinstance(node, yaml.ScalarNode):
        text = str(node.value)
        return repr(text if len(text) <= 40 else text[:40] + "...")
    return "mapping" if isinstance(node, yaml.MappingNode) else "sequence"


# integers beyond Python's int/text limit: a YAML error at their line, not a ValueError
_Loader.add_constructor("tag:yaml.org,2002:int", fastyaml.construct_int)


# -- plain block YAML: checked per skeleton ---------------------------------------------
#
# Documents that api.fastyaml reads with one skeleton (the same lines but for their
# scalars) pass or fail the schema check alike except through their scalar values. So a
# skeleton is checked against its kind's schema once, into a plan of which scalars must
# be what; a document whose scalars pass the plan passes schema.check, and the loader
# skips that. Anything the plan cannot vouch for (an unknown field, a wrong type, a
# label key, too many annotations...) gets no plan: schema.check then checks, and
# explains, the document as before.

_STRINGS = frozenset((str, type(None)))  # a string field: a string, or null (absent)
_PLAN_CACHE_MAX = 10_000


def _is_null(value: object) -> bool:
    return value is None


def _label_value(value: object) -> bool:
    return value is None or (type(value) is str and names.is_label_value(value))


_SCALAR_OK: dict[Any, Callable[[object], bool]] = {}


def _scalar_ok(scalar: Any) -> Callable[[object], bool]:
    """``scalar`` (a schema check: None when good) as a predicate; null always passes."""
    ok = _SCALAR_OK.get(scalar)
    if ok is None:
        def ok(value: object, scalar: Any = scalar) -> bool:
            return value is None or scalar(value) is None
        _SCALAR_OK[scalar] = ok
    return ok


def _picker(indices: list[int]) -> Callable[[list[Any]], tuple[Any, ...]]:
    """The values at ``indices`` of a list, as a tuple (in C, by operator.itemgetter)."""
    if len(indices) == 1:
        index = indices[0]
        return lambda values: (values[index],)
    return operator.itemgetter(*indices)


_KNOWN_GOOD_MAX = 100_000  # strings remembered per predicate; then forgotten


@dataclass(frozen=True)
class _Plan:
    """What the scalars of a skeleton's documents must be for the schema to pass them:
    the values ``strings`` picks are strings (or null), and those each group picks pass
    its predicate (string values that passed are remembered per predicate)."""

    strings: Callable[[list[Any]], tuple[Any, ...]] | None
    groups: tuple[tuple[Callable[[list[Any]], tuple[Any, ...]], Callable[[object], bool],
                        set[str]], ...]

    def passes(self, values: list[Any]) -> bool:
        if self.strings is not None and not set(map(type, self.strings(values))) <= _STRINGS:
            return False
        for pick, ok, known in self.groups:
            picked = pick(values)
            if known.issuperset(picked):  # only strings are known: 1 is not "1"
                continue
            for value in picked:
                if type(value) is str and value in known:
                    continue
                if not ok(value):
                    return False
                if type(value) is str:
                    if len(known) >= _KNOWN_GOOD_MAX:
                        known.clear()
                    known.add(value)
        return True


_KNOWN_GOOD: dict[Callable[[object], bool], set[str]] = {}


class _NoPlan(Exception):
    """The skeleton has something only schema.check may judge."""


def _plan(template: Any, root: Any) -> _Plan | None:
    """The plan of a fastyaml template (scalars are the indices of their lines) against
    the compiled root struct of its kind, or None."""
    strings: list[int] = []
    steps: list[tuple[int, Callable[[object], bool]]] = []

    def scalar_at(index: int, entry: Any) -> None:
        scalar, container = entry
        if container is not None:
            steps.append((index, _is_null))  # a scalar where a collection belongs: null only
        elif scalar is _STRING:
            strings.append(index)
        elif scalar is not schema.SCALARS["any"]:
            steps.append((index, _scalar_ok(scalar)))

    def value(item: Any, entry: Any) -> None:
        if item is fastyaml.NULL:
            return
        if type(item) is int:
            scalar_at(item, entry)
            return
        scalar, container = entry
        if container is None:  # a collection where a scalar belongs: only "any" takes it
            if scalar is not schema.SCALARS["any"]:
                raise _NoPlan
            return
        walk(item, container)

    def walk(item: Any, container: Any) -> None:
        kind = type(container)
        if item is fastyaml.EMPTY_LIST:
            if kind is not _LIST:
                raise _NoPlan
            return
        if kind is _LIST:
            if type(item) is not list:
                raise _NoPlan
            entry = container._entry or schema.item_entry(container)
            for element in item:
                value(element, entry)
            return
        if item is fastyaml.EMPTY_MAP:
            return  # every mapping type takes {}
        if type(item) is not dict:
            raise _NoPlan
        if kind is _STRUCT:
            fields = container.fields
            for key, element in item.items():
                entry = fields.get(key)
                if entry is None:
                    raise _NoPlan  # unknown: an error or a warning, by the mode
                value(element, entry)
        elif kind is _MAPOF:
            entry = container._entry or schema.item_entry(container)
            for element in item.values():
                value(element, entry)
        elif kind is _LABELS:
            for key, element in item.items():
                if not names.is_qualified_name(key):
                    raise _NoPlan
                if type(element) is int:
                    steps.append((element, _label_value))
                elif element is not fastyaml.NULL:
                    raise _NoPlan
        elif kind is _ANNOTATIONS:
            size = 0
            for key, element in item.items():
                if names.qualified_name(key.lower()):
                    raise _NoPlan
                if type(element) is int:
                    strings.append(element)
                elif element is not fastyaml.NULL:
                    raise _NoPlan
                size += len(key) + fastyaml.MAX_LINE  # ASCII text: characters are bytes
            if size > names.ANNOTATIONS_MAX_BYTES:
                raise _NoPlan  # maybe too large: checked the long way
        else:
            raise _NoPlan

    try:
        walk(template, root)
    except _NoPlan:
        return None
    by_predicate: dict[Callable[[object], bool], list[int]] = {}
    for index, ok in steps:
        by_predicate.setdefault(ok, []).append(index)
    groups = tuple((_picker(indices), ok, _KNOWN_GOOD.setdefault(ok, set()))
                   for ok, indices in by_predicate.items())
    return _Plan(_picker(strings) if strings else None, groups)


class _Judge:
    """Whether a document fastyaml read passes its kind's schema, by the plans of its
    skeleton (kept per :class:`Kinds`)."""

    __slots__ = ("kinds", "plans")

    def __init__(self, kinds: Kinds) -> None:
        self.kinds = kinds
        self.plans = kinds._plans

    def __call__(self, doc: Any, skeleton: tuple[int, ...], values: list[Any]) -> bool:
        if type(doc) is not dict:
            return False
        api_version, kind = doc.get("apiVersion"), doc.get("kind")
        if type(api_version) is not str or type(kind) is not str or not api_version or (
                not kind):
            return False
        root = self.kinds.root_schema(api_version, kind)
        if root is None:
            return False
        key = (skeleton, root)
        plan = self.plans.get(key, _NO_PLAN)
        if plan is _NO_PLAN:
            plan = _plan(fastyaml.template(skeleton), root)
            if len(self.plans) >= _PLAN_CACHE_MAX:
                self.plans.clear()
            self.plans[key] = plan
        return plan is not None and plan.passes(values)


_NO_PLAN = object()


YAML_SUFFIXES = (".yaml", ".yml", ".json")


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
    checked: bool = False  # already checked against its kind's schema while parsed

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
    topology_kai: bool = False  # topology_levels came from a KAI Topology (per workload)
    objects: dict[str, list[object]] = field(default_factory=dict)  # other kinds, by kind
    documents: list[Document] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _claimed: dict[tuple[str, str], Document] = field(default_factory=dict, repr=False)
    _generated: set[tuple[str, str, str]] = field(default_factory=set, repr=False)
    _unmodelled: set[str] = field(default_factory=set, repr=False)  # fields warned about

    def note_unmodelled(self, doc: Document, fields: Sequence[str]) -> None:
        """Warn once per load about each of ``fields`` (a pod's constraint gangsched does
        not model), at the first document that sets it."""
        for name in fields:
            if name not in self._unmodelled:
                self._unmodelled.add(name)
                self.warnings.append(str(doc.error(
                    "not modelled: gangsched places pods without this constraint (the "
                    "first pod of the inputs that sets it)", name)))

    def document(self, kind: str, key: str) -> Document | None:
        """The document that defines ``kind`` ``key`` (as :meth:`claim` recorded it)."""
        return self._claimed.get((kind, key))

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


NameRule = names.Rule


@dataclass(frozen=True)
class Kind:
    """How to read one kind: the apiVersions it comes in and its handler.

    ``schema`` names the kind's root type in :mod:`gangsched.api.schema`: objects are
    checked against it (unknown fields, types, ranges, quantities) before ``handler``
    runs; None: not checked. ``name_rule`` checks ``metadata.name`` (the API server's
    rule for the kind: a DNS subdomain for nearly every kind).
    """

    kind: str
    api_versions: tuple[str, ...] | None  # None: any group version
    handler: Handler
    schema: str | None = None
    name_rule: NameRule = names.dns1123_subdomain


_HINTS = {  # (API group, kind) -> what to give instead, for objects others derive
    ("kueue.x-k8s.io", "Workload"): " (Kueue makes its Workload from the Job, JobSet, "
    "LeaderWorkerSet or pod group it admits: give gangsched that object instead)",
}


# Well-known kinds that carry nothing a scheduler reads: a bundle applied with kubectl
# often holds them beside its workload (a Service for the leader, a ConfigMap, RBAC).
# They are skipped with a warning; any other kind gangsched does not read is an error.
NOT_SCHEDULING: frozenset[tuple[str, str]] = frozenset(
    [("v1", kind) for kind in ("Service", "ConfigMap", "Secret", "ServiceAccount",
                                "Endpoints")]
    + [("discovery.k8s.io/v1", "EndpointSlice")]
    + [("rbac.authorization.k8s.io/v1", kind)
       for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")]
    + [("networking.k8s.io/v1", kind) for kind in ("Ingress", "IngressClass", "NetworkPolicy")]
    + [(f"autoscaling/{v}", "HorizontalPodAutoscaler") for v in ("v1", "v2")]
)


class Kinds:
    """The kinds one load understands, looked up by apiVersion and kind.

    A value: built once from :class:`Kind` entries, never changed. Two entries for the
    same kind and apiVersion are a programming error.
    """

    def __init__(self, entries: Iterable[Kind]) -> None:
        self.entries: tuple[Kind, ...] = tuple(entries)
        self._by_kind: dict[str, list[Kind]] = {}
        seen: set[tuple[str, str]] = set()
        for entry in self.entries:
            for version in entry.api_versions or ("*",):
                if (entry.kind, version) in seen:
                    raise ValueError(f"kind {version}/{entry.kind} defined twice")
                seen.add((entry.kind, version))
            self._by_kind.setdefault(entry.kind, []).append(entry)
        self._roots: dict[tuple[str, str], Any] = {}
        self._plans: dict[tuple[tuple[int, ...], Any], Any] = {}  # see _Judge

    def extended(self, more: Iterable[Kind]) -> Kinds:
        """These kinds and ``more``."""
        return Kinds((*self.entries, *more))

    def supported(self) -> list[str]:
        """``apiVersion/Kind`` of every kind (``*/Kind`` for any apiVersion)."""
        return sorted(
            f"{version}/{entry.kind}"
            for entry in self.entries
            for version in (entry.api_versions or ("*",))
        )

    def entry(self, api_version: str, kind: str) -> Kind | None:
        entries = self._by_kind.get(kind, ())
        for entry in entries:
            if entry.api_versions is not None and api_version in entry.api_versions:
                return entry
        return next((e for e in entries if e.api_versions is None), None)

    def root_schema(self, api_version: str, kind: str) -> Any:
        """The compiled schema of this kind (None when unknown or unchecked)."""
        key = (api_version, kind)
        if key not in self._roots:
            entry = self.entry(api_version, kind)
            self._roots[key] = (
                None if entry is None or entry.schema is None else schema.compiled(entry.schema)
            )
        return self._roots[key]

    def unsupported(self, doc: Document) -> tuple[str, str]:
        """Why ``doc`` has no handler, and what would have one."""
        hint = _HINTS.get((doc.api_version.rpartition("/")[0], doc.kind), "")
        if doc.kind in self._by_kind:
            versions = sorted(
                v for e in self._by_kind[doc.kind] for v in e.api_versions or ()
            )
            return (
                f"unsupported apiVersion {doc.api_version!r} for kind {doc.kind}{hint}",
                f"supported: {', '.join(versions)}; --ignore-unknown skips it",
            )
        return (
            f"unsupported kind {doc.api_version}/{doc.kind}",
            f"--ignore-unknown skips it; supported kinds: {', '.join(self.supported())}",
        )


def _root_schema(node: yaml.Node, kinds: Kinds) -> Any:
    """The compiled schema of the object a YAML document holds, from the apiVersion and
    kind it names (None for Lists, unknown kinds, kinds without a schema)."""
    if type(node) is not _MAPPING_NODE:
        return None
    api_version = kind = ""
    for key, value in node.value:
        if key.tag == _STR and value.tag == _STR:
            if key.value == "apiVersion":
                api_version = value.value
            elif key.value == "kind":
                kind = value.value
            if api_version and kind:
                break
    return kinds.root_schema(api_version, kind) if api_version and kind else None


# -- built-in kinds --------------------------------------------------------------------


def _handle_node(doc: Document, inputs: Inputs) -> None:
    node = parse_node(doc.obj)
    inputs.claim(doc)
    inputs.nodes.append(node)


def _handle_pod(doc: Document, inputs: Inputs) -> None:
    pod = parse_pod(with_generated_name(doc))
    inputs.claim(doc, pod.key)
    spec = doc.obj.get("spec")
    if isinstance(spec, Mapping) and not pod.node_name:
        unmodelled = unmodelled_constraints(spec)
        if unmodelled:
            inputs.note_unmodelled(doc, unmodelled)
    if not pod_gone(doc.obj):  # a finished pod holds nothing; one being deleted waits for nothing
        inputs.pods.append(pod)


def unmodelled_constraints(spec: Mapping[str, Any]) -> list[str]:
    """The fields of a pod spec that constrain where it may go and that gangsched does
    not model: required inter-pod (anti-)affinity, topology spread that does not schedule
    when unsatisfied, host ports."""
    out = []
    affinity = spec.get("affinity")
    if isinstance(affinity, Mapping):
        for kind in ("podAffinity", "podAntiAffinity"):
            terms = affinity.get(kind)
            if isinstance(terms, Mapping) and terms.get(
                    "requiredDuringSchedulingIgnoredDuringExecution"):
                out.append(f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution")
    spread = spec.get("topologySpreadConstraints")
    if isinstance(spread, list) and any(
            isinstance(c, Mapping) and c.get("whenUnsatisfiable") in (None, "DoNotSchedule")
            for c in spread):
        out.append("spec.topologySpreadConstraints")
    hosts = dict.fromkeys(kind for kind, _, _, port in container_ports(spec)
                          if port.get("hostPort"))
    out.extend(f"spec.{kind}[].ports[].hostPort" for kind in hosts)
    return out


_GENERATED = "bcdfghjklmnpqrstvwxz2456789"  # the API server's alphabet for generateName
GENERATED_PREFIX_MAX = 58  # names.MaxGeneratedNameLength: 63 less the 5 random characters


def _canonical(value: object) -> str:
    """The object as JSON with sorted keys: the same text for the same content."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=lambda v: sorted(map(str, v)) if isinstance(v, (set, frozenset))
                      else str(v))


def generated_name(doc: Document, attempt: int = 0) -> str:
    """The name the API server would give ``doc`` from ``metadata.generateName`` (the
    prefix, cut to 58 characters, and five characters), or "" when it has a name or no
    prefix. The API server picks the five at random; here they hash what does not depend
    on how the file was named on the command line: the file's base name, the document's
    place in it and the object's content (``attempt`` > 0: the next candidate, when an
    earlier object of the same load took this one)."""
    meta = doc.obj.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("name"):
        return ""
    prefix = meta.get("generateName")
    if not isinstance(prefix, str) or not prefix:
        return ""
    try:
        content = _canonical(doc.obj)
    except (TypeError, ValueError):  # keys JSON cannot sort: fall back on the position
        content = ""
    seed = "\0".join((os.path.basename(doc.file), str(doc.index), doc.path, content,
                      str(attempt)))
    digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).digest()
    suffix = "".join(_GENERATED[b % len(_GENERATED)] for b in digest[:5])
    return prefix[:GENERATED_PREFIX_MAX] + suffix


def _name_generated(doc: Document, inputs: Inputs) -> None:
    """Give ``doc`` the name its ``generateName`` stands for, unique in this load."""
    name = generated_name(doc)
    if not name:
        return
    meta = doc.obj["metadata"]
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    attempt = 0
    while (doc.kind, namespace, name) in inputs._generated:
        attempt += 1
        name = generated_name(doc, attempt)
    inputs._generated.add((doc.kind, namespace, name))
    doc.name = name


def with_generated_name(doc: Document) -> Mapping[str, Any]:
    """The object, with ``metadata.name`` set to the name :func:`dispatch` derived from
    ``metadata.generateName`` (see :func:`generated_name`) when it has none."""
    meta = doc.obj.get("metadata")
    if not isinstance(meta, Mapping) or meta.get("name"):
        return doc.obj
    name = doc.name or generated_name(doc)
    if not name:
        return doc.obj
    return {**doc.obj, "metadata": {**meta, "name": name}}


@dataclass(frozen=True)
class TopologyObject:
    """A Kueue or KAI ``Topology``: its levels (node label keys, widest first) and, for
    KAI, the alias of each level ("" when it has none)."""

    name: str
    api_version: str
    levels: tuple[str, ...]
    aliases: tuple[str, ...] = ()

    @property
    def kai(self) -> bool:
        return self.api_version.startswith("kai.scheduler/")

    def resolve(self, level: str) -> str | None:
        """The node label key a level name means: a key of this topology, or (KAI, since
        #1788) one of its aliases; None when it is neither."""
        if level in self.levels:
            return level
        if level and level in self.aliases:
            return self.levels[self.aliases.index(level)]
        return None


MAX_TOPOLOGY_LEVELS = 16
HOSTNAME_KEY = "kubernetes.io/hostname"


def _topology_levels(doc: Document) -> TopologyObject:
    spec = as_mapping(doc.obj.get("spec"), "spec")
    entries = list(mappings(spec.get("levels"), "spec.levels"))
    levels = [required_str(item, "nodeLabel", path) for item, path in entries]
    if not levels:
        raise InputError("must list at least one level", field="spec.levels")
    if len(levels) > MAX_TOPOLOGY_LEVELS:  # the CRDs' MaxItems, Kueue's and KAI's
        raise InputError(f"must have at most {MAX_TOPOLOGY_LEVELS} items, got {len(levels)}",
                         field="spec.levels")
    if HOSTNAME_KEY in levels[:-1]:  # both CRDs' rule
        raise InputError(f"the {HOSTNAME_KEY} label can only be used at the lowest level of "
                         "topology", field=f"spec.levels[{levels.index(HOSTNAME_KEY)}].nodeLabel")
    for i, label in enumerate(levels):
        problems = names.qualified_name(label)
        if problems:
            raise InputError(f"invalid node label key {label!r}: {names.first(problems)}",
                             field=f"spec.levels[{i}].nodeLabel")
        if label in levels[:i]:
            raise InputError(f"duplicate {label!r}", field=f"spec.levels[{i}].nodeLabel")
    aliases = [as_str(item.get("alias"), f"{path}.alias") for item, path in entries]
    for i, alias in enumerate(aliases):  # KAI's topology validator: unique, never a key
        field = f"spec.levels[{i}].alias"
        if alias and alias in aliases[:i]:
            raise InputError(f"duplicate alias {alias!r}", field=field)
        if alias and alias in levels:
            raise InputError(f"alias {alias!r} is the nodeLabel of a level", field=field)
    return TopologyObject(doc.name, doc.api_version, tuple(levels),
                          tuple(aliases) if any(aliases) else ())


def topologies(inputs: Inputs) -> list[TopologyObject]:
    """Every Kueue and KAI Topology loaded."""
    return [o for o in inputs.objects.get("Topology", []) if isinstance(o, TopologyObject)]


def within(part: Sequence[str], whole: Sequence[str]) -> bool:
    """Whether ``part`` is ``whole`` with some levels left out (same order)."""
    rest = iter(whole)
    return all(level in rest for level in part)


def takes_chain(chain: Sequence[str] | None, chain_kai: bool, levels: Sequence[str],
                kai: bool) -> bool:
    """Whether a Topology's ``levels`` (``kai``: a KAI one) become the chain of levels in
    place of ``chain`` (``chain_kai``: from a KAI Topology): the first read; a Kueue one
    over a KAI one; of two nested Kueue chains, the longer."""
    return chain is None or (chain_kai and not kai) or (
        not kai and not chain_kai and within(chain, levels))


def _handle_topology(doc: Document, inputs: Inputs) -> None:
    """Kueue or KAI ``Topology``: ``spec.levels[].nodeLabel``, widest level first.

    A Kueue Topology fixes the inputs' chain of levels. Several may be read (each
    ResourceFlavor names its own) when their levels nest: the chain is the longest, and
    every other is part of it in the same order (``[rack, host]`` beside ``[block, rack,
    host]``); levels in another order, or two chains neither holds, are an error. KAI's
    are per workload (a PodGroup names its own): one that disagrees with the chain only
    adds its levels for the workloads that name it, and gives the chain only until a
    Kueue Topology is read, in any file order."""
    topo = _topology_levels(doc)
    inputs.claim(doc, f"{doc.name} ({doc.api_version.rpartition('/')[0]})")  # Kueue's, KAI's
    levels = list(topo.levels)
    source = f"{doc.where} {doc.api_version} {doc.label}"
    chain = inputs.topology_levels
    if not topo.kai and chain is not None and not inputs.topology_kai and chain != levels:
        if not (within(levels, chain) or within(chain, levels)):
            raise InputError(
                f"topology levels {levels} disagree with {chain} from "
                f"{inputs.topology_source} (one must hold the other's levels in its order)",
                field="spec.levels",
            )
        if within(levels, chain):
            inputs.add_object(doc, topo)
            return
    if takes_chain(chain, inputs.topology_kai, levels, topo.kai):
        inputs.topology_levels, inputs.topology_source = levels, source
        inputs.topology_kai = topo.kai
    inputs.add_object(doc, topo)


schema.define({
    # Kueue's Topology (kueue.x-k8s.io v1alpha1/v1beta1/v1beta2, TopologySpec in
    # apis/kueue/*/topology_types.go) and KAI's (kai.scheduler/v1alpha1): levels of
    # node labels. Status is the controller's; kept open.
    "gangsched.Topology": {"apiVersion": "string", "kind": "string",
                           "metadata": "meta.v1.ObjectMeta", "spec": "gangsched.TopologySpec",
                           "status": "any"},
    "gangsched.TopologySpec": {"levels": {"list": "gangsched.TopologyLevel"}},
    "gangsched.TopologyLevel": {"nodeLabel": "string"},
    # KAI's (pkg/apis/kai/v1alpha1/topology_types.go): a level may have an alias
    "kai.Topology": {"apiVersion": "string", "kind": "string",
                     "metadata": "meta.v1.ObjectMeta", "spec": "kai.TopologySpec",
                     "status": "any"},
    "kai.TopologySpec": {"levels": {"list": "kai.TopologyLevel"}},
    "kai.TopologyLevel": {"nodeLabel": "string", "alias": "string"},
    # A List or *List wrapper (metav1.List): its items are checked one by one.
    "gangsched.List": {"apiVersion": "string", "kind": "string",
                       "metadata": "meta.v1.ListMeta", "items": {"list": "any"}},
})

BUILTIN_KINDS = Kinds((
    Kind("Node", ("v1",), _handle_node, schema="core.v1.Node"),
    Kind("Pod", ("v1",), _handle_pod, schema="core.v1.Pod"),
    Kind("Topology",
         ("kueue.x-k8s.io/v1alpha1", "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2"),
         _handle_topology, schema="gangsched.Topology"),
    Kind("Topology", ("kai.scheduler/v1alpha1",), _handle_topology,
         schema="kai.Topology"),
))
"""Node, Pod and the Topology kinds: what :func:`load` reads without front-ends."""


# -- reading files, within limits ------------------------------------------------------


def _expand_paths(paths: Sequence[str | Path]) -> Iterator[str]:
    """Files to read: directories expand to their YAML/JSON files, sorted."""
    for raw in paths:
        path = str(raw)
        if path != "-" and Path(path).is_dir():
            files = sorted(p for p in Path(path).iterdir() if p.suffix in YAML_SUFFIXES)
            yield from (str(p) for p in files if p.is_file())
        else:
            yield path


def _too_big(size: int | str, limit: int, file: str) -> InputError:
    shown = f"{size:,} bytes" if isinstance(size, int) else size
    return InputError(
        f"file is too large ({shown}; the limit is {limit:,} bytes; set "
        f"${MAX_INPUT_ENV}, e.g. to 1Gi, to read larger files)", file=file)


_CHUNK = 1 << 24


def _read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """Up to ``limit + 1`` bytes of ``stream`` (one more than allowed tells it is too
    large), read in chunks: ``read(limit + 1)`` would allocate the whole limit first, and a
    limit raised to ``1Ei`` cannot be allocated."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = stream.read(min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _read(path: str) -> str:
    limit = max_input_bytes()
    name = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            if sys.stdin is None:  # started with it closed (`<&-`)
                raise InputError("cannot read file: standard input is closed", file=name)
            data = _read_at_most(sys.stdin.buffer, limit) if hasattr(sys.stdin, "buffer") else (
                sys.stdin.read(limit + 1).encode("utf-8", "surrogateescape"))
            if len(data) > limit:
                raise _too_big(f"more than {limit:,} bytes", limit, name)
        else:
            size = Path(path).stat().st_size
            if size > limit:
                raise _too_big(size, limit, name)
            with open(path, "rb") as handle:
                data = _read_at_most(handle, limit)
            if len(data) > limit:
                raise _too_big(f"more than {limit:,} bytes", limit, name)
        return data.decode("utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=name) from None
    except UnicodeDecodeError as err:
        raise InputError(f"not UTF-8 text (byte {err.start}: {err.reason})", file=name) from None
    except OSError as err:
        raise InputError(f"cannot read file: {err.strerror or err}", file=name) from None


# -- nesting depth, before parsing -------------------------------------------------------

_CHAIN = r"[ ]*(?:[&!][^ \t\r\n]*[ ]+)*[-?:][ ]"  # one more indicator on the same line
_CHAINS = (  # indicators nesting block collections on one line, _SAFE_BOUND // 2 of them
    re.compile(f"- (?:{_CHAIN}){{{_SAFE_BOUND // 2}}}"),
    re.compile(f"\\? (?:{_CHAIN}){{{_SAFE_BOUND // 2}}}"),
    re.compile(f"\\n *: (?:{_CHAIN}){{{_SAFE_BOUND // 2}}}"),
)
_ANY_CHAIN = re.compile(  # the same, tabs allowed after an indicator
    f"[-?:][ \\t](?:[ \\t]*(?:[&!][^ \\t\\r\\n]*[ \\t]+)*[-?:][ \\t]){{{_SAFE_BOUND // 2}}}")
_LINE_BREAKS = "\n\r\x85\u2028\u2029"  # YAML 1.1's, as PyYAML reads them
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _flow_openers(text: str) -> int:
    """Brackets that may open a flow collection and stay open (``{}`` and ``[]`` close
    at once): an upper bound on flow nesting."""
    return (text.count("[") + text.count("{")) - text.count("[]") - text.count("{}")


def _yaml_depth_ok(text: str) -> bool:
    """Whether the text certainly nests less than about 3 x _SAFE_BOUND levels, from
    cheap bounds. Flow nesting needs an open bracket per level. Along a path of block
    collections every second level is one column further right (only a sequence in a
    mapping may start at its parent's column), so a node at depth d sits on a line
    indented by at least (d - c) / 2 - 1, where c counts the levels opened on that line
    itself, each by an indicator (``- - - x``, ``? - x``)."""
    if ("[" in text or "{" in text) and (  # `in` is a memchr; count() is slower
            text.count("[") + text.count("{") > _SAFE_BOUND // 2
            and _flow_openers(text) > _SAFE_BOUND // 2):
        return False
    indent = " " * _SAFE_BOUND
    if any(text.find(brk + indent) >= 0 for brk in _LINE_BREAKS):
        return False
    if "\t" in text:  # indicators may be followed by tabs: the general, slower pattern
        return _ANY_CHAIN.search(text) is None
    chains = _CHAINS if "?" in text else _CHAINS[:1]  # no "? ": no explicit ": " either
    return not any(chain.search(text) for chain in chains)


def _check_yaml_depth(text: str, file: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before composing: cheap bounds first, else
    the parser's events counted (libyaml's parser keeps an explicit stack)."""
    if _yaml_depth_ok(text):
        return  # the composer is safe; the builder enforces MAX_DEPTH exactly
    depth, index = 0, 0
    starts = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    try:
        for event in yaml.parse(text, Loader=_BaseLoader):
            kind = type(event)
            if kind in starts:
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
                    raise InputError(f"invalid YAML{where}: nested deeper than {MAX_DEPTH} "
                                     "levels", file=file, doc=index)
            elif kind in ends:
                depth -= 1
            elif kind is yaml.DocumentEndEvent:
                index += 1
    except yaml.YAMLError as err:
        if "maximum nesting depth" in str(err):  # libyaml >= 0.2.6 stops at 1,000 levels,
            # scanning ahead before the events above reach MAX_DEPTH: deeper than ours too
            raise InputError(f"invalid YAML: nested deeper than {MAX_DEPTH} levels",
                             file=file, doc=index) from None
        raise _yaml_error(err, file, index) from None


def _check_json_depth(text: str, file: str) -> None:
    """Refuse JSON nested deeper than MAX_DEPTH: brackets counted outside strings."""
    if _flow_openers(text) <= MAX_DEPTH:
        return
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", text))
    steps = np.frombuffer(brackets.encode("ascii"), np.uint8)
    depth = np.cumsum(np.where((steps == 91) | (steps == 123), 1, -1), dtype=np.int64)
    if len(depth) and int(depth.max()) > MAX_DEPTH:
        raise InputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels",
                         file=file, doc=0)


# -- parsing ---------------------------------------------------------------------------


def _yaml_documents(text: str, file: str, mode: Mode = "strict") -> Iterator[tuple[int, object]]:
    """(index, document) pairs; invalid YAML becomes an InputError with its line."""
    for index, data, _ in _parse(text, file, mode, []):
        yield index, data


def _parse(
    text: str, file: str, mode: Mode, warnings: list[str], kinds: Kinds | None = None
) -> Iterator[tuple[int, object, bool]]:
    """(index, document, checked against its schema already) triples; documents of a
    kind in ``kinds`` are checked against its schema while built."""
    if text.lstrip().startswith("{"):  # JSON (kubectl -o json) parses much faster as JSON
        _check_json_depth(text, file)
        try:
            data = json.loads(text, object_pairs_hook=_unrepeated)
        except ValueError:  # not JSON after all, or a key repeated in an object: let the
            pass  # YAML parser explain (or accept) it, by the mode, as in YAML files
        except RecursionError:
            raise InputError(f"invalid JSON: nested deeper than {MAX_DEPTH} levels",
                             file=file, doc=0) from None
        else:
            yield 0, data, False
            return
    # plain block YAML: no need for libyaml; documents checked by their skeleton's plan
    simple = fastyaml.checked_documents(text, None if kinds is None else _Judge(kinds))
    if simple is not None:
        for index, (data, checked) in enumerate(zip(*simple, strict=True)):
            yield index, data, checked
        return
    _check_yaml_depth(text, file)
    index = 0  # of the document being parsed when an error occurs
    loader = _Loader(text, mode, kinds)
    try:
        while loader.check_data():
            data = loader.get_data()
            warnings.extend(f"{file}[doc {index}]: {w}" for w in loader.warnings)
            loader.warnings.clear()
            yield index, data, loader.checked
            index += 1
    except yaml.YAMLError as err:
        raise _yaml_error(err, file, index) from None
    finally:
        loader.dispose()


def _unrepeated(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, or ValueError when a key is in it twice (``json`` keeps the last
    silently; YAML's reader says so, by the mode)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError("repeated key")
    return out


def _yaml_error(err: yaml.YAMLError, file: str, index: int) -> InputError:
    mark = getattr(err, "problem_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    if isinstance(err, yaml.reader.ReaderError):  # its text ends with a second line
        problem, where = str(err).splitlines()[0], f" at character {err.position + 1}"
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


def _document(file: str, index: int, obj: object, path: str, checked: bool = False) -> Document:
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
    doc = Document(file, index, obj, _text(obj, "apiVersion"), _text(obj, "kind"), name, path,
                   checked)
    if not checked:  # a checked document's apiVersion and kind are non-empty strings
        _check_type_fields(doc)
    return doc


def _with_defaults(item: object, api_version: str, kind: str) -> object:
    """Items of a typed list (``NodeList``) may omit their apiVersion and kind."""
    if not isinstance(item, Mapping) or kind == "List":
        return item
    defaults = {"apiVersion": api_version, "kind": kind.removesuffix("List")}
    missing = {k: v for k, v in defaults.items() if not item.get(k)}
    return {**item, **missing} if missing else item


def _objects(
    file: str, index: int, obj: object, path: str = "", mode: Mode | None = None,
    warnings: list[str] | None = None, nesting: int = 0, checked: bool = False,
) -> Iterator[Document]:
    """The Documents in one YAML document, expanding ``List`` / ``*List`` recursively."""
    doc = _document(file, index, obj, path, checked)
    if not (doc.kind == "List" or (doc.kind.endswith("List") and "items" in doc.obj)):
        yield doc
        return
    items_path = f"{path}.items" if path else "items"
    try:
        if nesting >= MAX_LIST_NESTING:
            raise InputError(f"Lists nested more than {MAX_LIST_NESTING} deep")
        found = schema.check(doc.obj, "gangsched.List", mode or schema.default_mode())
        if warnings is not None:
            warnings.extend(str(doc.locate(w)) for w in found)
        items = as_list(doc.obj.get("items"), "items")
    except InputError as err:
        raise doc.locate(err) from None
    for i, item in enumerate(items):
        item = _with_defaults(item, doc.api_version, doc.kind)
        yield from _objects(file, index, item, f"{items_path}[{i}]", mode, warnings, nesting + 1)


def dispatch(
    doc: Document, inputs: Inputs, kinds: Kinds, *, ignore_unknown: bool = False,
    mode: Mode | None = None,
) -> None:
    """Check ``doc`` and hand it to its kind's handler, which adds it to ``inputs``.

    An object named by ``metadata.generateName`` gets its name here, before anything
    can report an error about it (see :func:`generated_name`)."""
    entry = kinds.entry(doc.api_version, doc.kind)
    if entry is None and (doc.api_version, doc.kind) in NOT_SCHEDULING:
        inputs.warnings.append(str(doc.error(
            f"{doc.api_version}/{doc.kind} carries nothing gangsched schedules; skipped")))
        return
    if entry is None:
        reason, supported = kinds.unsupported(doc)
        if not ignore_unknown:
            raise doc.error(f"{reason}; {supported}")
        inputs.warnings.append(str(doc.error(f"{reason}; skipped")))
        return
    try:
        if not doc.name:
            _name_generated(doc, inputs)
            if doc.name:
                check_name(doc.name, "metadata.generateName", entry.name_rule)
        if entry.schema is not None and not doc.checked:
            found = schema.check(doc.obj, entry.schema, mode or schema.default_mode())
            inputs.warnings.extend(str(doc.locate(w)) for w in found)
        check_object_meta(doc.obj.get("metadata"), entry.name_rule,
                          schema_checked=entry.schema is not None)
        if not doc.name:  # the API server's words
            raise InputError("Required value: name or generateName is required",
                             field="metadata.name")
        inputs.documents.append(doc)
        entry.handler(doc, inputs)
    except InputError as err:
        raise doc.locate(err) from None


def load(
    paths: Sequence[str | Path],
    *,
    kinds: Kinds = BUILTIN_KINDS,
    ignore_unknown: bool = False,
    errors: list[InputError] | None = None,
    validate: Mode | None = None,
) -> Inputs:
    """Load Kubernetes objects from YAML files (``-`` is stdin; directories expand).

    Multi-document files, ``List``/``*List`` objects and empty documents are handled.
    Raises :class:`InputError` naming the file, document, object and field. With an
    ``errors`` list, problems are appended there instead and loading goes on (a bad
    document is skipped, a bad file is left after its first YAML error): for reporting
    every problem at once; the returned inputs then hold only the good objects.
    ``validate`` is the mode for unknown fields and repeated keys (``strict``, ``warn``,
    ``ignore``; default :func:`gangsched.api.schema.default_mode`); ``ignore_unknown``
    skips objects of kinds not in ``kinds`` with a warning.
    """
    mode = validate or schema.default_mode()
    with _without_collection():
        return _load(paths, kinds, ignore_unknown, errors, mode)


FREEZE_AFTER = 50_000
"""A load that leaves at least this many new container objects alive freezes them (and
everything older) out of the cyclic garbage collector: see :func:`_without_collection`."""


@contextlib.contextmanager
def _without_collection() -> Iterator[None]:
    """No cyclic garbage collection while inputs are read: a load builds tens of
    containers per object and frees few, none in cycles, and collecting while they pile
    up cost a quarter of a large load (two full collections over everything).

    After a large load (:data:`FREEZE_AFTER` new objects alive) what exists is frozen
    (``gc.freeze``): the inputs live as long as the command that reads them, and
    otherwise the next full collection scans every one of them again (on 5,000 nodes and
    3,000 pods, 0.1 s in the middle of placing). Frozen objects are still freed when no
    longer referenced; only a reference cycle among them would stay, and the young
    generations are collected first so no such garbage is frozen from before the load."""
    collecting = gc.isenabled()
    if collecting:
        gc.collect(1)  # young cyclic garbage: collected, not frozen
    gc.disable()
    try:
        yield
    finally:
        if collecting and gc.get_count()[0] >= FREEZE_AFTER:
            gc.freeze()
        if collecting:
            gc.enable()


def _load(paths: Sequence[str | Path], kinds: Kinds, ignore_unknown: bool,
          errors: list[InputError] | None, mode: Mode) -> Inputs:
    inputs = Inputs()
    for file in _expand_paths(paths):
        name = "<stdin>" if file == "-" else file
        try:
            for index, data, checked in _parse(_read(file), name, mode, inputs.warnings,
                                               kinds):
                if data is None:
                    continue
                for doc in _objects_or_error(name, index, data, errors, mode, inputs.warnings,
                                             checked):
                    try:
                        dispatch(doc, inputs, kinds, ignore_unknown=ignore_unknown, mode=mode)
                    except InputError as err:
                        if errors is None:
                            raise
                        errors.append(err)
        except InputError as err:
            if errors is None:
                raise
            errors.append(err)
    return inputs


def load_object(
    obj: Mapping[str, Any], source: str = "api", validate: Mode = "ignore", *,
    kinds: Kinds = BUILTIN_KINDS, path: str = "",
) -> Inputs:
    """One object (say, from the API server, or a ``List`` in a trace line at field
    ``path``) parsed as :func:`load` would parse it from a file; raises
    :class:`InputError` when it is invalid or its kind unknown. Fields this Kubernetes
    version does not know are ignored by default: a newer API server may add some."""
    inputs = Inputs()
    for doc in _objects(source, 0, obj, path, validate, inputs.warnings):
        dispatch(doc, inputs, kinds, mode=validate)
    return inputs


def _objects_or_error(
    name: str, index: int, data: object, errors: list[InputError] | None,
    mode: Mode | None = None, warnings: list[str] | None = None, checked: bool = False,
) -> list[Document]:
    try:
        return list(_objects(name, index, data, "", mode, warnings, 0, checked))
    except InputError as err:
        if errors is None:
            raise
        errors.append(err)
        return []
