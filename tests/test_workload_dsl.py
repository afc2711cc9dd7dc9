"""The SIMT tracing DSL: thread numbering, masks and divergence, loops, PCs, registers, memory
placement, and the vectorised row/address assembly checked against a per-lane reference."""
import re

import numpy as np
import pytest

from gpucachex.trace import NO_REG, OpClass, Space
from gpucachex.workloads.dsl import HEAP_BASE, N_PINNED, PC_STEP, Array, Program, Reg, popcount


def lanes_of(mask: int) -> list[int]:
    return [i for i in range(32) if mask >> i & 1]


def row_addresses(kern, r: int) -> np.ndarray:
    start = int(kern.addr_offset[r])
    return kern.addresses[start:start + int(popcount(kern.mask[r:r + 1])[0])]


def test_thread_numbering_and_padding_slots():
    p = Program("t")
    out = p.array("out", 1000, "i32")
    with p.kernel("k", grid=(2, 3), block=(8, 6)) as k:          # 48 threads: warps of 32 and 16
        assert k.warps_per_cta == 2 and k.n_ctas == 6
        tx, ty = k.threadIdx.x, k.threadIdx.y
        bx, by = k.blockIdx.x, k.blockIdx.y
        cta = bx + 2 * by
        k.store(out, cta * 48 + ty * 8 + tx)
    kern = p.trace().kernels[0]
    stores = kern.width > 0
    assert list(kern.mask[stores][:2]) == [0xFFFFFFFF, 0x0000FFFF]
    assert list(kern.cta[stores]) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    # x is fastest: the stored element of lane l of warp w in CTA c is c*48 + 32*w + l
    expect = np.concatenate([np.arange(c * 48 + 32 * w, c * 48 + min(32 * w + 32, 48))
                             for c in range(6) for w in range(2)])
    assert np.array_equal(kern.addresses, (HEAP_BASE + 4 * expect).astype(np.uint64))


def test_where_otherwise_emit_complementary_masks_only_where_non_empty():
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=64) as k:
        tid = k.threadIdx.x
        with k.where(tid < 40):                 # warp 0 all, warp 1 lanes 0-7
            k.load(a, tid)
        with k.otherwise():                     # warp 1 lanes 8-31 only
            k.store(a, tid)
    kern = p.trace().kernels[0]
    ld = kern.op_class == OpClass.LOAD
    st = kern.op_class == OpClass.STORE
    assert list(zip(kern.warp[ld], kern.mask[ld])) == [(0, 0xFFFFFFFF), (1, 0x000000FF)]
    assert list(zip(kern.warp[st], kern.mask[st])) == [(1, 0xFFFFFF00)]
    with pytest.raises(RuntimeError, match="otherwise\\(\\) must follow a where\\(\\) block"):
        with p.kernel("k2", grid=1, block=32) as k:
            with k.otherwise():
                pass


def _otherwise_after_exit(k, a, tid):
    with k.where(tid < 8):
        k.load(a, tid)
    k.exit_where(tid < 16)          # lanes 8-15 leave the kernel
    with k.otherwise():             # would have run over lanes 8-31, the exited ones included
        k.load(a, tid)


def _otherwise_first_in_an_iteration(k, a, tid):
    for i in k.loop(tid % 2 + 1):   # odd lanes make 2 trips, even lanes 1
        if i == 1:
            with k.otherwise():     # would have paired with the where of trip 0, even lanes included
                k.load(a, tid)
        with k.where(tid < 4):
            k.load(a, tid)


def _otherwise_after_a_loop(k, a, tid):
    with k.where(tid < 4):
        k.load(a, tid)
    for _ in k.loop(2):
        k.load(a, tid)
    with k.otherwise():
        k.load(a, tid)


@pytest.mark.parametrize("body", [_otherwise_after_exit, _otherwise_first_in_an_iteration, _otherwise_after_a_loop])
def test_otherwise_does_not_pair_with_a_where_the_active_mask_has_moved_past(body):
    p = Program("t")
    a = p.array("a", 64)
    with pytest.raises(RuntimeError, match="otherwise\\(\\) must follow a where\\(\\) block"):
        with p.kernel("k", grid=1, block=32) as k:
            body(k, a, k.threadIdx.x)
    # directly after its where, inside a loop body and after exit_where, otherwise() still works
    with p.kernel("k", grid=1, block=32) as k:
        tid = k.threadIdx.x
        k.exit_where(tid >= 24)
        for _ in k.loop(tid % 2 + 1):
            with k.where(tid < 4):
                k.load(a, tid)
            with k.otherwise():
                k.store(a, tid)
    kern = p.trace().kernels[0]
    assert list(kern.mask[kern.op_class == OpClass.LOAD]) == [0xF, 0xA]
    assert list(kern.mask[kern.op_class == OpClass.STORE]) == [0x00FFFFF0, 0x00AAAAA0]


