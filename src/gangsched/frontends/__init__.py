"""Front-ends: turn the objects people already write into gang trees.

This package is the composition root: :data:`FRONT_ENDS` is every front-end, in the
order their builders run, and :data:`KINDS` everything they read beside the built-in
kinds. Adding a front-end is one module (its kinds, their parsers, its builder, as one
:class:`~gangsched.frontends.base.FrontEnd` value) and one entry in the tuple below.
:func:`load` and :func:`assemble` read and build with all of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gangsched.api import loader
from gangsched.api.errors import InputError
from gangsched.api.loader import BUILTIN_KINDS, Inputs, Kinds
from gangsched.api.schema import Mode
from gangsched.frontends import grove, kai, kthena, kueue, lws, volcano, volcano_job, workload
from gangsched.frontends.base import Builder, Contribution, FrontEnd, check_demands
from gangsched.frontends.base import assemble as assemble_with
from gangsched.model import Plan

FRONT_ENDS: tuple[FrontEnd, ...] = (
    # controllers first: the pods they create are ganged by them or by those after
    kueue.FRONT_END, lws.FRONT_END, grove.FRONT_END, volcano_job.FRONT_END,
    volcano.FRONT_END, kthena.FRONT_END, workload.FRONT_END, kai.FRONT_END,
    kueue.SINGLE_PODS,  # last: a queue-labelled pod no gang above claimed
)

KINDS: Kinds = BUILTIN_KINDS.extended(kind for front_end in FRONT_ENDS for kind in front_end.kinds)


def load(
    paths: Sequence[str | Path],
    *,
    ignore_unknown: bool = False,
    errors: list[InputError] | None = None,
    validate: Mode | None = None,
) -> Inputs:
    """:func:`gangsched.api.loader.load` with every front-end's kinds."""
    return loader.load(paths, kinds=KINDS, ignore_unknown=ignore_unknown, errors=errors,
                       validate=validate)


def load_object(obj: Mapping[str, Any], source: str = "api", validate: Mode = "ignore",
                *, path: str = "") -> Inputs:
    """:func:`gangsched.api.loader.load_object` with every front-end's kinds."""
    return loader.load_object(obj, source, validate, kinds=KINDS, path=path)


def assemble(inputs: Inputs, front_ends: Sequence[FrontEnd] = FRONT_ENDS) -> Plan:
    """The plan every front-end (or those given) builds from ``inputs``; the pods every
    front-end would create from them are counted first, so that building the plan of a
    few front-ends fails as the whole does."""
    check_demands(inputs, FRONT_ENDS)
    return assemble_with(inputs, front_ends)


def supported_kinds() -> list[str]:
    """``apiVersion/Kind`` of everything :func:`load` reads."""
    return KINDS.supported()


__all__ = [
    "FRONT_ENDS",
    "KINDS",
    "Builder",
    "Contribution",
    "FrontEnd",
    "assemble",
    "load",
    "load_object",
    "supported_kinds",
]
