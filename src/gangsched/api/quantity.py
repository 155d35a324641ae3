"""Kubernetes resource quantities as exact integers in base units.

``cpu`` becomes millicores, byte resources (``memory``, ``ephemeral-storage``,
``hugepages-*``) become bytes, both rounded up like ``Quantity.MilliValue()`` /
``Quantity.Value()``. Every other resource (``pods``, ``nvidia.com/gpu``, ...) is a
count and must be a whole number, as Kubernetes requires for extended resources.

Grammar (``k8s.io/apimachinery/pkg/api/resource``)::

    quantity  ::= [+-] number suffix
    number    ::= digits | digits "." [digits] | "." digits
    suffix    ::= Ki | Mi | Gi | Ti | Pi | Ei          (binary)
                | n | u | m | "" | k | M | G | T | P | E (decimal)
                | (e | E) [+-] digits                (exponent)
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from decimal import Decimal

from gangsched.api.errors import InputError

MAX_VALUE = 2**62
"""Largest value (in base units) accepted; anything beyond is certainly a typo."""

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}  # powers of 1024
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)"
)
_BYTE_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def is_byte_resource(resource: str) -> bool:
    """Whether ``resource`` is measured in bytes (rounded up, rendered with Ki..Ei)."""
    return resource in _BYTE_RESOURCES or resource.startswith("hugepages-")


def _unit_scale(resource: str) -> int:
    """Base units per 1 of the quantity: 1000 for cpu (millicores), else 1."""
    return 1000 if resource == "cpu" else 1


def _to_decimal(value: object) -> tuple[Decimal, int]:
    """The exact value of a YAML scalar or quantity string as (decimal, binary multiplier)."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"must be a quantity such as 2, 500m or 16Gi, not {value!r}")
    if isinstance(value, int):
        return Decimal(value), 1
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InputError(f"must be a finite quantity, not {value!r}")
        return Decimal(repr(value)), 1  # the shortest text that round-trips, e.g. 0.1
    if not isinstance(value, str):
        raise InputError(
            f"must be a quantity such as 2, 500m or 16Gi, not a {type(value).__name__}"
        )
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise InputError(f"invalid quantity {value!r} (expected e.g. 2, 500m, 1.5, 16Gi, 1e3)")
    number, suffix = match["number"], match["suffix"]
    if suffix in _BINARY:
        return Decimal(number), 1024 ** _BINARY[suffix]
    exponent = suffix[1:] if len(suffix) > 1 else str(_DECIMAL[suffix])
    return Decimal(f"{number}E{exponent}"), 1  # exact: no context rounding on construction


def _ceil_scaled(amount: Decimal, scale: int) -> tuple[int, bool]:
    """``ceil(amount * scale)`` and whether it is exact, from the decimal digits."""
    _, digits, exp = amount.as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits))) * scale
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
    if not isinstance(mapping, Mapping):
        raise InputError(
            f"must be a mapping of resource name to quantity, not a {type(mapping).__name__}",
            field=field,
        )
    result: dict[str, int] = {}
    for name, raw in mapping.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"invalid resource name {name!r}", field=field)
        try:
            result[name] = parse_quantity(raw, name)
        except InputError as err:
            raise err.located(field_prefix=f"{field}.{name}") from None
    return result