def test_loop_with_per_thread_trip_counts():
    p = Program("t")
    a = p.array("a", 4096)
    with p.kernel("k", grid=1, block=64) as k:
        tid = k.threadIdx.x
        trips = np.where(tid < 32, tid % 4, 0)                   # warp 0: 0..3 iterations; warp 1: none
        trips[5] = 7
        for i in k.loop(trips):
            k.load(a, tid * 8 + i)
    kern = p.trace().kernels[0]
    ld = kern.op_class == OpClass.LOAD
    assert set(kern.warp[ld]) == {0}
    masks = [int(m) for m in kern.mask[ld]]
    assert len(masks) == 7
    for i, m in enumerate(masks):
        assert lanes_of(m) == [t for t in range(32) if (7 if t == 5 else t % 4) > i]
    # each iteration ends with the loop's compare and branch, under the iteration's mask
    bra = kern.op_class == OpClass.BRANCH
    assert [int(m) for m in kern.mask[bra]] == masks


def test_pcs_follow_call_sites_and_unrolling():
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=32) as k:
        for _ in k.loop(3):
            x = k.load(a, k.threadIdx.x); y = k.load(a, 0)            # noqa: E702 - two sites on one line
            k.alu(x, y)
        for j in k.unroll(2):
            k.load(a, j)
    kern = p.trace().kernels[0]
    loads = kern.pc[kern.op_class == OpClass.LOAD]
    assert len(loads) == 8
    body = loads[:6].reshape(3, 2)
    assert (body == body[0]).all() and body[0, 0] != body[0, 1]   # same PC every iteration
    assert len(set(loads[6:]) | set(body[0])) == 4                  # unrolled copies: their own PCs
    assert all(pc % PC_STEP == 0 for pc in kern.pc)


def test_registers_carry_dependencies():
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=32) as k:
        v = k.load(a, k.threadIdx.x)
        w = k.alu(v, op="FADD")
        k.store(a, k.threadIdx.x, w)
        acc = k.reg()
        assert int(acc) < N_PINNED and int(v) >= N_PINNED
        for _ in k.loop(2):
            k.alu(acc, w, op="FFMA", dst=acc)
    kern = p.trace().kernels[0]
    ld, add, st = np.flatnonzero(kern.op_class == OpClass.LOAD)[0], 1, 2
    assert kern.dst[ld, 0] != NO_REG and kern.dst[ld, 1] == NO_REG
    assert kern.dst[ld, 0] in kern.src[add]
    assert kern.dst[add, 0] in kern.src[st]
    ffma = kern.opcode == p.opcodes.index("FFMA")
    assert (kern.dst[ffma, 0] == int(acc)).all() and (kern.src[ffma, 0] == int(acc)).all()


@pytest.mark.parametrize("use, error, message", [
    # a Reg names a register: the sum of two is a plain int, and the store would not wait for either load
    (lambda k, a, v, w, i: k.store(a, i, v + w), TypeError, r"STG\.E value or deps at .*: \d+ \(int\) is not a register"),
    (lambda k, a, v, w, i: k.alu(v, 2.0, op="FMUL"), TypeError, r"FMUL operand at .*: 2\.0 \(float\) is not a register"),
    (lambda k, a, v, w, i: k.store(a, i, i), TypeError, r"STG\.E value or deps at .*: ndarray of shape \(32,\)"),
    (lambda k, a, v, w, i: k.load(a, i, deps=[v, 3]), TypeError, r"LDG\.E deps at .*: 3 \(int\) is not a register"),
    (lambda k, a, v, w, i: k.atomic(a, i, [v, w + 1]), TypeError, r"RED\.E\.ADD value or deps at .*is not a register"),
    (lambda k, a, v, w, i: k.alu(v, op="FADD", dst=7.9), TypeError, r"FADD dst at .*: 7\.9 \(float\) is not a register"),
    (lambda k, a, v, w, i: k.load(a, i, dst=3), TypeError, r"LDG\.E dst at .*: 3 \(int\) is not a register"),
    (lambda k, a, v, w, i: k.const(dst=True), TypeError, r"LDC dst at .*: True \(bool\) is not a register"),
    # it used to fail only when the kernel ended, as numpy's overflow of a uint8 column
    (lambda k, a, v, w, i: k.sfu(v, dst=Reg(300)), ValueError, r"MUFU\.EX2 dst at .*: register 300 outside R0 to R253"),
])
def test_operands_and_destinations_must_be_registers(use, error, message):
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=32) as k:
        i = k.threadIdx.x
        v, w = k.load(a, i), k.load(a, i + 32)
        with pytest.raises(error, match=r"kernel 'k': " + message):
            use(k, a, v, w, i)
        k.store(a, i, [v, None, (w,)][0], deps=(w, None))     # Regs, sequences of them and None are operands

