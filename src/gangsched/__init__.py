"""gangsched: a hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gangsched.api.errors import InputError
    from gangsched.api.loader import Inputs
    from gangsched.frontends import load

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # Imported when first used, so that importing a light module (the command line's)
    # does not load the YAML parser, numpy or every front-end.
    if name == "load":
        from gangsched.frontends import load

        return load
    if name == "InputError":
        from gangsched.api.errors import InputError

        return InputError
    if name == "Inputs":
        from gangsched.api.loader import Inputs

        return Inputs
    raise AttributeError(f"module 'gangsched' has no attribute {name!r}")


__all__ = ["InputError", "Inputs", "__version__", "load"]
