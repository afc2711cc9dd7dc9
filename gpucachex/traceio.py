"""Reading and writing traces: Accel-Sim/NVBit text traces (a kernelslist.g, a .traceg or a
.traceg.xz) streamed through the C parser, and the native format that reloads much faster.

The native format is an uncompressed .npz (a zip of .npy arrays; layout below) that loads by
mapping the file: its columns are read-only views of the page cache, checked row by row in C.
Readers refuse format versions newer than NATIVE_VERSION. Version 2 saves kernel attrs' tuples
tagged (JSON has only lists); version 1 saved them as lists.
"""
from __future__ import annotations

import io
import json
import lzma
import mmap
import os
import re
import struct
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np

from gpucachex import isa
from gpucachex.trace import (INST_COLUMNS, MAX_DST, MAX_SRC, Kernel, Space, Trace, check_launch, memcpy_fits,
                             popcount32)

CHUNK_BYTES = 4 << 20  # text fed to the parser per call: large enough to amortise the call, small in memory
NATIVE_FORMAT = "gpucachex-trace"
NATIVE_VERSION = 2

_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZIP_MAGIC = b"PK\x03\x04"


def load_trace(path: str | os.PathLike, *, allow_missing_ctas: bool = False) -> Trace:
    """Load a trace from a kernelslist.g (or a directory holding one), a single .traceg or
    .traceg.xz kernel file, or a native file written by `Trace.save`.

    Malformed text raises ValueError naming the file and line. A kernel file holding fewer thread
    blocks than its grid is an error (a truncated file) unless `allow_missing_ctas` is set (the
    tracer leaves out CTAs that executed no traced instruction)."""
    p, kind = _trace_file(Path(path))
    if kind == "native":
        return _load_native(p)
    if kind == "listing":
        files, memcpys = _read_kernelslist(p)
        return _load_text(files, memcpys, name=p.resolve().parent.name, source=str(p),
                          allow_missing_ctas=allow_missing_ctas)
    return _load_text([p], [], name=p.name.split(".")[0], source=str(p), allow_missing_ctas=allow_missing_ctas)


def trace_files(path: str | os.PathLike) -> list[Path]:
    """Every file `load_trace(path)` reads: the file itself, or a kernelslist.g (named, or in the named
    folder) and the kernel trace files it lists. A loaded trace changes when any of them does."""
    p, kind = _trace_file(Path(path))
    if kind == "listing":
        return [p] + _read_kernelslist(p)[0]
    return [p]


