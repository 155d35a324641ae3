"""gangsched: a hierarchical, topology-aware gang scheduler for AI workloads on Kubernetes."""

from gangsched.api import InputError, Inputs, load

__version__ = "0.1.0"

__all__ = ["InputError", "Inputs", "__version__", "load"]
