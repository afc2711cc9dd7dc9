"""Reading and writing traces: Accel-Sim/NVBit text traces (a kernelslist.g, a .traceg or a
.traceg.xz) streamed through the C parser, and the native format that reloads much faster.

The native format is an uncompressed .npz (a zip of .npy arrays): a `meta` member holding UTF-8
JSON (format name, format version, trace name and source, opcode table, memcpys, per-kernel
metadata), then per kernel i the members `k<i>.<column>` for every column of INST_COLUMNS and
`k<i>.addresses`. Readers refuse versions newer than NATIVE_VERSION.
"""
from __future__ import annotations

import json
import lzma
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from gpucachex import isa
from gpucachex.trace import INST_COLUMNS, MAX_DST, MAX_SRC, Kernel, Trace

CHUNK_BYTES = 4 << 20  # text fed to the parser per call: large enough to amortise the call, small in memory
NATIVE_FORMAT = "gpucachex-trace"
NATIVE_VERSION = 1

_XZ_MAGIC = b"\xfd7zXZ\x00"
_ZIP_MAGIC = b"PK\x03\x04"


def load_trace(path: str | os.PathLike, *, allow_missing_ctas: bool = False) -> Trace:
    """Load a trace from a kernelslist.g (or a directory holding one), a single .traceg or
    .traceg.xz kernel file, or a native file written by `Trace.save`.

    Malformed text raises ValueError naming the file and line. A kernel file holding fewer thread
    blocks than its grid is an error (a truncated file) unless `allow_missing_ctas` is set (the
    tracer leaves out CTAs that executed no traced instruction)."""
    p = Path(path)
    if p.is_dir():
        listing = p / "kernelslist.g"
        if not listing.is_file():
            raise FileNotFoundError(f"{p}: directory has no kernelslist.g")
        p = listing
    elif not p.is_file():
        raise FileNotFoundError(f"{p}: no such trace file")
    with open(p, "rb") as f:
        head = f.read(4096)
    if head.startswith(_ZIP_MAGIC):
        return _load_native(p)
    if head.startswith(_XZ_MAGIC) or p.name.endswith((".traceg", ".traceg.xz")):
        return _load_text([p], [], name=p.name.split(".")[0], source=str(p), allow_missing_ctas=allow_missing_ctas)
    first = next((ln.strip() for ln in head.decode("utf-8", "replace").splitlines() if ln.strip()), "")
    if p.suffix == ".g" or first.startswith(("Memcpy", "kernel")):
        files, memcpys = _read_kernelslist(p)
        return _load_text(files, memcpys, name=p.resolve().parent.name, source=str(p),
                          allow_missing_ctas=allow_missing_ctas)
    return _load_text([p], [], name=p.name.split(".")[0], source=str(p), allow_missing_ctas=allow_missing_ctas)


# ---- Accel-Sim text ---------------------------------------------------------------------------

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
            parts = [x.strip() for x in line.split(",")]
            try:
                if len(parts) != 3 or not parts[1].lower().startswith("0x"):
                    raise ValueError
                dst, nbytes = int(parts[1], 16), int(parts[2], 10)
                if nbytes < 0 or dst >= 1 << 64:
                    raise ValueError
            except ValueError:
                raise ValueError(f"{at}: expected MemcpyHtoD,0x<destination>,<bytes>, found {line[:80]!r}") from None
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
    buf = bytearray(CHUNK_BYTES)
    view = memoryview(buf)
    try:
        with (lzma.open(path, "rb") if compressed else open(path, "rb", buffering=0)) as f:
            while n := f.readinto(buf):
                parser.feed(view[:n])
    except (lzma.LZMAError, EOFError) as exc:
        raise ValueError(f"{path}: corrupt xz data: {exc}") from None
    finally:
        view.release()


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
    return Trace(kernels, opcodes, list(memcpys), name=name, source=source)


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


# ---- native format ----------------------------------------------------------------------------

def _json_default(value):
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def save_trace(trace: Trace, path: str | os.PathLike) -> None:
    """Write `trace` to `path` in the native format (exactly that path: no suffix is added). The
    file is written to a temporary name and renamed, so a reader never sees half a file."""
    trace.validate()
    meta = dict(format=NATIVE_FORMAT, version=NATIVE_VERSION, name=trace.name, source=trace.source,
                opcodes=list(trace.opcodes), memcpys=[[int(b), int(d), int(n)] for b, d, n in trace.memcpys],
                kernels=[dict(name=k.name, grid=[int(x) for x in k.grid], block=[int(x) for x in k.block],
                              shmem_bytes=int(k.shmem_bytes), nregs=int(k.nregs), kernel_id=int(k.kernel_id),
                              binary_version=int(k.binary_version), attrs=k.attrs) for k in trace.kernels])
    try:
        meta_bytes = json.dumps(meta, default=_json_default).encode()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot save trace: kernel attrs must be JSON values ({exc})") from None
    arrays = {"meta": np.frombuffer(meta_bytes, dtype=np.uint8)}
    for i, k in enumerate(trace.kernels):
        for name in INST_COLUMNS:
            arrays[f"k{i}.{name}"] = getattr(k, name)
        arrays[f"k{i}.addresses"] = k.addresses
    out = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent if str(out.parent) else ".")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load_native(path: Path) -> Trace:
    def corrupt(why) -> ValueError:
        return ValueError(f"{path}: corrupt native trace file ({why})")

    try:
        with np.load(path, allow_pickle=False) as z:
            if "meta" not in z.files:
                raise corrupt("no meta member; not written by gpucachex?")
            meta = json.loads(bytes(z["meta"]).decode())
            if not isinstance(meta, dict) or meta.get("format") != NATIVE_FORMAT:
                raise corrupt("not a gpucachex native trace")
            version = meta.get("version")
            if not isinstance(version, int) or version < 1:
                raise corrupt(f"bad format version {version!r}")
            if version > NATIVE_VERSION:
                raise ValueError(f"{path}: native trace format version {version} is newer than this gpucachex "
                                 f"reads (up to {NATIVE_VERSION}); upgrade gpucachex")
            kernels = []
            for i, km in enumerate(meta["kernels"]):
                cols = {name: z[f"k{i}.{name}"] for name in INST_COLUMNS}
                kernels.append(Kernel(
                    name=km["name"], grid=tuple(km["grid"]), block=tuple(km["block"]), **cols,
                    addresses=z[f"k{i}.addresses"], shmem_bytes=km["shmem_bytes"], nregs=km["nregs"],
                    kernel_id=km["kernel_id"], binary_version=km["binary_version"], attrs=km["attrs"]))
            trace = Trace(kernels, list(meta["opcodes"]), [tuple(m) for m in meta["memcpys"]],
                          name=meta["name"], source=meta["source"])
    except ValueError as exc:
        if str(exc).startswith(str(path)):
            raise
        raise corrupt(exc) from None
    except (zipfile.BadZipFile, KeyError, TypeError, EOFError, OSError, UnicodeDecodeError) as exc:
        raise corrupt(f"{type(exc).__name__}: {exc}") from None
    try:
        return trace.validate()
    except ValueError as exc:
        raise ValueError(f"{path}: invalid native trace: {exc}") from None
