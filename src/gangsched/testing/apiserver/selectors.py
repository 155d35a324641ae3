"""Label selectors (``labelSelector``) and field selectors (``fieldSelector``), parsed the
way the API server parses them and matched against stored objects."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gangsched.api.objects import split_selector
from gangsched.testing.apiserver.errors import bad_request

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EXISTS = re.compile(rf"^(?P<key>{_KEY})$")
_NOT_EXISTS = re.compile(rf"^!\s*(?P<key>{_KEY})$")
_EQUALITY = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})$")
_SET = re.compile(rf"^(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_NUMERIC = re.compile(rf"^(?P<key>{_KEY})\s*(?P<op>[<>])\s*(?P<value>-?\d+)$")
_VALUE_RE = re.compile(rf"^{_VALUE}$")

Labels = Mapping[str, str]


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # exists, !, =, !=, in, notin, <, >
    values: tuple[str, ...] = ()

    def matches(self, labels: Labels) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number = int(str(value))
        except ValueError:
            return False
        bound = int(self.values[0])
        return number > bound if self.op == ">" else number < bound


def _requirement(text: str) -> Requirement:
    text = text.strip()
    if m := _EQUALITY.match(text):
        op = "=" if m["op"] in ("=", "==") else "!="
        return Requirement(m["key"], op, (m["value"],))
    if m := _SET.match(text):
        values = tuple(v.strip() for v in m["values"].split(","))
        if not all(_VALUE_RE.match(v) for v in values):
            raise bad_request(f"unable to parse requirement: invalid values in {text!r}")
        return Requirement(m["key"], m["op"], values)
    if m := _NOT_EXISTS.match(text):
        return Requirement(m["key"], "!")
    if m := _EXISTS.match(text):
        return Requirement(m["key"], "exists")
    if m := _NUMERIC.match(text):
        return Requirement(m["key"], m["op"], (m["value"],))
    raise bad_request(f"unable to parse requirement: {text!r}")


@dataclass(frozen=True)
class LabelSelector:
    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, text: str | None) -> LabelSelector:
        """Parse ``a=b,c!=d,e in (x,y),f notin (z),g,!h`` (400 BadRequest when invalid)."""
        if not text or not text.strip():
            return cls()
        return cls(tuple(_requirement(p) for p in split_selector(text)))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        if not self.requirements:
            return True
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        return all(r.matches(labels) for r in self.requirements)

    def __bool__(self) -> bool:
        return bool(self.requirements)


FIELD_ALIASES = {"source": "source.component"}
"""Event field selectors whose name is not the object path."""


def field_value(obj: Mapping[str, Any], path: str) -> str:
    """The value of a dotted field path as a field selector sees it (missing is ``""``,
    booleans ``true``/``false``)."""
    node: Any = obj
    for part in FIELD_ALIASES.get(path, path).split("."):
        if not isinstance(node, Mapping):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _split_unescaped(text: str, sep: str) -> list[str]:
    parts, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append("\\" + ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == sep:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts


@dataclass(frozen=True)
class FieldSelector:
    terms: tuple[tuple[str, bool, str], ...] = ()  # (field, equal?, value)

    @classmethod
    def parse(cls, text: str | None, allowed: Sequence[str] | None = None) -> FieldSelector:
        """Parse ``spec.nodeName=,status.phase!=Failed``; a field not in ``allowed``
        is a 400 BadRequest, as on the real server."""
        if not text or not text.strip():
            return cls()
        terms = []
        for part in _split_unescaped(text, ","):
            m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)(.*)$", part)
            if not m:
                raise bad_request(f"invalid selector: {text!r}; can't understand {part!r}")
            name, op, raw = m.groups()
            if allowed is not None and name not in allowed:
                raise bad_request(f'field label not supported: {name}')
            terms.append((name, op != "!=", _unescape(raw.strip())))
        return cls(tuple(terms))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, f) == v) == eq for f, eq, v in self.terms)

    def __bool__(self) -> bool:
        return bool(self.terms)


Predicate = Callable[[Mapping[str, Any]], bool]


def predicate(labels: LabelSelector, fields: FieldSelector) -> Predicate | None:
    """One test for both selectors (``None`` when both are empty)."""
    if not labels and not fields:
        return None
    return lambda obj: labels.matches(obj) and fields.matches(obj)