def test_memory_placement():
    p = Program("t")
    a = p.array("a", 10, "f32")
    b = p.array("b", 3, "f64", copy_in=False)
    assert a.base == HEAP_BASE and b.base == HEAP_BASE + 256      # 256-B aligned, allocation order
    assert p.memcpys == [(0, a.base, 40)]
    with p.kernel("k", grid=2, block=64) as k:
        s1 = k.shared("s1", 3, "u8")
        s2 = k.shared("s2", 4, "f32")
        assert (s1.base, s2.base) == (0, 4)
        loc = k.local("L", 5)
        k.store(s2, k.threadIdx.x % 4)
        k.load(loc, 2)
    kern = p.trace().kernels[0]
    assert kern.shmem_bytes == 128
    sts = np.flatnonzero(kern.space == Space.SHARED)
    assert set(np.concatenate([row_addresses(kern, r) for r in sts]).tolist()) == {4, 8, 12, 16}
    # local word 2 of global thread t sits at base + (2 * threads + t) * 4: a warp covers 128 B
    ldl = np.flatnonzero(kern.space == Space.LOCAL)
    base = kern.attrs["local"]["base"]
    for r in ldl:
        t0 = (int(kern.cta[r]) * 2 + int(kern.warp[r])) * 32
        expect = np.uint64(base) + np.uint64(4) * (2 * 128 + t0 + np.arange(32, dtype=np.uint64))
        assert np.array_equal(row_addresses(kern, r), expect)
    assert base % (1 << 20) == 0 and base >= b.base + 24


def test_out_of_bounds_index_is_an_error():
    p = Program("t")
    a = p.array("a", 31)
    with pytest.raises(IndexError, match="index 31 outside 'a' of 31 elements"):
        with p.kernel("k", grid=1, block=32) as k:
            k.load(a, k.threadIdx.x)
    p = Program("t")
    a = p.array("a", 31)
    with p.kernel("k", grid=1, block=32) as k:                    # inactive lanes are not checked
        with k.where(k.threadIdx.x < 31):
            k.load(a, k.threadIdx.x)



def test_offsets_and_wide_accesses_stay_inside_their_array():
    """An offset (a struct field) or a wide access can leave the array with every index inside it."""
    p = Program("t")
    a = p.array("a", 8)                                             # 32 bytes
    with p.kernel("k", grid=1, block=32) as k:
        s = k.shared("s", 8)
        with pytest.raises(IndexError, match=r"STG.E touches bytes 40 to 43 \(index \* 4 \+ offset, 4 bytes wide\), "
                                             r"outside 'a' of 32 bytes"):
            k.store(a, 0, offset=40)
        with pytest.raises(IndexError, match="LDS touches bytes -8 to -5 .* outside 's' of 32 bytes"):
            k.load(s, 0, offset=-8)                                 # would wrap to 0xffff...
        with pytest.raises(IndexError, match=r"LDG.E.64 touches bytes 28 to 35 \(index \* 4, 8 bytes wide\)"):
            k.load(a, 7, width=8)
        with pytest.raises(IndexError, match="touches bytes 32 to 35"):
            k.load(a, k.threadIdx.x % 8, offset=4)                  # lane 7
        with k.where(k.threadIdx.x < 7):                            # inactive lanes are not checked
            k.load(a, k.threadIdx.x, offset=4)
        k.load(a, 6, width=8)
        k.load(a, 0, offset=28)
        loc = k.local("l", 4)
        with pytest.raises(ValueError, match="no offset into local array 'l'"):
            k.load(loc, 0, offset=4)
    addrs = p.trace().kernels[0].addresses
    assert int(addrs.max()) + 4 <= a.base + a.nbytes


