"""What a kernel model declares: its name, class, one-line description, source benchmark, the
parameters of each size, and the function that builds its Trace."""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from gpucachex.trace import Trace

SIZES = ("tiny", "small", "medium", "large")

# Workload classes the experiments group by; the papers' categories.
CLASSES = {
    "regular-inter-CTA": "regular indexing; CTAs sharing a row or column re-read the same data (MM, conv3d, doitgen)",
    "intra-CTA": "data reused only by the CTA (and thread) that touched it first (LIBOR)",
    "irregular": "data-dependent, pointer-chasing or gather addresses (BFS, b+tree, cfd)",
    "streaming": "each datum touched once or a few times in order (vector add, FWT, BlackScholes, scan)",
    "stencil": "neighbourhood reads over a grid (hotspot, HS3D, stencil, srad)",
    "atomic": "read-modify-write updates (histogram)",
    "dynamic-programming": "wavefront over a table, few threads per CTA (NW)",
    "polybench": "PolyBench/GPU linear algebra: one thread per output element, long loops (gemm, bicg, atax, mvt)",
    "low-utilisation": "divergent kernels that leave most lanes of a warp idle (myocyte, gaussian)",
}


@dataclass(frozen=True)
class ModelSpec:
    name: str
    klass: str
    description: str          # one line
    source: str               # suite, benchmark, kernel(s), file
    sizes: dict[str, dict]    # size name -> parameters overriding the build defaults
    build: Callable[..., Trace] = field(repr=False)
    # Smallest value of each integer parameter; 1 when not listed (a count, a dimension, an iteration
    # number), so 0 or a negative value is refused before the model builds anything.
    minimum: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.klass not in CLASSES:
            raise ValueError(f"model {self.name!r}: unknown class {self.klass!r} (known: {', '.join(CLASSES)})")
        if set(self.sizes) != set(SIZES):
            raise ValueError(f"model {self.name!r}: sizes must be exactly {SIZES}, got {tuple(self.sizes)}")
        known = self.defaults()
        if "size" in known:  # make(name, size, **params) could not pass it
            raise ValueError(f"model {self.name!r}: a parameter may not be called 'size' (the size name is)")
        unknown = set(self.minimum) - set(known)
        if unknown:
            raise ValueError(f"model {self.name!r}: minimum names unknown parameters {sorted(unknown)}")
        for size, params in self.sizes.items():
            unknown = set(params) - set(known)
            if unknown:
                raise ValueError(f"model {self.name!r}, size {size!r}: unknown parameters {sorted(unknown)}")

    def defaults(self) -> dict:
        """The build function's parameters and their default values."""
        return {name: p.default for name, p in inspect.signature(self.build).parameters.items()}

    def params(self, size: str = "small", **overrides) -> dict:
        """The parameters a build at `size` with `overrides` uses."""
        if size not in self.sizes:
            raise ValueError(f"unknown size {size!r} for {self.name!r} (sizes: {', '.join(SIZES)})")
        known = self.defaults()
        unknown = sorted(set(overrides) - set(known))
        if unknown:
            raise TypeError(f"{self.name!r} has no parameter {unknown[0]!r} (parameters: {', '.join(known)})")
        hints = typing.get_type_hints(self.build) if overrides else {}  # string annotations too
        overrides = dict(overrides)
        for key, value in list(overrides.items()):
            kind = hints.get(key)
            if kind is bool and not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{self.name!r}: parameter {key} must be True or False, got {value!r}")
            if kind not in (int, int | None) or (value is None and kind is not int):
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                allowed = "an integer" if kind is int else "an integer or None"
                raise TypeError(f"{self.name!r}: parameter {key} must be {allowed}, got {value!r}")
            low = self.minimum.get(key, 1)
            if value < low:
                raise ValueError(f"{self.name!r}: parameter {key} must be at least {low}, got {value}")
            # The models compute sizes, grids and indices in Python integers: a numpy integer would carry
            # its dtype into that arithmetic and wrap (-np.uint32(1000) // 256 is a grid of 4 billion
            # CTAs; np.int16(256) ** 2 is 0 elements), failing with an error about something else.
            overrides[key] = int(value)
        return {**known, **self.sizes[size], **overrides}
