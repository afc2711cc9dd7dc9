"""gpucachex: a design-space exploration engine for GPU cache architectures.

A C core simulates caches (and, through `simulate`, whole GPUs) cycle by cycle; this package
builds configurations, loads and generates workloads, runs sweeps and computes energy.
"""
from gpucachex.config import Config
from gpucachex.functional import cache_run, policies
from gpucachex.sim import Result, simulate
from gpucachex.store import ResultsStore
# SweepError here too: gpucachex.sweep names the function, so gpucachex.sweep.SweepError does not exist
from gpucachex.sweep import SweepError, normalize, sweep
from gpucachex.trace import Kernel, Trace
from gpucachex.traceio import load_trace

__version__ = "0.1.0"

# The submodules a notebook reaches for, importable as attributes (`gpucachex.presets.get(...)`) without
# `import gpucachex` paying for matplotlib or pandas up front: each is imported on first use (PEP 562).
_SUBMODULES = ("cli", "config", "energy", "experiments", "functional", "isa", "plot", "presets", "reproduce", "sim",
               "store", "sweep", "techniques", "trace", "traceio", "workloads")


def __getattr__(name: str):
    if name in _SUBMODULES:
        import importlib
        return importlib.import_module(f"gpucachex.{name}")
    raise AttributeError(f"module 'gpucachex' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SUBMODULES))

__all__ = ["Config", "Kernel", "Result", "ResultsStore", "Trace", "cache_run", "load_trace", "normalize", "policies",
           "simulate", "sweep", "SweepError", "__version__"]
