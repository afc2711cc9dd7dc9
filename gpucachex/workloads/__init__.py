"""Kernel models of the benchmarks the papers evaluate, written in the SIMT tracing DSL
(`gpucachex.workloads.dsl`): workloads without a GPU.

>>> from gpucachex import workloads
>>> trace = workloads.make("sgemm", size="tiny")
>>> workloads.info("sgemm")["class"]
'regular-inter-CTA'

Every model follows the index arithmetic, launch configuration and loops of the real benchmark
(named in its docstring and `info(name)["source"]`), is deterministic, and comes in four sizes:
``tiny`` (tests: under ~20k warp instructions), ``small`` (~50k-500k: simulates in seconds),
``medium`` (~1-5 million: long enough for warm-up and prediction phases) and ``large`` (~10
million and more). Parameters of the build function override a size's (``make("sgemm", n=64)``).

Adding a model: one module in `models/` defining ``MODEL = ModelSpec(...)``, one line in
`_MODELS` below, and a known-shape test; the contract tests pick it up from the registry.
"""
from __future__ import annotations

from gpucachex.trace import Trace
from gpucachex.workloads.models import (
    atax, bfs, bicg, blackscholes, btree, cfd, conv3d, doitgen, fwt, gaussian, gemm, histogram, hotspot,
    hotspot3d, lib, mvt, myocyte, nw, scan, sgemm, srad, stencil, vectoradd,
)
from gpucachex.workloads.spec import CLASSES, SIZES, ModelSpec

# The registry: one entry per model, in the order listings show them.
_MODELS: list[ModelSpec] = [
    sgemm.MODEL, conv3d.MODEL, doitgen.MODEL,                       # regular, inter-CTA sharing
    gemm.MODEL, bicg.MODEL, atax.MODEL, mvt.MODEL,                  # PolyBench linear algebra
    lib.MODEL,                                                      # intra-CTA
    bfs.MODEL, btree.MODEL, cfd.MODEL,                              # irregular
    vectoradd.MODEL, fwt.MODEL, blackscholes.MODEL, scan.MODEL,     # streaming
    hotspot.MODEL, hotspot3d.MODEL, stencil.MODEL, srad.MODEL,      # stencils
    histogram.MODEL,                                                # atomics
    nw.MODEL,                                                       # dynamic programming
    gaussian.MODEL, myocyte.MODEL,                                  # low warp utilisation
]
_BY_NAME = {m.name: m for m in _MODELS}
assert len(_BY_NAME) == len(_MODELS), "duplicate model names in the registry"

__all__ = ["names", "make", "info", "spec", "classes", "SIZES", "CLASSES", "ModelSpec"]


def names() -> list[str]:
    """Registered model names, in registry order."""
    return [m.name for m in _MODELS]


def spec(name: str) -> ModelSpec:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (known: {', '.join(names())})") from None


def classes() -> dict[str, str]:
    """Workload class -> what it means."""
    return dict(CLASSES)


def info(name: str) -> dict:
    """Description, class, source, sizes (parameters per size) and parameter defaults of a model."""
    m = spec(name)
    return {"name": m.name, "description": m.description, "class": m.klass, "source": m.source,
            "sizes": {s: m.params(s) for s in SIZES}, "defaults": m.defaults()}


def make(name: str, size: str | None = None, **params) -> Trace:
    """Build the Trace of model `name` at `size` (default "small"; ``make("bfs:medium")`` names both, as
    sweeps and simulate do); keyword arguments override the size's parameters (unknown ones raise
    TypeError). Deterministic: the same arguments give an identical Trace."""
    if isinstance(name, str) and ":" in name:
        name, _, named_size = name.partition(":")
        if size is not None and size != named_size:
            raise ValueError(f"workload '{name}:{named_size}' names size {named_size!r}, but size={size!r} was given")
        size = named_size
    size = "small" if size is None else size
    m = spec(name)
    args = m.params(size, **params)
    given = ", ".join(f"{k}={v!r}" for k, v in args.items())
    try:
        trace = m.build(**args)
    except (ValueError, TypeError, ArithmeticError, IndexError) as e:
        if not params:
            raise  # the model's own sizes: a defect of the model, not of the caller's input
        raise ValueError(f"{name!r} at size {size!r} cannot be built with {given}: {e}") from e
    except MemoryError as e:
        raise MemoryError(f"{name!r} at size {size!r} with {given} does not fit in memory: {e}") from e
    if not trace.kernels:  # e.g. btree with neither point nor range queries: nothing to simulate
        raise ValueError(f"{name!r} at size {size!r} with {given} launches no kernel")
    trace.name = name
    trace.source = m.source
    for k in trace.kernels:
        k.attrs["params"] = dict(args)
        k.attrs["size"] = size
    return trace
