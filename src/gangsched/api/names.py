"""Kubernetes' rules for names, label keys and label values, and safe printing of text.

The checks are ports of ``k8s.io/apimachinery`` (v0.37.2): ``pkg/api/validate/content``
(``IsDNS1123Label``, ``IsDNS1123Subdomain``, ``IsLabelKey`` = ``IsQualifiedName``,
``IsLabelValue``) and ``pkg/util/validation`` (``IsDNS1035Label``), with the same
messages. Every pattern is ASCII-only and matched against the whole string (Go's ``^...$``
without a multi-line flag; Python's ``$`` would also accept a trailing newline).

:func:`printable` escapes what a terminal would interpret (control characters, bidi
overrides, line and paragraph separators): every user-supplied text that reaches the
screen goes through it (see :class:`gangsched.api.errors.InputError`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

Rule = Callable[[str], tuple[str, ...]]
"""A name rule: the problems of a value (empty when it is valid)."""

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_NAME_MAX = 63
LABEL_VALUE_MAX = 63
ANNOTATIONS_MAX_BYTES = 256 * 1024  # TotalAnnotationSizeLimitB

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"

_DNS1123_LABEL = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL = re.compile(_DNS1035_LABEL_FMT)
_LABEL_KEY = re.compile(_LABEL_KEY_FMT)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)

_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
    "'-', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
    "with an alphabetic character, and end with an alphanumeric character"
)
_LABEL_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character"
)
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', "
    "'_' or '.', and must start and end with an alphanumeric character"
)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} bytes"


def _size(value: str) -> int:
    """Length in bytes, as Go's ``len`` counts."""
    return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))


@functools.lru_cache(maxsize=65536)
def dns1123_label(value: str) -> tuple[str, ...]:
    """Problems of ``value`` as an RFC 1123 label (``IsDNS1123Label``); empty if valid."""
    errs = []
    if _size(value) > DNS1123_LABEL_MAX:
        errs.append(_max_len(DNS1123_LABEL_MAX))
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            errs.append("must not contain dots")
        else:
            errs.append(_regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT,
                                     "my-name", "123-abc"))
    return tuple(errs)


@functools.lru_cache(maxsize=65536)
def dns1123_subdomain(value: str) -> tuple[str, ...]:
    """Problems of ``value`` as an RFC 1123 subdomain (``IsDNS1123Subdomain``)."""
    errs = []
    if _size(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(_regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return tuple(errs)


@functools.lru_cache(maxsize=4096)
def dns1035_label(value: str) -> tuple[str, ...]:
    """Problems of ``value`` as an RFC 1035 label (``IsDNS1035Label``)."""
    errs = []
    if _size(value) > DNS1035_LABEL_MAX:
        errs.append(_max_len(DNS1035_LABEL_MAX))
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(_regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return tuple(errs)


@functools.lru_cache(maxsize=65536)
def qualified_name(value: str) -> tuple[str, ...]:
    """Problems of ``value`` as a label key / qualified name (``IsLabelKey``):
    an optional DNS subdomain prefix and ``/``, then a name of at most 63 characters."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) > 2:
        return (
            "a valid label key "
            + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        )
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend(f"prefix part {m}" for m in dns1123_subdomain(prefix))
    if not name:
        errs.append("name part must be non-empty")
    elif _size(name) > LABEL_NAME_MAX:
        errs.append(f"name part {_max_len(LABEL_NAME_MAX)}")
    if not _LABEL_KEY.fullmatch(name):
        errs.append("name part " + _regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT,
                                                "MyName", "my.name", "123-abc"))
    return tuple(errs)


@functools.lru_cache(maxsize=65536)
def label_value(value: str) -> tuple[str, ...]:
    """Problems of ``value`` as a label value (``IsLabelValue``)."""
    errs = []
    if _size(value) > LABEL_VALUE_MAX:
        errs.append(_max_len(LABEL_VALUE_MAX))
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(_regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT,
                                 "MyValue", "my_value", "12345"))
    return tuple(errs)


_QUALIFIED = re.compile(f"(?:{_DNS1123_SUBDOMAIN_FMT}/)?{_LABEL_KEY_FMT}")
_KNOWN_GOOD: dict[str, set[str]] = {"value": set(), "key": set(), "subdomain": set()}
_KNOWN_GOOD_MAX = 100_000  # per kind; then forgotten and relearned
KNOWN_GOOD_KEYS, KNOWN_GOOD_VALUES = _KNOWN_GOOD["key"], _KNOWN_GOOD["value"]


def _remember(kind: str, value: str) -> None:
    good = _KNOWN_GOOD[kind]
    if len(good) >= _KNOWN_GOOD_MAX:
        good.clear()
    good.add(value)


def is_label_value(value: str) -> bool:
    """``not label_value(value)``, fast: a set of values already seen valid, else one
    regular expression (host names and other unique values included)."""
    if value in _KNOWN_GOOD["value"]:
        return True
    if len(value) <= LABEL_VALUE_MAX and _LABEL_VALUE.fullmatch(value) is not None:
        _remember("value", value)
        return True
    return False


def is_qualified_name(value: str) -> bool:
    """``not qualified_name(value)``, fast."""
    if value in _KNOWN_GOOD["key"]:
        return True
    if _QUALIFIED.fullmatch(value) is None:
        return False
    prefix, _, name = value.rpartition("/")
    if len(name) <= LABEL_NAME_MAX and len(prefix) <= DNS1123_SUBDOMAIN_MAX:
        _remember("key", value)
        return True
    return False


def is_dns1123_subdomain(value: str) -> bool:
    """``not dns1123_subdomain(value)``, fast."""
    if value in _KNOWN_GOOD["subdomain"]:
        return True
    if len(value) <= DNS1123_SUBDOMAIN_MAX and _DNS1123_SUBDOMAIN.fullmatch(value) is not None:
        _remember("subdomain", value)
        return True
    return False


def first(problems: tuple[str, ...]) -> str:
    """The problems joined as Kubernetes joins them (``; ``)."""
    return "; ".join(problems)


# -- printing ----------------------------------------------------------------------------


def printable(text: str) -> str:
    """``text`` with every non-printable character escaped (``\\x1b``, ``\\u202e``):
    nothing a terminal would interpret reaches it. Printable text is returned as is."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shown(value: object) -> str:
    """A user value quoted for a message: ``repr`` for strings (escapes included)."""
    return repr(value) if isinstance(value, str) else printable(str(value))
