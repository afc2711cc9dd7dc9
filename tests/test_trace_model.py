"""The Trace representation's own rules: validation errors name the problem, and totals are
computed from the columns."""
import re

import numpy as np
import pytest

from gpucachex import isa
from gpucachex.trace import MAX_DST, MAX_SRC, NO_REG, Flag, Kernel, OpClass, Space, Trace


def tiny_kernel(masks=(0xFFFFFFFF, 0x0000000F, 0xFFFFFFFF), widths=(4, 0, 4)):
    n = len(masks)
    mask = np.array(masks, dtype=np.uint32)
    width = np.array(widths, dtype=np.uint8)
    lanes = np.where(width > 0, [bin(m).count("1") for m in masks], 0)
    return Kernel(
        name="k", grid=(1, 1, 1), block=(32, 1, 1),
        cta=np.zeros(n, np.uint32), warp=np.zeros(n, np.uint16), pc=np.arange(n, dtype=np.uint32) * 16,
        opcode=np.zeros(n, np.uint16), op_class=np.full(n, OpClass.LOAD, np.uint8),
        space=np.full(n, Space.GLOBAL, np.uint8), flags=np.zeros(n, np.uint8), mask=mask, width=width,
        dst=np.full((n, MAX_DST), NO_REG, np.uint8), src=np.full((n, MAX_SRC), NO_REG, np.uint8),
        addr_offset=np.r_[0, np.cumsum(lanes)[:-1]].astype(np.uint64),
        addresses=np.arange(int(lanes.sum()), dtype=np.uint64) * np.uint64(4))


def test_summary_counts_lanes_and_memory_instructions():
    t = Trace([tiny_kernel()], ["LDG.E"]).validate()
    assert t.summary() == dict(ctas=1, warps=1, warp_insts=3, thread_insts=68, mem_insts=2, addresses=64)
    frame = t.kernels_frame()
    assert list(frame["warp_insts"]) == [3] and list(frame["thread_insts"]) == [68]


@pytest.mark.parametrize("change, message", [
    (dict(addr_offset=np.array([0, 32, 33], np.uint64)), "addr_offset of instruction 2 is 33, expected 32"),
    (dict(addresses=np.zeros(3, np.uint64)), "3 addresses for 64 active memory lanes"),
    (dict(warp=np.array([0, 1, 0], np.uint16)), "warp id 1 is outside a CTA of 1 warps"),
    (dict(cta=np.array([0, 0, 5], np.uint32)), "CTA id 5 is outside the grid of 1 CTAs"),
    (dict(pc=np.zeros(3, np.int64)), "column pc must have dtype uint32"),
    (dict(block=(64, 64, 1)), "4096 threads per CTA"),
    (dict(block=(4096, 1, 1)), r"block \(4096, 1, 1\): each dimension must be from 1 to 2,048"),
    (dict(grid=(1, 1)), r"grid must be three integers \(x, y, z\), got \(1, 1\)"),
    (dict(grid=(1, 1, 1, 1)), r"grid must be three integers"),
    (dict(grid=1), r"grid must be three integers \(x, y, z\), got 1"),
    (dict(block=("32", 1, 1)), r"block must be three integers"),
    (dict(block=(32.0, 1, 1)), r"block must be three integers"),
    (dict(grid=(True, 1, 1)), r"grid must be three integers"),
    (dict(grid=(0, 1, 1)), r"grid \(0, 1, 1\): each dimension must be from 1 to 2,147,483,647, 65,535, 65,535"),
    (dict(grid=(2**31, 1, 1)), r"each dimension must be from 1 to 2,147,483,647"),
    (dict(grid=(65536, 65535, 2)), r"has 8,589,803,520 CTAs, more than the 2\^32 a trace can number"),
    (dict(nregs=3.5), "nregs must be an integer, got float 3.5"),
    (dict(nregs=True), "nregs must be an integer, got bool True"),
    (dict(shmem_bytes="5"), "shmem_bytes must be an integer, got str '5'"),
    (dict(shmem_bytes=-1), "shmem_bytes must be from 0 to 4,294,967,295, got -1"),
    (dict(nregs=1 << 32), "nregs must be from 0 to 4,294,967,295, got 4294967296"),
    (dict(width=np.array([4, 0, 3], np.uint8)),
     r"instruction 2 \(PC 0x20\) has an access width of 3 bytes; a lane accesses 1, 2, 4, 8 or 16 bytes"),
    (dict(width=np.array([32, 0, 4], np.uint8)), r"instruction 0 \(PC 0x0\) has an access width of 32 bytes"),
    (dict(space=np.array([1, 0, 1], np.uint8)), r"instruction 1 \(PC 0x10\) of class 'load' has no memory space"),
    (dict(op_class=np.array([7, 7, 9], np.uint8), space=np.array([1, 1, 4], np.uint8)),
     r"instruction 2 \(PC 0x20\) of class 'atomic' writes const memory, which is read-only"),
    (dict(op_class=np.array([8, 7, 7], np.uint8), space=np.array([5, 1, 1], np.uint8)),
     r"instruction 0 \(PC 0x0\) of class 'store' writes tex memory, which is read-only"),
])
def test_validation_names_the_problem(change, message):
    k = tiny_kernel().replace(**change)
    with pytest.raises(ValueError, match=message):
        Trace([k], ["LDG.E"]).validate()