def test_indices_trip_counts_and_launch_shapes_must_be_integers():
    """C would index with, or compare against, the value: truncating it is not what the kernel does."""
    p = Program("t")
    a = p.array("a", 8)
    with p.kernel("k", grid=1, block=32) as k:
        with pytest.raises(TypeError, match="kernel 'k': LDG.E index must be an integer, got float 1.5"):
            k.load(a, 1.5)
        with pytest.raises(TypeError, match="LDG.E offset must be an integer, got float 2.5"):
            k.load(a, 0, offset=2.5)
        with pytest.raises(TypeError, match="kernel 'k': loop trip count must be an integer, got float 2.5"):
            list(k.loop(2.5))
        with pytest.raises(TypeError, match="per-thread loop trip counts must be integers, got dtype float64"):
            list(k.loop(np.full(32, 2.5)))
        with pytest.raises(TypeError, match="unroll count must be an integer"):
            list(k.unroll(2.0))
        k.load(a, np.int64(7))
        assert len(list(k.loop(np.int32(3)))) == 3
    for grid, block, message in ((2.0, 64, "kernel 'k': grid must be an int or a tuple of 1 to 3 ints, got 2.0"),
                                 (1, (64, 1.0), r"kernel 'k': block must be an int or a tuple .*, got \(64, 1.0\)"),
                                 (None, 64, "grid must be an int or a tuple of 1 to 3 ints, got None")):
        with pytest.raises(ValueError, match=message):
            Program("t").kernel("k", grid=grid, block=block)
    with pytest.raises(TypeError, match="kernel 'k': regs must be an integer, got float 3.5"):
        Program("t").kernel("k", grid=1, block=32, regs=3.5)
    with pytest.raises(TypeError, match="kernel 'k': dynamic_shared must be an integer, got str '64'"):
        Program("t").kernel("k", grid=1, block=32, dynamic_shared="64")


def test_sizes_of_kernel_arrays_and_register_groups_are_positive():
    # A size of 0 or less moved the allocation cursor backwards: the next shared array overlapped
    # the first, a local array got a negative word offset, pinned registers were handed out twice.
    p = Program("t")
    with p.kernel("k", grid=1, block=32) as k:
        for n in (0, -16):
            with pytest.raises(ValueError, match=f"kernel 'k': shared array 'S': element count must be at least 1, "
                                                 f"got {n}"):
                k.shared("S", n)
            with pytest.raises(ValueError, match=f"kernel 'k': local array 'L': element count must be at least 1, "
                                                 f"got {n}"):
                k.local("L", n)
            with pytest.raises(ValueError, match=f"kernel 'k': regs\\(\\) count must be at least 1, got {n}"):
                k.regs(n)
        a, b = k.shared("A", 16), k.shared("B", 16)
        assert b.base == a.base + 64


def test_gather_indices_are_checked_on_active_lanes():
    p = Program("t")
    data = np.arange(100) * 10
    with p.kernel("k", grid=1, block=32) as k:
        # numpy wrapped -1 to data[99]: lane 0 read 990
        with pytest.raises(IndexError, match="kernel 'k': gather index -1 outside data of 100 elements"):
            k.gather(data, k.threadIdx.x - 1)
        with pytest.raises(IndexError, match="kernel 'k': gather index 100 outside data of 100 elements"):
            k.gather(data, k.threadIdx.x + 69)
        with k.where(k.threadIdx.x > 0):                            # inactive lanes are not checked
            assert k.gather(data, k.threadIdx.x - 1)[:3].tolist() == [0, 0, 10]


@pytest.mark.parametrize("make, message", [
    (lambda p, k: Program("u").array("A", 10.9), "array 'A': element count must be an integer, got float 10.9"),
    (lambda p, k: Program("u").array("A", "10"), "array 'A': element count must be an integer, got str '10'"),
    (lambda p, k: k.load(p.arrays["a"], 0, width=4.7), "kernel 'k': load width must be an integer, got float 4.7"),
    (lambda p, k: k.store(p.arrays["a"], 0, width=8.0), "kernel 'k': store width must be an integer, got float 8.0"),
    (lambda p, k: k.atomic(p.arrays["a"], 0, width=4.0), "kernel 'k': atomic width must be an integer"),
    (lambda p, k: k.alu(op="FADD", count=2.9), "kernel 'k': FADD count must be an integer, got float 2.9"),
    (lambda p, k: k.sfu(op="MUFU.RCP", count=np.float64(2)), "kernel 'k': MUFU.RCP count must be an integer"),
    (lambda p, k: k.shared("S", 4.5), "kernel 'k': shared array 'S': element count must be an integer, got float"),
    (lambda p, k: k.local("L", 2.0), "kernel 'k': local array 'L': element count must be an integer, got float"),
    (lambda p, k: k.regs(2.0), r"kernel 'k': regs\(\) count must be an integer, got float 2.0"),
    (lambda p, k: p.copy_in(p.arrays["a"], 8.5), "copy_in 'a': bytes must be an integer, got float 8.5"),
])
def test_counts_sizes_and_widths_are_not_truncated(make, message):
    # int() made 10.9 elements 10, a 4.7-byte width 4 and count 2.9 two instructions
    p = Program("t")
    p.array("a", 64)
    with p.kernel("k", grid=1, block=32) as k:
        with pytest.raises(TypeError, match=message):
            make(p, k)


