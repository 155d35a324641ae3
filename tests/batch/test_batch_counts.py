"""What a grown unit reports per node of its tree (``batch._counts``)."""

from __future__ import annotations

from gangsched.batch import _counts
from gangsched.testing.builders import group, podset


def test_a_child_whose_minimum_is_zero_is_satisfied_without_pods() -> None:
    # as the verifier counts it: a role with minRoleReplicas 0 and no pod placed still
    # counts toward its parent's min_groups
    unit = group("ms", [podset("ms/decode", 1), podset("ms/prefill", 2, min_pods=0)])
    counts = _counts(unit, {"ms/decode": {"default/ms-decode-0": "n0"}, "ms/prefill": {}})
    assert counts["ms/prefill"] == (0, 0, True)
    assert counts["ms"] == (1, 2, True)
    # a child whose minimum is not met does not count
    counts = _counts(unit, {"ms/decode": {}, "ms/prefill": {}})
    assert counts["ms"] == (0, 1, False)
