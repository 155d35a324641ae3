"""Schema-driven checking of whole objects, as the API server decodes them.

Every object is checked against the schema of its kind before a front-end reads it:

* **unknown fields**: an error by default, as kubectl's strict field validation
  (``--validate=strict``) reports them; ``warn`` turns them into warnings and ``ignore``
  drops them silently (:data:`VALIDATE_MODES`, default from ``$GANGSCHED_VALIDATE``);
* **types**: a list given as a string, an object given as a number, a string given as a
  number (``name: 123``) are errors in every mode, as JSON decoding into Go structs fails;
* **integers** in their format's range (``int32``: replicas, priorities, ports...);
* **quantities** with apimachinery's own grammar (:func:`gangsched.api.quantity.
  syntax_error`), every one of them, including fields gangsched never reads;
* **timestamps** (RFC 3339), **base64** bytes, **int-or-string** values.

``null`` is accepted anywhere (Go decodes it as the zero value). The Kubernetes types come
from the OpenAPI spec of Kubernetes 1.37 (``data/k8s-1.37-schema.json``, written by
``scripts/gen_k8s_schema.py``); front-ends add the types of their custom resources with
:func:`define`, in the same form: a struct is ``{field: type}``, a type is a primitive
(``string``, ``int32``, ``int64``, ``number``, ``boolean``, ``byte``, ``date-time``,
``quantity``, ``crd-quantity``, ``int-or-string``, ``any``), ``labels`` or
``annotations`` (string maps with Kubernetes' key and value rules), a struct's name,
``{"list": T}`` or ``{"map": T}``.
"""

from __future__ import annotations

import binascii
import difflib
import functools
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from importlib import resources
from typing import Any, Literal, cast

from gangsched.api import names
from gangsched.api.errors import InputError
from gangsched.api.objects import check_annotations, check_labels, describe
from gangsched.api.quantity import syntax_error

Mode = Literal["strict", "warn", "ignore"]
VALIDATE_MODES: tuple[Mode, ...] = ("strict", "warn", "ignore")
MODE_ALIASES: dict[str, Mode] = {"true": "strict", "false": "ignore"}  # kubectl's old values
VALIDATE_ENV = "GANGSCHED_VALIDATE"
SCHEMA_FILE = "k8s-1.37-schema.json"
KUBERNETES_VERSION = "1.37"

TypeExpr = str | Mapping[str, Any]
Scalar = Callable[[Any], "str | None"]  # the problem with a value, or None


def parse_mode(value: str, where: str = "--validate") -> Mode:
    """A validation mode from a flag or the environment (``true``/``false`` accepted)."""
    text = value.strip().lower()
    text = MODE_ALIASES.get(text, text)
    for mode in VALIDATE_MODES:
        if text == mode:
            return mode
    raise InputError(f"must be one of {', '.join(VALIDATE_MODES)} (or true, false), "
                     f"not {value!r}", field=where)


def default_mode() -> Mode:
    """``$GANGSCHED_VALIDATE`` if set, else ``strict``."""
    value = os.environ.get(VALIDATE_ENV)
    return "strict" if not value else parse_mode(value, VALIDATE_ENV)


# -- scalar checks -----------------------------------------------------------------------

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(Z|[+-]([0-9]{2}):([0-9]{2}))"
)


def _wrong(expected: str, value: object) -> str:
    hint = " (quote it in YAML)" if expected == "a string" and isinstance(
        value, bool | int | float) else ""
    return f"must be {expected}, not {describe(value)}{hint}"


def _string(value: Any) -> str | None:
    return None if type(value) is str else _wrong("a string", value)


def _integer(low: int, high: int, bits: int) -> Scalar:
    def check(value: Any) -> str | None:
        if type(value) is not int:
            return _wrong("an integer", value)
        if low <= value <= high:
            return None
        return f"must fit in {bits} bits ({low}..{high}), not {value}"
    return check