def test_a_copy_stays_inside_its_array():
    p = Program("t")
    b = p.array("b", 4, copy_in=False)                              # 16 bytes; the heap pads it to 256
    for nbytes in (17, 1 << 20, -8):
        with pytest.raises(ValueError, match=f"copy_in 'b': {nbytes} bytes, outside 0 to 16 \\(the array's size\\)"):
            p.copy_in(b, nbytes)
    p.copy_in(b, 8)
    p.copy_in(b)
    assert p.memcpys == [(0, b.base, 8), (0, b.base, 16)]


def test_an_array_past_the_64_bit_address_space_is_refused_when_allocated():
    p = Program("t")
    with pytest.raises(ValueError, match=r"array 'a': 4,611,686,018,427,387,904 elements of 4 bytes at 0x80000000 run "
                                         r"past the 64-bit address space"):
        p.array("a", 1 << 62)
    assert "a" not in p.arrays and not p.memcpys
    big = p.array("big", (1 << 62) - (0x8000_0000 >> 2))          # up to the last byte
    assert big.base + big.nbytes == 1 << 64


def test_accesses_are_aligned_to_their_width():
    # A GPU faults on a float4 at a 4-byte-aligned address; lanes of the accepted trace straddled
    # 128-B lines, which the coalescer does not expect.
    p = Program("t")
    a = p.array("a", 4096)
    with p.kernel("k", grid=1, block=32) as k:
        s = k.shared("s", 64)
        with pytest.raises(ValueError, match=r"kernel 'k': LDG.E.128 at byte 12 of 'a' \(index \* 4\) is not aligned "
                                             "to its 16-byte width"):
            k.load(a, 4 * k.threadIdx.x + 3, width=16)
        with pytest.raises(ValueError, match=r"STS.64 at byte 4 of 's' \(index \* 4\) is not aligned to its 8-byte"):
            k.store(s, 2 * (k.threadIdx.x % 16) + 1, width=8)
        with pytest.raises(ValueError, match=r"LDG.E at byte 2 of 'a' \(index \* 4 \+ offset\) is not aligned"):
            k.load(a, 0, offset=2)
        with k.where(k.threadIdx.x == 0):                           # inactive lanes are not checked
            k.load(a, 4 * k.threadIdx.x + 3 * (k.threadIdx.x > 0), width=16)
        k.load(a, 4 * k.threadIdx.x, width=16)
        k.store(s, 2 * k.threadIdx.x, width=8)
        k.load(a, 1, offset=4)
    assert np.all(p.trace().kernels[0].addresses % 4 == 0)


def test_an_array_with_an_unknown_space_is_named_in_the_error():
    # Building the message indexed Space.NAMES with the bad space and raised IndexError instead.
    p = Program("t")
    bad = Array("X", 9, 0, 16, 4)
    assert repr(bad) == "Array('X', space 9, base=0x0, n=16, elem=4)"
    with p.kernel("k", grid=1, block=32) as k:
        with pytest.raises(ValueError, match=r"kernel 'k': no load for array 'X' in space 9 \(the DSL addresses "
                                             "global, shared and local arrays\\)"):
            k.load(bad, 0)
        with pytest.raises(ValueError, match="kernel 'k': no atomics on space 9 memory \\(array 'X'\\)"):
            k.atomic(bad, 0)
        with pytest.raises(TypeError, match="kernel 'k': store: expected an Array .* got str"):
            k.store("X", 0)


@pytest.mark.parametrize("op, cls, use", [("LDG.E", "load", "k.load"), ("LDS", "load", "k.load"),
                                          ("LDC", "load", "k.load/k.const"), ("STG.E", "store", "k.store"),
                                          ("ATOM.E.ADD", "atomic", "k.atomic"), ("RED.E.ADD", "atomic", "k.atomic"),
                                          ("EXIT", "exit", "k.exit_where"), ("BAR.SYNC", "barrier", "k.sync")])
