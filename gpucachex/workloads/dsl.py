"""A SIMT tracing DSL: CUDA-like kernels written in Python, executed over every thread of the grid
at once with numpy, recording warp instructions, active masks and per-lane addresses as a Trace.

    p = Program("vectoradd")
    A, B, C = (p.array(name, n, "f32") for name in "ABC")
    with p.kernel("vectorAdd", grid=(n + 255) // 256, block=256) as k:
        i = k.blockIdx.x * k.blockDim.x + k.threadIdx.x
        with k.where(i < n):
            a, b = k.load(A, i), k.load(B, i)
            k.store(C, i, k.alu(a, b, op="FADD"))
    trace = p.trace()

Model:
- Threads are numbered like CUDA: x fastest, then y, then z; warp w of a CTA holds linear thread ids
  32w .. 32w+31. Every thread index (``k.threadIdx.x``, ``k.blockIdx.y``, ...) is an int64 numpy array
  with one entry per thread *slot* of the grid (CTAs padded to whole warps; padding slots are never
  active), so index arithmetic is ordinary numpy.
- Each DSL call is one warp instruction for every warp with at least one active lane. Its PC is its
  call site (the Python call stack from the kernel's creator down to the call), so a Python loop
  body keeps one PC per instruction like a compiled loop; ``k.unroll`` gives unrolled copies their
  own PCs, as ``#pragma unroll`` does. So a Python ``for`` loop or comprehension around a call
  (``[k.load(A, i + q) for q in range(4)]``) is *one* instruction issued four times: a loop in the
  CUDA source. Straight-line source code (``D0 = A[i0]; D1 = A[i1]; ...``), a ``#pragma unroll``
  loop and a device function inlined at several call sites are separate instructions and need
  ``for q in k.unroll(4)`` (or separate calls). PC-keyed hardware (LoSCache's predictor, the
  instruction cache) sees the difference. ``count=n`` on alu/sfu/fp64 also repeats one PC.
- Divergence: ``with k.where(cond)`` narrows the active mask, ``with k.otherwise()`` runs the
  complementary path (both paths are emitted, each for the warps where it is non-empty);
  ``for i in k.loop(trips)`` iterates while any lane has ``i < trips`` and a warp issues an
  iteration only while one of its lanes is still inside; ``k.exit_where(cond)`` retires threads.
- Memory: global arrays live in a device heap, 256-B aligned in allocation order from
  0x80000000 like GPGPU-Sim's cudaMalloc; shared arrays at offsets in each CTA's shared window;
  per-thread local arrays interleaved word by word across threads (consecutive threads touch
  consecutive words, as GPU local memory is laid out) in a window the launch reserves on the heap.
  Indices, and the bytes an access touches (index * element size + offset, its width), are
  bounds-checked on active lanes, like a memory checker would, and an access must start at a
  multiple of its width, as the hardware requires. Indices, offsets, trip counts, sizes, widths and
  counts are integers: a float would be truncated where C indexes or compares with it.
- Registers: every value-producing call returns a `Reg` (a virtual register number); passing it
  to a later call as an operand or in ``deps=`` makes that call wait for it, so a load blocks its
  users. Long-lived values (accumulators, loop invariants) should live in registers from
  ``k.reg()``, which the rotating allocator never reuses. Operands, ``deps=`` and ``dst=`` take
  these Regs only: a Reg names a register, not a value (``a + b`` is a plain int, not a sum: use
  ``k.alu(a, b, op="FADD")``), and an immediate or constant needs no operand.

Emission is vectorised: a call costs numpy work over the grid's threads, and building the kernel
sorts all rows by (CTA, warp, program order) at once.
"""
from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from typing import Iterator

import numpy as np

from gpucachex import isa
from gpucachex.trace import (INST_COLUMNS, MAX_DST, MAX_GRID, MAX_SRC, NO_REG, WARP_SIZE, Kernel, OpClass, Space,
                             Trace)

HEAP_BASE = 0x8000_0000   # GPGPU-Sim's GLOBAL_HEAP_START: where its cudaMalloc starts allocating
HEAP_ALIGN = 256          # cudaMalloc alignment (GPGPU-Sim pads every allocation to 256 B)
LOCAL_ALIGN = 1 << 20     # the local-memory window of a launch starts on a 1 MB boundary
PC_STEP = 16              # bytes per instruction (Volta and later)

N_PINNED = 24             # R0..R23 are handed out by k.reg() and never reused
N_VREGS = 254             # R24..R253 rotate for temporaries; R255 is RZ / NO_REG

DTYPE_BYTES = {
    "u8": 1, "i8": 1, "bool": 1, "u16": 2, "i16": 2, "f16": 2,
    "f32": 4, "i32": 4, "u32": 4, "f64": 8, "i64": 8, "u64": 8,
    "f32x2": 8, "i32x2": 8, "u32x2": 8, "f32x4": 16, "i32x4": 16, "u32x4": 16,
}

# CUDA's launch limits (compute capability 3.0 and later): block x, y, z (grid: trace.MAX_GRID).
MAX_BLOCK = (1024, 1024, 64)

# Bytes per thread slot a kernel's tracing holds at once, at the least: its int64 index arrays
# (threadIdx, blockIdx, linear ids) and a few instructions' per-slot addresses (vectoradd, three
# memory instructions, peaks at 123 B per slot). A kernel needing more than the machine's memory is
# refused up front instead of being killed by the OS half-way.
SLOT_BYTES = 128

# Bytes of one row of a kernel's instruction columns.
ROW_BYTES = sum(dtype.itemsize * int(np.prod(trailing)) for dtype, trailing in INST_COLUMNS.values())
# Peak memory while a kernel is traced and built, over the bytes of its finished columns and
# addresses: at most 3.6 in the models (vectoradd medium; 2-3 for most), so 4 with a margin.
BUILD_PEAK = 4

_WIDTH_SUFFIX = {1: ".U8", 2: ".U16", 4: "", 8: ".64", 16: ".128"}
_POP16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.uint8)


def popcount(mask: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 (a 64 K-entry table: faster than unpacking bits)."""
    m = mask.astype(np.uint32, copy=False)
    return _POP16[m & 0xFFFF].astype(np.int64) + _POP16[m >> 16]


class Reg(int):
    """A virtual register number returned by a value-producing DSL call."""
    __slots__ = ()

    def __repr__(self) -> str:
        return f"R{int(self)}"


@dataclass(frozen=True)
class Array:
    """A named array in one memory space. `base` is a byte address (global), a byte offset in the
    CTA's shared window (shared) or a word offset in each thread's local frame (local)."""
    name: str
    space: int
    base: int
    n: int
    elem: int

    @property
    def nbytes(self) -> int:
        return self.n * self.elem

    def __repr__(self) -> str:
        return f"Array({self.name!r}, {_space_name(self.space)}, base={self.base:#x}, n={self.n}, elem={self.elem})"


def _space_name(space) -> str:
    """The name of a memory space, or what the value is: an error message about an Array built by
    hand with a bad space must not fail while it is being written."""
    if isinstance(space, (int, np.integer)) and 0 <= space < len(Space.NAMES):
        return Space.NAMES[space]
    return f"space {space!r}"


def _elem_bytes(dtype) -> int:
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, bool):
        if dtype < 1:
            raise ValueError(f"element size must be at least 1 byte, got {dtype}")
        return int(dtype)
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"unknown element type {dtype!r} (known: {', '.join(DTYPE_BYTES)}, or a size in bytes)")
    return DTYPE_BYTES[dtype]


def _integer(value, what: str) -> int:
    """`value` as an int, refusing floats (1.5 would be truncated where C compares or indexes with
    it) and bools."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, got {type(value).__name__} {value!r}")
    return int(value)