@pytest.mark.parametrize("opcode, bypass", [
    ("LDG.E", False), ("LDG.E.SYS", False), ("STG.E.SYS", False),  # .SYS alone: Volta's default scope
    ("LDG.E.CG", True), ("LDG.E.128.CV", True), ("STG.E.VOLATILE", True), ("LDL.CG", True),
    ("LDG.E.STRONG.GPU", True), ("LDG.E.64.STRONG.SYS", True), ("STG.E.STRONG.GPU", True),
    ("LDG.E.STRONG.SM", False), ("LDG.E.64.STRONG.SM", False), ("LDG.E.STRONG.CTA", False),
    ("STG.E.STRONG.CTA", False), ("LDS.STRONG.GPU", False),  # shared memory has no L1D to skip
])
def test_l1d_bypass_modifiers_and_strong_scopes(opcode, bypass):
    """Strong accesses skip the incoherent L1D only at GPU or system scope, where other SMs' writes
    must be seen; at SM or CTA scope the SM's own L1D serves them."""
    assert bool(isa.classify(opcode)[2] & Flag.BYPASS_L1) == bypass


def test_opcode_classification():
    assert isa.classify("LDG.E.128.CG") == (OpClass.LOAD, Space.GLOBAL, Flag.BYPASS_L1)
    assert isa.classify("LDG.E") == (OpClass.LOAD, Space.GLOBAL, 0)
    assert isa.classify("LDS.U.128") == (OpClass.LOAD, Space.SHARED, 0)
    assert isa.classify("ATOMS.ADD") == (OpClass.ATOMIC, Space.SHARED, 0)
    assert isa.classify("RED.E.ADD.F32.FTZ.RN.STRONG.GPU")[0] == OpClass.ATOMIC
    assert isa.classify("MUFU.RSQ")[0] == OpClass.SFU
    assert isa.classify("DFMA")[0] == OpClass.FP64
    assert isa.classify("BAR.SYNC")[0] == OpClass.BARRIER
    assert isa.classify("IMAD.MOV.U32")[0] == OpClass.ALU  # unknown opcodes are ALU
    isa.register_opcode("LDGX", "load", "global")
    try:
        assert isa.classify("LDGX.E")[:2] == (OpClass.LOAD, Space.GLOBAL)
    finally:
        del isa.OPCODE_TABLE["LDGX"]
    with pytest.raises(ValueError, match="unknown instruction class 'loads'"):
        isa.register_opcode("FOO", "loads")
    with pytest.raises(ValueError, match="base opcode must be a name without modifiers"):
        isa.register_opcode("LDG.E", "load", "global")
    with pytest.raises(ValueError, match="base opcode must be a name without modifiers, got 5"):
        isa.register_opcode(5, "load", "global")
    # A memory class without a space, or a space on another class, would be classified inconsistently.
    with pytest.raises(ValueError, match=r"LDGX: class 'load' accesses memory; name its space \(global, local"):
        isa.register_opcode("LDGX", "load")
    with pytest.raises(ValueError, match="only loads, stores and atomics access a memory space; class 'alu' has space "
                                         "'none', got 'global'"):
        isa.register_opcode("FOO", "alu", "global")
    assert "LDGX" not in isa.OPCODE_TABLE and "FOO" not in isa.OPCODE_TABLE


@pytest.mark.parametrize("change, message", [
    (dict(memcpys=[(0, 0x100)]), r"memcpy 0 must be \(kernel index, address, bytes\), three integers, got \(0, 256\)"),
    (dict(memcpys=[(0, 0x100, 8.0)]), "memcpy 0 must be"),
    (dict(memcpys=[(0, 0x100, 8), (2, 0x100, 8)]), r"bad memcpy 1 \(2, 0x100, 8\): the kernel index must be 0 to 1"),
    (dict(memcpys=[(0, -1, 8)]), r"bad memcpy 0 \(0, -0x1, 8\)"),
    (dict(memcpys=[(0, 2**64 - 4, 8)]), "within the 64-bit address space"),
    (dict(memcpys=[(0, 2**70, 8)]), "within the 64-bit address space"),
    (dict(memcpys=[(0, 2**64, 0)]), "within the 64-bit address space"),  # the core cannot hold the address
    (dict(opcodes=[7]), r"opcodes must be names \(strings\), got 7"),
    (dict(kernels=[None]), "kernel 1 must be a Kernel, got NoneType"),
])
def test_trace_level_validation_names_the_problem(change, message):
    t = Trace([tiny_kernel()], ["LDG.E"], memcpys=[(0, 0x1000, 64)], name="t").validate()
    for key, value in change.items():
        setattr(t, key, value)
    with pytest.raises(ValueError, match=message):
        t.validate()