def test_arithmetic_calls_refuse_memory_exit_and_barrier_opcodes(op, cls, use):
    # k.alu(op="LDG.E") put a load with no address into the trace, k.alu(op="EXIT") an EXIT that
    # retired no thread, k.alu(op="BAR.SYNC") a barrier the DSL's model knew nothing of.
    p = Program("t")
    with p.kernel("k", grid=1, block=32) as k:
        with pytest.raises(ValueError, match=f"kernel 'k': '{op}' is a {cls} instruction, not arithmetic "
                                             f"\\(use {use}"):
            k.alu(op=op)
        k.alu(op="ISETP.GE.AND")
        k.alu(op="HMMA.1688")                                        # tensor work is arithmetic too


def test_an_array_of_another_program_is_refused():
    # Both programs' heaps start at the same address: the other program's array would silently
    # read this program's first array.
    other = Program("other")
    foreign = other.array("a", 64)
    p = Program("t")
    p.array("mine", 64)
    with pytest.raises(ValueError, match="global array 'a' was not allocated by program 't'"):
        with p.kernel("k", grid=1, block=32) as k:
            k.load(foreign, k.threadIdx.x)
    p = Program("t")
    own = p.array("a", 64)                                          # the same name, its own array
    with pytest.raises(ValueError, match="was not allocated by program 't'"):
        with p.kernel("k", grid=1, block=32) as k:
            k.store(foreign, k.threadIdx.x, 1)
    with p.kernel("k2", grid=1, block=32) as k:
        k.load(own, k.threadIdx.x)


@pytest.mark.parametrize("make, message", [
    (lambda p: p.kernel("k", grid=0, block=32), "grid dimensions must be at least 1"),
    (lambda p: p.kernel("k", grid=1, block=(32, 64)), "2048 threads per CTA"),
    (lambda p: p.kernel("k", grid=1, block=2048), r"block dimensions \(2048, 1, 1\) exceed CUDA's limits"),
    (lambda p: p.kernel("k", grid=1, block=(1, 1, 65)), r"block dimensions \(1, 1, 65\) exceed"),
    (lambda p: p.kernel("k", grid=(1, 65536), block=32), r"grid dimensions \(1, 65536, 1\) exceed"),
    (lambda p: p.kernel("k", grid=2**31, block=32), "exceed CUDA's limits"),
    (lambda p: p.kernel("k", grid=1, block=32, regs=256), "regs must be between 0 and 255, got 256"),
    (lambda p: p.kernel("k", grid=1, block=32, dynamic_shared=-5), "dynamic_shared must be at least 0 bytes"),
    (lambda p: p.array("x", 4, "f33"), "unknown element type 'f33'"),
    (lambda p: p.array("x", 0), "needs at least one element"),
])
def test_bad_arguments_name_the_problem(make, message):
    with pytest.raises(ValueError, match=message):
        make(Program("t"))


@pytest.mark.parametrize("use, message", [
    (lambda k, a, s, l, i: k.load(a, i, width=3), "load of 'a': access width must be 1, 2, 4, 8 or 16 bytes, got 3"),
    (lambda k, a, s, l, i: k.load(s, i % 8, bypass_l1=True), "load of 's': bypass_l1 applies to global memory only"),
    (lambda k, a, s, l, i: k.store(l, 0, width=8), "store of local array 'l': 8 bytes wide"),
    (lambda k, a, s, l, i: k.atomic(a, i, width=2), "atomic on 'a': atomics are 4 or 8 bytes wide, got 2"),
    (lambda k, a, s, l, i: k.sfu(op="FADD"), "SFU opcodes are MUFU.*, got 'FADD'"),
    (lambda k, a, s, l, i: k.fp64(op="FADD"), "double-precision opcodes start with D, got 'FADD'"),
    (lambda k, a, s, l, i: k.where(i % 2).__enter__(), "a mask condition must be boolean, got dtype int64"),
    (lambda k, a, s, l, i: k.where(np.ones(5, bool)).__enter__(), r"one entry per thread slot \(32\), got shape \(5,\)"),
    (lambda k, a, s, l, i: next(iter(k.loop(np.ones(3, int)))), r"per-thread trip counts .* got shape \(3,\)"),
    (lambda k, a, s, l, i: k.load(a, i * 1.0), "LDG.E index must be integer, got dtype float64"),
    (lambda k, a, s, l, i: k.load(a, i[:4]), r"LDG.E index must be a scalar .* got shape \(4,\)"),
    (lambda k, a, s, l, i: k.load("a", i), "load: expected an Array"),
    (lambda k, a, s, l, i: k.otherwise().__enter__(), r"otherwise\(\) must follow a where\(\) block"),
    (lambda k, a, s, l, i: k.shared("s", 4), "shared array 's' is already declared"),
    (lambda k, a, s, l, i: k.local("l", 4), "local array 'l' is already declared"),
    (lambda k, a, s, l, i: k.local("m", 4, "f64"), "local array 'm': 'f64' elements"),
    (lambda k, a, s, l, i: k.gather(np.arange(4), 1.5), "gather index must be an integer, got float 1.5"),
])
def test_errors_name_the_kernel_once(use, message):
    # A model launches many kernels, often in loops: an error has to say which one it is about.
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=32) as k:
        s, l, i = k.shared("s", 8), k.local("l", 2), k.threadIdx.x
        with pytest.raises((ValueError, TypeError, RuntimeError), match=r"^kernel 'k': (?!kernel)") as err:
            use(k, a, s, l, i)
        assert re.search(message, str(err.value)), str(err.value)
    with pytest.raises(RuntimeError, match=r"^kernel 'k2': exit_where\(\) is only supported at the top level"):
        with p.kernel("k2", grid=1, block=32) as k:
            with k.where(k.threadIdx.x < 3):
                k.exit_where(k.threadIdx.x < 1)


