"""The one in-memory workload representation: a Trace is a list of kernels, each a set of
structure-of-arrays numpy columns (one row per warp instruction) plus one uint64 address per active
lane of each memory instruction. Every source (Accel-Sim traces, kernel models, native files)
produces it, and the C core reads its buffers in place.

Rows of a kernel are grouped by (CTA, warp) and in program order within a warp; CTAs appear in
increasing linear id, warps in increasing id within their CTA.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

WARP_SIZE = 32
MAX_DST = 2   # destination registers per instruction (Accel-Sim's own parser keeps 1)
MAX_SRC = 5   # source registers per instruction (Accel-Sim's own parser keeps 4)
NO_REG = 255  # "no register" in dst/src; R255 is RZ, the zero register, which carries no dependency
# Launch shapes a Trace can hold (the text reader's rules): CUDA's grid limits, with at most 2^32 CTAs
# (ids are uint32); blocks of at most 2048 threads.
MAX_GRID = (2**31 - 1, 65535, 65535)
MAX_THREADS_PER_CTA = 2048


def check_launch(grid, block) -> None:
    """Raise ValueError unless `grid` and `block` are three integers each within the limits above."""
    for what, dims, limits in (("grid", grid, MAX_GRID), ("block", block, (MAX_THREADS_PER_CTA,) * 3)):
        t = tuple(dims) if isinstance(dims, (tuple, list, np.ndarray)) else None
        if t is None or len(t) != 3 or any(isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer))
                                           for d in t):
            raise ValueError(f"{what} must be three integers (x, y, z), got {dims!r}")
        if any(not 1 <= int(d) <= lim for d, lim in zip(t, limits)):
            raise ValueError(f"{what} {tuple(int(d) for d in t)}: each dimension must be from 1 to "
                             f"{limits[0]:,}, {limits[1]:,}, {limits[2]:,} (x, y, z)")
    ctas, threads = (math.prod(int(d) for d in dims) for dims in (grid, block))
    if ctas > 1 << 32:
        raise ValueError(f"grid {tuple(int(d) for d in grid)} has {ctas:,} CTAs, more than the 2^32 a trace can number")
    if threads > MAX_THREADS_PER_CTA:
        raise ValueError(f"{threads} threads per CTA is more than any GPU supports ({MAX_THREADS_PER_CTA})")


class OpClass:
    """Instruction classes: how the timing model executes an instruction. Values are the uint8
    codes stored in `Kernel.op_class` and understood by the C core (csrc/sim/isa.h)."""
    ALU = 0      # integer and FP32 arithmetic, moves, predicates, conversions
    SFU = 1      # special functions (MUFU: rcp, sqrt, sin, ...)
    FP64 = 2     # double precision
    TENSOR = 3   # tensor-core matrix operations
    BRANCH = 4   # control flow (BRA, CALL, RET, ...)
    BARRIER = 5  # CTA-wide barrier (BAR.SYNC)
    EXIT = 6     # thread exit
    LOAD = 7     # memory read (space says which memory)
    STORE = 8    # memory write
    ATOMIC = 9   # atomic read-modify-write and reductions (performed at L2 for global memory)
    MEMBAR = 10  # memory fence
    NOP = 11     # no operation

    NAMES = ("alu", "sfu", "fp64", "tensor", "branch", "barrier", "exit", "load", "store", "atomic", "membar", "nop")


class Space:
    """Memory spaces (uint8 codes in `Kernel.space`)."""
    NONE = 0
    GLOBAL = 1
    LOCAL = 2
    SHARED = 3
    CONST = 4
    TEX = 5

    NAMES = ("none", "global", "local", "shared", "const", "tex")


# Bytes a lane may access: the coalescer's sizes (a wider access is several instructions).
ACCESS_WIDTHS = (0, 1, 2, 4, 8, 16)


class Flag:
    """Per-instruction flag bits (uint8 `Kernel.flags`)."""
    BYPASS_L1 = 1  # cache-global / volatile access (.CG, .CV, ...): not cached in the L1D


# Column name -> (dtype, trailing shape). The order is the order of the native file format.
INST_COLUMNS: dict[str, tuple[np.dtype, tuple[int, ...]]] = {
    "cta": (np.dtype(np.uint32), ()),        # linear CTA id: x + y*gx + z*gx*gy
    "warp": (np.dtype(np.uint16), ()),       # warp id within the CTA
    "pc": (np.dtype(np.uint32), ()),         # program counter (byte offset in the kernel; call site for models)
    "opcode": (np.dtype(np.uint16), ()),     # index into Trace.opcodes (the SASS or model opcode name)
    "op_class": (np.dtype(np.uint8), ()),    # OpClass
    "space": (np.dtype(np.uint8), ()),       # Space
    "flags": (np.dtype(np.uint8), ()),       # Flag bits
    "mask": (np.dtype(np.uint32), ()),       # active mask, bit i = lane i
    "width": (np.dtype(np.uint8), ()),       # bytes accessed per active lane; 0 = no memory access
    "dst": (np.dtype(np.uint8), (MAX_DST,)),  # destination registers, NO_REG-padded
    "src": (np.dtype(np.uint8), (MAX_SRC,)),  # source registers, NO_REG-padded
    "addr_offset": (np.dtype(np.uint64), ()),  # index of this instruction's first address in Kernel.addresses
}


def popcount32(mask: np.ndarray) -> np.ndarray:
    """Number of set bits of each element of a uint32 array."""
    m = mask.astype(np.uint32, copy=False)
    return np.unpackbits(m.view(np.uint8).reshape(-1, 4), axis=1).sum(axis=1, dtype=np.int64) if m.size else np.zeros(0, np.int64)


@dataclass(eq=False)
class Kernel:
    """One kernel launch: metadata plus the instruction columns and the address array."""
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cta: np.ndarray
    warp: np.ndarray
    pc: np.ndarray
    opcode: np.ndarray
    op_class: np.ndarray
    space: np.ndarray
    flags: np.ndarray
    mask: np.ndarray
    width: np.ndarray
    dst: np.ndarray
    src: np.ndarray
    addr_offset: np.ndarray
    addresses: np.ndarray
    shmem_bytes: int = 0       # shared memory per CTA
    nregs: int = 0             # registers per thread
    kernel_id: int = 0
    binary_version: int = 0
    attrs: dict = field(default_factory=dict)  # anything else the source recorded (stream id, base addresses, ...)

    # ---- shape ------------------------------------------------------------------------------
    @property
    def n_insts(self) -> int:
        return int(self.cta.shape[0])

    @property
    def threads_per_cta(self) -> int:
        return int(self.block[0] * self.block[1] * self.block[2])

    @property
    def warps_per_cta(self) -> int:
        return (self.threads_per_cta + WARP_SIZE - 1) // WARP_SIZE

    @property
    def grid_ctas(self) -> int:
        return int(self.grid[0] * self.grid[1] * self.grid[2])

    def columns(self) -> dict[str, np.ndarray]:
        return {name: getattr(self, name) for name in INST_COLUMNS}

    def mem_lanes(self) -> np.ndarray:
        """Addresses each instruction owns: active lanes of instructions with a memory width."""
        return np.where(self.width > 0, popcount32(self.mask), 0)

    def address_index(self, rows: np.ndarray) -> np.ndarray:
        """Positions in `addresses` of the active lanes of memory instructions `rows` (ascending, each
        with a width), row after row, lanes in order."""
        lanes = popcount32(self.mask[rows])
        first = np.cumsum(lanes) - lanes
        return np.repeat(self.addr_offset[rows].astype(np.int64) - first, lanes) + np.arange(int(lanes.sum()))

    def warp_table(self) -> np.ndarray:
        """(n_warps, 4) int64 rows: cta, warp, first instruction index, instruction count, for every
        (CTA, warp) that has instructions, in row order."""
        n = self.n_insts
        if n == 0:
            return np.zeros((0, 4), dtype=np.int64)
        key = (self.cta.astype(np.int64) << 16) | self.warp.astype(np.int64)
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        counts = np.diff(np.r_[starts, n])
        return np.stack([self.cta[starts].astype(np.int64), self.warp[starts].astype(np.int64), starts, counts], axis=1)

    # ---- checks -----------------------------------------------------------------------------
    def validate(self, where: str = "") -> None:
        """Raise ValueError naming the problem if the kernel breaks the representation's rules."""
        at = f"{where}kernel {self.name!r}: "
        n = self.n_insts
        for name, (dtype, trailing) in INST_COLUMNS.items():
            col = getattr(self, name)
            if not isinstance(col, np.ndarray):
                raise ValueError(f"{at}column {name} must be a numpy array, got {type(col).__name__}")
            if col.dtype != dtype:
                raise ValueError(f"{at}column {name} must have dtype {dtype}, got {col.dtype}")
            if col.shape != (n, *trailing):
                raise ValueError(f"{at}column {name} has shape {col.shape}, expected {(n, *trailing)}")
            if not col.flags.c_contiguous:
                raise ValueError(f"{at}column {name} must be C-contiguous")
        if self.addresses.dtype != np.uint64 or self.addresses.ndim != 1 or not self.addresses.flags.c_contiguous:
            raise ValueError(f"{at}addresses must be a one-dimensional C-contiguous uint64 array")
        try:
            check_launch(self.grid, self.block)
        except ValueError as exc:
            raise ValueError(f"{at}{exc}") from None
        for name in ("nregs", "shmem_bytes"):
            # The core reads both as 32-bit counts; the run key hashes int() of them, so 3.5 and 3
            # would be one workload.
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ValueError(f"{at}{name} must be an integer, got {type(value).__name__} {value!r}")
            if not 0 <= int(value) < 1 << 32:
                raise ValueError(f"{at}{name} must be from 0 to {(1 << 32) - 1:,}, got {int(value)}")
        if n == 0:
            return
        if int(self.cta.max()) >= self.grid_ctas:
            raise ValueError(f"{at}CTA id {int(self.cta.max())} is outside the grid of {self.grid_ctas} CTAs")
        if int(self.warp.max()) >= self.warps_per_cta:
            raise ValueError(f"{at}warp id {int(self.warp.max())} is outside a CTA of {self.warps_per_cta} warps")
        key = (self.cta.astype(np.int64) << 16) | self.warp.astype(np.int64)
        if np.any(key[1:] < key[:-1]):
            bad = int(np.flatnonzero(key[1:] < key[:-1])[0]) + 1
            raise ValueError(f"{at}instruction {bad} breaks the (CTA, warp) order of rows")
        if int(self.op_class.max()) >= len(OpClass.NAMES):
            raise ValueError(f"{at}unknown op_class {int(self.op_class.max())}")
        if int(self.space.max()) >= len(Space.NAMES):
            raise ValueError(f"{at}unknown space {int(self.space.max())}")
        self._check_memory_fields(at)
        lanes = self.mem_lanes()
        expected = np.r_[0, np.cumsum(lanes)[:-1]].astype(np.uint64)
        if not np.array_equal(self.addr_offset, expected):
            bad = int(np.flatnonzero(self.addr_offset != expected)[0])
            raise ValueError(f"{at}addr_offset of instruction {bad} is {int(self.addr_offset[bad])}, "
                             f"expected {int(expected[bad])} (active lanes of earlier memory instructions)")
        if int(lanes.sum()) != self.addresses.shape[0]:
            raise ValueError(f"{at}{self.addresses.shape[0]} addresses for {int(lanes.sum())} active memory lanes")

    def _check_memory_fields(self, at: str) -> None:
        """Widths the coalescer knows, a memory space on every load, store and atomic, and no writes to
        read-only memory: the core would otherwise cut an access short, or run a load without a space
        as no memory access at all. (Other classes may carry a width or a space, as real traces do;
        the core ignores them.)"""
        def first(bad: np.ndarray) -> int | None:
            rows = np.flatnonzero(bad)
            return int(rows[0]) if rows.size else None

        memory = np.isin(self.op_class, (OpClass.LOAD, OpClass.STORE, OpClass.ATOMIC))
        checks = (
            (~np.isin(self.width, ACCESS_WIDTHS),
             lambda i: f"has an access width of {int(self.width[i])} bytes; a lane accesses 1, 2, 4, 8 or 16 "
                       f"bytes (0: no access)"),
            (memory & (self.space == Space.NONE),
             lambda i: f"of class {OpClass.NAMES[self.op_class[i]]!r} has no memory space"),
            (np.isin(self.op_class, (OpClass.STORE, OpClass.ATOMIC)) & np.isin(self.space, (Space.CONST, Space.TEX)),
             lambda i: f"of class {OpClass.NAMES[self.op_class[i]]!r} writes {Space.NAMES[self.space[i]]} memory, "
                       f"which is read-only"),
        )
        for bad, why in checks:
            i = first(bad)
            if i is not None:
                raise ValueError(f"{at}instruction {i} (PC {int(self.pc[i]):#x}) {why(i)}")

    def replace(self, **changes) -> "Kernel":
        return dataclasses.replace(self, **changes)