def _count(value, what: str) -> int:
    """`value` as an integer of at least 1 (an element count, a number of registers): 0 or a
    negative count would move an allocation cursor backwards and alias the next allocation."""
    n = _integer(value, what)
    if n < 1:
        raise ValueError(f"{what} must be at least 1, got {n}")
    return n


def _dim3(d, what: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)):
        t = (d,)
    else:
        try:
            t = tuple(d)
        except TypeError:  # a float or None: not iterable, and no dimension either
            t = ()
    if not 1 <= len(t) <= 3 or any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in t):
        raise ValueError(f"{what} must be an int or a tuple of 1 to 3 ints, got {d!r}")
    t = tuple(int(v) for v in t) + (1,) * (3 - len(t))
    if any(v < 1 for v in t):
        raise ValueError(f"{what} dimensions must be at least 1, got {t}")
    if any(v > lim for v, lim in zip(t, limits)):
        raise ValueError(f"{what} dimensions {t} exceed CUDA's limits {limits}")
    return t


def memory_bytes() -> int | None:
    """Physical memory of this machine, or None where the OS does not tell."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def kernel_bytes(kernel: Kernel) -> int:
    """What a traced kernel holds in memory: its columns and its addresses."""
    return kernel.addresses.nbytes + sum(c.nbytes for c in kernel.columns().values())


def check_half_memory(what: str, nbytes: int) -> None:
    """MemoryError when `what` (the message's subject) takes `nbytes`, over half this machine's memory:
    kernels launched in a long loop (iterations, time steps) grow a trace until the OS kills the
    process; stop while there is memory left to report it."""
    memory = memory_bytes()
    if memory is not None and nbytes > memory // 2:
        raise MemoryError(f"{what} take {nbytes / 2**30:,.1f} GiB, over half this machine's {memory / 2**30:,.1f} GiB")


class Program:
    """A workload under construction: the device heap, the kernels launched in order, the opcode
    table they share and the host-to-device copies between them."""

    def __init__(self, name: str, *, source: str = "") -> None:
        self.name = name
        self.source = source
        self._heap = HEAP_BASE
        self.arrays: dict[str, Array] = {}
        self.kernels: list[Kernel] = []
        self.memcpys: list[tuple[int, int, int]] = []
        self.opcodes: list[str] = []
        self._opcode_index: dict[str, int] = {}
        self._open: KernelBuilder | None = None
        self._traced_bytes = 0   # the kernels' columns and addresses so far

    # ---- memory ---------------------------------------------------------------------------
    def array(self, name: str, n: int, dtype="f32", *, copy_in: bool = True) -> Array:
        """cudaMalloc an array of `n` elements (and, with `copy_in`, a cudaMemcpy from the host
        before the next launch)."""
        if self._open is not None:
            raise RuntimeError(f"allocate {name!r} before launching kernel {self._open.name!r}, not inside it")
        if name in self.arrays:
            raise ValueError(f"array {name!r} is already allocated")
        n = _integer(n, f"array {name!r}: element count")
        if n < 1:
            raise ValueError(f"array {name!r} needs at least one element, got {n}")
        arr = Array(name, Space.GLOBAL, self._heap, n, _elem_bytes(dtype))
        if arr.base + arr.nbytes > 1 << 64:   # its addresses would not fit in a trace's uint64 column
            raise ValueError(f"array {name!r}: {n:,} elements of {arr.elem} bytes at {arr.base:#x} run past the 64-bit "
                             f"address space")
        self._heap += -(-arr.nbytes // HEAP_ALIGN) * HEAP_ALIGN
        self.arrays[name] = arr
        if copy_in:
            self.copy_in(arr)
        return arr

    def copy_in(self, arr: Array, nbytes: int | None = None) -> None:
        """Record a host-to-device copy into `arr` before the next kernel launch."""
        if not isinstance(arr, Array):
            raise TypeError(f"copy_in: expected an Array from p.array, got {type(arr).__name__}")
        if arr.space != Space.GLOBAL:
            raise ValueError(f"only global arrays are copied from the host, {arr.name!r} is {_space_name(arr.space)}")
        if nbytes is None:
            nbytes = arr.nbytes
        nbytes = _integer(nbytes, f"copy_in {arr.name!r}: bytes")
        if not 0 <= nbytes <= arr.nbytes:
            # a longer copy would write whatever the heap holds after the array
            raise ValueError(f"copy_in {arr.name!r}: {nbytes} bytes, outside 0 to {arr.nbytes} (the array's size)")
        self.memcpys.append((len(self.kernels), arr.base, nbytes))

    # ---- kernels --------------------------------------------------------------------------
    def kernel(self, name: str, grid, block, *, regs: int = 32, dynamic_shared: int = 0) -> "KernelBuilder":
        """Launch a kernel: returns its builder, also usable as ``with p.kernel(...) as k:``."""
        if self._open is not None:
            raise RuntimeError(f"kernel {self._open.name!r} is still open: end it before launching {name!r}")
        regs = _integer(regs, f"kernel {name!r}: regs")
        dynamic_shared = _integer(dynamic_shared, f"kernel {name!r}: dynamic_shared")
        if not 0 <= regs <= 255:   # CUDA's limit per thread
            raise ValueError(f"kernel {name!r}: regs must be between 0 and 255, got {regs}")
        if dynamic_shared < 0:
            raise ValueError(f"kernel {name!r}: dynamic_shared must be at least 0 bytes, got {dynamic_shared}")
        k = KernelBuilder(self, name, _dim3(grid, f"kernel {name!r}: grid", MAX_GRID),
                          _dim3(block, f"kernel {name!r}: block", MAX_BLOCK),
                          regs=regs, dynamic_shared=dynamic_shared, anchor=sys._getframe(1))
        self._open = k
        return k

    def _opcode(self, name: str) -> int:
        idx = self._opcode_index.get(name)
        if idx is None:
            idx = self._opcode_index[name] = len(self.opcodes)
            self.opcodes.append(name)
        return idx

    def trace(self) -> Trace:
        if self._open is not None:
            raise RuntimeError(f"kernel {self._open.name!r} was never ended")
        return Trace(kernels=list(self.kernels), opcodes=list(self.opcodes), memcpys=list(self.memcpys),
                     name=self.name, source=self.source).validate()


def _frozen(a: np.ndarray) -> np.ndarray:
    """`a`, read-only: index arrays and masks are shared, so in-place arithmetic on them by a model
    would corrupt every later instruction; this makes it an error instead."""
    a.flags.writeable = False
    return a


def _caller() -> str:
    """file:line of the model code that called into the DSL: the first frame outside this module."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    return "?" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


class _Dim:
    __slots__ = ("x", "y", "z")

    def __init__(self, x, y, z) -> None:
        self.x, self.y, self.z = x, y, z


class KernelBuilder:
    """One kernel launch being traced; see the module docstring for the execution model."""

    def __init__(self, program: Program, name: str, grid, block, *, regs: int, dynamic_shared: int, anchor) -> None:
        self.program = program
        self.name = name
        self.grid, self.block = grid, block
        self.nregs = int(regs)
        self.threads_per_cta = block[0] * block[1] * block[2]
        if self.threads_per_cta > 1024:
            raise ValueError(f"kernel {name!r}: {self.threads_per_cta} threads per CTA, CUDA allows at most 1024")
        self.warps_per_cta = -(-self.threads_per_cta // WARP_SIZE)
        self.n_ctas = grid[0] * grid[1] * grid[2]
        self.n_warps = self.n_ctas * self.warps_per_cta
        self.n_slots = self.n_warps * WARP_SIZE
        self.n_threads = self.n_ctas * self.threads_per_cta
        memory = self._memory = memory_bytes()
        if memory is not None and self.n_slots * SLOT_BYTES > memory:
            raise MemoryError(f"kernel {name!r}: {self.n_threads:,} threads (grid {grid}, block {block}) need about "
                              f"{self.n_slots * SLOT_BYTES / 2**30:,.1f} GiB to trace, more than this machine's "
                              f"{memory / 2**30:,.1f} GiB")
        self.blockDim = _Dim(*block)
        self.gridDim = _Dim(*grid)
        self._anchor = anchor
        self._cache: dict[str, np.ndarray] = {}
        # The active mask: None means every slot (only possible without padding slots).
        exists = None if self.threads_per_cta % WARP_SIZE == 0 else (self._lin_tid() < self.threads_per_cta)
        self._stack: list[np.ndarray | None] = []
        self._packed_stack: list[np.ndarray] = []
        self._lanes_stack: list[int] = []
        self._warps_stack: list[int] = []
        self._trace_bytes = 0   # of the kernel's columns and addresses once built, as ops are recorded
        self._push(exists)
        self._last_branch: tuple[int, np.ndarray | None, np.ndarray] | None = None
        self._unroll: list[int] = []
        # Recorded operations, one entry per DSL call that had any active lane.
        self._sites: dict[tuple, int] = {}
        self._op_site: list[int] = []
        self._op_code: list[int] = []
        self._op_width: list[int] = []
        self._op_regs: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
        self._op_mask: list[np.ndarray] = []
        # Addresses of memory ops: "dense" ops (at least a quarter of the slots active) keep one
        # address per slot, as (base, uint32 offsets) when they fit, so building the kernel is a
        # blocked transpose; sparse ops keep only their active lanes and are scattered into place.
        self._op_addr: dict[int, np.ndarray | tuple[int, np.ndarray]] = {}
        self._op_dense: dict[int, bool] = {}
        self._next_pinned = 0
        self._pinned: dict[tuple, Reg] = {}
        self._next_temp = N_PINNED
        self._shared_top = 0
        self._shared: dict[str, Array] = {}
        self._dynamic_shared = int(dynamic_shared)
        self._local_words = 0
        self._local: dict[str, Array] = {}
        self._local_base = -(-program._heap // LOCAL_ALIGN) * LOCAL_ALIGN
        self._ended = False

    # ---- thread and block indices (int64 arrays over slots) --------------------------------
    def _lin_tid(self) -> np.ndarray:
        if "lin" not in self._cache:
            per = self.warps_per_cta * WARP_SIZE
            self._cache["lin"] = _frozen(np.tile(np.arange(per, dtype=np.int64), self.n_ctas))
        return self._cache["lin"]

    def _cta(self) -> np.ndarray:
        if "cta" not in self._cache:
            per = self.warps_per_cta * WARP_SIZE
            self._cache["cta"] = _frozen(np.repeat(np.arange(self.n_ctas, dtype=np.int64), per))
        return self._cache["cta"]

    def _index(self, key: str) -> np.ndarray:
        if key not in self._cache:
            # Computed on one CTA (thread indices) or one value per CTA (block indices), then
            # tiled or repeated over the grid: integer division over every slot is slow.
            per = self.warps_per_cta * WARP_SIZE
            thread = key.startswith("t")
            dims = self.block if thread else self.grid
            src = np.arange(per if thread else self.n_ctas, dtype=np.int64)
            axis = key[-1]
            if axis == "x":
                v = src % dims[0]
            elif axis == "y":
                v = (src // dims[0]) % dims[1]
            else:
                v = src // (dims[0] * dims[1])
            self._cache[key] = _frozen(np.tile(v, self.n_ctas) if thread else np.repeat(v, per))
        return self._cache[key]

    @property
    def threadIdx(self) -> _Dim:
        return _Dim(self._index("tx"), self._index("ty"), self._index("tz"))

    @property
    def blockIdx(self) -> _Dim:
        return _Dim(self._index("bx"), self._index("by"), self._index("bz"))

    @property
    def cta_id(self) -> np.ndarray:
        """Linear CTA id of each slot (x + y*gx + z*gx*gy)."""
        return self._cta()

    @property
    def linear_tid(self) -> np.ndarray:
        """Linear thread id within the CTA of each slot."""
        return self._lin_tid()

    @property
    def global_tid(self) -> np.ndarray:
        """cta_id * threads_per_cta + linear_tid: a dense id over the grid's real threads."""
        if "gtid" not in self._cache:
            self._cache["gtid"] = _frozen(self._cta() * self.threads_per_cta + self._lin_tid())
        return self._cache["gtid"]

    # ---- masks -------------------------------------------------------------------------------
    def _pack(self, mask: np.ndarray | None) -> np.ndarray:
        if mask is None:
            return np.full(self.n_warps, 0xFFFFFFFF, dtype=np.uint32)
        return np.packbits(mask.reshape(-1, WARP_SIZE), axis=1, bitorder="little").view("<u4").ravel()

    @property
    def active(self) -> np.ndarray:
        """The current active mask as a (read-only) bool array over slots."""
        m = self._stack[-1]
        return _frozen(np.ones(self.n_slots, dtype=bool)) if m is None else m

    def _bool(self, cond) -> np.ndarray:
        c = np.asarray(cond)
        if c.dtype != bool:
            raise TypeError(f"kernel {self.name!r}: a mask condition must be boolean, got dtype {c.dtype}")
        if c.ndim == 0:
            return np.full(self.n_slots, bool(c))
        if c.shape != (self.n_slots,):
            raise ValueError(f"kernel {self.name!r}: a condition must have one entry per thread slot ({self.n_slots}), "
                             f"got shape {c.shape}")
        return c

    def _push(self, mask: np.ndarray | None) -> None:
        if mask is not None:
            mask = _frozen(mask)
        packed = self._pack(mask)
        self._stack.append(mask)
        self._packed_stack.append(packed)
        self._lanes_stack.append(self.n_slots if mask is None else int(np.count_nonzero(mask)))
        self._warps_stack.append(int(np.count_nonzero(packed)))

    def _pop(self) -> None:
        self._stack.pop()
        self._packed_stack.pop()
        self._lanes_stack.pop()
        self._warps_stack.pop()

    def _dense(self) -> bool:
        return 4 * self._lanes_stack[-1] >= self.n_slots

    @contextlib.contextmanager
    def where(self, cond) -> Iterator[None]:
        """``if (cond)``: the body runs with the lanes where `cond` holds."""
        parent = self.active
        cond = self._bool(cond)
        self._push(parent & cond)
        try:
            yield
        finally:
            self._pop()
            self._last_branch = (len(self._stack), parent, cond)

    @contextlib.contextmanager
    def otherwise(self) -> Iterator[None]:
        """``else``: directly after a ``where`` block at the same nesting level."""
        last = self._last_branch
        if last is None or last[0] != len(self._stack):
            raise RuntimeError(f"kernel {self.name!r}: otherwise() must follow a where() block at the same nesting "
                               f"level")
        _, parent, cond = last
        self._last_branch = None
        self._push(parent & ~cond)
        try:
            yield
        finally:
            self._pop()

    def loop(self, trips, *, branch: bool = True) -> Iterator[int]:
        """``for (i = 0; i < trips; i++)`` with a uniform (int) or per-thread (array) trip count.
        Yields i; lanes whose count is reached idle. With `branch`, each iteration ends with the
        loop's compare and back-edge branch (ISETP, BRA)."""
        parent = self.active
        if np.ndim(trips) == 0:
            n = _integer(trips, f"kernel {self.name!r}: loop trip count")
            per_thread = None
        else:
            per_thread = np.asarray(trips)
            if per_thread.shape != (self.n_slots,):
                raise ValueError(f"kernel {self.name!r}: per-thread trip counts need one entry per slot "
                                 f"({self.n_slots}), got shape {per_thread.shape}")
            if not np.issubdtype(per_thread.dtype, np.integer):
                raise TypeError(f"kernel {self.name!r}: per-thread loop trip counts must be integers, "
                                f"got dtype {per_thread.dtype}")
            n = int(per_thread[parent].max()) if parent.any() else 0
        site = self._site(0, tag="loop")  # generator frame: depth 0 is the for statement
        # An otherwise() cannot pair with a where() before the loop, nor with one that ended the
        # previous iteration: its parent mask would hold lanes that have since left the loop.
        self._last_branch = None
        for i in range(max(n, 0)):
            mask = parent if per_thread is None else parent & (per_thread > i)
            self._push(mask)
            self._last_branch = None
            try:
                yield i
                if branch:
                    self._emit_at(site + ("cmp",), "ISETP.LT.AND", dst=(), src=())
                    self._emit_at(site + ("bra",), "BRA", dst=(), src=())
            finally:
                self._pop()

    def unroll(self, n: int) -> Iterator[int]:
        """A fully unrolled loop: each copy of the body gets its own PCs, as after #pragma unroll.
        Also the way to write straight-line source code (``D0 = A[i0]; D1 = A[i1]; ...``) as a
        Python loop: a plain Python loop would give every copy the same PC."""
        for i in range(_integer(n, f"kernel {self.name!r}: unroll count")):
            self._unroll.append(i)
            try:
                yield i
            finally:
                self._unroll.pop()

    def exit_where(self, cond) -> None:
        """``if (cond) return;`` at the top level of the kernel: those threads execute EXIT now."""
        if len(self._stack) != 1:
            raise RuntimeError(f"kernel {self.name!r}: exit_where() is only supported at the top level of a kernel "
                               f"(not inside where/loop)")
        cond = self._bool(cond)
        parent = self.active
        leaving = parent & cond
        self._push(leaving)
        self._emit("EXIT")
        self._pop()
        self._stack.clear()
        self._packed_stack.clear()
        self._lanes_stack.clear()
        self._warps_stack.clear()
        self._push(parent & ~cond)
        # An otherwise() after this would run the complement of an earlier where() over the
        # parent mask of then, threads that have just exited included.
        self._last_branch = None

    # ---- call sites and registers -------------------------------------------------------------
    def _site(self, depth: int, tag=None) -> tuple:
        """The call site `depth` frames above the caller, walked up to the frame that created the
        kernel: the same Python call chain gives the same PC."""
        f = sys._getframe(depth + 2)
        key = []
        anchor = self._anchor
        for _ in range(16):
            if f is None:
                break
            key.append((f.f_code, f.f_lasti))
            if f is anchor:
                break
            f = f.f_back
        key = tuple(key)
        if self._unroll:
            key += (tuple(self._unroll),)
        if tag is not None:
            key += (tag,)
        return key

    def reg(self) -> Reg:
        """A register that the rotating allocator never hands out again (accumulators, values that
        live across a loop). Like a variable declared at that line, the same call site (in a loop
        body, say) always gets the same register."""
        site = self._site(0, tag="reg")
        r = self._pinned.get(site)
        if r is None:
            if self._next_pinned >= N_PINNED:
                raise RuntimeError(f"kernel {self.name!r}: more than {N_PINNED} pinned registers requested")
            r = self._pinned[site] = Reg(self._next_pinned)
            self._next_pinned += 1
        return r

    def regs(self, n: int) -> tuple[Reg, ...]:
        """`n` distinct pinned registers for this call site (``a, b = k.regs(2)``)."""
        n = _count(n, f"kernel {self.name!r}: regs() count")
        site = self._site(0, tag="regs")
        rs = self._pinned.get(site)
        if rs is None:
            if self._next_pinned + n > N_PINNED:
                raise RuntimeError(f"kernel {self.name!r}: more than {N_PINNED} pinned registers requested")
            rs = self._pinned[site] = tuple(Reg(self._next_pinned + i) for i in range(n))
            self._next_pinned += n
        return rs

    def _temp(self) -> Reg:
        r = Reg(self._next_temp)
        self._next_temp = self._next_temp + 1 if self._next_temp + 1 < N_VREGS else N_PINNED
        return r

    def _reg(self, r, what: str) -> int:
        """`r` as a register number, refusing anything but a Reg a DSL call handed out: arithmetic on
        Regs gives a plain int (``a + b`` is register a+b, not a sum), and a number, an index array or
        a float names no register, so the dependency it stands for would silently vanish."""
        if not isinstance(r, Reg):
            given = f"{type(r).__name__} of shape {np.shape(r)}" if np.ndim(r) else f"{r!r} ({type(r).__name__})"
            raise TypeError(f"kernel {self.name!r}: {what} at {_caller()}: {given} is not a "
                            f"register: pass the Reg a DSL call or k.reg() returned (Regs name registers, not "
                            f"values: compute with k.alu; an immediate needs no operand)")
        if not 0 <= r < N_VREGS:
            raise ValueError(f"kernel {self.name!r}: {what} at {_caller()}: register {int(r)} outside R0 to "
                             f"R{N_VREGS - 1}")
        return int(r)

    def _regs(self, operands, what: str) -> tuple[int, ...]:
        """The registers of `operands`: Regs, or tuples/lists of them; None stands for no operand."""
        out = []
        for o in operands:
            for r in (o if isinstance(o, (tuple, list)) else (o,)):
                if r is not None:
                    out.append(self._reg(r, what))
        return tuple(dict.fromkeys(out))  # unique, in order

    def _dst(self, dst, what: str) -> Reg:
        """The destination register: `dst`, or a fresh temporary when it is None."""
        if dst is None:
            return self._temp()
        self._reg(dst, what)
        return dst

    # ---- recording ------------------------------------------------------------------------------
    def _emit(self, opcode: str, *, addr=None, width: int = 0, dst=(), src=(), depth: int = 1) -> None:
        self._emit_at(self._site(depth), opcode, addr=addr, width=width, dst=dst, src=src)

    def _emit_at(self, site: tuple, opcode: str, *, addr=None, width: int = 0, dst=(), src=()) -> None:
        if self._ended:
            raise RuntimeError(f"kernel {self.name!r} has ended")
        pc = self._sites.setdefault(site, len(self._sites))
        if not self._lanes_stack[-1]:
            return
        packed = self._packed_stack[-1]
        if len(dst) > MAX_DST or len(src) > MAX_SRC:
            raise ValueError(f"kernel {self.name!r}: {opcode}: at most {MAX_DST} destination and {MAX_SRC} source "
                             f"registers, got {len(dst)} and {len(src)}")
        j = len(self._op_site)
        self._op_site.append(pc)
        self._op_code.append(self.program._opcode(opcode))
        self._op_width.append(width)
        self._op_regs.append((tuple(dst), tuple(src)))
        self._op_mask.append(packed)
        if width:
            self._op_addr[j] = addr
            self._op_dense[j] = isinstance(addr, tuple) or addr.shape[0] == self.n_slots
        # A row per warp with an active lane, an address per active lane. One kernel with a long loop
        # can outgrow the machine before end() sees its size: stop while there is memory to say so.
        self._trace_bytes += self._warps_stack[-1] * ROW_BYTES + (8 * self._lanes_stack[-1] if width else 0)
        if self._memory is not None and self.program._traced_bytes + BUILD_PEAK * self._trace_bytes > self._memory:
            raise MemoryError(f"kernel {self.name!r}: its trace so far takes {self._trace_bytes / 2**30:,.1f} GiB "
                              f"and building it about {BUILD_PEAK} times that, which with the program's earlier "
                              f"kernels ({self.program._traced_bytes / 2**30:,.1f} GiB) is more than this "
                              f"machine's {self._memory / 2**30:,.1f} GiB")

    def _lanes(self, x, what: str, *, all_slots: bool = False) -> np.ndarray:
        """Values of `x` (scalar or per-slot array) on the active lanes in lane order, or on every
        slot with `all_slots` (the inactive ones then hold whatever the expression gave)."""
        mask = self._stack[-1]
        if np.ndim(x) == 0:
            n = self.n_slots if all_slots or mask is None else self._lanes_stack[-1]
            return np.full(n, _integer(x, f"kernel {self.name!r}: {what}"), dtype=np.int64)
        x = np.asarray(x)
        if x.shape != (self.n_slots,):
            raise ValueError(f"kernel {self.name!r}: {what} must be a scalar or have one entry per thread slot "
                             f"({self.n_slots}), got shape {x.shape}")
        if not np.issubdtype(x.dtype, np.integer):
            raise TypeError(f"kernel {self.name!r}: {what} must be integer, got dtype {x.dtype}")
        return (x if all_slots or mask is None else x[mask]).astype(np.int64, copy=False)

    def _addresses(self, arr: Array, index, offset, width: int, what: str) -> np.ndarray:
        if not isinstance(arr, Array):
            raise TypeError(f"kernel {self.name!r}: {what}: expected an Array from p.array/k.shared/k.local, got "
                            f"{type(arr).__name__}")
        if arr.space == Space.GLOBAL and self.program.arrays.get(arr.name) is not arr:
            # another Program's array would alias whatever this program allocated at its address
            raise ValueError(f"kernel {self.name!r}: {what}: global array {arr.name!r} was not allocated by program "
                             f"{self.program.name!r}")
        if arr.space == Space.SHARED and self._shared.get(arr.name) is not arr:
            raise ValueError(f"kernel {self.name!r}: {what}: shared array {arr.name!r} belongs to another kernel")
        if arr.space == Space.LOCAL and self._local.get(arr.name) is not arr:
            raise ValueError(f"kernel {self.name!r}: {what}: local array {arr.name!r} belongs to another kernel")
        dense = self._dense()
        mask = self._stack[-1]

        def active_range(values: np.ndarray) -> tuple[int, int]:
            if dense and mask is not None:
                return (int(np.min(values, where=mask, initial=np.iinfo(np.int64).max)),
                        int(np.max(values, where=mask, initial=np.iinfo(np.int64).min)))
            return int(values.min()), int(values.max())

        idx = self._lanes(index, f"{what} index", all_slots=dense)
        off = None
        if np.ndim(offset) != 0 or offset:
            if arr.space == Space.LOCAL:
                raise ValueError(f"kernel {self.name!r}: {what}: no offset into local array {arr.name!r} (its words "
                                 f"are interleaved across threads, so a byte offset names another thread's word)")
            off = self._lanes(offset, f"{what} offset", all_slots=dense)
        if idx.size:
            lo, hi = active_range(idx)
            if lo < 0 or hi >= arr.n:
                raise IndexError(f"kernel {self.name!r}: {what} index {lo if lo < 0 else hi} outside "
                                 f"{arr.name!r} of {arr.n} elements")
            if off is not None or width > arr.elem:
                # An offset (a struct field) or a wide access (float4 over a float array) can leave
                # the array with every index inside it: check the bytes the access touches.
                lo, hi = active_range(idx * arr.elem if off is None else idx * arr.elem + off)
                if lo < 0 or hi + width > arr.nbytes:
                    first = lo if lo < 0 else hi
                    how = f"index * {arr.elem}" + (" + offset" if off is not None else "")
                    raise IndexError(f"kernel {self.name!r}: {what} touches bytes {first} to {first + width - 1} "
                                     f"({how}, {width} bytes wide), outside {arr.name!r} of {arr.nbytes} bytes")
        if arr.space == Space.LOCAL:
            # word w of thread t sits at base + (w * threads + t) * 4: consecutive threads hit
            # consecutive words, so a warp touching one local variable coalesces.
            gtid = self._lanes(self.global_tid, "thread id", all_slots=dense)
            base, rel = self._local_base, ((arr.base + idx) * self.n_threads + gtid) * 4
        else:
            base, rel = (0, idx * arr.elem + arr.base) if arr.space == Space.SHARED else (arr.base, idx * arr.elem)
            if off is not None:
                rel += off
            if off is not None or arr.elem % width or arr.base % width:
                # A GPU faults on an access not aligned to its width (a float4 at a 4-byte offset),
                # and the coalescer takes each lane's bytes to lie inside one aligned unit. Global
                # bases are 256-B aligned, so `rel` tells; shared ones are part of it.
                bad = (rel & (width - 1)) != 0
                if dense and mask is not None:
                    bad &= mask
                if bad.any():
                    at = int(rel[np.argmax(bad)]) - (arr.base if arr.space == Space.SHARED else 0)
                    how = f"index * {arr.elem}" + (" + offset" if off is not None else "")
                    raise ValueError(f"kernel {self.name!r}: {what} at byte {at} of {arr.name!r} ({how}) is not "
                                     f"aligned to its {width}-byte width")
        if dense and rel.size and 0 <= int(rel.min()) and int(rel.max()) < 1 << 32:
            # dense ops keep every slot until the kernel is built: 32-bit offsets from the
            # array's base halve that memory
            return base, rel.astype(np.uint32)
        rel += base
        return rel.view(np.uint64)

    def _width(self, arr: Array, width, kind: str) -> int:
        """The access width in bytes (the element size by default), checking `arr` first: a float
        width would be truncated, and anything but an Array fails later without saying why."""
        if not isinstance(arr, Array):
            raise TypeError(f"kernel {self.name!r}: {kind}: expected an Array from p.array/k.shared/k.local, "
                            f"got {type(arr).__name__}")
        return arr.elem if width is None else _integer(width, f"kernel {self.name!r}: {kind} width")

    def _mem_opcode(self, arr: Array, kind: str, width: int, bypass_l1: bool) -> str:
        sfx = _WIDTH_SUFFIX.get(width)
        if sfx is None:
            raise ValueError(f"kernel {self.name!r}: {kind} of {arr.name!r}: access width must be 1, 2, 4, 8 or 16 "
                             f"bytes, got {width}")
        if arr.space == Space.GLOBAL:
            base = "LDG.E" if kind == "load" else "STG.E"
            return base + sfx + (".CG" if bypass_l1 else "")
        if bypass_l1:
            raise ValueError(f"kernel {self.name!r}: {kind} of {arr.name!r}: bypass_l1 applies to global memory only, "
                             f"the array is {_space_name(arr.space)}")
        if arr.space == Space.SHARED:
            return ("LDS" if kind == "load" else "STS") + sfx
        if arr.space == Space.LOCAL:
            if width != 4:
                raise ValueError(f"kernel {self.name!r}: {kind} of local array {arr.name!r}: {width} bytes wide, local "
                                 f"arrays are modelled with 4-byte elements")
            return "LDL" if kind == "load" else "STL"
        raise ValueError(f"kernel {self.name!r}: no {kind} for array {arr.name!r} in {_space_name(arr.space)} "
                         f"(the DSL addresses global, shared and local arrays)")

    # ---- the instruction set ----------------------------------------------------------------------
    def load(self, arr: Array, index, *, offset=0, width: int | None = None, deps=(), dst: Reg | None = None,
             bypass_l1: bool = False) -> Reg:
        """``v = arr[index]`` (plus `offset` bytes, e.g. a struct field). Returns the destination
        register; `deps` are registers the address depends on (e.g. an index loaded earlier)."""
        width = self._width(arr, width, "load")
        op = self._mem_opcode(arr, "load", width, bypass_l1)
        r = self._dst(dst, f"{op} dst")
        addr = self._addresses(arr, index, offset, width, op)
        self._emit(op, addr=addr, width=width, dst=(int(r),), src=self._regs([deps], f"{op} deps"))
        return r

    def store(self, arr: Array, index, value: Reg | None = None, *, offset=0, width: int | None = None,
              deps=(), bypass_l1: bool = False) -> None:
        """``arr[index] = value``."""
        width = self._width(arr, width, "store")
        op = self._mem_opcode(arr, "store", width, bypass_l1)
        addr = self._addresses(arr, index, offset, width, op)
        self._emit(op, addr=addr, width=width, dst=(), src=self._regs([value, deps], f"{op} value or deps"))

    def atomic(self, arr: Array, index, value: Reg | None = None, *, op: str = "ADD", returns: bool = False,
               offset=0, width: int | None = None, deps=()) -> Reg | None:
        """``atomicAdd(&arr[index], value)`` and friends: ATOMS for shared arrays, ATOM (returning the
        old value) or RED (no return) for global ones."""
        width = self._width(arr, width, "atomic")
        if width not in (4, 8):
            raise ValueError(f"kernel {self.name!r}: atomic on {arr.name!r}: atomics are 4 or 8 bytes wide, got "
                             f"{width}")
        if arr.space == Space.SHARED:
            opcode = f"ATOMS.{op}"
        elif arr.space == Space.GLOBAL:
            opcode = f"ATOM.E.{op}" if returns else f"RED.E.{op}"
        else:
            raise ValueError(f"kernel {self.name!r}: no atomics on {_space_name(arr.space)} memory "
                             f"(array {arr.name!r})")
        if width == 8:
            opcode += ".64"
        r = (self._temp() if returns or arr.space == Space.SHARED else None)
        self._emit(opcode, addr=self._addresses(arr, index, offset, width, opcode), width=width,
                   dst=() if r is None else (int(r),), src=self._regs([value, deps], f"{opcode} value or deps"))
        return r

    def alu(self, *srcs, op: str = "FFMA", dst: Reg | None = None, count: int = 1) -> Reg:
        """Arithmetic (FP32/integer; FFMA, FADD, IMAD, IADD3, ISETP, MOV, ...). With ``count`` > 1,
        a chain of `count` dependent instructions (each reads the previous result)."""
        return self._arith(op, srcs, dst, count)

    def sfu(self, *srcs, op: str = "MUFU.EX2", dst: Reg | None = None, count: int = 1) -> Reg:
        """Special-function unit work (MUFU.EX2, MUFU.LG2, MUFU.RCP, MUFU.RSQ, MUFU.SIN, ...)."""
        if not op.startswith("MUFU"):
            raise ValueError(f"kernel {self.name!r}: SFU opcodes are MUFU.*, got {op!r}")
        return self._arith(op, srcs, dst, count)

    def fp64(self, *srcs, op: str = "DFMA", dst: Reg | None = None, count: int = 1) -> Reg:
        """Double-precision arithmetic (DFMA, DADD, DMUL, ...)."""
        if not op.startswith("D"):
            raise ValueError(f"kernel {self.name!r}: double-precision opcodes start with D, got {op!r}")
        return self._arith(op, srcs, dst, count)

    # Classes whose behaviour the DSL owns: a load/store/atomic needs addresses (k.load, k.store,
    # k.atomic, k.const), EXIT retires threads (k.exit_where), BAR waits for the CTA (k.sync).
    _NOT_ARITH = {OpClass.LOAD: "k.load/k.const", OpClass.STORE: "k.store", OpClass.ATOMIC: "k.atomic",
                  OpClass.EXIT: "k.exit_where", OpClass.BARRIER: "k.sync"}

    def _arith(self, op: str, srcs, dst, count: int) -> Reg:
        if not isinstance(op, str):
            raise TypeError(f"kernel {self.name!r}: op must be an opcode string, got {type(op).__name__} {op!r}")
        cls = isa.classify(op)[0]
        if cls in self._NOT_ARITH:
            raise ValueError(f"kernel {self.name!r}: {op!r} is a {OpClass.NAMES[cls]} instruction, not arithmetic "
                             f"(use {self._NOT_ARITH[cls]})")
        count = _count(count, f"kernel {self.name!r}: {op} count")
        src = self._regs(srcs, f"{op} operand")
        if dst is not None:
            self._reg(dst, f"{op} dst")
        r = None
        for i in range(count):
            r = (self._temp() if dst is None else dst)
            self._emit(op, dst=(int(r),), src=src, depth=2)
            src = (int(r),)
        return r

    def const(self, *, dst: Reg | None = None) -> Reg:
        """A load from constant memory (kernel parameters, __constant__ data): LDC, which the
        constant cache serves and traces carry no address for."""
        r = self._dst(dst, "LDC dst")
        self._emit("LDC", dst=(int(r),), src=())
        return r

    def sync(self) -> None:
        """``__syncthreads()``. As in CUDA, it may sit inside ``where``/``loop`` only where every
        thread of a CTA that has not exited takes the same path: a barrier that some of a CTA's
        threads skip hangs or misbehaves on a GPU, while the timing model would release it when the
        others exit, so it is refused."""
        live, active = self._stack[0], self._stack[-1]
        if active is not live:   # at the top level, or in a uniform loop there, every live thread is here
            per = self.warps_per_cta * WARP_SIZE
            live = np.ones(self.n_slots, dtype=bool) if live is None else live
            here = active.reshape(-1, per).any(axis=1)
            away = (live & ~active).reshape(-1, per).any(axis=1)
            split = np.flatnonzero(here & away)
            if split.size:
                c = int(split[0])
                cta = slice(c * per, (c + 1) * per)
                raise RuntimeError(
                    f"kernel {self.name!r}: __syncthreads() at {_caller()} is "
                    f"divergent: in CTA {c}, {int(np.count_nonzero(active[cta]))} of its "
                    f"{int(np.count_nonzero(live[cta]))} threads reach it and the others skip it ({split.size} "
                    f"CTAs like that); CUDA needs the condition around a barrier to be the same for the whole CTA")
        self._emit("BAR.SYNC")

    # ---- arrays owned by the kernel -------------------------------------------------------------------
    def shared(self, name: str, n: int, dtype="f32") -> Array:
        """A ``__shared__`` array of `n` elements at the next aligned offset of the CTA's window."""
        if name in self._shared:
            raise ValueError(f"kernel {self.name!r}: shared array {name!r} is already declared")
        n = _count(n, f"kernel {self.name!r}: shared array {name!r}: element count")
        elem = _elem_bytes(dtype)
        align = min(max(elem, 4), 16)
        base = -(-self._shared_top // align) * align
        arr = Array(name, Space.SHARED, base, n, elem)
        self._shared_top = base + arr.nbytes
        self._shared[name] = arr
        return arr

    def local(self, name: str, n: int, dtype="f32") -> Array:
        """A per-thread array the compiler keeps in local memory (dynamically indexed, too big for
        registers). 4-byte elements."""
        if name in self._local:
            raise ValueError(f"kernel {self.name!r}: local array {name!r} is already declared")
        n = _count(n, f"kernel {self.name!r}: local array {name!r}: element count")
        if _elem_bytes(dtype) != 4:
            raise ValueError(f"kernel {self.name!r}: local array {name!r}: {dtype!r} elements, local arrays are "
                             f"modelled with 4-byte elements")
        arr = Array(name, Space.LOCAL, self._local_words, n, 4)
        self._local_words += n
        self._local[name] = arr
        return arr

    def gather(self, data: np.ndarray, index, fill=0) -> np.ndarray:
        """``data[index]`` evaluated on the active lanes only (other slots get `fill`): the values a
        data-dependent kernel reads, for its control flow and later addresses."""
        data = np.asarray(data)
        out = np.full(self.n_slots, fill, dtype=data.dtype)
        mask = self.active
        idx = self._lanes(index, "gather index")
        if idx.size:
            # numpy would wrap a negative index to the end of `data` and read a value no lane asked for
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= data.shape[0]:
                raise IndexError(f"kernel {self.name!r}: gather index {lo if lo < 0 else hi} outside data of "
                                 f"{data.shape[0]} elements")
        out[mask] = data[idx]
        return out

    # ---- end of the launch ------------------------------------------------------------------------------
    def __enter__(self) -> "KernelBuilder":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.end()
        else:
            self.program._open = None

    def end(self) -> Kernel:
        """EXIT for the remaining threads, then build the kernel's columns and append it."""
        if self._ended:
            raise RuntimeError(f"kernel {self.name!r} has already ended")
        if len(self._stack) != 1:
            raise RuntimeError(f"kernel {self.name!r} ended inside a where/loop block")
        self._emit("EXIT")
        self._ended = True
        kernel = self._build()
        prog = self.program
        prog._open = None
        prog._traced_bytes += kernel_bytes(kernel)
        check_half_memory(f"program {prog.name!r}: its {len(prog.kernels) + 1} kernels so far", prog._traced_bytes)
        if self._local_words:
            prog._heap = self._local_base + -(-(self._local_words * 4 * self.n_threads) // LOCAL_ALIGN) * LOCAL_ALIGN
        prog.kernels.append(kernel)
        prog._open = None
        self._anchor = None
        self._cache.clear()
        return kernel

    def _assemble_addresses(self, w: np.ndarray, j: np.ndarray, mask: np.ndarray, lanes: np.ndarray,
                            total: int) -> np.ndarray:
        """The kernel's address array in row order (warp-major, program order, lane order).

        Dense ops hold one address per slot: a block of warps is the transpose of their
        (op, warp, lane) rows, compressed by the lanes' active bits. Sparse ops hold their active
        lanes grouped by op and are scattered to their rows. When both kinds exist, the two
        streams are merged by a per-lane flag, which keeps every step a sequential pass."""
        out = np.empty(total, dtype=np.uint64)
        if not total:
            return out
        mem = np.flatnonzero(lanes)
        mem_j = j[mem]
        dense_ops = np.array(sorted(jj for jj, d in self._op_dense.items() if d), dtype=np.int64)
        is_dense_row = np.zeros(len(self._op_site), dtype=bool)
        is_dense_row[dense_ops] = True
        row_dense = is_dense_row[mem_j]
        n_dense_lanes = int(lanes[mem[row_dense]].sum())
        dense_stream = out if n_dense_lanes == total else np.empty(n_dense_lanes, dtype=np.uint64)
        sparse_stream = out if n_dense_lanes == 0 else np.empty(total - n_dense_lanes, dtype=np.uint64)

        if dense_ops.size:
            rows = [self._op_addr[int(jj)] for jj in dense_ops]
            masks = np.stack([self._op_mask[int(jj)] for jj in dense_ops], axis=1)  # (n_warps, n_dense)
            full = bool(np.all(masks == 0xFFFFFFFF))
            nd = dense_ops.size
            step = max(1, (32 << 20) // (nd * WARP_SIZE * 8))   # ~32 MB per block
            pos = 0
            buf = np.empty((nd, min(step, self.n_warps) * WARP_SIZE), dtype=np.uint64)  # reused: fresh pages are slow
            for w0 in range(0, self.n_warps, step):
                w1 = min(w0 + step, self.n_warps)
                block = buf[:, :(w1 - w0) * WARP_SIZE]
                s0, s1 = w0 * WARP_SIZE, w1 * WARP_SIZE
                for i, r in enumerate(rows):
                    if isinstance(r, tuple):                  # (base, 32-bit offsets)
                        np.add(r[1][s0:s1], np.uint64(r[0]), out=block[i])
                    else:
                        block[i] = r[s0:s1]
                block = block.reshape(nd, w1 - w0, WARP_SIZE).transpose(1, 0, 2)
                if full:
                    n = block.size
                    dense_stream[pos:pos + n].reshape(w1 - w0, nd, WARP_SIZE)[...] = block
                else:
                    bits = np.unpackbits(masks[w0:w1].view(np.uint8).reshape(w1 - w0, nd, 4), axis=2,
                                         bitorder="little").astype(bool)
                    picked = block[bits]
                    n = picked.size
                    dense_stream[pos:pos + n] = picked
                pos += n
            assert pos == n_dense_lanes

        if n_dense_lanes < total:
            srows = mem[~row_dense]
            slanes = lanes[srows]
            soffset = np.cumsum(slanes) - slanes
            sj = j[srows]
            key = sj.astype(np.uint16 if len(self._op_site) <= 0xFFFF else np.int64)
            order = np.argsort(key, kind="stable")     # grouped by op, warps increasing
            per_op = np.bincount(sj, minlength=len(self._op_site))
            start = 0
            for jj in np.flatnonzero(per_op):
                r = order[start:start + per_op[jj]]
                start += per_op[jj]
                src = self._op_addr[int(jj)]
                cnt = slanes[r]
                dest = soffset[r]
                if cnt.size == 1:
                    sparse_stream[dest[0]:dest[0] + cnt[0]] = src
                    continue
                shift = dest - (np.cumsum(cnt) - cnt)
                sparse_stream[np.repeat(shift, cnt) + np.arange(src.size, dtype=np.int64)] = src

        if 0 < n_dense_lanes < total:
            lane_dense = np.repeat(row_dense, lanes[mem])
            out[lane_dense] = dense_stream
            out[~lane_dense] = sparse_stream
        return out

    def _build(self) -> Kernel:
        prog = self.program
        n_ops = len(self._op_site)
        W = self.warps_per_cta
        op_site = np.asarray(self._op_site, dtype=np.int64)
        op_code = np.asarray(self._op_code, dtype=np.int64)
        op_width = np.asarray(self._op_width, dtype=np.int64)
        op_dst = np.full((max(n_ops, 1), MAX_DST), NO_REG, dtype=np.uint8)
        op_src = np.full((max(n_ops, 1), MAX_SRC), NO_REG, dtype=np.uint8)
        for j, (d, s) in enumerate(self._op_regs):
            op_dst[j, :len(d)] = d
            op_src[j, :len(s)] = s
        if n_ops:
            # (warp, op) matrix of active masks; its non-zero entries in row-major order are the
            # rows of the kernel, already grouped by (CTA, warp) and in program order.
            masks = np.ascontiguousarray(np.stack(self._op_mask).T).ravel()
            rows = np.flatnonzero(masks)
            w, j = np.divmod(rows, n_ops)
            mask = masks[rows]
            del masks
        else:
            w = j = rows = np.zeros(0, dtype=np.int64)
            mask = np.zeros(0, dtype=np.uint32)
        width = op_width[j] if n_ops else np.zeros(0, dtype=np.int64)
        lanes = np.where(width > 0, popcount(mask), 0)
        ends = np.cumsum(lanes)
        addr_offset = ends - lanes
        addresses = self._assemble_addresses(w, j, mask, lanes, int(ends[-1]) if ends.size else 0)
        classes, spaces, flags = isa.classify_table(prog.opcodes)
        code = op_code[j] if n_ops else np.zeros(0, dtype=np.int64)
        attrs = {
            "model": prog.name,
            "arrays": {a.name: (a.base, a.nbytes) for a in prog.arrays.values()},
            "shared": {a.name: (a.base, a.nbytes) for a in self._shared.values()},
        }
        if self._local_words:
            attrs["local"] = {"base": self._local_base, "bytes": self._local_words * 4 * self.n_threads,
                              "arrays": {a.name: (a.base, a.n) for a in self._local.values()}}
        kernel = Kernel(
            name=self.name, grid=self.grid, block=self.block,
            cta=(w // W).astype(np.uint32), warp=(w % W).astype(np.uint16),
            pc=(op_site[j] * PC_STEP).astype(np.uint32) if n_ops else np.zeros(0, np.uint32),
            opcode=code.astype(np.uint16), op_class=classes[code], space=spaces[code], flags=flags[code],
            mask=mask.astype(np.uint32, copy=False), width=width.astype(np.uint8),
            dst=np.ascontiguousarray(op_dst[j]) if n_ops else np.zeros((0, MAX_DST), np.uint8),
            src=np.ascontiguousarray(op_src[j]) if n_ops else np.zeros((0, MAX_SRC), np.uint8),
            addr_offset=addr_offset.astype(np.uint64), addresses=addresses,
            shmem_bytes=int(-(-(self._shared_top + self._dynamic_shared) // 128) * 128),
            nregs=self.nregs, kernel_id=len(prog.kernels) + 1, attrs=attrs)
        self._op_addr.clear()
        self._op_mask.clear()
        return kernel
