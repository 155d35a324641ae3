"""Benchmarks, run as commands (``gangsched bench ...``), never as timed tests.

Each benchmark is a function returning a result value; the CLI wrapper only formats it
and writes it as JSON with :func:`write_json` (which adds :func:`machine_info`).
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on."""
    return {
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
    }


def write_json(result: Mapping[str, Any], path: Path) -> None:
    """Write a benchmark result (plus machine info) as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**result, "machine": machine_info()}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
