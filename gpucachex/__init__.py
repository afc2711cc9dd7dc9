"""gpucachex: a design-space exploration engine for GPU cache architectures.

A C core simulates caches (and, through `simulate`, whole GPUs) cycle by cycle; this package
builds configurations, loads and generates workloads, runs sweeps and computes energy.
"""
from gpucachex.config import Config
from gpucachex.functional import cache_run, policies
from gpucachex.sim import Result, simulate
from gpucachex.store import ResultsStore
from gpucachex.sweep import normalize, sweep
from gpucachex.trace import Kernel, Trace
from gpucachex.traceio import load_trace

__version__ = "0.1.0"

__all__ = ["Config", "Kernel", "Result", "ResultsStore", "Trace", "cache_run", "load_trace", "normalize", "policies",
           "simulate", "sweep", "__version__"]