def test_the_core_refuses_memcpys_it_cannot_hold():
    # simulate() validates first; the core's own check keeps 2**70 from being read as another address.
    from gpucachex import _core, presets
    from gpucachex.sim import _kernel_dicts

    t = Trace([tiny_kernel()], ["LDG.E"])
    for bad in ([(0, 2**70, 8)], [(0, -1, 8)], [(2**33, 0, 8)], [(0, 1.5, 8)]):
        with pytest.raises(ValueError, match=r"memcpy 0 must be \(kernel index, address, bytes\)"):
            _core.simulate(presets.get("gtx480").to_dict(), _kernel_dicts(t), bad, 0, False)


def test_the_core_refuses_launch_numbers_it_cannot_hold():
    # simulate() validates first; the core's own check keeps a 33-bit or negative grid, block, nregs
    # or shmem_bytes from being masked into another launch (2**32 + 1 CTAs run as 1, -1 as 2**32 - 1).
    from gpucachex import _core, presets
    from gpucachex.sim import _kernel_dicts

    config = presets.get("gtx480").to_dict()
    kernel = _kernel_dicts(Trace([tiny_kernel()], ["LDG.E"]))[0]
    for key, bad in (("grid", (2**32 + 1, 1, 1)), ("grid", (-1, 1, 1)), ("block", (1, 2**32 + 32, 1)),
                     ("grid", (1.0, 1, 1)), ("grid", [1, 1, 1])):
        message = rf"kernel 1: {key} must be a tuple of three integers from 0 to 2\*\*32 - 1, got {re.escape(repr(bad))}"
        with pytest.raises(ValueError, match=message):
            _core.simulate(config, [dict(kernel, **{key: bad})], [], 0, False)
    for key, bad in (("nregs", 2**32 + 8), ("shmem_bytes", -1), ("nregs", 8.0)):
        with pytest.raises(ValueError, match=rf"kernel 1: {key} must be an integer from 0 to 2\*\*32 - 1, got {bad}"):
            _core.simulate(config, [dict(kernel, **{key: bad})], [], 0, False)
    with pytest.raises(ValueError, match=r"kernel 1: missing grid \(a tuple of three integers\)"):
        _core.simulate(config, [{k: v for k, v in kernel.items() if k != "grid"}], [], 0, False)
    # numpy integers are integers
    numpy_launch = dict(kernel, grid=(np.uint32(1), np.int64(1), 1), nregs=np.uint16(kernel["nregs"]))
    assert (_core.simulate(config, [numpy_launch], [], 0, False)["cycles"]
            == _core.simulate(config, [kernel], [], 0, False)["cycles"])


def unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of `a` one byte into its memory: numpy flags it unaligned, and C may not read its items."""
    out = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, offset=1, count=a.size).reshape(a.shape)
    out[...] = a
    assert not out.flags.aligned and out.flags.c_contiguous
    return out


def test_unaligned_columns_are_copied_for_the_core_which_refuses_them():
    # The core reads columns through typed pointers; a misaligned read is undefined behaviour in C
    # (UBSan stops on it). Arrays rebuilt from a byte stream (a Trace a Dask worker receives) may be
    # misaligned: simulate copies them, and the core itself refuses them.
    from gpucachex import _core, presets, simulate
    from gpucachex.sim import _kernel_dicts

    k = tiny_kernel()
    shifted = Trace([k.replace(addresses=unaligned(k.addresses), mask=unaligned(k.mask))], ["LDG.E"])
    shifted.validate()
    assert simulate("gtx480", shifted).metrics == simulate("gtx480", Trace([k], ["LDG.E"])).metrics
    config = presets.get("gtx480").to_dict()
    kernel = _kernel_dicts(Trace([k], ["LDG.E"]))[0]
    with pytest.raises(ValueError, match=r"kernel 1: column mask is not aligned to its items"):
        _core.simulate(config, [dict(kernel, mask=unaligned(kernel["mask"]))], [], 0, False)
    with pytest.raises(ValueError, match=r"kernel 1: addresses: the array must be aligned to its 8-byte items"):
        _core.simulate(config, [dict(kernel, addresses=unaligned(kernel["addresses"]))], [], 0, False)


def test_memcpys_may_be_lists_and_numpy_integers():
    from gpucachex import presets, simulate

    cfg = presets.get("gtx480", **{"l2.prefill": True})
    runs = []
    for memcpy in ((0, 0x1000, 64), [0, 0x1000, 64], (np.int64(0), np.uint64(0x1000), np.int32(64))):
        runs.append(simulate(cfg, Trace([tiny_kernel()], ["LDG.E"], memcpys=[memcpy])).metrics)
    assert runs[0] == runs[1] == runs[2]
