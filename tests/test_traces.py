"""Real GPU traces: the Accel-Sim/NVBit reader against an independent reference and the published
totals of the shared traces, every address mode and tracer version on handwritten lines, the
native format's exact round trip, file:line errors for malformed input (with fuzzing), and the
`gpucachex trace` command line."""
import io
import json
import lzma
import re
import struct
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucachex
from gpucachex import _core, isa, traceio, workloads
from gpucachex.cli import main as cli_main
from gpucachex.trace import INST_COLUMNS, MAX_DST, MAX_SRC, NO_REG, OpClass, Space, Trace
from reference_traceg import read_kernel, read_kernelslist, totals
from shared_traces import SHARED_TRACES

SHARED = SHARED_TRACES
needs_traces = pytest.mark.skipif(not SHARED.is_dir(), reason=f"shared traces not found at {SHARED} "
                                                                "(set GPUCACHEX_SHARED_TRACES)")

# Totals counted independently of this project (the issue; Accel-Sim's log for vectoradd).
EXPECTED = {
    "vectoradd-100-32-trace": dict(kernels=1, memcpys=3, warp_insts=344, thread_insts=10_516, mem_insts=12,
                                   addresses=300),
    "matrixmul-32-32-trace": dict(kernels=1, memcpys=2, warp_insts=4_416, thread_insts=139_264, mem_insts=1_440,
                                  addresses=46_080),
    "bfs-rodinia-2.0-ft": dict(kernels=16, memcpys=14, warp_insts=159_509, thread_insts=1_280_630, mem_insts=38_584,
                               addresses=181_816),
    "vectoradd-sm80-v5": dict(kernels=1, memcpys=2, warp_insts=26_601, thread_insts=801_056, mem_insts=4_689,
                              addresses=150_000),
}
SUMMARY_KEYS = ["ctas", "warps", "warp_insts", "thread_insts", "mem_insts", "addresses"]


def header(grid=(1, 1, 1), block=(64, 1, 1), version=4, lineinfo=0, name="_Z3fooPf"):
    lines = [f"-kernel name = {name}", "-kernel id = 1", f"-grid dim = ({grid[0]},{grid[1]},{grid[2]})",
             f"-block dim = ({block[0]},{block[1]},{block[2]})", "-shmem = 0", "-nregs = 16",
             "-binary version = 80", "-cuda stream id = 0"]
    if version is not None:
        lines.append(f"-accelsim tracer version = {version}")
    lines.append(f"-enable lineinfo = {lineinfo}")
    return "\n".join(lines) + "\n\n#traces format = ...\n\n"


def tb(x, warps, y=0, z=0):
    """A thread block: warps is {warp id: [instruction lines]}."""
    out = f"#BEGIN_TB\n\nthread block = {x},{y},{z}\n"
    for w, lines in warps.items():
        out += f"\nwarp = {w}\ninsts = {len(lines)}\n" + "".join(line + "\n" for line in lines)
    return out + "\n#END_TB\n\n"


