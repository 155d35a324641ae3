"""Kubernetes resource quantities as exact integers in base units.

``cpu`` becomes millicores, byte resources (``memory``, ``ephemeral-storage``,
``hugepages-*``) become bytes, both rounded up like ``Quantity.MilliValue()`` /
``Quantity.Value()``. Every other resource (``pods``, ``nvidia.com/gpu``, ...) is a
count and must be a whole number, as Kubernetes requires for extended resources.

Syntax: exactly what ``resource.ParseQuantity`` accepts (``k8s.io/apimachinery`` v0.37.2,
``pkg/api/resource/quantity.go``), after ``Quantity.UnmarshalJSON`` trims surrounding
white space; :func:`syntax_error` is that check on its own, for quantity fields gangsched
does not otherwise read (a Node's ``status.capacity`` beside its ``allocatable``)::

    quantity  ::= [+-] number suffix
    number    ::= digits | digits "." [digits] | "." digits       (ASCII 0-9 only)
    suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei          (binary)
                | n | u | m | "" | k | M | G | T | P | E (decimal)
                | (e | E) [+-] digits                (exponent)

with apimachinery's quirks kept: the number may be empty (``"+"``, ``"."``, ``"Gi"`` and
``"e5"`` are zero) except where ParseQuantity takes its slow path (``"Pi"``, ``"Ei"``,
``"e-10"`` are errors), and an exponent is read as a 64-bit integer, then truncated to 32
bits. Checked against ``resource.Quantity.UnmarshalJSON`` on 40,000 generated strings. Values above
:data:`MAX_VALUE` base units are refused here (the API server would cap them at
``2**63-1``; no real request or capacity comes close), and so are numbers of more than
:data:`MAX_DIGITS` significant digits (the API server reads them, then rounds to 1n).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from decimal import Decimal

from gangsched.api.errors import InputError
from gangsched.api.names import qualified_name

MAX_VALUE = 2**62
"""Largest value (in base units) accepted; anything beyond is certainly a typo."""

MAX_DIGITS = 4300
"""Most significant digits a quantity may have (leading and trailing zeros aside):
Python's limit on reading an int from its digits (``sys.get_int_max_str_digits()``);
no real quantity comes close."""

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}  # powers of 1024
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DIGITS = frozenset("0123456789")
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_JSON_RAW_SPACE = " \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + (
    "\u202f\u205f\u3000")
"""What ``Quantity.UnmarshalJSON``'s ``strings.TrimSpace`` can remove: Go's white space
(``unicode.IsSpace``) that a JSON string carries raw; the rest (tab, newline, U+2028,
U+2029) is escaped in JSON, so the quantity keeps it and is invalid."""
_INT64 = 2**63
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})
_EXAMPLES = "expected e.g. 2, 500m, 1.5, 16Gi, 1e3"


def is_byte_resource(resource: str) -> bool:
    """Whether ``resource`` is measured in bytes (rounded up, rendered with Ki..Ei)."""
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def _unit_scale(resource: str) -> int:
    """Base units per 1 of the quantity: 1000 for cpu (millicores), else 1."""
    return 1000 if resource == "cpu" else 1


def _run(text: str, pos: int, chars: frozenset[str]) -> int:
    """The end of the run of ``chars`` starting at ``pos``."""
    end = len(text)
    while pos < end and text[pos] in chars:
        pos += 1
    return pos


def _scan(text: str) -> tuple[bool, str, str, str] | None:
    """``parseQuantityString``: (positive, digits, fraction, suffix), None if malformed.

    ``digits`` has its leading zeros stripped ("" when there are none left).
    """
    positive, pos, end = True, 0, len(text)
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    pos = _run(text, pos, frozenset("0"))
    if pos >= end:
        return positive, "", "", ""
    num_end = _run(text, pos, _DIGITS)
    num, pos = text[pos:num_end], num_end
    denom = ""
    if pos < end and text[pos] == ".":
        denom_end = _run(text, pos + 1, _DIGITS)
        denom, pos = text[pos + 1:denom_end], denom_end
    suffix_start = pos
    pos = _run(text, pos, _SUFFIX_CHARS)
    if pos < end and text[pos] in "+-":
        pos += 1
    pos = _run(text, pos, _DIGITS)
    if pos < end:
        return None
    return positive, num, denom, text[suffix_start:]


def _interpret(suffix: str) -> tuple[int, int, bool] | None:
    """``quantitySuffixer.interpret``: (base, exponent, is an exponent suffix) or None."""
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], False
    if suffix in _BINARY:
        return 2, 10 * _BINARY[suffix], False
    if len(suffix) > 1 and suffix[0] in "eE":
        rest = suffix[1:]
        body = rest[1:] if rest[:1] in "+-" else rest
        if not body or not set(body) <= _DIGITS:
            return None
        body = body.lstrip("0") or "0"
        if len(body) > 19:  # beyond int64: not read (int() refuses 4300 digits)
            return None
        exponent = -int(body) if rest[0] == "-" else int(body)
        if not -_INT64 <= exponent < _INT64:  # strconv.ParseInt(.., 10, 64)
            return None
        return 10, (exponent + 2**31) % 2**32 - 2**31, True  # then int32(parsed)
    return None


@functools.lru_cache(maxsize=8192)
def _parse_text(text: str) -> tuple[Decimal, int] | str:
    """The exact value of a quantity string as (decimal, binary multiplier), or why it is
    not one (``ParseQuantity``'s ``ErrFormatWrong``, ``ErrSuffix``, ``ErrNumeric``)."""
    text = text.strip(_JSON_RAW_SPACE)
    scanned = _scan(text) if text else None
    if scanned is None:
        return ""  # ErrFormatWrong
    positive, num, denom, suffix = scanned
    meaning = _interpret(suffix)
    if meaning is None:
        return f"unknown suffix {suffix!r}"  # ErrSuffix
    base, exponent, _ = meaning
    if len((num + denom).strip("0")) > MAX_DIGITS:
        return f"more than {MAX_DIGITS} significant digits"
    if not num and not denom and not _has_zero(text) and (
        exponent < -9 if base == 10 else exponent >= 50
    ):
        return "no digits"  # ErrNumeric: on ParseQuantity's slow path inf.Dec reads none
    sign = "" if positive else "-"
    digits = (num or "0") + (f".{denom}" if denom else "")
    if base == 2:
        return Decimal(sign + digits), 2**exponent
    return Decimal(f"{sign}{digits}E{exponent}"), 1  # exact: no context rounding


def _has_zero(text: str) -> bool:
    """Whether the number part had a (stripped) leading zero: then it has a digit."""
    body = text[1:] if text[:1] in "+-" else text
    return body[:1] == "0"


def syntax_error(value: object) -> str | None:
    """Why ``value`` (a YAML/JSON scalar) would not decode as a ``resource.Quantity``,
    or None. Numbers decode by their text; anything else is not a quantity."""
    if isinstance(value, bool) or value is None:
        return f"must be a quantity such as 2, 500m or 16Gi, not {value!r}"
    if isinstance(value, int):
        return None
    if isinstance(value, float):
        return None if math.isfinite(value) else f"must be a finite quantity, not {value!r}"
    if not isinstance(value, str):
        return f"must be a quantity such as 2, 500m or 16Gi, not a {type(value).__name__}"
    parsed = _parse_text(value)
    if isinstance(parsed, str):
        why = f": {parsed}" if parsed else ""
        return f"invalid quantity {value!r}{why} ({_EXAMPLES})"
    return None


def _to_decimal(value: object) -> tuple[Decimal, int]:
    """The exact value of a YAML scalar or quantity string as (decimal, binary multiplier)."""
    problem = syntax_error(value)
    if problem is not None:
        raise InputError(problem)
    if isinstance(value, int):
        return Decimal(value), 1
    if isinstance(value, float):
        return Decimal(repr(value)), 1  # the shortest text that round-trips, e.g. 0.1
    assert isinstance(value, str)
    parsed = _parse_text(value)
    assert not isinstance(parsed, str)
    return parsed


def _ceil_scaled(amount: Decimal, scale: int) -> tuple[int, bool]:
    """``ceil(amount * scale)`` and whether it is exact, from the decimal digits."""
    _, digits, exp = amount.as_tuple()
    assert isinstance(exp, int)
    text = "".join(map(str, digits))
    significant = text.rstrip("0")  # at most MAX_DIGITS: int() reads them
    exp += len(text) - len(significant)
    mantissa = int(significant or "0") * scale
    if exp >= 0:
        return mantissa * 10**exp, True
    quotient, remainder = divmod(mantissa, 10**-exp)
    return quotient + (remainder > 0), remainder == 0


def parse_quantity(value: object, resource: str) -> int:
    """Parse a Kubernetes quantity of ``resource`` into integer base units.

    Raises :class:`InputError` (without a field; callers add it) for malformed or
    negative values, fractional counts and values beyond :data:`MAX_VALUE`.
    """
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return _parse_cached(value, resource)  # manifests repeat the same few quantities
    return _parse(value, resource)


def _too_large(value: object) -> InputError:
    return InputError(f"quantity {value!r} is too large (limit: 2**62 base units)")


def _parse(value: object, resource: str) -> int:
    amount, multiplier = _to_decimal(value)
    if amount == 0:
        return 0
    if amount < 0:
        raise InputError(f"must not be negative, got {value!r}")
    if amount.adjusted() > 19:  # 10**19 > MAX_VALUE: reject before building huge ints
        raise _too_large(value)
    if amount.adjusted() < -40:  # far below one base unit of anything
        result, exact = 1, False
    else:
        result, exact = _ceil_scaled(amount, multiplier * _unit_scale(resource))
    if not exact and _unit_scale(resource) == 1 and not is_byte_resource(resource):
        raise InputError(f"{resource} must be a whole number, got {value!r}")
    if result > MAX_VALUE:
        raise _too_large(value)
    return result


_parse_cached = functools.lru_cache(maxsize=4096, typed=True)(_parse)


def format_quantity(value: int, resource: str) -> str:
    """Render base units back as a Kubernetes quantity (``600m``, ``2``, ``16Gi``)."""
    if resource == "cpu":
        return str(value // 1000) if value % 1000 == 0 else f"{value}m"
    if is_byte_resource(resource) and value:
        for suffix, power in sorted(_BINARY.items(), key=lambda kv: -kv[1]):
            unit = 1024**power
            if value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)


def format_resources(resources: Mapping[str, int]) -> dict[str, str]:
    """Render a whole resource map, e.g. for printing a manifest."""
    return {name: format_quantity(v, name) for name, v in resources.items()}


def parse_resources(mapping: object, field: str) -> dict[str, int]:
    """Parse a requests/limits/allocatable map; errors name ``field.<resource>``.

    ``None`` (an absent or empty map) is an empty result.
    """
    if mapping is None:
        return {}
    if type(mapping) is dict and all(type(raw) is str for raw in mapping.values()):
        # the same few maps repeat: their parse is remembered (string quantities only:
        # a bool would hash as an int, a list not at all)
        key = tuple(mapping.items())
        known = _RESOURCES_SEEN.get(key)
        if known is not None:
            return dict(known)
        result = _parse_resources(mapping, field)
        if len(_RESOURCES_SEEN) >= _RESOURCES_SEEN_MAX:
            _RESOURCES_SEEN.clear()
        _RESOURCES_SEEN[key] = dict(result)
        return result
    return _parse_resources(mapping, field)


_RESOURCES_SEEN: dict[tuple[tuple[object, object], ...], dict[str, int]] = {}
_RESOURCES_SEEN_MAX = 4096


def _parse_resources(mapping: object, field: str) -> dict[str, int]:
    if not isinstance(mapping, Mapping):
        raise InputError(
            f"must be a mapping of resource name to quantity, not a {type(mapping).__name__}",
            field=field,
        )
    result: dict[str, int] = {}
    for name, raw in mapping.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"invalid resource name {name!r}", field=field)
        if qualified_name(name):
            raise InputError(f"invalid resource name {name!r}: "
                             f"{'; '.join(qualified_name(name))}", field=field)
        try:
            result[name] = parse_quantity(raw, name)
        except InputError as err:
            raise err.located(field_prefix=f"{field}.{name}") from None
    return result