def memcpy_fits(before: int, dst: int, nbytes: int, n_kernels: int) -> bool:
    """Whether a host-to-device copy of `nbytes` to `dst`, before kernel index `before` of `n_kernels`,
    can be: a kernel index from 0 to n_kernels, bytes >= 0, and every byte within the 64-bit address
    space (dst < 2^64 on its own too: an empty copy to 2^64 ends at 2^64 but starts past the last address)."""
    return 0 <= before <= n_kernels and nbytes >= 0 and 0 <= dst < 1 << 64 and dst + nbytes <= 1 << 64


@dataclass(eq=False)
class Trace:
    """A workload: kernels in launch order, the opcode name table their `opcode` columns index,
    and the host-to-device copies, each (kernel index it precedes, destination address, bytes)."""
    kernels: list[Kernel]
    opcodes: list[str]
    memcpys: list[tuple[int, int, int]] = field(default_factory=list)
    name: str = ""
    source: str = ""

    def save(self, path) -> None:
        """Write the trace in the native format (a versioned .npz; see gpucachex.traceio), which
        `gpucachex.load_trace` reloads exactly and much faster than text. Kernel attrs may hold None,
        str, int, float, bool, and lists, tuples and dicts with string keys of them (numpy numbers are
        saved as the Python numbers they equal); anything else is refused with a ValueError naming it."""
        from gpucachex.traceio import save_trace

        save_trace(self, path)

    def validate(self) -> "Trace":
        where = f"{self.name or 'trace'}: "
        if not all(isinstance(op, str) for op in self.opcodes):
            bad = next(op for op in self.opcodes if not isinstance(op, str))
            raise ValueError(f"{where}opcodes must be names (strings), got {bad!r}")
        for i, k in enumerate(self.kernels):
            if not isinstance(k, Kernel):
                raise ValueError(f"{where}kernel {i + 1} must be a Kernel, got {type(k).__name__}")
            k.validate(where=f"{where}kernel {i + 1}: ")
            if k.n_insts and int(k.opcode.max()) >= len(self.opcodes):
                raise ValueError(f"kernel {k.name!r}: opcode index {int(k.opcode.max())} outside the table "
                                 f"of {len(self.opcodes)} opcodes")
        for i, m in enumerate(self.memcpys):
            if (not isinstance(m, (tuple, list)) or len(m) != 3
                    or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)) for v in m)):
                raise ValueError(f"{where}memcpy {i} must be (kernel index, address, bytes), three integers, got {m!r}")
            before, dst, nbytes = (int(v) for v in m)
            if not memcpy_fits(before, dst, nbytes, len(self.kernels)):
                raise ValueError(f"{where}bad memcpy {i} ({before}, {dst:#x}, {nbytes}): the kernel index must be 0 to "
                                 f"{len(self.kernels)}, bytes >= 0, and the copy within the 64-bit address space")
        return self

    # ---- totals -----------------------------------------------------------------------------
    def summary(self) -> dict[str, int]:
        """Totals over all kernels: ctas, warps (with instructions), warp_insts, thread_insts (active
        lanes summed), mem_insts (instructions with a memory width), addresses."""
        out = dict(ctas=0, warps=0, warp_insts=0, thread_insts=0, mem_insts=0, addresses=0)
        for row in self._kernel_rows():
            for key in out:
                out[key] += row[key]
        return out

    def _kernel_rows(self) -> Iterable[dict]:
        for i, k in enumerate(self.kernels):
            table = k.warp_table()
            yield dict(kernel=i + 1, name=k.name, grid=k.grid, block=k.block,
                       ctas=int(np.unique(k.cta).size) if k.n_insts else 0, warps=int(table.shape[0]),
                       warp_insts=k.n_insts, thread_insts=int(popcount32(k.mask).sum()),
                       mem_insts=int(np.count_nonzero(k.width)), addresses=int(k.addresses.shape[0]),
                       shmem_bytes=k.shmem_bytes, nregs=k.nregs)

    def kernels_frame(self):
        """One row per kernel with its launch shape and totals (a pandas DataFrame)."""
        import pandas as pd

        return pd.DataFrame(list(self._kernel_rows()))

    def opcode_counts(self) -> dict[str, int]:
        """Warp instructions per opcode name, over all kernels."""
        counts = np.zeros(len(self.opcodes), dtype=np.int64)
        for k in self.kernels:
            counts += np.bincount(k.opcode, minlength=len(self.opcodes))
        return {name: int(c) for name, c in zip(self.opcodes, counts) if c}

    def __repr__(self) -> str:
        s = self.summary()
        return (f"Trace({self.name or self.source or '?'}: {len(self.kernels)} kernels, {s['warp_insts']:,} warp "
                f"instructions, {s['addresses']:,} addresses)")