_int32 = _integer(*INT32, 32)
_int64 = _integer(*INT64, 64)


def _number(value: Any) -> str | None:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return None
    return _wrong("a finite number", value)


def _boolean(value: Any) -> str | None:
    return None if type(value) is bool else _wrong("a boolean (true or false)", value)


_quantity_text = functools.lru_cache(maxsize=16384)(syntax_error)


def _quantity(value: Any) -> str | None:
    if type(value) is str:
        return _quantity_text(value)  # manifests repeat the same few quantities
    return syntax_error(value) if not isinstance(value, list | dict) else _wrong(
        "a quantity such as 2, 500m or 16Gi", value)


_CRD_QUANTITY = re.compile(  # the pattern controller-gen writes for resource.Quantity
    r"(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?")


def _crd_quantity(value: Any) -> str | None:
    """A quantity in a custom resource: an integer, or a string matching the CRD's
    pattern (checked by the API server) that also decodes as a Quantity (in the
    controller)."""
    if type(value) is int:
        return None
    if type(value) is not str:
        return _wrong("a quantity (an integer or a string such as 500m or 16Gi)", value)
    if _CRD_QUANTITY.fullmatch(value) is None:
        return f"invalid quantity {value!r} (expected e.g. 2, 500m, 1.5, 16Gi, 1e3)"
    return _quantity_text(value)


def _int_or_string(value: Any) -> str | None:
    if type(value) is str:
        return None
    if type(value) is int:
        return _int32(value)
    return _wrong("an integer or a string", value)


@functools.lru_cache(maxsize=4096)
def _timestamp(value: str) -> str | None:
    match = _RFC3339.fullmatch(value)
    problem = f"must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not {value!r}"
    if match is None:
        return problem
    year, month, day, hour, minute, second = (int(match[i]) for i in range(1, 7))
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return problem
    if match[9] is not None and (int(match[9]) > 23 or int(match[10]) > 59):
        return problem
    return None


def _date_time(value: Any) -> str | None:
    return _timestamp(value) if type(value) is str else _wrong("a time (a string)", value)


def _byte(value: Any) -> str | None:
    if type(value) is not str:
        return _wrong("base64 data (a string)", value)
    try:
        binascii.a2b_base64(value.replace("\r", "").replace("\n", ""), strict_mode=True)
    except (binascii.Error, ValueError):
        return "must be base64 data"
    return None


def _any(value: Any) -> str | None:
    return None


SCALARS: dict[str, Scalar] = {
    "string": _string,
    "int32": _int32,
    "int64": _int64,
    "number": _number,
    "boolean": _boolean,
    "quantity": _quantity,
    "crd-quantity": _crd_quantity,
    "int-or-string": _int_or_string,
    "date-time": _date_time,
    "byte": _byte,
    "any": _any,
}

# -- paths and context -------------------------------------------------------------------

Chain = tuple[Any, str | int] | None  # (parent chain, segment): built only when descending


def render_path(chain: Chain) -> str:
    parts: list[str | int] = []
    while chain is not None:
        chain, segment = chain
        parts.append(segment)
    out = ""
    for segment in reversed(parts):
        if isinstance(segment, int):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else segment
    return out


class _Context:
    __slots__ = ("mode", "warnings")

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.warnings: list[InputError] = []

    def unknown(self, struct: _Struct, key: object, chain: Chain) -> None:
        if self.mode == "ignore":
            return
        if not isinstance(key, str):
            raise InputError(f"field name {key!r} must be a string", field=render_path(chain))
        message = f'unknown field "{key}"'
        close = difflib.get_close_matches(key, list(struct.fields), n=1, cutoff=0.75)
        if close:
            message += f' (did you mean "{close[0]}"?)'
        err = InputError(message, field=render_path((chain, key)))
        if self.mode == "strict":
            raise InputError(f"{message}; --validate=warn skips unknown fields",
                             field=err.field)
        self.warnings.append(err)


# -- compiled checkers -------------------------------------------------------------------

