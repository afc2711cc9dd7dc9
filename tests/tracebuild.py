"""A tiny hand-written-kernel builder for tests: each warp's program is a list of instructions given
explicitly (opcode, registers, addresses), so known-answer tests state exactly what runs. It shares
no code with the kernel-model DSL."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gpucachex import isa
from gpucachex.trace import MAX_DST, MAX_SRC, NO_REG, Kernel, Trace

FULL = 0xFFFFFFFF


@dataclass
class Inst:
    opcode: str
    dst: tuple[int, ...] = ()
    src: tuple[int, ...] = ()
    addrs: tuple[int, ...] = ()  # one per active lane, in lane order
    width: int = 0
    mask: int = FULL
    pc: int | None = None


def alu(dst=(), src=(), opcode="IADD3", **kw) -> Inst:
    return Inst(opcode, tuple(dst), tuple(src), **kw)


def ld(dst, addrs, width=4, opcode="LDG.E", mask=None, src=(), **kw) -> Inst:
    addrs = tuple(int(a) for a in addrs)
    if mask is None:
        mask = (1 << len(addrs)) - 1 if len(addrs) < 32 else FULL
    return Inst(opcode, (dst,), tuple(src), addrs, width, mask, **kw)


def st(addrs, width=4, opcode="STG.E", mask=None, src=(), **kw) -> Inst:
    addrs = tuple(int(a) for a in addrs)
    if mask is None:
        mask = (1 << len(addrs)) - 1 if len(addrs) < 32 else FULL
    return Inst(opcode, (), tuple(src), addrs, width, mask, **kw)


def lanes(base: int, stride: int = 4, n: int = 32) -> list[int]:
    return [base + stride * i for i in range(n)]


def chain(n: int) -> list[Inst]:
    """n dependent ALU instructions: n ALU latencies during which the warp does nothing else."""
    return [alu(dst=(1,))] + [alu(dst=(2 + i % 100,), src=(1 if i == 1 else 2 + (i - 1) % 100,)) for i in range(1, n)]


@dataclass
class KernelSpec:
    """programs[cta][warp] is a list of Inst."""
    programs: list[list[list[Inst]]]
    threads_per_cta: int = 0
    name: str = "k"
    nregs: int = 16
    shmem_bytes: int = 0
    grid: tuple[int, int, int] | None = None


def build(specs: list[KernelSpec], name: str = "test", memcpys=()) -> Trace:
    opcodes: list[str] = []
    kernels = []
    for spec in specs:
        rows, addresses = [], []
        for c, warps in enumerate(spec.programs):
            for w, program in enumerate(warps):
                for j, inst in enumerate(program):
                    if inst.opcode not in opcodes:
                        opcodes.append(inst.opcode)
                    n_lanes = bin(inst.mask).count("1")
                    if inst.width:
                        assert len(inst.addrs) == n_lanes, (inst, n_lanes)
                    rows.append((c, w, inst.pc if inst.pc is not None else 16 * j, opcodes.index(inst.opcode),
                                 inst.mask, inst.width, inst.dst, inst.src, len(addresses)))
                    if inst.width:
                        addresses.extend(inst.addrs)
        n = len(rows)
        dst = np.full((n, MAX_DST), NO_REG, np.uint8)
        src = np.full((n, MAX_SRC), NO_REG, np.uint8)
        for i, r in enumerate(rows):
            dst[i, :len(r[6])] = r[6]
            src[i, :len(r[7])] = r[7]
        threads = spec.threads_per_cta or 32 * max(len(w) for w in spec.programs)
        grid = spec.grid or (len(spec.programs), 1, 1)
        kernels.append(Kernel(
            name=spec.name, grid=grid, block=(threads, 1, 1),
            cta=np.array([r[0] for r in rows], np.uint32), warp=np.array([r[1] for r in rows], np.uint16),
            pc=np.array([r[2] for r in rows], np.uint32), opcode=np.array([r[3] for r in rows], np.uint16),
            op_class=np.zeros(n, np.uint8), space=np.zeros(n, np.uint8), flags=np.zeros(n, np.uint8),
            mask=np.array([r[4] for r in rows], np.uint32), width=np.array([r[5] for r in rows], np.uint8),
            dst=dst, src=src, addr_offset=np.array([r[8] for r in rows], np.uint64),
            addresses=np.array(addresses, dtype=np.uint64), shmem_bytes=spec.shmem_bytes, nregs=spec.nregs))
    cls, spc, flg = isa.classify_table(opcodes)
    for k in kernels:
        k.op_class, k.space, k.flags = cls[k.opcode], spc[k.opcode], flg[k.opcode]
    return Trace(kernels, opcodes, list(memcpys), name=name).validate()