def write(tmp_path, text, name="kernel-1.traceg"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def one_kernel(tmp_path, lines, **kw):
    return gpucachex.load_trace(write(tmp_path, header(**kw) + tb(0, {0: lines}))).kernels[0]


def kernel_addresses(k):
    """Addresses per instruction, split by addr_offset."""
    lanes = k.mem_lanes()
    return [k.addresses[o:o + n].tolist() for o, n in zip(k.addr_offset.tolist(), lanes.tolist())]


# ---- the shared real traces ------------------------------------------------------------------

@needs_traces
@pytest.mark.traces
@pytest.mark.parametrize("name", list(EXPECTED))
def test_shared_trace_totals(name):
    trace = gpucachex.load_trace(SHARED / name)
    trace.validate()
    want = EXPECTED[name]
    s = trace.summary()
    assert list(s) == SUMMARY_KEYS
    assert {k: s[k] for k in ("warp_insts", "thread_insts", "mem_insts", "addresses")} == \
        {k: want[k] for k in ("warp_insts", "thread_insts", "mem_insts", "addresses")}
    assert (len(trace.kernels), len(trace.memcpys)) == (want["kernels"], want["memcpys"])
    frame = trace.kernels_frame()
    assert len(frame) == want["kernels"] and int(frame["warp_insts"].sum()) == want["warp_insts"]


@needs_traces
@pytest.mark.traces
@pytest.mark.parametrize("name", list(EXPECTED))
def test_shared_trace_matches_the_reference_reader(name):
    """Every column of every kernel equals what an independent pure-Python reader decodes."""
    listing = SHARED / name / "kernelslist.g"
    files, memcpys = read_kernelslist(listing)
    trace = gpucachex.load_trace(listing)
    assert trace.memcpys == memcpys
    refs = [read_kernel(f) for f in files]
    assert trace.summary() == totals(refs)
    for k, ref in zip(trace.kernels, refs, strict=True):
        rows = ref["rows"]
        assert k.name == ref["header"]["kernel name"]
        assert k.grid == tuple(int(x) for x in ref["header"]["grid dim"].strip("()").split(","))
        assert k.cta.tolist() == [r["cta"] for r in rows]
        assert k.warp.tolist() == [r["warp"] for r in rows]
        assert k.pc.tolist() == [r["pc"] for r in rows]
        assert k.mask.tolist() == [r["mask"] for r in rows]
        assert k.width.tolist() == [r["width"] for r in rows]
        assert [trace.opcodes[i] for i in k.opcode.tolist()] == [r["opcode"] for r in rows]
        assert k.dst.tolist() == [(r["dst"] + [NO_REG] * MAX_DST)[:MAX_DST] for r in rows]
        assert k.src.tolist() == [(r["src"] + [NO_REG] * MAX_SRC)[:MAX_SRC] for r in rows]
        assert kernel_addresses(k) == [r["addresses"] if r["width"] else [] for r in rows]


@needs_traces
@pytest.mark.traces
def test_vectoradd_thread_instructions_match_accelsim_log():
    log = (SHARED / "vectoradd-100-32-trace" / "accelsim_log.txt").read_text()
    gpu_sim_insn = int(re.search(r"^gpu_sim_insn = (\d+)$", log, re.M).group(1))
    assert gpucachex.load_trace(SHARED / "vectoradd-100-32-trace").summary()["thread_insts"] == gpu_sim_insn == 10516


@needs_traces
@pytest.mark.traces
def test_matrixmul_memory_instructions_by_opcode_and_space():
    trace = gpucachex.load_trace(SHARED / "matrixmul-32-32-trace")
    k = trace.kernels[0]
    counts = {}
    for name, n in trace.opcode_counts().items():
        counts[name.split(".")[0]] = counts.get(name.split(".")[0], 0) + n
    assert {op: counts[op] for op in ("LDG", "LDS", "STS", "STG")} == dict(LDG=64, LDS=1280, STS=64, STG=32)
    mem = k.width > 0
    assert int(np.count_nonzero(mem & (k.space == Space.SHARED))) == 1280 + 64
    assert int(np.count_nonzero(mem & (k.space == Space.GLOBAL))) == 64 + 32
    assert int(np.count_nonzero(k.op_class == OpClass.BARRIER)) == 64  # BAR.SYNC


@needs_traces
@pytest.mark.traces
def test_vectoradd_loads_bypass_l1_and_exit_lines_with_mask_zero_count():
    k = gpucachex.load_trace(SHARED / "vectoradd-100-32-trace").kernels[0]
    names = gpucachex.load_trace(SHARED / "vectoradd-100-32-trace").opcodes
    ldg = np.array([names[i] == "LDG.E.CG" for i in k.opcode.tolist()])
    assert ldg.sum() == 8 and np.all(k.flags[ldg] == 1)  # .CG: cache-global, bypasses L1 (as the log says)
    # Warps past n=100 have mask-0 lines: still warp instructions, no thread instructions.
    assert np.count_nonzero(k.mask == 0) > 0


@needs_traces
@pytest.mark.traces
def test_a_directory_a_kernelslist_and_a_single_file_load_the_same_kernel():
    d = SHARED / "vectoradd-sm80-v5"
    a, b, c = (gpucachex.load_trace(p) for p in (d, d / "kernelslist.g", d / "kernel-1.traceg"))
    assert a.summary() == b.summary() == c.summary()
    assert c.memcpys == [] and len(a.memcpys) == 2
    assert c.kernels[0].attrs["tracer_version"] == 5


# ---- address modes, versions and layout on handwritten lines --------------------------------

def test_address_mode_0_lists_one_address_per_active_lane(tmp_path):
    k = one_kernel(tmp_path, ["0010 80000005 1 R2 LDG.E 1 R4 4 0 0x10 0x0000000000000020 0xffffffffffffffff"])
    assert kernel_addresses(k) == [[0x10, 0x20, 2**64 - 1]]


def test_address_mode_1_is_base_plus_stride(tmp_path):
    k = one_kernel(tmp_path, ["0010 0000000f 1 R2 LDG.E 1 R4 4 1 0x1000 4",
                              "0020 000000f0 0 STG.E 2 R4 R2 8 1 0x1000 -8",
                              "0030 00000101 0 STG.E 2 R4 R2 4 1 0x0 16"])  # non-contiguous: k-th active lane
    assert kernel_addresses(k) == [[0x1000, 0x1004, 0x1008, 0x100c], [0x1000, 0xff8, 0xff0, 0xfe8], [0x0, 0x10]]


def test_address_mode_2_is_base_then_deltas_from_the_previous_active_lane(tmp_path):
    k = one_kernel(tmp_path, ["0010 0000000b 1 R2 LDG.E 1 R4 4 2 0x100 -4 260",
                              "0020 00000001 1 R2 LDG.E 1 R4 4 2 0x7fc841500004",
                              "0030 00000003 1 R2 LDG.E 1 R4 4 2 0x0 -1"])
    assert kernel_addresses(k) == [[0x100, 0xfc, 0x200], [0x7fc841500004], [0, 2**64 - 1]]


def test_mask_zero_memory_lines_count_but_access_nothing(tmp_path):
    k = one_kernel(tmp_path, ["01f0 00000000 1 R7 LDG.E 1 R4 4 1 0x0 0",
                              "0270 00000000 0 STG.E 2 R12 R11 4 2 0x0",
                              "0280 00000000 0 LDG.E 1 R4 4 0",
                              "0290 00000003 1 R8 LDG.E 1 R2 4 1 0x40 4"])
    trace = Trace([k], ["LDG.E", "STG.E"])
    assert trace.summary() == dict(ctas=1, warps=1, warp_insts=4, thread_insts=2, mem_insts=4, addresses=2)
    assert k.addr_offset.tolist() == [0, 0, 0, 0] and k.addresses.tolist() == [0x40, 0x44]


def test_registers_rz_and_other_register_files(tmp_path):
    k = one_kernel(tmp_path, ["0010 ffffffff 2 R4 R255 IMAD.WIDE 5 R1 UR4 RZ P0 R254 0"])
    assert k.dst.tolist() == [[4, NO_REG]]
    assert k.src.tolist() == [[1, NO_REG, NO_REG, NO_REG, 254]]


def test_every_tracer_version_and_lineinfo_give_the_same_columns(tmp_path):
    body = ["0010 ffffffff 1 R1 MOV 0 0", "0020 0000000f 1 R4 LDG.E.CG 1 R4 4 1 0x7f0000000000 4",
            "0030 00000003 0 STG.E 2 R2 R3 4 2 0x40 -8", "0040 ffffffff 0 EXIT 0 0"]
    variants = {
        "legacy": ({"version": None}, ["0 0 0 0 " + line for line in body]),
        "v3": ({"version": 3}, body),
        "v4-lineinfo": ({"version": 4, "lineinfo": 1}, [f"{n} {line}" for n, line in enumerate(body, 17)]),
        "v5": ({"version": 5}, [line + " 0" for line in body[:2]] + [body[2] + " -12", body[3] + " 0x10"]),
    }
    loaded = {}
    for name, (kw, lines) in variants.items():
        d = tmp_path / name
        d.mkdir()
        loaded[name] = one_kernel(d, lines, **kw)
    ref = loaded["v3"]
    for name, k in loaded.items():
        for col in [*INST_COLUMNS, "addresses"]:
            assert np.array_equal(getattr(k, col), getattr(ref, col)), (name, col)


def test_crlf_line_ends_and_extra_spaces_are_accepted(tmp_path):
    text = header() + tb(0, {0: [GOOD, "0020   ffffffff  0 EXIT 0 0  "]})
    a = gpucachex.load_trace(write(tmp_path, text.replace("\n", "\r\n"), "crlf.traceg")).kernels[0]
    b = gpucachex.load_trace(write(tmp_path, text, "lf.traceg")).kernels[0]
    for col in [*INST_COLUMNS, "addresses"]:
        assert np.array_equal(getattr(a, col), getattr(b, col))


def test_thread_blocks_listed_out_of_order_are_sorted(tmp_path):
    text = header(grid=(2, 2, 1)) + tb(1, {1: ["0010 00000001 0 LDG.E 1 R2 4 1 0x30 0"],
                                           0: ["0020 00000001 0 LDG.E 1 R2 4 1 0x20 0"]}, y=1)
    text += tb(0, {0: ["0030 00000001 0 LDG.E 1 R2 4 1 0x10 0"]}, y=1) + tb(0, {0: ["0040 00000000 0 EXIT 0 0"]})
    text += tb(1, {0: ["0050 00000000 0 EXIT 0 0"]})
    k = gpucachex.load_trace(write(tmp_path, text)).validate().kernels[0]
    assert k.cta.tolist() == [0, 1, 2, 3, 3] and k.warp.tolist() == [0, 0, 0, 0, 1]
    assert k.pc.tolist() == [0x40, 0x50, 0x30, 0x20, 0x10]
    assert k.addresses.tolist() == [0x10, 0x20, 0x30]


def test_cluster_lines_of_newer_tracers_are_accepted(tmp_path):
    text = header() + ("#BEGIN_TB\nthread block = 0,0,0\ncluster id = 0,0,0\n"
                                                     "cluster cta = 0,0,0\ncluster rank = 0\nwarp = 0\ninsts = 1\n"
                                                     "0010 ffffffff 0 EXIT 0 0\n#END_TB\n")
    assert gpucachex.load_trace(write(tmp_path, text)).summary()["warp_insts"] == 1


def test_user_registered_opcodes_classify_loaded_traces(tmp_path):
    isa.register_opcode("LDGX", "load", "global")
    try:
        k = one_kernel(tmp_path, ["0010 00000001 1 R2 LDGX.E.CG 1 R4 4 1 0x40 0", "0020 ffffffff 0 FOO 0 0"])
    finally:
        del isa.OPCODE_TABLE["LDGX"]
    assert k.op_class.tolist() == [OpClass.LOAD, OpClass.ALU]
    assert k.space.tolist() == [Space.GLOBAL, Space.NONE] and k.flags.tolist() == [1, 0]


def test_an_unknown_opcode_with_addresses_is_an_error_not_an_alu_instruction(tmp_path):
    # Unknown opcodes are ALU work, but one that carries addresses is a memory instruction the
    # classifier does not know: taken for ALU work, its accesses would vanish from the run.
    lines = ["0010 00000001 1 R2 LDG.E 1 R4 4 1 0x40 0", "0020 00000003 1 R3 LDGX.E.CG 1 R4 4 1 0x80 4",
             "0030 00000001 1 R5 FOO 1 R4 0", "0040 ffffffff 0 EXIT 0 0"]
    path = write(tmp_path, header() + tb(0, {0: lines}))
    with pytest.raises(ValueError, match=re.escape(f"{path}: kernel 1 '_Z3fooPf': instruction 1 (PC 0x0020) is "
                                                   "'LDGX.E.CG', which carries 4-byte memory accesses, but gpucachex "
                                                   "does not know the opcode 'LDGX'")
                       + r".*register_opcode\('LDGX', 'load', 'global'\)"):
        gpucachex.load_trace(path)
    isa.register_opcode("LDGX", "load", "global")
    try:
        k = gpucachex.load_trace(path).kernels[0]
    finally:
        del isa.OPCODE_TABLE["LDGX"]
    # The unknown FOO, which carries no address, stays ALU work.
    assert k.op_class.tolist() == [OpClass.LOAD, OpClass.LOAD, OpClass.ALU, OpClass.EXIT]
    assert k.addresses.tolist() == [0x40, 0x80, 0x84]


@pytest.mark.parametrize("opcode,cls,space", [("TEXS", OpClass.LOAD, Space.TEX), ("TLDS.LZ", OpClass.LOAD, Space.TEX),
                                              ("TLD4S", OpClass.LOAD, Space.TEX),
                                              ("SUATOM.D", OpClass.ATOMIC, Space.GLOBAL),
                                              ("SURED.E", OpClass.ATOMIC, Space.GLOBAL),
                                              ("CCTL.E", OpClass.MEMBAR, Space.NONE)])
def test_texture_surface_and_cache_control_opcodes_may_carry_addresses(tmp_path, opcode, cls, space):
    k = one_kernel(tmp_path, [f"0010 00000001 1 R2 {opcode} 1 R4 4 1 0x40 0", "0020 ffffffff 0 EXIT 0 0"])
    assert k.op_class[0] == cls and k.space[0] == space
    assert k.width[0] == 4 and k.addresses.tolist() == [0x40]


def test_surface_stores_and_atomics_write_global_memory(tmp_path):
    # A surface is a CUDA array in global memory. Classified as 'tex', which is read-only, a trace
    # with SUST, SURED or SUATOM was refused when it was simulated.
    lines = ["0010 00000001 0 SUST.D.BA.2D.TRAP 1 R4 4 1 0x1000 0",
             "0020 00000003 0 SURED.E.ADD.STRONG.GPU 1 R4 4 1 0x2000 4",
             "0030 00000001 1 R2 SUATOM.D.ADD 1 R4 4 1 0x3000 0",
             "0040 00000001 1 R3 SULD.D.BA.2D 1 R4 4 1 0x4000 0",
             "0050 ffffffff 0 EXIT 0 0"]
    trace = gpucachex.load_trace(write(tmp_path, header() + tb(0, {0: lines})))
    k = trace.kernels[0]
    assert k.op_class.tolist() == [OpClass.STORE, OpClass.ATOMIC, OpClass.ATOMIC, OpClass.LOAD, OpClass.EXIT]
    assert [Space.NAMES[s] for s in k.space] == ["global"] * 4 + ["none"]
    r = gpucachex.simulate("gtx480", trace, energy=False)
    # the SUST is the L1D's one write access (write-evict) and the L2's one write; SULD a read
    assert r["l1d_write_accesses"] == 1 and r["l2_write_accesses"] == 1 and r["l1d_read_accesses"] == 1


# Window bases of the recorded bfs trace: the shared base 32 MB above the local base.
SHMEM_BASE, LOCAL_BASE = 0x7FC867000000, 0x7FC865000000


def windows_header(shmem=4096, bases=True):
    """header() with -shmem bytes and, unless bases is False, the generic windows' base addresses."""
    text = header().replace("-shmem = 0", f"-shmem = {shmem}")
    if bases:
        text = text.replace("-cuda stream id = 0\n", f"-cuda stream id = 0\n-shmem base_addr = 0x{SHMEM_BASE:016x}\n"
                                                     f"-local mem base_addr = 0x{LOCAL_BASE:016x}\n")
    return text


def test_generic_loads_and_stores_take_the_space_of_their_window(tmp_path):
    local_end = LOCAL_BASE + traceio.LOCAL_WINDOW_BYTES
    lines = [f"0010 0000000f 1 R2 LD.E.CG 1 R4 4 1 {SHMEM_BASE + 0x100:#x} 4",   # shared: an offset, as LDS gives it
             f"0020 00000003 0 ST.E.64 2 R4 R2 8 1 {LOCAL_BASE + 0x40:#x} 8",    # local: the address as it is
             f"0030 00000001 1 R3 LD.E 1 R4 4 1 {local_end - 4:#x} 0",           # the local window's last word
             f"0040 00000001 1 R3 LD.E.CG 1 R4 4 1 {local_end:#x} 0",            # just past it: global
             "0050 00000003 0 ST.E 2 R4 R3 4 2 0x7fc841500000 4",                 # global
             f"0060 00000000 1 R3 LD.E 1 R4 4 1 {SHMEM_BASE:#x} 0",               # mask 0: no access, stays global
             "0070 ffffffff 0 EXIT 0 0"]
    path = write(tmp_path, windows_header() + tb(0, {0: lines}))
    k = gpucachex.load_trace(path).validate().kernels[0]
    assert [Space.NAMES[s] for s in k.space] == ["shared", "local", "local", "global", "global", "global", "none"]
    assert k.flags.tolist() == [0, 0, 0, 1, 0, 0, 0]  # .CG bypasses the L1 for global data only
    # Local addresses are offsets into the thread's local memory, spread apart per thread.
    n = k.grid_ctas * k.threads_per_cta
    local = [traceio.LOCAL_SPREAD_BASE + ((offset // 4) * n + t) * 4 for offset, t in ((0x40, 0), (0x48, 1))]
    last = traceio.LOCAL_SPREAD_BASE + (traceio.LOCAL_WINDOW_BYTES // 4 - 1) * n * 4
    assert kernel_addresses(k)[:5] == [[0x100, 0x104, 0x108, 0x10c], local, [last], [local_end],
                                       [0x7FC841500000, 0x7FC841500004]]
    assert k.attrs["shmem_base_addr"] == SHMEM_BASE and k.attrs["local_mem_base_addr"] == LOCAL_BASE
    trace = gpucachex.load_trace(path)
    trace.save(tmp_path / "t.npz")  # the native file holds the resolved columns
    assert_same_trace(trace, gpucachex.load_trace(tmp_path / "t.npz"))
    # Without the windows' bases a generic access cannot be resolved and stays global.
    bare = write(tmp_path, windows_header(bases=False) + tb(0, {0: lines}), "bare.traceg")
    k = gpucachex.load_trace(bare).kernels[0]
    assert [Space.NAMES[s] for s in k.space[:6]] == ["global"] * 6 and int(k.addresses[0]) == SHMEM_BASE + 0x100


def test_a_generic_shared_access_is_simulated_like_lds(tmp_path):
    """Same offsets, same bank conflicts: a generic load into the shared window costs what LDS does."""
    def cycles(opcode, base, stride):
        lines = [f"0010 ffffffff 1 R2 {opcode} 1 R4 4 1 {base:#x} {stride}",
                 "0020 ffffffff 1 R3 IADD 2 R2 R2 0", "0030 ffffffff 0 EXIT 0 0"]
        path = write(tmp_path, windows_header() + tb(0, {0: lines}), f"{opcode}.traceg")
        r = gpucachex.simulate("gtx480", path, energy=False)
        assert r["l1d_accesses"] == 0
        return r["cycles"]
    # A 128-byte stride puts all 32 lanes in one bank; a 4-byte stride gives each its own.
    assert cycles("LD.E", SHMEM_BASE, 128) == cycles("LDS", 0, 128) > cycles("LDS", 0, 4) == cycles("LD.E", SHMEM_BASE, 4)


@pytest.mark.parametrize("line, shmem, message", [
    (f"0010 00000003 1 R2 LD.E 1 R4 4 0 {SHMEM_BASE:#x} 0x7fc841500000", 4096,
     r"instruction 0 \(PC 0x0010\), a generic load or store, has lanes in shared memory \(address 0x7fc867000000\) "
     r"and in global memory \(address 0x7fc841500000\)"),
    (f"0010 00000003 1 R2 LD.E 1 R4 4 1 {SHMEM_BASE + 0xffc:#x} 4", 4096,
     r"instruction 0 \(PC 0x0010\) accesses shared memory at offset 0x1000 \(address 0x7fc867001000\), past the "
     r"4096 bytes of shared memory its CTA has \(-shmem\)"),
])
def test_generic_accesses_a_trace_cannot_hold_are_refused(tmp_path, line, shmem, message):
    path = write(tmp_path, windows_header(shmem) + tb(0, {0: [line]}))
    with pytest.raises(ValueError, match=re.escape(f"{path}: kernel 1 '_Z3fooPf': ") + message):
        gpucachex.load_trace(path)


def test_overlapping_generic_windows_are_refused(tmp_path):
    text = windows_header().replace(f"0x{LOCAL_BASE:016x}", f"0x{SHMEM_BASE - 0x1000:016x}")
    path = write(tmp_path, text + tb(0, {0: [f"0010 00000001 1 R2 LD.E 1 R4 4 1 {SHMEM_BASE:#x} 0"]}))
    with pytest.raises(ValueError, match=re.escape(f"{path}: kernel 1 '_Z3fooPf': the header's shared window "
                                                   "(228 KB at 0x7fc867000000) and local window (16384 KB "
                                                   "at 0x7fc866fff000) overlap")):
        gpucachex.load_trace(path)
    # A kernel without generic accesses does not need its windows.
    ok = write(tmp_path, text + tb(0, {0: [GOOD]}), "ok.traceg")
    assert gpucachex.load_trace(ok).kernels[0].space.tolist() == [Space.GLOBAL]


def test_kernelslist_memcpys_xz_and_missing_ctas(tmp_path):
    k1 = header(grid=(2, 1, 1)) + tb(0, {0: ["0010 ffffffff 0 EXIT 0 0"]}) + tb(1, {0: ["0010 ffffffff 0 EXIT 0 0"]})
    write(tmp_path, k1, "kernel-1.traceg")
    (tmp_path / "kernel-2.traceg.xz").write_bytes(lzma.compress(k1.replace("EXIT", "BRA").encode()))
    (tmp_path / "kernelslist.g").write_text("MemcpyHtoD,0x00007fc841500000,32768\nkernel-1.traceg\n\n"
                                            "MemcpyHtoD,0x00007fc841527000,1\nMemcpyDtoH,0x1,4\nkernel-2.traceg.xz\n"
                                            "MemcpyHtoD,0x10,0\n")
    trace = gpucachex.load_trace(tmp_path)
    assert trace.memcpys == [(0, 0x7FC841500000, 32768), (1, 0x7FC841527000, 1), (2, 0x10, 0)]
    assert trace.opcodes == ["EXIT", "BRA"] and [k.kernel_id for k in trace.kernels] == [1, 1]
    assert trace.kernels[1].attrs["file"] == "kernel-2.traceg.xz"
    assert trace.validate().summary()["warp_insts"] == 4
    # A grid with a CTA the tracer left out is a truncated file unless missing CTAs are allowed.
    write(tmp_path, header(grid=(3, 1, 1)) + tb(0, {0: ["0010 ffffffff 0 EXIT 0 0"]}), "partial.traceg")
    with pytest.raises(ValueError, match=r"partial\.traceg:\d+: the file holds 1 of the 3 thread blocks"):
        gpucachex.load_trace(tmp_path / "partial.traceg")
    assert gpucachex.load_trace(tmp_path / "partial.traceg", allow_missing_ctas=True).summary()["ctas"] == 1


def test_parsing_does_not_depend_on_how_the_input_is_chunked():
    text = (header(grid=(2, 1, 1)) + tb(1, {0: ["0010 0000000f 1 R4 LDG.E 1 R4 4 2 0x100 -4 8 12"]})
            + tb(0, {1: ["0020 ffffffff 0 EXIT 0 0"], 0: ["0030 00000003 0 STS 2 R1 R2 4 1 0x0 4"]})).encode()

    def parse(step):
        p = _core.TraceParser()
        p.begin("k.traceg")
        for at in range(0, len(text), step):
            p.feed(text[at:at + step])
        info = p.finish()
        return {name: bytes(buf) for name, buf in info["columns"].items()}

    whole = parse(len(text))
    for step in (1, 2, 3, 7, 64, 333):
        assert parse(step) == whole


def test_loads_run_in_parallel_threads(tmp_path):
    paths = []
    for i in range(4):
        lines = [f"{16 * j:04x} 0000ffff 1 R2 LDG.E 1 R4 4 1 {0x1000 * (i + 1):#x} 4" for j in range(2000)]
        d = tmp_path / str(i)
        d.mkdir()
        paths.append(write(d, header() + tb(0, {0: lines})))
    results = [None] * 4
    threads = [threading.Thread(target=lambda i=i: results.__setitem__(i, gpucachex.load_trace(paths[i])))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, trace in enumerate(results):
        assert trace.summary()["addresses"] == 2000 * 16
        assert int(trace.kernels[0].addresses[0]) == 0x1000 * (i + 1)


# ---- errors -------------------------------------------------------------------------------------

GOOD = "0010 0000000f 1 R4 LDG.E 1 R4 4 1 0x1000 4"


@pytest.mark.parametrize("line, message", [
    ("0x1z 0000000f 0 EXIT 0 0", r"expected a hexadecimal PC, found '0x1z'"),
    ("0010 0000000g 0 EXIT 0 0", r"expected a hexadecimal active mask, found '0000000g'"),
    ("0010 0000000f 1 R4 LDG.E 4 R4 R5 4 1 0x1000 4", r"expected 4 source registers, found 2 \(then '4'\)"),
    ("0010 0000000f 2 R4 LDG.E 1 R4 4 1 0x1000 4", r"expected 2 destination registers, found 1"),
    ("0010 0000000f 1 R4 LDG.E 1 R4 4 4 0x1000 4", r"unknown address mode 4"),
    ("0010 0000000f 1 R4 LDG.E 1 R4 3 1 0x1000 4", r"memory width 3 bytes per lane is not an access size"),
    ("0010 0000000f 1 R4 LDG.E 1 R4 4 0 0x1 0x2", r"expected 4 addresses \(one per active lane\), found 2"),
    ("0010 0000000f 1 R4 LDG.E 1 R4 4 2 0x1 1 2 3 4", r"unexpected '4' after the end of the instruction"),
    ("0010 0000000f 1 R4 LDG.E 1 R4 4 1 0x1000 4 junk", r"unexpected 'junk'"),
])
def test_malformed_lines_name_file_and_line(tmp_path, line, message):
    path = write(tmp_path, header() + tb(0, {0: [GOOD, line]}))
    lineno = header().count("\n") + 8  # #BEGIN_TB, blank, thread block, blank, warp, insts, GOOD, line
    with pytest.raises(ValueError, match=re.escape(f"{path}:{lineno}: ") + message):
        gpucachex.load_trace(path)


@pytest.mark.parametrize("text, line, message", [
    (header() + tb(0, {0: [GOOD, GOOD]}).replace("insts = 2", "insts = 3"), 23,
     r"warp 0 of thread block \(0,0,0\) declares 3 instructions \(line 19\) but has 2"),
    (header() + tb(0, {0: [GOOD, GOOD]}).replace("insts = 2", "insts = 1"), 21,
     r"warp 0 of thread block \(0,0,0\) declares 1 instructions \(line 19\) but has more"),
    (header().replace("(64,1,1)", "(99999,1,1)"), 4, r"block dim \(99999,1,1\): dimension x must be 1 to 2048"),
    (header().replace("(1,1,1)", "(1,1,0)"), 3, r"grid dim \(1,1,0\): dimension z must be 1 to 65535"),
    (header().replace("-nregs = 16", "-nregs = 100000"), 6, r"header 'nregs' = 100000 is out of range"),
    (header().replace("= 4\n", "= 77\n"), 9, r"accelsim tracer version 77 is not supported"),
    (header() + tb(1, {0: [GOOD]}), 16, r"thread block \(1,0,0\) is outside the grid \(1,1,1\)"),
    (header() + tb(0, {2: [GOOD]}), 18, r"warp 2 is outside a CTA of 2 warps"),
    (header(grid=(2, 1, 1)) + tb(1, {0: [GOOD]}) + tb(1, {1: [GOOD]}), 26,
     r"thread block \(1,0,0\) appears twice \(lines 16 and 26\)"),
    ("", 0, r"the file ends in its header"),
    ("\x00\x01\x02binary", 1, r"expected a '-key = value' header line"),
])
def test_malformed_files_name_file_and_line(tmp_path, text, line, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=re.escape(f"{path}:{line}: ") + message):
        gpucachex.load_trace(path)


def test_truncated_files_are_errors_at_every_cut(tmp_path):
    text = (header(grid=(2, 1, 1)) + tb(0, {0: [GOOD, GOOD], 1: [GOOD]}) + tb(1, {0: [GOOD]})).encode()
    end = text.rstrip().rfind(b"\n#END_TB")  # cuts after this point only drop whitespace or part of #END_TB
    for cut in range(0, end, 7):
        path = write(tmp_path, text[:cut])
        with pytest.raises(ValueError, match=re.escape(str(path)) + r":\d+: "):
            gpucachex.load_trace(path)


def test_corrupt_xz_is_a_clear_error(tmp_path):
    good = lzma.compress((header() + tb(0, {0: [GOOD]})).encode())
    for data in (good[: len(good) // 2], good[:12] + bytes(40) + good[52:]):
        path = write(tmp_path, data, "kernel-1.traceg.xz")
        with pytest.raises(ValueError, match=re.escape(str(path)) + r": corrupt xz data"):
            gpucachex.load_trace(path)


def test_every_stream_of_an_xz_file_is_read_and_a_damaged_one_is_an_error(tmp_path):
    """xz files may hold several streams (files joined with cat), with zero padding between them.
    lzma.open took a stream that fails at its start for trailing garbage and stopped there silently:
    a damaged second stream dropped the thread blocks it held."""
    text = (header(grid=(2, 1, 1)) + tb(0, {0: [GOOD]}) + tb(1, {0: [GOOD, GOOD]})).encode()
    cut = text.index(b"#BEGIN_TB", text.index(b"#END_TB"))
    first, second = lzma.compress(text[:cut]), lzma.compress(text[cut:])
    whole = gpucachex.load_trace(write(tmp_path, text)).kernels[0]
    for data in (first + second, first + bytes(4) + second + bytes(8)):
        k = gpucachex.load_trace(write(tmp_path, data, "kernel-1.traceg.xz")).kernels[0]
        for col in [*INST_COLUMNS, "addresses"]:
            assert np.array_equal(getattr(k, col), getattr(whole, col)), col
    for at in (0, 6, len(second) // 2):
        damaged = bytearray(second)
        damaged[at] ^= 0xFF
        for data in (first + bytes(damaged), first + bytes(4) + bytes(damaged)):
            path = write(tmp_path, data, f"bad{at}.traceg.xz")
            with pytest.raises(ValueError, match=re.escape(f"{path}: corrupt xz data")):
                gpucachex.load_trace(path, allow_missing_ctas=True)
    for data, message in [(first + bytes(3) + second, "3 bytes of stream padding, not a multiple of 4"),
                          (first + second + b"\0\0", "2 bytes of stream padding"),
                          (first + second[:-1], "the file ends inside a stream")]:
        path = write(tmp_path, data, "odd.traceg.xz")
        with pytest.raises(ValueError, match=re.escape(f"{path}: corrupt xz data: {message}")):
            gpucachex.load_trace(path, allow_missing_ctas=True)


def test_xz_output_is_fed_in_bounded_chunks(tmp_path, monkeypatch):
    """A few compressed bytes may expand to gigabytes: the reader decompresses CHUNK_BYTES at a time."""
    monkeypatch.setattr(traceio, "CHUNK_BYTES", 4096)
    text = (header() + tb(0, {0: [GOOD] * 3000})).encode()
    fed = []

    class Parser:
        def feed(self, chunk):
            fed.append(len(chunk))

    traceio._feed_file(Parser(), write(tmp_path, lzma.compress(text) * 2, "k.traceg.xz"))
    assert sum(fed) == 2 * len(text) and max(fed) <= 4096


def test_kernelslist_errors_name_the_list_and_line(tmp_path):
    write(tmp_path, header() + tb(0, {0: [GOOD]}))
    listing = tmp_path / "kernelslist.g"
    listing.write_text("MemcpyHtoD,0x10,4\nkernel-1.traceg\nkernel-9.traceg\n")
    with pytest.raises(FileNotFoundError, match=re.escape(f"{listing}:3: kernel trace file 'kernel-9.traceg' not found")):
        gpucachex.load_trace(tmp_path)
    listing.write_text("MemcpyHtoD,0x10\nkernel-1.traceg\n")
    with pytest.raises(ValueError, match=re.escape(f"{listing}:1: expected MemcpyHtoD,0x<destination>,<bytes>")):
        gpucachex.load_trace(listing)
    listing.write_text("kernel-1.traceg\nlaunch everything\n")
    with pytest.raises(ValueError, match=re.escape(f"{listing}:2: unknown command 'launch everything'")):
        gpucachex.load_trace(listing)
    with pytest.raises(FileNotFoundError, match="no such trace file"):
        gpucachex.load_trace(tmp_path / "nothing.traceg")
    with pytest.raises(FileNotFoundError, match="has no kernelslist.g"):
        gpucachex.load_trace(tmp_path / "..")


@pytest.mark.parametrize("line, message", [
    # a copy past the end of the address space: refused here, not later by simulate without the line
    ("MemcpyHtoD,0xffffffffffffff00,1000", "MemcpyHtoD of 1000 bytes to 0xffffffffffffff00 runs past the 64-bit"),
    ("MemcpyHtoD,0x10000000000000000,0", "MemcpyHtoD of 0 bytes to 0x10000000000000000 runs past the 64-bit"),
    # numbers Python's int() reads but the tracer never writes
    ("MemcpyHtoD,0x10,1_000", "expected MemcpyHtoD,0x<destination>,<bytes>, found 'MemcpyHtoD,0x10,1_000'"),
    ("MemcpyHtoD,0x1_0,4", "expected MemcpyHtoD,0x<destination>,<bytes>"),
    ("MemcpyHtoD,0x10,+4", "expected MemcpyHtoD,0x<destination>,<bytes>"),
    ("MemcpyHtoD,0x10,\uff14", "expected MemcpyHtoD,0x<destination>,<bytes>"),  # a fullwidth 4
    ("MemcpyHtoDAsync,0x10,4", "expected MemcpyHtoD,0x<destination>,<bytes>"),
])
def test_kernelslist_memcpys_are_read_as_written_or_refused(tmp_path, line, message):
    write(tmp_path, header() + tb(0, {0: [GOOD]}))
    listing = tmp_path / "kernelslist.g"
    listing.write_text(f"MemcpyHtoD,0x00007f2b2d500000,400\nkernel-1.traceg\n{line}\nkernel-1.traceg\n",
                       encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{listing}:3: {message}")):
        gpucachex.load_trace(listing)
    listing.write_text("MemcpyHtoD , 0x00007F2B2D500000 , 400\nkernel-1.traceg\nMemcpyHtoD,0xffffffffffffff00,256\n"
                       "kernel-1.traceg\n")
    assert gpucachex.load_trace(listing).memcpys == [(0, 0x7F2B2D500000, 400), (1, 0xFFFFFFFFFFFFFF00, 256)]


def test_parser_misuse_is_reported():
    p = _core.TraceParser()
    with pytest.raises(RuntimeError, match="call begin"):
        p.feed(b"x")
    p.begin("a.traceg")
    with pytest.raises(TypeError):
        p.feed("text, not bytes")
    p.feed(b"-grid dim = (1,1,1)\n")
    with pytest.raises(ValueError, match=r"a\.traceg:1: the file ends in its header"):
        p.finish()


# ---- fuzzing --------------------------------------------------------------------------------------

def _fuzz_seeds():
    """Small real-trace texts: a thread block of each shared trace (grid cut to that block), in
    every tracer format, or handwritten ones when the shared traces are absent."""
    seeds = [(header(version=v) + tb(0, {0: [GOOD, "0020 00000003 0 STG.E 2 R2 R3 4 2 0x40 -8",
                                            "0030 00000000 0 EXIT 0 0"]}))
             for v in (3, 4)]
    if SHARED.is_dir():
        for name, limit in (("bfs-rodinia-2.0-ft/kernel-2.traceg", 150), ("vectoradd-sm80-v5/kernel-1.traceg", 60),
                            ("matrixmul-32-32-trace/kernel-1.traceg", 150)):
            text = (SHARED / name).read_text()
            head, _, body = text.partition("#BEGIN_TB")
            head = re.sub(r"-grid dim = \(.*\)", "-grid dim = (1,1,1)", head)
            warp0 = body.split("\nwarp = 1\n")[0].split("\n")
            n = min(limit, len(warp0) - 6)
            lines = [ln for ln in warp0 if ln and ln[0] in "0123456789abcdef"][:n]
            seeds.append(head + tb(0, {0: lines}))
    return [s.encode() for s in seeds]


SEEDS = _fuzz_seeds()


@st.composite
def mutated_traces(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "delete_token", "insert_junk", "duplicate_line",
                                     "delete_line", "swap_digit"]))
        if not data:
            break
        at = draw(st.integers(0, len(data) - 1))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip":
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif kind == "delete_token":
            end = at
            while end < len(data) and data[end] not in b" \n":
                end += 1
            del data[at:end + 1]
        elif kind == "insert_junk":
            data[at:at] = draw(st.binary(min_size=1, max_size=12) | st.sampled_from(
                [b" 0", b" R3", b"\n", b"-", b"#END_TB\n", b"warp = 1\n", b" 0x", b"99999999999999999999", b"\r"]))
        elif kind == "swap_digit":
            if chr(data[at]).isdigit():
                data[at] = ord(draw(st.sampled_from("0123456789")))
        else:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end + 1
            if kind == "duplicate_line":
                data[start:start] = data[start:end]
            else:
                del data[start:end]
    return bytes(data)


def _fuzz_one(data, chunk):
    p = _core.TraceParser()
    p.begin("fuzz.traceg", allow_missing_ctas=True)
    try:
        for at in range(0, len(data), chunk):
            p.feed(data[at:at + chunk])
        p.finish()
    except ValueError as exc:
        assert re.match(r"fuzz\.traceg:\d+: \S", str(exc)), str(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=mutated_traces(), chunk=st.sampled_from([1, 5, 64, 4096, 1 << 20]))
@pytest.mark.timeout(120)
def test_fuzzed_traces_parse_or_fail_cleanly(data, chunk):
    _fuzz_one(data, chunk)


@pytest.mark.slow
@settings(max_examples=20_000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=mutated_traces(), chunk=st.sampled_from([1, 3, 64, 4096, 1 << 20]))
def test_fuzzed_traces_long_run(data, chunk):
    _fuzz_one(data, chunk)


@settings(max_examples=100, deadline=None)
@given(junk=st.binary(max_size=2000), chunk=st.sampled_from([1, 7, 4096]))
def test_random_bytes_parse_or_fail_cleanly(junk, chunk):
    _fuzz_one(junk, chunk)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_traces())
def test_fuzzed_traces_that_parse_are_valid(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("fuzz") / "kernel-1.traceg"
    path.write_bytes(data)
    try:
        trace = gpucachex.load_trace(path, allow_missing_ctas=True)
    except ValueError as exc:
        assert str(exc).startswith(f"{path}:")
        return
    trace.validate()


# ---- native format ------------------------------------------------------------------------------

def assert_same_trace(a: Trace, b: Trace):
    assert (a.name, a.source, a.opcodes, a.memcpys) == (b.name, b.source, b.opcodes, b.memcpys)
    assert len(a.kernels) == len(b.kernels)
    for x, y in zip(a.kernels, b.kernels):
        assert (x.name, x.grid, x.block, x.shmem_bytes, x.nregs, x.kernel_id, x.binary_version, x.attrs) == \
               (y.name, y.grid, y.block, y.shmem_bytes, y.nregs, y.kernel_id, y.binary_version, y.attrs)
        for col in [*INST_COLUMNS, "addresses"]:
            u, v = getattr(x, col), getattr(y, col)
            assert u.dtype == v.dtype and u.shape == v.shape and np.array_equal(u, v), col


@needs_traces
@pytest.mark.traces
@pytest.mark.parametrize("name", list(EXPECTED))
def test_native_round_trip_is_exact(tmp_path, name):
    trace = gpucachex.load_trace(SHARED / name)
    out = tmp_path / "t.native"  # any name: save writes exactly this path
    trace.save(out)
    back = gpucachex.load_trace(out)
    assert_same_trace(trace, back)
    back.validate()
    assert not back.kernels[0].cta.flags.writeable  # columns are views of the mapped file
    assert back.kernels[0].addresses.ctypes.data % 64 == 0
    with np.load(out) as z:  # still an ordinary .npz
        assert z["cta"].shape[0] == EXPECTED[name]["warp_insts"]
    out2 = tmp_path / "again.npz"
    back.save(out2)
    assert out2.read_bytes() == out.read_bytes()  # deterministic


def test_native_round_trip_of_handwritten_traces(tmp_path):
    text = header(grid=(2, 1, 1)) + tb(0, {0: [GOOD]}) + tb(1, {})
    trace = gpucachex.load_trace(write(tmp_path, text))
    trace.kernels.append(trace.kernels[0].replace(name="copy", attrs={"note": "x", "n": [1, 2]}))
    trace.memcpys.append((2, 0x10, 64))
    trace.save(tmp_path / "t.npz")
    assert_same_trace(trace, gpucachex.load_trace(tmp_path / "t.npz"))
    empty = Trace([], [], name="empty")
    empty.save(tmp_path / "e.npz")
    assert_same_trace(empty, gpucachex.load_trace(tmp_path / "e.npz"))


def test_save_makes_missing_folders_and_names_what_blocks_it(tmp_path):
    trace = gpucachex.load_trace(write(tmp_path, header() + tb(0, {0: [GOOD]})))
    deep = tmp_path / "a" / "b" / "t.npz"
    trace.save(deep)
    assert_same_trace(trace, gpucachex.load_trace(deep))
    with pytest.raises(IsADirectoryError, match="is a directory"):
        trace.save(tmp_path / "a")
    (tmp_path / "plain").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"plain is a file, not a folder"):
        trace.save(tmp_path / "plain" / "sub" / "t.npz")
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["t.npz"]  # no temporary left


def _saved(tmp_path):
    path = tmp_path / "t.npz"
    gpucachex.load_trace(write(tmp_path, header(grid=(2, 1, 1)) + tb(0, {0: [GOOD, GOOD]}) + tb(1, {1: [GOOD]}))).save(path)
    return path


def test_native_corrupt_and_future_files_are_clear_errors(tmp_path):
    path = _saved(tmp_path)
    data = path.read_bytes()
    for cut in (0, 10, len(data) // 3, len(data) // 2, len(data) - 30):
        bad = tmp_path / f"cut{cut}.npz"
        bad.write_bytes(data[:cut] if cut else b"PK\x03\x04")
        with pytest.raises(ValueError, match=re.escape(str(bad)) + ": corrupt native trace file"):
            gpucachex.load_trace(bad)
    np.savez(tmp_path / "other.npz", a=np.arange(3))
    with pytest.raises(ValueError, match="corrupt native trace file .no member meta.npy"):
        gpucachex.load_trace(tmp_path / "other.npz")
    future = _with_meta(path, tmp_path / "future.npz", lambda meta: meta.update(version=99))
    with pytest.raises(ValueError, match="native trace format version 99 is newer than this gpucachex reads"):
        gpucachex.load_trace(future)


def _with_meta(path, out, change):
    """Copy native file `path` to `out` with its meta changed in place by `change(meta)`."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            blob = src.read(info)
            if info.filename == "meta.npy":
                meta = json.loads(bytes(np.load(io.BytesIO(blob))).decode())
                change(meta)
                buf = io.BytesIO()
                np.save(buf, np.frombuffer(json.dumps(meta).encode(), np.uint8))
                blob = buf.getvalue()
            dst.writestr(info.filename, blob)
    return out


def typed(value):
    """`value` with the type of every part spelled out, so == also compares types (1 == 1.0 == True,
    (1,) != [1] only through this)."""
    if isinstance(value, dict):
        return "dict", {typed(k): typed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [typed(v) for v in value]
    return type(value).__name__, value


def test_native_attrs_round_trip_with_their_types(tmp_path):
    attrs = {"pair": (1, 2), "empty": (), "nested": [(1, [2, (3.5, None)]), {"t": ("a", True)}], "list": [1, 2],
             "float": 0.1, "inf": float("inf"), "big": 1 << 70, "flag": False, "none": None, "text": "x",
             "ranges": {"d_A": (0x80000000, 4096)}}
    trace = gpucachex.load_trace(_saved(tmp_path))
    trace.kernels[0] = trace.kernels[0].replace(attrs=attrs)
    trace.kernels[1:] = [trace.kernels[0].replace(attrs={"n": np.int64(7), "x": np.float32(0.5)})]
    trace.save(tmp_path / "t.npz")
    back = gpucachex.load_trace(tmp_path / "t.npz")
    assert typed(back.kernels[0].attrs) == typed(attrs)
    assert typed(back.kernels[1].attrs) == typed({"n": 7, "x": 0.5})  # numpy numbers come back as Python's


@pytest.mark.parametrize("attrs, message", [
    ({1: "x"}, r"attrs has the key 1 \(int\); saved attrs take string keys"),
    ({"a": {"b": {(1, 2): 3}}}, r"attrs\['a'\]\['b'\] has the key \(1, 2\) \(tuple\)"),
    ({"s": [0, {1, 2}]}, r"attrs\['s'\]\[1\] is of type set, which the native format cannot save"),
    ({"o": object()}, r"attrs\['o'\] is of type object"),
    ({"p": Path("x")}, r"attrs\['p'\] is of type (Posix|Windows)Path"),
    ({"a": np.arange(3)}, r"attrs\['a'\] is of type ndarray"),
    ({"t": {"__tuple__": [1]}}, r"attrs\['t'\] has the key '__tuple__', which the native format keeps for tuples"),
])
def test_native_attrs_that_would_come_back_different_are_refused(tmp_path, attrs, message):
    trace = gpucachex.load_trace(_saved(tmp_path))
    trace.kernels[0] = trace.kernels[0].replace(attrs=attrs)
    with pytest.raises(ValueError, match=r"cannot save trace: kernel 1 '_Z3fooPf': " + message):
        trace.save(tmp_path / "bad.npz")
    assert not (tmp_path / "bad.npz").exists()


def test_native_attrs_that_contain_themselves_are_refused(tmp_path):
    trace = gpucachex.load_trace(_saved(tmp_path))
    loop: dict = {}
    loop["self"] = loop
    trace.kernels[0] = trace.kernels[0].replace(attrs=loop)
    with pytest.raises(ValueError, match="cannot save trace: kernel 1 '_Z3fooPf': attrs nest too deeply or contain "
                                         "themselves"):
        trace.save(tmp_path / "bad.npz")


@pytest.mark.parametrize("name", workloads.names())
def test_every_kernel_model_reloads_with_its_attrs_and_their_types(tmp_path, name):
    """Models keep array and shared ranges as tuples: a native file must give back tuples."""
    trace = workloads.make(name, "tiny")
    trace.save(tmp_path / "t.npz")
    back = gpucachex.load_trace(tmp_path / "t.npz")
    assert len(back.kernels) == len(trace.kernels)
    for a, b in zip(trace.kernels, back.kernels):
        assert typed(b.attrs) == typed(a.attrs), a.name


def test_version_1_native_files_load_their_attrs_as_saved(tmp_path):
    """Version 1 saved tuples as lists and knew no tags: its attrs load as the JSON they are."""
    def as_version_1(meta):
        meta["version"] = 1
        meta["kernels"][0]["attrs"] = {"pair": [1, 2], "__tuple__": [3]}
    old = _with_meta(_saved(tmp_path), tmp_path / "v1.npz", as_version_1)
    assert typed(gpucachex.load_trace(old).kernels[0].attrs) == typed({"pair": [1, 2], "__tuple__": [3]})
    bad = _with_meta(old, tmp_path / "v2.npz", lambda meta: meta.update(version=2))
    with pytest.raises(ValueError, match=re.escape(f"{bad}: corrupt native trace file (a tuple in the kernel attrs "
                                                   "is malformed)")):
        gpucachex.load_trace(bad)


@pytest.mark.parametrize("change, message", [
    # int() and str() would have loaded these as a different trace (a copy of 1 byte, opcode '7')
    (lambda meta: meta.update(memcpys=[[0, 16, 1.5]]), r"memcpy [0, 16, 1.5] is not three integers"),
    (lambda meta: meta.update(memcpys=[[0, "16", 4]]), r"memcpy [0, '16', 4] is not three integers"),
    (lambda meta: meta.update(memcpys=[[True, 16, 4]]), r"memcpy [True, 16, 4] is not three integers"),
    (lambda meta: meta.update(opcodes=[7]), "the opcode table is not a list of names"),
    (lambda meta: meta.update(version=True), "bad format version True"),
    # values Trace.validate refuses: loaded, they failed only at simulate, without naming the file
    (lambda meta: meta.update(memcpys=[[0, 2**64 - 1, 10]]), "bad memcpy (0, 0xffffffffffffffff, 10)"),
    (lambda meta: meta.update(memcpys=[[0, 2**64, 0]]), "bad memcpy (0, 0x10000000000000000, 0)"),
    (lambda meta: meta["kernels"][0].update(nregs=2**40), "kernel field nregs = 1099511627776 is out of range"),
    (lambda meta: meta["kernels"][0].update(shmem_bytes=2**32), "kernel field shmem_bytes = 4294967296 is out of"),
])
def test_a_changed_native_meta_is_refused(tmp_path, change, message):
    """The zip's CRC-32 catches damage, not a meta rewritten through zipfile (which computes a new
    one): the loader checks the meta's values as save wrote them."""
    bad = _with_meta(_saved(tmp_path), tmp_path / "bad.npz", change)
    with pytest.raises(ValueError, match=re.escape(f"{bad}: corrupt native trace file ({message}")):
        gpucachex.load_trace(bad)


def test_a_changed_byte_in_a_native_file_is_refused(tmp_path):
    """The columns are mapped, not parsed, so a damaged value would load as a valid, different trace
    (another address, PC or mask); each member's CRC-32 catches it, naming the member."""
    path = _saved(tmp_path)
    trace = gpucachex.load_trace(path)
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        infos = {info.filename: info for info in zf.infolist()}
    for member in ("addresses.npy", "pc.npy", "mask.npy"):
        info = infos[member]
        n_name, n_extra = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
        last = info.header_offset + 30 + n_name + n_extra + info.file_size - 1   # the member's last data byte
        damaged = bytearray(data)
        damaged[last] ^= 0x10
        bad = tmp_path / f"bad_{member}.npz"
        bad.write_bytes(bytes(damaged))
        with pytest.raises(ValueError, match=re.escape(f"{bad}: corrupt native trace file (member {member} "
                                                       "fails its CRC-32 check")):
            gpucachex.load_trace(bad)
    assert gpucachex.load_trace(path).summary() == trace.summary()


def test_a_damaged_zip_version_field_is_a_clear_error(tmp_path, capsys):
    """zipfile raises NotImplementedError for a 'version needed to extract' it does not support; a
    damaged one is a corrupt file like any other, named in a ValueError and exit status 2."""
    path = _saved(tmp_path)
    data = bytearray(path.read_bytes())
    data[data.index(b"PK\x01\x02") + 6] = 0xFF  # the first central-directory entry's version needed
    bad = tmp_path / "version.npz"
    bad.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=re.escape(f"{bad}: corrupt native trace file (NotImplementedError: zip file "
                                                   "version")):
        gpucachex.load_trace(bad)
    assert cli_main(["trace", "info", str(bad)]) == 2
    assert f"gpucachex trace info: error: {bad}: corrupt native trace file" in capsys.readouterr().err


def test_native_rows_are_checked(tmp_path, monkeypatch):
    trace = gpucachex.load_trace(_saved(tmp_path))
    k = trace.kernels[0]
    bad = {"cta": np.array([0, 0, 5], np.uint32), "addr_offset": np.array([0, 4, 9], np.uint64),
           "warp": np.array([1, 0, 0], np.uint16), "op_class": np.array([0, 0, 77], np.uint8),
           "opcode": np.array([0, 0, 9], np.uint16)}
    messages = {"cta": "CTA id 5 is outside the grid of 2 CTAs", "addr_offset": "addr_offset of instruction 2 is 9",
                "warp": "instruction 1 breaks the \\(CTA, warp\\) order", "op_class": "unknown op_class 77",
                "opcode": "opcode index 9 outside the table of 1 opcodes"}
    monkeypatch.setattr(Trace, "validate", lambda self: self)  # let save write what load must refuse
    for col, value in bad.items():
        t = Trace([k.replace(**{col: value})], trace.opcodes)
        path = tmp_path / f"{col}.npz"
        t.save(path)
        with pytest.raises(ValueError, match=re.escape(str(path)) + r": invalid native trace: kernel 1 .*"
                           + messages[col]):
            gpucachex.load_trace(path)


@st.composite
def corrupted_columns(draw):
    n = draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    cta = np.sort(rng.integers(0, 3, n)).astype(np.uint32)
    warp = np.zeros(n, np.uint16)
    for c in np.unique(cta):
        rows = np.flatnonzero(cta == c)
        warp[rows] = np.sort(rng.integers(0, 2, rows.size))
    mask = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    width = rng.choice([0, 4], n).astype(np.uint8)
    lanes = np.where(width > 0, np.bitwise_count(mask) if hasattr(np, "bitwise_count") else
                     [bin(int(m)).count("1") for m in mask], 0)
    cols = dict(cta=cta, warp=warp, opcode=rng.integers(0, 3, n).astype(np.uint16),
                op_class=rng.integers(0, len(OpClass.NAMES), n).astype(np.uint8),
                space=rng.integers(0, len(Space.NAMES), n).astype(np.uint8), mask=mask, width=width,
                addr_offset=np.r_[0, np.cumsum(lanes)[:-1]].astype(np.uint64))
    n_addresses = int(lanes.sum())
    if draw(st.booleans()):
        name = draw(st.sampled_from(sorted(cols)))
        i = draw(st.integers(0, n - 1))
        col = cols[name]
        col[i] = draw(st.integers(0, min(int(np.iinfo(col.dtype).max), 2**40)))
    if draw(st.booleans()):
        n_addresses += draw(st.integers(-2, 2))
    return cols, max(n_addresses, 0)


@settings(max_examples=300, deadline=None)
@given(case=corrupted_columns())
def test_c_row_check_agrees_with_kernel_validate(case):
    """The native loader's C check refuses exactly what Kernel.validate refuses."""
    cols, n_addresses = case
    n = cols["cta"].shape[0]
    k = gpucachex.trace.Kernel(
        name="k", grid=(3, 1, 1), block=(64, 1, 1), pc=np.zeros(n, np.uint32), flags=np.zeros(n, np.uint8),
        dst=np.full((n, MAX_DST), NO_REG, np.uint8), src=np.full((n, MAX_SRC), NO_REG, np.uint8),
        addresses=np.zeros(n_addresses, np.uint64), **cols)
    try:
        Trace([k], ["A", "B", "C"]).validate()
        valid = True
    except ValueError:
        valid = False
    try:
        _core.check_kernel(k.cta, k.warp, k.opcode, k.op_class, k.space, k.mask, k.width, k.addr_offset, n_addresses,
                           k.grid_ctas, k.warps_per_cta, 3, len(OpClass.NAMES), len(Space.NAMES))
        checked = True
    except ValueError:
        checked = False
    assert checked == valid


def test_check_kernel_rejects_wrong_buffers():
    z = np.zeros(2, np.uint32)
    args = [z, np.zeros(2, np.uint16), np.zeros(2, np.uint16), np.zeros(2, np.uint8), np.zeros(2, np.uint8), z,
            np.zeros(2, np.uint8), np.zeros(2, np.uint64)]
    with pytest.raises(TypeError, match="warp must have dtype uint16"):
        _core.check_kernel(z, z, *args[2:], 0, 1, 1, 1, 12, 6)
    with pytest.raises(ValueError, match="mask has 3 elements, expected 2"):
        _core.check_kernel(*args[:5], np.zeros(3, np.uint32), *args[6:], 0, 1, 1, 1, 12, 6)
    _core.check_kernel(*args, 0, 1, 1, 1, 12, 6)


def test_check_kernel_refuses_counts_it_cannot_hold():
    # The counts were masked: a grid of -1 CTAs (read as 2**64 - 1) let any CTA id pass, and
    # 2**64 + 1 CTAs or 2**32 + 6 memory spaces were read as 1 and 6.
    z = np.zeros(2, np.uint32)
    args = [z, np.zeros(2, np.uint16), np.zeros(2, np.uint16), np.zeros(2, np.uint8), np.zeros(2, np.uint8), z,
            np.zeros(2, np.uint8), np.zeros(2, np.uint64)]
    good = dict(n_addresses=0, grid_ctas=1, warps_per_cta=1, n_opcodes=1, n_op_classes=12, n_spaces=6)
    for name, bad, high in (("grid_ctas", -1, 2**64 - 1), ("grid_ctas", 2**64 + 1, 2**64 - 1),
                            ("n_addresses", -1, 2**64 - 1), ("n_spaces", 2**32 + 6, 2**32 - 1),
                            ("n_op_classes", -1, 2**32 - 1)):
        with pytest.raises(ValueError, match=f"{name} must be an integer from 0 to {high}, got {bad}"):
            _core.check_kernel(*args, **{**good, name: bad})
    for bad in (1.0, True, "1"):
        with pytest.raises(TypeError, match=f"warps_per_cta must be an integer, got {re.escape(repr(bad))}"):
            _core.check_kernel(*args, **{**good, "warps_per_cta": bad})
    _core.check_kernel(*args, **{**good, "grid_ctas": np.uint64(1), "n_spaces": np.int32(6)})


# ---- command line -------------------------------------------------------------------------------

@needs_traces
@pytest.mark.traces
def test_cli_trace_info_and_convert(tmp_path, capsys):
    src = SHARED / "bfs-rodinia-2.0-ft"
    assert cli_main(["trace", "info", str(src), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == gpucachex.load_trace(src).summary()
    assert cli_main(["trace", "info", str(src), "--kernels"]) == 0
    out = capsys.readouterr().out
    assert "16 kernels" in out and "thread_insts  1,280,630" in out and "_Z6KernelP4NodePiPbS2_S2_S1_i" in out
    native = tmp_path / "bfs.npz"
    assert cli_main(["trace", "convert", str(src), str(native)]) == 0
    assert "159,509 warp instructions" in capsys.readouterr().out
    assert cli_main(["trace", "info", str(native), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["addresses"] == 181_816


def test_cli_trace_errors_exit_2(tmp_path, capsys):
    bad = write(tmp_path, header() + tb(0, {0: ["0010 ffffffff 0 EXIT 0"]}))
    assert cli_main(["trace", "info", str(bad)]) == 2
    assert re.search(rf"gpucachex trace info: error: {re.escape(str(bad))}:\d+: expected the memory width",
                     capsys.readouterr().err)
    assert cli_main(["trace", "info", str(tmp_path / "none.traceg")]) == 2
    assert "no such trace file" in capsys.readouterr().err
    good = write(tmp_path, header() + tb(0, {0: [GOOD]}), "good.traceg")
    assert cli_main(["trace", "convert", str(good), str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert cli_main(["trace", "convert", str(good), str(good / "x.npz")]) == 2
    assert "good.traceg is a file, not a folder" in capsys.readouterr().err


def test_each_thread_has_its_own_local_memory(tmp_path):
    # NVBit gives every lane the same local address (the thread's own offset, 0xfff72c at the top of
    # its stack). Each thread gets its own word: a warp's LDL is one coalesced line, and eight warps
    # of two CTAs read eight lines. A generic load of the same local variable lands on the same words.
    ldl = ["0010 ffffffff 1 R2 LDL.LU 1 R1 4 1 0xfff72c 0", "0020 ffffffff 0 EXIT 0 0"]
    generic = [f"0010 ffffffff 1 R2 LD.E 1 R1 4 1 {LOCAL_BASE + 0xfff72c:#x} 0", "0020 ffffffff 0 EXIT 0 0"]
    text = windows_header().replace("-grid dim = (1,1,1)", "-grid dim = (2,1,1)").replace(
        "-block dim = (64,1,1)", "-block dim = (128,1,1)")
    assert "-grid dim = (2,1,1)" in text and "-block dim = (128,1,1)" in text
    for name, lines in (("ldl", ldl), ("generic", generic)):
        body = "".join(tb(c, {w: lines for w in range(4)}) for c in range(2))
        trace = gpucachex.load_trace(write(tmp_path, text + body, f"{name}.traceg"))
        k = trace.kernels[0]
        assert (k.space == Space.LOCAL).sum() == 8
        words = (k.addresses - np.uint64(traceio.LOCAL_SPREAD_BASE)) // np.uint64(4)
        assert np.array_equal(words, np.uint64(0xfff72c // 4) * np.uint64(256) + np.arange(256, dtype=np.uint64))
        r = gpucachex.simulate("gtx480", trace, energy=False)
        assert r["l1d_accesses"] == 8 and r["l1d_misses"] == 8 and r["l2_accesses"] >= 8
