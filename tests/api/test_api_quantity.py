"""Kubernetes quantities: every accepted form, the errors, and formatting back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gangsched.api.errors import InputError
from gangsched.api.quantity import (
    MAX_VALUE,
    format_quantity,
    parse_quantity,
    parse_resources,
    syntax_error,
)

Gi = 1024**3

PARSE_CASES = [
    # cpu -> millicores
    ("100m", "cpu", 100),
    ("0.1", "cpu", 100),
    (0.1, "cpu", 100),
    ("1.5", "cpu", 1500),
    (1.5, "cpu", 1500),
    ("2", "cpu", 2000),
    (2, "cpu", 2000),
    ("+1", "cpu", 1000),
    ("1e3", "cpu", 1_000_000),
    ("1.5E2", "cpu", 150_000),
    ("1e-3", "cpu", 1),
    ("2k", "cpu", 2_000_000),
    ("5.", "cpu", 5000),
    (".5", "cpu", 500),
    ("0", "cpu", 0),
    ("-0", "cpu", 0),
    ("0.0001", "cpu", 1),  # a fraction of a millicore rounds up (MilliValue)
    ("1n", "cpu", 1),
    ("1500u", "cpu", 2),
    ("1Ki", "cpu", 1_024_000),
    # bytes
    ("16Gi", "memory", 16 * Gi),
    ("512Mi", "memory", 512 * 1024**2),
    ("1G", "memory", 10**9),
    ("1.5Gi", "memory", 3 * Gi // 2),
    ("1Ki", "memory", 1024),
    ("1Ti", "memory", 1024**4),
    ("1Pi", "memory", 1024**5),
    ("1Ei", "memory", 1024**6),
    ("1E", "memory", 10**18),
    ("1P", "memory", 10**15),
    ("1T", "memory", 10**12),
    ("1M", "memory", 10**6),
    ("0.5", "memory", 1),  # half a byte rounds up (Value)
    ("100m", "memory", 1),
    ("1e9", "ephemeral-storage", 10**9),
    ("2Mi", "hugepages-2Mi", 2 * 1024**2),
    (1073741824, "memory", Gi),
    # counts
    ("8", "nvidia.com/gpu", 8),
    (8, "nvidia.com/gpu", 8),
    ("2000m", "nvidia.com/gpu", 2),
    ("110", "pods", 110),
    ("1e2", "pods", 100),
    ("4", "rdma/hca_shared_devices_a", 4),
    (8.0, "nvidia.com/gpu", 8),
    # apimachinery's own quirks (resource.Quantity.UnmarshalJSON, v0.37.2)
    (" 1 ", "cpu", 1000),  # UnmarshalJSON trims spaces
    ("Gi", "memory", 0),  # an empty number is zero ...
    ("+", "cpu", 0),
    (".", "cpu", 0),
    ("e5", "cpu", 0),
]


@pytest.mark.parametrize(
    ("value", "resource", "expected"),
    PARSE_CASES,
    ids=[f"{r}={v!r}" for v, r, _ in PARSE_CASES],
)
def test_parse_quantity(value: object, resource: str, expected: int) -> None:
    assert parse_quantity(value, resource) == expected


ERROR_CASES = [
    ("-1", "cpu", "must not be negative"),
    (-2, "memory", "must not be negative"),
    ("-100m", "cpu", "must not be negative"),
    ("abc", "cpu", "invalid quantity 'abc'"),
    ("", "cpu", "invalid quantity ''"),
    ("1K", "cpu", "invalid quantity"),  # kilo is a lower-case k
    ("1e", "cpu", "invalid quantity"),
    ("1.5.2", "cpu", "invalid quantity"),
    ("\t1", "cpu", "invalid quantity"),  # JSON escapes a tab: UnmarshalJSON keeps it
    ("Pi", "memory", "no digits"),
    ("1 Gi", "memory", "invalid quantity"),
    ("1.5", "nvidia.com/gpu", "must be a whole number"),
    (1.5, "nvidia.com/gpu", "must be a whole number"),
    ("500m", "pods", "must be a whole number"),
    ("1e-50", "pods", "must be a whole number"),
    (2**63, "pods", "too large"),
    ("5Ei", "memory", "too large"),
    ("1e99999999999999999", "cpu", "too large"),
    (str(2**62 + 1), "nvidia.com/gpu", "too large"),
    (True, "cpu", "not True"),
    (False, "nvidia.com/gpu", "not False"),
    (None, "cpu", "not None"),
    ([1], "cpu", "not a list"),
    ({"a": 1}, "cpu", "not a dict"),
    (float("nan"), "cpu", "finite"),
    (float("inf"), "memory", "finite"),
]


@pytest.mark.parametrize(
    ("value", "resource", "message"),
    ERROR_CASES,
    ids=[f"{r}={v!r}" for v, r, _ in ERROR_CASES],
)
def test_parse_quantity_errors(value: object, resource: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace(".", r"\.")) as info:
        parse_quantity(value, resource)
    assert info.value.field is None  # the caller names the field


def test_max_value_is_accepted() -> None:
    assert parse_quantity(str(MAX_VALUE), "pods") == MAX_VALUE
    assert parse_quantity("4Ei", "memory") == MAX_VALUE


FORMAT_CASES = [
    (600, "cpu", "600m"),
    (2000, "cpu", "2"),
    (0, "cpu", "0"),
    (16 * Gi, "memory", "16Gi"),
    (512 * 1024**2, "memory", "512Mi"),
    (1536, "memory", "1536"),  # 1.5Ki: no exact binary suffix
    (3 * 1024, "memory", "3Ki"),
    (10**9, "memory", "1000000000"),
    (0, "memory", "0"),
    (2 * 1024**2, "hugepages-2Mi", "2Mi"),
    (8, "nvidia.com/gpu", "8"),
    (110, "pods", "110"),
]


@pytest.mark.parametrize(
    ("value", "resource", "expected"),
    FORMAT_CASES,
    ids=[f"{r}={v}" for v, r, _ in FORMAT_CASES],
)
def test_format_quantity(value: int, resource: str, expected: str) -> None:
    assert format_quantity(value, resource) == expected


@given(
    value=st.integers(min_value=0, max_value=MAX_VALUE),
    resource=st.sampled_from(["cpu", "memory", "nvidia.com/gpu", "pods", "hugepages-1Gi"]),
)
def test_format_then_parse_round_trips(value: int, resource: str) -> None:
    assert parse_quantity(format_quantity(value, resource), resource) == value


@given(millis=st.integers(min_value=0, max_value=10**15))
def test_decimal_cpu_is_exact(millis: int) -> None:
    assert parse_quantity(f"{millis // 1000}.{millis % 1000:03d}", "cpu") == millis


def test_parse_resources_names_the_field() -> None:
    field = "spec.containers[0].resources.requests"
    assert parse_resources({"cpu": "1", "memory": "1Gi"}, field) == {"cpu": 1000, "memory": Gi}
    assert parse_resources(None, field) == {}
    with pytest.raises(InputError) as info:
        parse_resources({"cpu": "1", "nvidia.com/gpu": "0.5"}, field)
    assert info.value.field == f"{field}.nvidia.com/gpu"
    assert "must be a whole number" in str(info.value)


@pytest.mark.parametrize(
    ("mapping", "message"),
    [(["cpu"], "must be a mapping"), ("4", "must be a mapping"), ({3: "1"}, "resource name")],
    ids=["list", "string", "int-key"],
)
def test_parse_resources_rejects_wrong_shapes(mapping: object, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_resources(mapping, "status.allocatable")
    assert info.value.field == "status.allocatable"


# What resource.Quantity.UnmarshalJSON (k8s.io/apimachinery v0.37.2) answers for each
# string, recorded from a Go program decoding them (accepted: True). The same program
# agreed with syntax_error on 40,000 random strings over the quantity alphabet.
GO_VERDICTS = [
    ("1", True), ("+1", True), ("-1", True), ("1.", True), (".5", True), ("5.Gi", True),
    ("+", True), ("-", True), (".", True), ("Gi", True), ("Ti", True), ("e5", True),
    ("e-9", True), ("0e-10", True), ("+.n", True), ("1e99999999999999999", True),
    (" 2 ", True), ("\u30001", True), ("1E", True), ("1e-3", True), ("1E+5", True),
    ("12345678901234567890", True), ("123456789012345678901234567890Ki", True),
    ("Pi", False), ("Ei", False), ("e-10", False), ("-.e-10", False),
    ("", False), ("  ", False), ("\t1\n", False), ("\u20281", False),
    ("1.5.5", False), ("1K", False), ("1KiB", False), ("1e", False), ("1e+", False),
    ("1e3.5", False), ("0x10", False), ("1 k", False), ("++1", False), ("5ki", False),
    ("1e9999999999999999999", False), ("nan", False), ("Infinity", False),
    ("\uff11", False), ("\u0661", False), ("\u0967", False),  # fullwidth, Arabic, Devanagari 1
]


@pytest.mark.parametrize(("text", "accepted"), GO_VERDICTS,
                         ids=[repr(t) for t, _ in GO_VERDICTS])
def test_syntax_matches_apimachinery(text: str, accepted: bool) -> None:
    assert (syntax_error(text) is None) is accepted


@pytest.mark.parametrize("digit", ["\uff18", "\u0668", "\u096e", "\U0001d7e0"])
def test_only_ascii_digits_are_digits(digit: str) -> None:
    """Python's \\d and Decimal() accept any Unicode digit; Go's parser only 0-9."""
    with pytest.raises(InputError, match="invalid quantity"):
        parse_quantity(digit, "nvidia.com/gpu")
    with pytest.raises(InputError, match="invalid quantity"):
        parse_quantity(f"1{digit}Gi", "memory")