Entry = tuple["Scalar | None", "_Container | None"]


class _Container:
    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        raise NotImplementedError


class _Struct(_Container):
    def __init__(self, name: str, spec: Mapping[str, TypeExpr]) -> None:
        self.name = name
        self.spec = spec
        self._fields: dict[str, Entry] | None = None

    @property
    def fields(self) -> dict[str, Entry]:
        if self._fields is None:
            self._fields = {k: _entry(v) for k, v in self.spec.items()}
        return self._fields

    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        if type(value) is not dict and not isinstance(value, Mapping):
            raise InputError(_wrong("a mapping", value), field=render_path(chain) or None)
        fields = self._fields if self._fields is not None else self.fields
        for key, item in value.items():
            entry = fields.get(key)
            if entry is None:
                ctx.unknown(self, key, chain)
            elif item is not None:
                scalar = entry[0]
                if scalar is _string:  # the most common field: no call
                    if type(item) is not str:
                        raise InputError(_string(item) or "", field=render_path((chain, key)))
                elif scalar is None:
                    entry[1].check(item, ctx, (chain, key))  # type: ignore[union-attr]
                elif scalar(item) is not None:
                    raise InputError(scalar(item) or "", field=render_path((chain, key)))


class _List(_Container):
    def __init__(self, item: TypeExpr) -> None:
        self.item = item
        self._entry: Entry | None = None

    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        if type(value) is not list:
            raise InputError(_wrong("a list", value), field=render_path(chain) or None)
        if self._entry is None:
            self._entry = _entry(self.item)
        scalar, container = self._entry
        for i, item in enumerate(value):
            if item is None:
                continue
            if scalar is not None:
                problem = scalar(item)
                if problem is not None:
                    raise InputError(problem, field=render_path((chain, i)))
            else:
                assert container is not None
                container.check(item, ctx, (chain, i))


class _Map(_Container):
    def __init__(self, item: TypeExpr) -> None:
        self.item = item
        self._entry: Entry | None = None

    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        if type(value) is not dict and not isinstance(value, Mapping):
            raise InputError(_wrong("a mapping", value), field=render_path(chain) or None)
        if self._entry is None:
            self._entry = _entry(self.item)
        scalar, container = self._entry
        if scalar is _string:  # selectors, env maps...: one sweep
            for k, v in value.items():
                if type(k) is not str or type(v) is not str:
                    break
            else:
                return
        elif scalar is _quantity:  # capacity, requests: cached texts
            for k, v in value.items():
                if type(k) is not str or type(v) is not str or _quantity_text(v) is not None:
                    break
            else:
                return
        for key, item in value.items():
            if type(key) is not str:
                raise InputError(f"key {key!r} must be a string (quote it in YAML)",
                                 field=render_path(chain) or None)
            if item is None:
                continue
            if scalar is not None:
                problem = scalar(item)
                if problem is not None:
                    raise InputError(problem, field=render_path((chain, key)))
            else:
                assert container is not None
                container.check(item, ctx, (chain, key))


class _Labels(_Container):
    """``metadata.labels`` (and label maps like it): keys qualified names, values label
    values (``ValidateLabels``), checked in the same sweep as their types."""

    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        qualified, valid_value = names.is_qualified_name, names.is_label_value
        if type(value) is dict:
            for k, v in value.items():
                if (type(k) is not str or type(v) is not str or not qualified(k)
                        or not valid_value(v)):
                    break
            else:
                return
        _Map("string").check(value, ctx, chain)
        check_labels(value, render_path(chain))


class _Annotations(_Container):
    """``metadata.annotations``: keys qualified names (any case), at most 256 KiB."""

    def check(self, value: Any, ctx: _Context, chain: Chain) -> None:
        _Map("string").check(value, ctx, chain)
        check_annotations(value, render_path(chain))


