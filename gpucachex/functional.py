"""Functional (untimed) cache simulation: hit rates of an address stream, computed in C.

>>> import numpy as np, gpucachex
>>> gpucachex.cache_run(np.arange(0, 4096, 4, dtype=np.uint64), sets=32, ways=4, line_bytes=128)["hits"]
992
"""
from __future__ import annotations

from typing import Any

from gpucachex import _core

_GEOMETRY_OPTIONS = {"sector_bytes", "write_back", "write_allocate", "index", "seed"}
_WRITE_POLICIES = {"write_back": True, "write_through": False}


def policies() -> list[dict[str, Any]]:
    """Replacement policies the core knows, each with its name, description and parameters."""
    return _core.policies()


def cache_run(addresses, *, sets: int, ways: int, line_bytes: int, policy: str = "lru", writes=None,
              **options) -> dict[str, int]:
    """Run a stream of byte addresses through one set-associative cache.

    `addresses` is a one-dimensional, C-contiguous numpy uint64 array, read in place (copied only
    when it is not aligned to its items);
    `writes` an optional bool array of the same length (True = store). The simulation runs in C
    with the GIL released, so several calls can run in parallel threads.

    Options: ``sector_bytes`` (0 = unsectored), ``write_policy`` ("write_back" or
    "write_through"; or ``write_back``, a bool, which must not contradict it), ``write_allocate``
    (a bool), ``index`` ("mod": set = line mod sets, any number
    of sets; "xor": a hashed index; "fermi": GPGPU-Sim's Fermi L1D hash, 32 or 64 sets), ``seed``
    (for the random policy), and any parameter the policy declares (for example ``rrpv_bits`` for
    "srrip").

    Returns the cache's counters: accesses, reads, writes, hits, misses, read_misses, write_misses,
    sector_misses, fills, evictions, writebacks, write_throughs.
    """
    for name, value in (("sets", sets), ("ways", ways), ("line_bytes", line_bytes)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not isinstance(policy, str):
        raise TypeError(f"policy must be a string, got {type(policy).__name__}")
    kwargs: dict[str, Any] = {}
    for key in list(options):
        if key in _GEOMETRY_OPTIONS:
            kwargs[key] = options.pop(key)
    # The core reads index with a format that does not name it ("argument 10 must be str, not int").
    if "index" in kwargs and not isinstance(kwargs["index"], str):
        raise TypeError(f"index must be 'mod', 'xor' or 'fermi', got {kwargs['index']!r}")
    # The core would take any object's truth value: "False", "no" or [0] would mean True.
    for key in ("write_back", "write_allocate"):
        if key in kwargs and not isinstance(kwargs[key], bool):
            raise TypeError(f"{key} must be a bool, got {kwargs[key]!r}")
    if "write_policy" in options:
        wp = options.pop("write_policy")
        if not isinstance(wp, str) or wp not in _WRITE_POLICIES:
            raise ValueError(f"write_policy must be 'write_back' or 'write_through', got {wp!r}")
        # Both spellings of the write policy given: one must not silently override the other.
        if "write_back" in kwargs and kwargs["write_back"] != _WRITE_POLICIES[wp]:
            raise ValueError(f"write_policy={wp!r} contradicts write_back={kwargs['write_back']!r}; "
                             f"give one of them")
        kwargs["write_back"] = _WRITE_POLICIES[wp]
    # What is left must be parameters of the policy; the core rejects unknown ones by name.
    from gpucachex.sim import aligned

    return _core.cache_run(aligned(addresses), aligned(writes), sets, ways, line_bytes, policy, policy_params=options,
                           **kwargs)


def mixed_stream(count: int, *, footprint_bytes: int = 64 << 20, stream_fraction: float = 0.5,
                 seed: int = 0, align: int = 4):
    """A synthetic address stream: runs of sequential 4-byte accesses (streaming) interleaved with
    uniformly random addresses, all inside `footprint_bytes`. Deterministic for a given seed."""
    import numpy as np

    from gpucachex.workloads.dsl import memory_bytes

    for name, value in (("count", count), ("footprint_bytes", footprint_bytes), ("seed", seed), ("align", align)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {value!r}")
    count, footprint_bytes, seed, align = int(count), int(footprint_bytes), int(seed), int(align)
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if align < 1:
        raise ValueError(f"align must be >= 1, got {align}")
    if footprint_bytes < align:
        raise ValueError(f"footprint_bytes must be at least {align}, got {footprint_bytes}")
    if footprint_bytes > 1 << 64:   # addresses are 64-bit: numpy's own error named neither key nor value
        raise ValueError(f"footprint_bytes must be at most 2**64 (64-bit addresses), got {footprint_bytes}")
    if not 0 <= seed < 1 << 64:
        raise ValueError(f"seed must be an integer from 0 to 2**64 - 1, got {seed}")
    if isinstance(stream_fraction, bool) or not isinstance(stream_fraction, (int, float, np.number)) \
            or not 0.0 <= stream_fraction <= 1.0:
        raise ValueError(f"stream_fraction must be a number in [0, 1], got {stream_fraction!r}")
    # About five 8-byte temporaries per address are alive at once below.
    ram = memory_bytes()
    if ram is not None and count * 40 > ram // 2:
        raise MemoryError(f"{count:,} addresses need about {count * 40 / 2**30:.1f} GiB to generate, more than half "
                          f"of this machine's {ram / 2**30:.1f} GiB")
    rng = np.random.default_rng(seed)
    words = footprint_bytes // align
    random_part = rng.integers(0, words, size=count, dtype=np.uint64)
    # Streams: runs of up to 256 consecutive words starting at random places, never past the footprint.
    run = min(256, words)
    starts = rng.integers(0, max(words - run, 1), size=count // run + 1, dtype=np.uint64)
    stream_part = (np.repeat(starts, run)[:count] + np.tile(np.arange(run, dtype=np.uint64), count // run + 1)[:count])
    use_stream = np.repeat(rng.random(count // run + 1) < stream_fraction, run)[:count]
    out = np.where(use_stream, stream_part, random_part) * np.uint64(align)
    return np.ascontiguousarray(out, dtype=np.uint64)
