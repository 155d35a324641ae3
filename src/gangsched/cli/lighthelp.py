"""Render help without the parts of rich that gangsched's help never uses.

``typer.rich_utils`` (imported to draw help) imports ``rich.markdown`` (markdown-it and
pygments) and ``rich.traceback`` (attrs) at module level, about a third of the start-up of
``gangsched --help``. gangsched's help is in rich markup mode, never Markdown, and its
errors are one line, never a rich traceback. :func:`import_rich_utils` imports
``typer.rich_utils`` with stand-ins for those two modules whose names import the real
module the first time they are used, then takes the stand-ins out of ``sys.modules`` so
any later ``import rich.markdown`` gets the real module.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

DEFERRED = (("rich.markdown", "Markdown"), ("rich.traceback", "Traceback"))


def _deferred(module: str, attr: str) -> type:
    """A class standing for ``module.attr``: constructing it, or reading an attribute of
    it, imports the real module first. A class, not a function: typer writes ``X | Text``
    in annotations at import."""

    def real() -> Any:
        return getattr(importlib.import_module(module), attr)

    class Meta(type):
        def __getattr__(cls, name: str) -> Any:
            return getattr(real(), name)

    class StandIn(metaclass=Meta):
        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real()(*args, **kwargs)

    StandIn.__name__ = StandIn.__qualname__ = attr
    return StandIn


def import_rich_utils() -> None:
    if "typer.rich_utils" in sys.modules:
        return
    stand_ins: dict[str, types.ModuleType] = {}
    for module, attr in DEFERRED:
        if module not in sys.modules:
            stand_in = types.ModuleType(module)
            setattr(stand_in, attr, _deferred(module, attr))
            stand_ins[module] = stand_in
    sys.modules.update(stand_ins)
    try:
        import typer.rich_utils  # noqa: F401
    finally:
        for module, stand_in in stand_ins.items():
            if sys.modules.get(module) is stand_in:
                del sys.modules[module]