_SPECIAL: dict[str, _Container] = {"labels": _Labels(), "annotations": _Annotations()}
"""Containers with their own rules, for fields the generated schema types as plain maps:
:func:`_load_kubernetes` points ``meta.v1.ObjectMeta``'s labels and annotations here."""

_TYPES: dict[str, Mapping[str, TypeExpr]] = {}
_STRUCTS: dict[str, _Struct] = {}
_loaded = False


def _load_kubernetes() -> None:
    global _loaded
    if _loaded:
        return
    text = resources.files("gangsched.api").joinpath("data", SCHEMA_FILE).read_text("utf-8")
    data = json.loads(text)
    for name, spec in data["types"].items():
        _TYPES.setdefault(name, spec)
    meta = dict(_TYPES["meta.v1.ObjectMeta"])
    meta.update(labels="labels", annotations="annotations")  # validated, not just typed
    _TYPES["meta.v1.ObjectMeta"] = meta
    _loaded = True


def define(types: Mapping[str, Mapping[str, TypeExpr]]) -> None:
    """Add struct types (a front-end's custom resources); names must be new."""
    _load_kubernetes()
    for name, spec in types.items():
        if name in _TYPES and _TYPES[name] != spec:
            raise ValueError(f"schema type {name!r} is already defined differently")
        _TYPES[name] = spec


def struct(name: str) -> Mapping[str, TypeExpr]:
    """The fields of a struct type (to derive an extended type from it)."""
    _load_kubernetes()
    return _TYPES[name]


def _struct(name: str) -> _Struct:
    found = _STRUCTS.get(name)
    if found is None:
        _load_kubernetes()
        if name not in _TYPES:
            raise KeyError(f"unknown schema type {name!r}")
        found = _STRUCTS[name] = _Struct(name, _TYPES[name])
    return found


def _entry(expr: TypeExpr) -> Entry:
    if isinstance(expr, str):
        scalar = SCALARS.get(expr)
        if scalar is not None:
            return scalar, None
        return None, _SPECIAL[expr] if expr in _SPECIAL else _struct(expr)
    if "list" in expr:
        return None, _List(expr["list"])
    if "map" in expr:
        return None, _Map(expr["map"])
    raise ValueError(f"bad schema type {expr!r}")


# For the loader's fast path (gangsched.api.loader._Loader._fast), which checks YAML nodes
# while building them and leaves anything questionable to check(): the compiled types.
Struct, ListOf, MapOf, Labels, Annotations = _Struct, _List, _Map, _Labels, _Annotations
STRING, QUANTITY, QUANTITY_TEXT = _string, _quantity, _quantity_text


def compiled(type_name: str) -> _Struct:
    """The compiled checker of struct ``type_name``."""
    return _struct(type_name)


def item_entry(container: _List | _Map) -> Entry:
    """(scalar check, container) of the items of a list or map type."""
    if container._entry is None:
        container._entry = _entry(container.item)
    return container._entry


def check(value: object, type_name: str, mode: Mode = "strict") -> list[InputError]:
    """Check ``value`` (a decoded YAML/JSON object) against struct ``type_name``.

    Raises the first :class:`InputError` (its field the path inside ``value``); returns
    the unknown-field warnings when ``mode`` is ``warn``.
    """
    ctx = _Context(mode)
    _struct(type_name).check(value, ctx, None)
    return ctx.warnings


def check_field(value: object, expr: TypeExpr, path: str, mode: Mode = "strict") -> None:
    """Check one value against a type expression; errors name ``path`` and below."""
    scalar, container = _entry(expr)
    if value is None:
        return
    if scalar is not None:
        problem = scalar(value)
        if problem is not None:
            raise InputError(problem, field=path)
        return
    cast(_Container, container).check(value, _Context(mode), (None, path))


def kinds() -> dict[str, str]:
    """``apiVersion/Kind`` -> root type of the Kubernetes kinds in the generated schema."""
    text = resources.files("gangsched.api").joinpath("data", SCHEMA_FILE).read_text("utf-8")
    return dict(json.loads(text)["kinds"])
