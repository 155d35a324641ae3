"""gangsched: a hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes."""

from typing import Any

from gangsched.api import InputError, Inputs

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # gangsched.load reads every front-end's kinds; imported when first used.
    if name == "load":
        from gangsched.frontends import load

        return load
    raise AttributeError(f"module 'gangsched' has no attribute {name!r}")


__all__ = ["InputError", "Inputs", "__version__", "load"]