def test_exit_where_retires_threads():
    p = Program("t")
    a = p.array("a", 64)
    with p.kernel("k", grid=1, block=64) as k:
        k.exit_where(k.threadIdx.x >= 40)
        k.load(a, k.threadIdx.x)
        with pytest.raises(RuntimeError, match="only supported at the top level"):
            with k.where(k.threadIdx.x < 3):
                k.exit_where(k.threadIdx.x < 1)
    kern = p.trace().kernels[0]
    ex = kern.op_class == OpClass.EXIT
    # early EXIT of warp 1's lanes 8-31, then the final EXIT of everyone left
    assert sorted(zip(kern.warp[ex].tolist(), kern.mask[ex].tolist())) == [
        (0, 0xFFFFFFFF), (1, 0x000000FF), (1, 0xFFFFFF00)]


def _sync_in_half_a_cta(k):
    with k.where(k.threadIdx.x < 32):
        k.sync()


def _sync_in_alternate_lanes(k):
    with k.where(k.threadIdx.x % 2 == 0):
        k.sync()


def _sync_in_a_loop_whose_trips_differ_in_a_cta(k):
    for _ in k.loop(k.threadIdx.x // 32 + 1):   # warp 0: one barrier, warp 1: two
        k.sync()


@pytest.mark.parametrize("body", [_sync_in_half_a_cta, _sync_in_alternate_lanes,
                                  _sync_in_a_loop_whose_trips_differ_in_a_cta])
def test_a_barrier_some_threads_of_a_cta_skip_is_refused(body):
    # The timing model releases such a barrier when the threads that skipped it exit, so the trace
    # would simulate a kernel that hangs on a GPU.
    p = Program("t")
    with pytest.raises(RuntimeError, match=r"kernel 'k': __syncthreads\(\) at .*test_workload_dsl\.py:\d+ is "
                                           r"divergent: in CTA 0, 32 of its 64 threads reach it"):
        with p.kernel("k", grid=2, block=64) as k:
            body(k)


def test_a_barrier_every_live_thread_of_a_cta_reaches_is_accepted():
    p = Program("t")
    with p.kernel("k", grid=2, block=48) as k:        # padding slots never count
        k.sync()
        with k.where(k.blockIdx.x == 1):              # the same for the whole CTA
            k.sync()
        for _ in k.loop(k.blockIdx.x + 1):
            k.sync()
        k.exit_where(k.threadIdx.x >= 40)             # exited threads are not waited for
        with k.where(k.threadIdx.x < 40):
            k.sync()
    bar = p.trace().kernels[0].op_class == OpClass.BARRIER
    assert int(bar.sum()) == 2 * 2 + 2 + (2 + 4) + 2 * 2

def reference_addresses(kern, per_op_addr):
    """Rebuild the address array lane by lane from each op's full per-slot addresses."""
    out = []
    for r in range(kern.n_insts):
        if kern.width[r] == 0:
            continue
        key = int(kern.pc[r])
        slot0 = (int(kern.cta[r]) * kern.warps_per_cta + int(kern.warp[r])) * 32
        out.extend(int(per_op_addr[key][slot0 + lane]) for lane in lanes_of(int(kern.mask[r])))
    return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("seed", range(4))
def test_address_assembly_matches_a_lane_by_lane_reference(seed):
    """Dense ops (full-slot rows, blocked transpose), sparse ops (scatter) and their merge."""
    rng = np.random.default_rng(seed)
    p = Program("t")
    n = 1 << 16
    arr = p.array("a", n)
    per_op = {}
    with p.kernel("k", grid=int(rng.integers(1, 40)), block=int(rng.choice([32, 48, 96, 256]))) as k:
        slots = k.n_slots

        def op(cond):
            idx = rng.integers(0, n, size=slots)
            with k.where(cond):
                k.load(arr, idx)
            # the op's PC is known only after it is recorded: the last site registered
            per_op[max(k._sites.values()) * PC_STEP] = HEAP_BASE + 4 * idx

        for _ in k.unroll(12):                     # unrolled: one PC per op
            density = rng.choice([1.0, 0.9, 0.5, 0.1, 0.01])
            op(rng.random(slots) < density)
            k.alu(op="IADD3")
    kern = p.trace().kernels[0]
    assert np.array_equal(kern.addresses, reference_addresses(kern, per_op))


def test_popcount():
    m = np.array([0, 1, 0xFFFFFFFF, 0x80000001, 0x0F0F0F0F], dtype=np.uint32)
    assert list(popcount(m)) == [0, 1, 32, 2, 16]


def test_shared_index_arrays_are_read_only():
    p = Program("t")
    with p.kernel("k", grid=2, block=32) as k:
        tx = k.threadIdx.x
        with pytest.raises(ValueError, match="read-only"):
            tx += 1
        with pytest.raises(ValueError, match="read-only"):
            k.active[0] = False
        assert (k.threadIdx.x == np.tile(np.arange(32), 2)).all()


def test_a_trace_too_big_for_memory_is_refused_before_the_os_kills_it(monkeypatch):
    """A kernel whose thread slots alone exceed the machine's memory is refused at launch; a program
    whose kernels grow past half of it (a long time-step loop) stops at the kernel that crosses it."""
    from gpucachex.workloads import dsl

    monkeypatch.setattr(dsl, "memory_bytes", lambda: 1 << 20)   # a machine with 1 MiB
    p = Program("big")
    with pytest.raises(MemoryError, match=r"kernel 'k': 16,384 threads \(grid \(64, 1, 1\), block \(256, 1, 1\)\) "
                                          r"need about 0\.0 GiB to trace, more than this machine's 0\.0 GiB"):
        p.kernel("k", grid=64, block=256)
    assert p._open is None                                     # nothing half-launched
    x = p.array("x", 1 << 14)
    for step in range(100):
        try:
            with p.kernel("step", grid=2, block=256) as k:     # 512 slots x 128 B fit
                k.store(x, k.global_tid, k.load(x, k.global_tid))
        except MemoryError as e:
            assert f"program 'big': its {step + 1} kernels so far take" in str(e)
            assert "over half this machine's" in str(e)
            break
    else:
        pytest.fail("a trace past half the memory was not refused")
    assert 0 < len(p.kernels) == step and p._open is None
    assert sum(k.addresses.nbytes for k in p.kernels) <= 1 << 19


def test_one_kernel_with_a_long_loop_is_refused_while_it_is_traced(monkeypatch):
    """The launch check sees the thread slots, the program check each finished kernel; a single kernel
    whose loop records more than the machine can build stops as it records."""
    from gpucachex.workloads import dsl

    monkeypatch.setattr(dsl, "memory_bytes", lambda: 4 << 20)   # a machine with 4 MiB
    p = Program("loopy")
    x = p.array("x", 1 << 14)
    iterations = []
    with pytest.raises(MemoryError, match=r"kernel 'k': its trace so far takes 0\.0 GiB and building it about 4 "
                                          r"times that, which with the program's earlier kernels \(0\.0 GiB\) is "
                                          r"more than this machine's 0\.0 GiB"):
        with p.kernel("k", grid=2, block=256) as k:             # 512 slots x 128 B fit
            for i in k.loop(10_000):
                iterations.append(i)
                k.load(x, k.global_tid + i)
    assert p._open is None and not p.kernels
    # an iteration is a load, the compare and the branch (3 x 16 rows of 35 B) and 512 addresses of 8 B:
    # 5,776 B, and 4 times 181.5 of them are 4 MiB
    assert len(iterations) == 182


def test_the_size_a_kernel_is_tracked_at_is_the_size_it_is_built_at():
    p = Program("sized")
    x = p.array("x", 1 << 12)
    with p.kernel("k", grid=3, block=200) as k:                 # 7 warps a CTA, the last one partial
        v = k.load(x, k.global_tid)
        with k.where(k.threadIdx.x < 40):                       # warps 0 and 1 of each CTA
            k.store(x, k.global_tid, k.alu(v))
        for i in k.loop(k.threadIdx.x % 3):
            k.load(x, k.global_tid + i)
    kernel = p.kernels[0]
    assert k._trace_bytes == kernel.addresses.nbytes + sum(c.nbytes for c in kernel.columns().values())