def _trace_file(p: Path) -> tuple[Path, str]:
    """(the file to read, its kind: "native", "kernel" or "listing") of a trace path."""
    if p.is_dir():
        listing = p / "kernelslist.g"
        if not listing.is_file():
            raise FileNotFoundError(f"{p}: directory has no kernelslist.g")
        return listing, "listing"
    if not p.is_file():
        raise FileNotFoundError(f"{p}: no such trace file")
    with open(p, "rb") as f:
        head = f.read(4096)
    if head.startswith(_ZIP_MAGIC):
        return p, "native"
    if head.startswith(_XZ_MAGIC) or p.name.endswith((".traceg", ".traceg.xz")):
        return p, "kernel"
    first = next((ln.strip() for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    if p.suffix == ".g" or first.startswith(("Memcpy", "kernel")):
        return p, "listing"
    return p, "kernel"


# ---- Accel-Sim text ---------------------------------------------------------------------------

# A byte count longer than 20 digits is past 2^64 anyway (and a long one would reach int()'s
# 4,300-digit limit, a ValueError without the file and line).
_MEMCPY = re.compile(r"MemcpyHtoD\s*,\s*0[xX]([0-9a-fA-F]+)\s*,\s*([0-9]{1,20})")


def _read_kernelslist(listing: Path) -> tuple[list[Path], list[tuple[int, int, int]]]:
    """Kernel files (relative to the list's folder) and (kernel index it precedes, dst, bytes) copies."""
    files: list[Path] = []
    memcpys: list[tuple[int, int, int]] = []
    text = listing.read_bytes().decode("utf-8", "replace")
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        at = f"{listing}:{lineno}"
        if not line:
            continue
        if line.startswith("MemcpyHtoD"):
            # Digits only: Python's int() would also take "1_000", "+4" or non-ASCII digits, numbers
            # the tracer never writes and Accel-Sim reads otherwise.
            m = _MEMCPY.fullmatch(line)
            if m is None:
                raise ValueError(f"{at}: expected MemcpyHtoD,0x<destination>,<bytes>, found {line[:80]!r}")
            dst, nbytes = int(m[1], 16), int(m[2], 10)
            if not memcpy_fits(len(files), dst, nbytes, len(files)):
                # Trace.validate refuses such a copy too, but only when the trace is simulated,
                # without naming this line.
                raise ValueError(f"{at}: MemcpyHtoD of {nbytes} bytes to {dst:#x} runs past the 64-bit address "
                                 f"space")
            memcpys.append((len(files), dst, nbytes))
        elif line.startswith("Memcpy"):
            continue  # device-to-host copies change nothing the simulator models (Accel-Sim skips them too)
        elif line.startswith("kernel"):
            f = listing.parent / line
            if not f.is_file():
                raise FileNotFoundError(f"{at}: kernel trace file {line!r} not found (looked for {f})")
            files.append(f)
        else:
            raise ValueError(f"{at}: unknown command {line[:80]!r} (expected MemcpyHtoD,0x<dst>,<bytes> or a "
                             f"kernel trace file name)")
    if not files:
        raise ValueError(f"{listing}: lists no kernel trace file")
    return files, memcpys


def _feed_file(parser, path: Path) -> None:
    """Stream one kernel file (plain or xz) through the parser in fixed-size chunks."""
    with open(path, "rb") as raw:
        compressed = raw.read(len(_XZ_MAGIC)) == _XZ_MAGIC
    if compressed:
        with open(path, "rb") as f:
            try:
                for chunk in _xz_chunks(f):
                    parser.feed(chunk)
            except lzma.LZMAError as exc:
                raise ValueError(f"{path}: corrupt xz data: {exc}") from None
        return
    buf = bytearray(CHUNK_BYTES)
    view = memoryview(buf)
    try:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                parser.feed(view[:n])
    finally:
        view.release()


def _xz_chunks(f):
    """The decompressed data of every stream of an .xz file, in chunks of at most CHUNK_BYTES.

    Written out rather than lzma.open, which takes a stream after the first that fails to decode at
    its start for trailing garbage and silently stops there: a damaged second stream (files joined
    with cat) would drop the rest of the trace unnoticed. As xz does, only zero padding may follow
    a stream, in multiples of four bytes, or another stream."""
    decompressor = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
    padding = 0
    while data := f.read(CHUNK_BYTES):
        while True:
            if decompressor.eof:  # between streams
                rest = data.lstrip(b"\0")
                padding += len(data) - len(rest)
                if not rest:
                    break
                if padding % 4:
                    raise lzma.LZMAError(f"{padding} bytes of stream padding, not a multiple of 4")
                decompressor, padding, data = lzma.LZMADecompressor(format=lzma.FORMAT_XZ), 0, rest
            out = decompressor.decompress(data, CHUNK_BYTES)  # bounded: a small input may expand a lot
            data = decompressor.unused_data if decompressor.eof else b""
            if out:
                yield out
            if not decompressor.eof and decompressor.needs_input:
                break
    if not decompressor.eof:
        raise lzma.LZMAError("the file ends inside a stream (truncated?)")
    if padding % 4:
        raise lzma.LZMAError(f"{padding} bytes of stream padding, not a multiple of 4")


def _load_text(files: list[Path], memcpys, *, name: str, source: str, allow_missing_ctas: bool) -> Trace:
    from gpucachex import _core

    parser = _core.TraceParser()
    parsed = []
    for f in files:
        parser.begin(str(f), allow_missing_ctas)
        _feed_file(parser, f)
        parsed.append((f, parser.finish()))
    opcodes = parser.opcodes()
    op_class, space, flags = isa.classify_table(opcodes)
    kernels = [_kernel_from_parse(i, f, info, op_class, space, flags) for i, (f, info) in enumerate(parsed)]
    generic = np.array([op.split(".")[0] in isa.GENERIC_OPCODES for op in opcodes], dtype=bool)
    kernels = [_spread_local(_resolve_generic(f, i, k, generic)) for i, (f, k) in enumerate(zip(files, kernels))]
    _refuse_unknown_memory_opcodes(files, kernels, opcodes)
    return Trace(kernels, opcodes, list(memcpys), name=name, source=source)


def _refuse_unknown_memory_opcodes(files: list[Path], kernels: list[Kernel], opcodes: list[str]) -> None:
    """An opcode the classifier does not know is ALU work, but one that carries addresses is a memory
    instruction: taken for ALU work, its accesses would silently vanish from the run."""
    unknown = np.array([not isa.is_known(op) for op in opcodes], dtype=bool)
    for i, (f, k) in enumerate(zip(files, kernels)):
        rows = np.flatnonzero((k.width > 0) & unknown[k.opcode])
        if rows.size:
            bad = int(rows[0])
            opcode = opcodes[int(k.opcode[bad])]
            base = opcode.split(".")[0]
            raise ValueError(
                f"{f}: kernel {i + 1} {k.name!r}: instruction {bad} (PC {int(k.pc[bad]):#06x}) is {opcode!r}, which "
                f"carries {int(k.width[bad])}-byte memory accesses, but gpucachex does not know the opcode "
                f"{base!r} and would take it for ALU work, ignoring its accesses; teach it first, e.g. "
                f"gpucachex.isa.register_opcode({base!r}, 'load', 'global')")


def _kernel_from_parse(index: int, path: Path, info: dict, op_class, space, flags) -> Kernel:
    n = info["n_insts"]
    cols = info["columns"]

    def col(name, dtype, *trailing):
        return np.frombuffer(cols[name], dtype=dtype).reshape(n, *trailing)

    opcode = col("opcode", np.uint16)
    attrs = {"file": path.name}
    for key in ("tracer_version", "nvbit_version", "lineinfo", "cuda_stream_id", "shmem_base_addr",
                "local_mem_base_addr"):
        if info[key] is not None:
            attrs[key] = info[key]
    return Kernel(
        name=info["kernel_name"] if info["kernel_name"] is not None else path.name.split(".")[0],
        grid=tuple(info["grid"]), block=tuple(info["block"]),
        cta=col("cta", np.uint32), warp=col("warp", np.uint16), pc=col("pc", np.uint32), opcode=opcode,
        op_class=op_class[opcode], space=space[opcode], flags=flags[opcode],
        mask=col("mask", np.uint32), width=col("width", np.uint8),
        dst=col("dst", np.uint8, MAX_DST), src=col("src", np.uint8, MAX_SRC),
        addr_offset=col("addr_offset", np.uint64),
        addresses=np.frombuffer(cols["addresses"], dtype=np.uint64),
        shmem_bytes=info["shmem"] or 0, nregs=info["nregs"] or 0,
        kernel_id=info["kernel_id"] if info["kernel_id"] is not None else index + 1,
        binary_version=info["binary_version"] or 0, attrs=attrs)


# ---- generic loads and stores ---------------------------------------------------------------------
#
# A generic LD/ST reaches shared, local or global memory depending on its address: the GPU maps the CTA's
# shared memory and the thread's local memory into windows of the generic address space, and the tracer
# writes their bases in the kernel header (-shmem base_addr, -local mem base_addr) but not their sizes.
# The sizes are the largest any NVIDIA GPU has (CUDA C++ Programming Guide, technical specifications per
# compute capability), so no access a kernel can make falls outside its window:
SHARED_WINDOW_BYTES = 228 << 10  # shared memory per SM (compute capability 9.0)
# A thread's local window: its stack sits at the top of 16 MB (traced LDL offsets such as 0xfff72c,
# Accel-Sim issue #200), above the 512 KB a kernel may use otherwise.
LOCAL_WINDOW_BYTES = 16 << 20
# In the recorded traces the shared base lies 32 MB above the local base, so the two windows are far
# apart. (Accel-Sim's trace front end ends the shared window at the local base, which leaves it empty
# with these bases, and makes the local one GPGPU-Sim's LOCAL_MEM_SIZE_MAX, 16 KB.)


def _resolve_generic(path: Path, index: int, k: Kernel, generic: np.ndarray) -> Kernel:
    """`k` with each generic LD/ST (`generic[opcode]`) given the space of the window its addresses fall
    in, and its shared addresses made offsets into the CTA's shared memory, as LDS/STS give them (so
    bank conflicts are computed alike). Local accesses keep their addresses, as LDL/STL do.

    Refused, naming the instruction: lanes of one instruction in different windows (a row holds one
    space) and shared accesses past the CTA's shared memory (the header's -shmem), which no kernel
    can make."""
    rows = np.flatnonzero(generic[k.opcode] & (k.width > 0) & (k.mask != 0))
    shared_base, local_base = k.attrs.get("shmem_base_addr"), k.attrs.get("local_mem_base_addr")
    if not rows.size or not shared_base or not local_base:
        # A header without both bases leaves the windows unknown: the accesses stay global, as the
        # opcode table says.
        return k
    where = f"{path}: kernel {index + 1} {k.name!r}"
    if shared_base < local_base + LOCAL_WINDOW_BYTES and local_base < shared_base + SHARED_WINDOW_BYTES:
        raise ValueError(f"{where}: the header's shared window ({SHARED_WINDOW_BYTES >> 10} KB at {shared_base:#x}) "
                         f"and local window ({LOCAL_WINDOW_BYTES >> 10} KB at {local_base:#x}) overlap, so its "
                         f"generic loads and stores cannot be resolved")
    lanes = popcount32(k.mask[rows])
    first = np.cumsum(lanes) - lanes                      # each row's first lane among the selected lanes
    lane = k.address_index(rows)
    addr = k.addresses[lane]
    sb, lb = np.uint64(shared_base), np.uint64(local_base)
    in_shared = (addr >= sb) & (addr - sb < np.uint64(SHARED_WINDOW_BYTES))
    in_local = (addr >= lb) & (addr - lb < np.uint64(LOCAL_WINDOW_BYTES))
    lane_space = np.where(in_shared, Space.SHARED, np.where(in_local, Space.LOCAL, Space.GLOBAL)).astype(np.uint8)
    row_space = lane_space[first]

    def at(i: int) -> str:
        row = int(rows[i])
        return f"{where}: instruction {row} (PC {int(k.pc[row]):#06x})"

    mixed = np.flatnonzero(lane_space != np.repeat(row_space, lanes))
    if mixed.size:
        i = int(np.searchsorted(first, mixed[0], side="right")) - 1
        raise ValueError(f"{at(i)}, a generic load or store, has lanes in {Space.NAMES[row_space[i]]} memory "
                         f"(address {int(addr[first[i]]):#x}) and in {Space.NAMES[lane_space[mixed[0]]]} memory "
                         f"(address {int(addr[mixed[0]]):#x}); gpucachex gives each instruction one memory space")
    shared = np.flatnonzero(in_shared)
    offset = addr[shared] - sb
    end = offset + np.repeat(k.width[rows], lanes)[shared]
    past = np.flatnonzero(end > np.uint64(k.shmem_bytes))
    if past.size:
        j = int(shared[past[0]])
        i = int(np.searchsorted(first, j, side="right")) - 1
        raise ValueError(f"{at(i)} accesses shared memory at offset {int(offset[past[0]]):#x} (address "
                         f"{int(addr[j]):#x}), past the {k.shmem_bytes} bytes of shared memory its CTA has (-shmem)")
    space, flags, addresses = k.space.copy(), k.flags.copy(), k.addresses.copy()
    space[rows] = row_space
    flags[rows[row_space == Space.SHARED]] = 0  # the L1 bypass modifiers mean nothing for shared memory
    addresses[lane[shared]] = offset
    return k.replace(space=space, flags=flags, addresses=addresses)


# ---- local memory ------------------------------------------------------------------------------
#
# NVBit records the address a thread sees in its own local memory (an offset into its local window;
# a generic access gives the window's base plus that offset), the same for every thread, whereas the
# hardware gives each thread its own memory. As the kernel DSL does, word w of thread t is placed at
# LOCAL_SPREAD_BASE + (w * threads + t) * 4 (t counts the threads of the whole grid): consecutive
# threads touch consecutive words, so a warp's access to one local variable is one coalesced line, as
# on the GPU. (Accel-Sim interleaves the words of the threads resident at once instead,
# translate_local_memaddr in GPGPU-Sim's shader.cc.) A wide access keeps its width from its first
# word's place. The base lies far above any device pointer a trace holds.
LOCAL_SPREAD_BASE = 1 << 56


def _spread_local(k: Kernel) -> Kernel:
    """`k` with the local addresses of its threads placed apart (see above)."""
    rows = np.flatnonzero((k.space == Space.LOCAL) & (k.width > 0) & (k.mask != 0))
    if not rows.size:
        return k
    lanes = popcount32(k.mask[rows])
    lane = k.address_index(rows)
    offset = k.addresses[lane].copy()
    base = np.uint64(k.attrs.get("local_mem_base_addr") or 0)
    generic = (base > 0) & (offset >= base) & (offset - base < np.uint64(LOCAL_WINDOW_BYTES))
    offset[generic] -= base
    # Each active lane's thread number in the grid: the lane numbers of each row's set mask bits.
    bits = (k.mask[rows, None] >> np.arange(32, dtype=np.uint32)) & 1
    lane_ids = np.nonzero(bits)[1].astype(np.uint64)
    threads = np.uint64(k.threads_per_cta)
    tid = (np.repeat(k.cta[rows].astype(np.uint64) * threads + k.warp[rows].astype(np.uint64) * np.uint64(32), lanes)
           + lane_ids)
    n_threads = np.uint64(k.grid_ctas) * threads
    addresses = k.addresses.copy()
    four = np.uint64(4)
    addresses[lane] = (np.uint64(LOCAL_SPREAD_BASE) + ((offset // four) * n_threads + tid) * four + offset % four)
    return k.replace(addresses=addresses)


# ---- native format ----------------------------------------------------------------------------
#
# Members: "meta" (uint8 UTF-8 JSON) and one member per column, each the concatenation of that
# column over all kernels (kernel i owns the next meta.kernels[i].n_insts rows; addresses likewise).
# Every member is stored uncompressed with its array data 64-byte aligned in the file (a zip
# "extra" field pads the local header, as zipalign does), so a reader maps the file and wraps the
# columns in place instead of copying them; numpy.load still reads it as an ordinary .npz.

_NATIVE_COLUMNS = (*INST_COLUMNS, "addresses")
_ALIGN = 64
_PAD_EXTRA_ID = 0xD935  # zip extra-field id used for alignment padding (the one zipalign uses)
_ZIP64_EXTRA = 20       # bytes zipfile adds to a local header written with force_zip64


def _column_dtype(name: str) -> tuple[np.dtype, tuple[int, ...]]:
    return INST_COLUMNS[name] if name in INST_COLUMNS else (np.dtype(np.uint64), ())


# Kernel attrs are saved as JSON, which has no tuples and only string keys: a tuple is saved as
# {"__tuple__": [items]}, and whatever JSON would give back as something else (an int key as a string,
# a set, any other object) is refused at save time, so a saved trace reloads with attrs equal to its own.
_TUPLE_TAG = "__tuple__"
_ATTR_TYPES = "None, str, int, float, bool, and lists, tuples and dicts with string keys of them"


def _encode_attr(value, where: str):
    """`value` as JSON values that `_decode_attr` turns back into an equal value of the same types.
    Numpy numbers are saved as the Python numbers they equal."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if kind is list or kind is tuple:
        items = [_encode_attr(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items if kind is list else {_TUPLE_TAG: items}
    if kind is dict:
        out = {}
        for key, v in value.items():
            if type(key) is not str:
                raise ValueError(f"{where} has the key {key!r} ({type(key).__name__}); saved attrs take string keys "
                                 f"(JSON would give it back as a string)")
            if key == _TUPLE_TAG:
                raise ValueError(f"{where} has the key {key!r}, which the native format keeps for tuples")
            out[key] = _encode_attr(v, f"{where}[{key!r}]")
        return out
    raise ValueError(f"{where} is of type {kind.__name__}, which the native format cannot save (attrs hold "
                     f"{_ATTR_TYPES})")


def _decode_attr(value):
    """The attrs value `_encode_attr` saved as `value`."""
    if type(value) is list:
        return [_decode_attr(v) for v in value]
    if type(value) is dict:
        if _TUPLE_TAG in value:
            if len(value) != 1 or type(value[_TUPLE_TAG]) is not list:
                raise _Corrupt("a tuple in the kernel attrs is malformed")
            return tuple(_decode_attr(v) for v in value[_TUPLE_TAG])
        return {key: _decode_attr(v) for key, v in value.items()}
    return value


def _write_member(zf: zipfile.ZipFile, f, name: str, parts: list[np.ndarray], dtype: np.dtype,
                  trailing: tuple[int, ...]) -> None:
    """Write the concatenation of `parts` as member `name`.npy without building it in memory."""
    rows = sum(int(p.shape[0]) for p in parts)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": (rows, *trailing)})
    info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    local_header = 30 + len(info.filename.encode()) + 4 + _ZIP64_EXTRA
    pad = -(f.tell() + local_header) % _ALIGN  # the .npy header itself is a multiple of 64 bytes
    info.extra = struct.pack("<HH", _PAD_EXTRA_ID, pad) + bytes(pad)
    with zf.open(info, "w", force_zip64=True) as w:
        w.write(header.getvalue())
        for part in parts:
            if part.size:
                w.write(memoryview(np.ascontiguousarray(part, dtype=dtype)).cast("B"))


def save_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write `trace` to `path` in the native format (exactly that path: no suffix is added; missing
    folders are made). The file is written to a temporary name and renamed, so a reader never sees
    half a file."""
    trace.validate()
    attrs = []
    for i, k in enumerate(trace.kernels):
        where = f"cannot save trace: kernel {i + 1} {k.name!r}: attrs"
        if type(k.attrs) is not dict:
            raise ValueError(f"{where} must be a dict, got {type(k.attrs).__name__}")
        try:
            attrs.append(_encode_attr(k.attrs, where))
        except RecursionError:
            raise ValueError(f"{where} nest too deeply or contain themselves") from None
    meta = dict(format=NATIVE_FORMAT, version=NATIVE_VERSION, name=trace.name, source=trace.source,
                opcodes=list(trace.opcodes), memcpys=[[int(b), int(d), int(n)] for b, d, n in trace.memcpys],
                kernels=[dict(name=k.name, grid=[int(x) for x in k.grid], block=[int(x) for x in k.block],
                              shmem_bytes=int(k.shmem_bytes), nregs=int(k.nregs), kernel_id=int(k.kernel_id),
                              binary_version=int(k.binary_version), attrs=a, n_insts=k.n_insts,
                              n_addresses=int(k.addresses.shape[0])) for k, a in zip(trace.kernels, attrs)])
    meta_bytes = json.dumps(meta).encode()
    out = Path(path)
    if out.is_dir():
        raise IsADirectoryError(f"{out} is a directory; give the native file's path (e.g. {out / 'trace.npz'})")
    blocker = next((p for p in out.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise NotADirectoryError(f"cannot write {out}: {blocker} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    except OSError as exc:
        raise type(exc)(f"cannot write {out} ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "wb") as f:
            with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
                _write_member(zf, f, "meta", [np.frombuffer(meta_bytes, dtype=np.uint8)], np.dtype(np.uint8), ())
                for name in _NATIVE_COLUMNS:
                    dtype, trailing = _column_dtype(name)
                    _write_member(zf, f, name, [getattr(k, name) for k in trace.kernels], dtype, trailing)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Corrupt(Exception):
    pass


def _map_file(path: Path):
    """Map the file read-only, its pages populated up front where the OS allows (one system call
    instead of a page fault per 4 KB)."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise _Corrupt("empty file")
        if hasattr(mmap, "MAP_SHARED"):
            return mmap.mmap(f.fileno(), 0, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0),
                             prot=mmap.PROT_READ)
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _member(mm, infos: dict, name: str, dtype: np.dtype, trailing: tuple[int, ...]) -> np.ndarray:
    """The array of member `name` as a view of the mapped file (a copy if it is not aligned)."""
    info = infos.get(f"{name}.npy")
    if info is None:
        raise _Corrupt(f"no member {name}.npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise _Corrupt(f"member {name}.npy is compressed")
    h = info.header_offset
    if mm[h:h + 4] != _ZIP_MAGIC:
        raise _Corrupt(f"bad local header for {name}.npy")
    n_name, n_extra = struct.unpack("<HH", mm[h + 26:h + 30])
    start = h + 30 + n_name + n_extra
    end = start + info.file_size
    if end > len(mm):
        raise _Corrupt(f"member {name}.npy runs past the end of the file (truncated?)")
    # The zip's CRC-32 of each member: a changed byte in the columns or addresses would otherwise load
    # as a valid, different trace. zlib checks several GB/s, a small cost next to simulating the trace.
    with memoryview(mm) as view, view[start:end] as data:
        if zlib.crc32(data) != info.CRC:
            raise _Corrupt(f"member {name}.npy fails its CRC-32 check (the file was changed or damaged)")
    head = io.BytesIO(mm[start:min(end, start + 65536)])
    version = np.lib.format.read_magic(head)
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, fortran, got = read_header(head)
    if got != dtype or fortran or len(shape) != 1 + len(trailing) or tuple(shape[1:]) != trailing:
        raise _Corrupt(f"member {name}.npy holds {got} {shape}, expected {dtype} (rows, {trailing})")
    offset = start + head.tell()
    count = int(np.prod(shape, dtype=np.int64))
    if offset + count * dtype.itemsize != end:
        raise _Corrupt(f"member {name}.npy has {end - offset} data bytes for shape {shape}")
    array = np.frombuffer(mm, dtype=dtype, count=count, offset=offset).reshape(shape)
    return array if offset % _ALIGN == 0 else array.copy()


def _meta_int(km: dict, key: str, low: int = 0, high: int = 1 << 63) -> int:
    v = km[key]
    if not isinstance(v, int) or isinstance(v, bool) or not low <= v < high:
        raise _Corrupt(f"kernel field {key} = {v!r} is out of range")
    return v


def _meta_memcpy(m) -> tuple[int, int, int]:
    if type(m) is not list or len(m) != 3 or any(type(v) is not int for v in m):
        raise _Corrupt(f"memcpy {m!r} is not three integers")
    return tuple(m)


def _load_native(path: Path) -> Trace:
    from gpucachex import _core
    from gpucachex.trace import OpClass

    def corrupt(why) -> ValueError:
        return ValueError(f"{path}: corrupt native trace file ({why})")

    try:
        with zipfile.ZipFile(path) as zf:  # reads the central directory only
            infos = {info.filename: info for info in zf.infolist()}
        mm = _map_file(path)
        meta = json.loads(bytes(_member(mm, infos, "meta", np.dtype(np.uint8), ())).decode())
        if not isinstance(meta, dict) or meta.get("format") != NATIVE_FORMAT:
            raise _Corrupt("not a gpucachex native trace")
        version = meta.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise _Corrupt(f"bad format version {version!r}")
        if version > NATIVE_VERSION:
            raise ValueError(f"{path}: native trace format version {version} is newer than this gpucachex "
                             f"reads (up to {NATIVE_VERSION}); upgrade gpucachex")
        columns = {name: _member(mm, infos, name, *_column_dtype(name)) for name in _NATIVE_COLUMNS}
        # The meta is checked as strictly as Trace.validate checks what save writes: int() and str()
        # would turn a changed value (a copy of 1.5 bytes, an opcode 7) into a different trace.
        opcodes = meta["opcodes"]
        if type(opcodes) is not list or any(type(op) is not str for op in opcodes):
            raise _Corrupt("the opcode table is not a list of names")
        memcpys = [_meta_memcpy(m) for m in meta["memcpys"]]
        kernels, row, addr = [], 0, 0
        for i, km in enumerate(meta["kernels"]):
            n, m = _meta_int(km, "n_insts"), _meta_int(km, "n_addresses")
            try:
                check_launch(km["grid"], km["block"])
            except ValueError as exc:
                raise _Corrupt(f"kernel {i + 1}: {exc}") from None
            grid, block = tuple(km["grid"]), tuple(km["block"])
            if type(km["attrs"]) is not dict:
                raise _Corrupt(f"kernel {i + 1}: attrs are not a dict")
            attrs = _decode_attr(km["attrs"]) if version >= 2 else km["attrs"]
            cols = {name: columns[name][row:row + n] for name in INST_COLUMNS}
            k = Kernel(name=str(km["name"]), grid=grid, block=block, **cols,
                       addresses=columns["addresses"][addr:addr + m],
                       shmem_bytes=_meta_int(km, "shmem_bytes", high=1 << 32),
                       nregs=_meta_int(km, "nregs", high=1 << 32),
                       kernel_id=_meta_int(km, "kernel_id", -(1 << 63)),
                       binary_version=_meta_int(km, "binary_version"), attrs=attrs)
            if k.n_insts != n or k.addresses.shape[0] != m:
                raise _Corrupt(f"kernel {i + 1} needs rows past the end of the columns")
            try:
                _core.check_kernel(k.cta, k.warp, k.opcode, k.op_class, k.space, k.mask, k.width, k.addr_offset,
                                   m, k.grid_ctas, k.warps_per_cta, len(opcodes), len(OpClass.NAMES),
                                   len(Space.NAMES))
            except ValueError as exc:
                raise ValueError(f"{path}: invalid native trace: kernel {i + 1} {k.name!r}: {exc}") from None
            kernels.append(k)
            row, addr = row + n, addr + m
        if row != columns["cta"].shape[0] or addr != columns["addresses"].shape[0]:
            raise _Corrupt("the kernels do not cover the columns")
        for before, dst, nbytes in memcpys:
            if not memcpy_fits(before, dst, nbytes, len(kernels)):
                raise _Corrupt(f"bad memcpy ({before}, {dst:#x}, {nbytes})")
        return Trace(kernels, opcodes, memcpys, name=str(meta["name"]), source=str(meta["source"]))
    except _Corrupt as exc:
        raise corrupt(exc) from None
    except (zipfile.BadZipFile, KeyError, TypeError, ValueError, EOFError, OSError, UnicodeDecodeError,
            OverflowError, struct.error, NotImplementedError) as exc:  # zipfile: an unknown "version needed"
        if isinstance(exc, ValueError) and str(exc).startswith(str(path)):
            raise
        raise corrupt(f"{type(exc).__name__}: {exc}") from None
