"""LIB: LIBOR market-model Monte Carlo, swaption portfolio and its sensitivities (Greeks).

Source: GPGPU-Sim ISPASS-2009 benchmarks, LIB (Mike Giles' LIBOR code), kernels
``Pathcalc_Portfolio_KernelGPU2`` (value) and ``Pathcalc_Portfolio_KernelGPU`` (value and
Greeks), with device functions path_calc, path_calc_b1, path_calc_b2, portfolio, portfolio_b
(libor.cu). main() launches KernelGPU2 then KernelGPU, each <<<GRID_SIZE=64, BLOCK_SIZE=64>>>.

Index arithmetic: tid = blockDim.x*blockIdx.x + threadIdx.x; for (path = tid; path < NPATH;
path += threadN). Each thread works on its own arrays, ``float L[NN], L2[L2_SIZE], z[NN]`` and
portfolio's ``B[NMAT], S[NMAT], B_b[NMAT], S_b[NMAT]``: dynamically indexed, so they live in
local memory (LDL/STL), interleaved word by word across threads. N, Nmat, Nopt, delta, lambda,
maturities and swaprates are __constant__ (LDC). Inner loop of path_calc:
``for n < Nmat: sqez = sqrt(delta)*z[n]; for i in n+1..N-1: v += con1*L[i]/(1+delta*L[i]);
L[i] *= __expf(con1*v + lam*(sqez - 0.5*con1))`` (path_calc_b1 also stores L2[i+(n+1)*N]);
path_calc_b2 walks L2 backwards. The only global accesses are the d_v[path] and d_Lb[path]
stores: every load is a re-reference of data the same thread (so the same CTA) wrote, the
intra-CTA locality LoSCache describes for LIB. Branches on swapval < 0 are uniform (all paths use
the same z = 0.3, L = 0.05); the model evaluates them numerically.
"""
import math

import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

MATURITIES = (4, 4, 4, 8, 8, 8, 20, 20, 20, 28, 28, 28, 40, 40, 40)   # for N - Nmat = 40
SWAPRATES = (.045, .05, .055, .045, .05, .055, .045, .05, .055, .045, .05, .055, .045, .05, .055)
DELTA = 0.25
LAMBDA = 0.2


def _swap_conditions(nn: int, nmat: int, maturities) -> list[bool]:
    """swapval < 0 for each option, from the path every thread computes (all identical)."""
    L = [0.05] * nn
    z = [0.3] * nn
    for n in range(nmat):
        sqez = math.sqrt(DELTA) * z[n]
        v = 0.0
        for i in range(n + 1, nn):
            con1 = DELTA * LAMBDA
            v += con1 * L[i] / (1.0 + DELTA * L[i])
            L[i] *= math.exp(con1 * v + LAMBDA * (sqez - 0.5 * con1))
    b, s, B, S = 1.0, 0.0, [], []
    for n in range(nmat, nn):
        b = b / (1.0 + DELTA * L[n])
        s = s + DELTA * b
        B.append(b)
        S.append(s)
    return [B[m - 1] + SWAPRATES[i] * S[m - 1] - 1.0 < 0 for i, m in enumerate(maturities)]


def build(npath: int = 2048, nn: int = 16, nmat: int = 8, block: int = 64, grid: int | None = None,
          greeks: bool = True):
    """`npath` Monte Carlo paths over a grid of `grid` CTAs (default npath/block) of `block`
    threads; NN forward rates, NMAT maturities (NN - NMAT <= NMAT, as in the source's 80/40)."""
    if not 0 < nn - nmat <= nmat:
        raise ValueError(f"lib: need 0 < nn - nmat <= nmat (the source uses 80 and 40), got {nn}, {nmat}")
    grid = -(-npath // block) if grid is None else grid
    span = nn - nmat
    maturities = [max(1, min(span, round(m * span / 40))) for m in MATURITIES]
    conds = _swap_conditions(nn, nmat, maturities)
    p = Program("lib", source=MODEL.source)
    d_v = p.array("d_v", npath, copy_in=False)
    d_Lb = p.array("d_Lb", npath, copy_in=False)
    threads = grid * block

    def path_loop(k):
        tid = k.blockIdx.x * block + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD", count=2)
        trips = np.maximum(0, -(-(npath - tid) // threads))
        return tid, trips

    def init(k, L, z):
        for i in k.loop(nn):
            k.store(z, i)
            k.store(L, i)

    def div(k, num, den):
        """IEEE division b/x: reciprocal plus Newton refinement."""
        r = k.sfu(den, op="MUFU.RCP")
        return k.alu(num, r, op="FFMA", count=3)

    def path_calc(k, L, z, L2=None):
        if L2 is not None:
            for i in k.loop(nn):
                v = k.load(L, i)
                k.store(L2, i, v)
        for n in k.loop(nmat):
            zn = k.load(z, n)
            sqez = k.alu(zn, op="FMUL", dst=k.reg())
            v = k.reg()
            k.alu(op="MOV", dst=v)
            for ii in k.loop(nn - n - 1):
                i = n + 1 + ii
                lam = k.const()
                con1 = k.alu(lam, op="FMUL")
                li = k.load(L, i)
                t1 = k.alu(con1, li, op="FMUL")
                t2 = k.alu(li, op="FFMA")
                rc = k.sfu(t2, op="MUFU.RCP")
                k.alu(v, t1, rc, op="FFMA", dst=v)
                e = k.alu(con1, v, sqez, lam, op="FFMA", count=2)
                e = k.alu(e, op="FMUL")
                vr = k.sfu(e, op="MUFU.EX2")
                ln = k.alu(li, vr, op="FMUL")
                k.store(L, i, ln)
                if L2 is not None:
                    k.store(L2, i + (n + 1) * nn, ln)

    def portfolio(k, L, B, S):
        b, s, v = k.reg(), k.reg(), k.reg()
        k.alu(op="MOV", dst=b)
        k.alu(op="MOV", dst=s)
        for m in k.loop(span):
            ln = k.load(L, nmat + m)
            d = k.alu(ln, op="FFMA")
            k.alu(div(k, b, d), op="MOV", dst=b)
            k.alu(s, b, op="FFMA", dst=s)
            k.store(B, m, b)
            k.store(S, m, s)
        k.alu(op="MOV", dst=v)
        for i in k.loop(len(maturities)):
            mat, sr = k.const(), k.const()
            m = maturities[i] - 1
            bm = k.load(B, m, deps=mat)
            sm = k.load(S, m, deps=mat)
            sw = k.alu(bm, sr, sm, op="FFMA")
            sw = k.alu(sw, op="FADD")
            k.alu(sw, op="FSETP.LT.AND")
            with k.where(conds[i]):
                k.alu(v, sw, op="FFMA", dst=v)
        k.alu(op="MOV", dst=b)
        for n in k.loop(nmat):
            ln = k.load(L, n)
            d = k.alu(ln, op="FFMA")
            k.alu(div(k, b, d), op="MOV", dst=b)
        k.alu(b, v, op="FMUL", dst=v)
        return v

    def portfolio_b(k, L, B, S, B_b, S_b):
        b, s, v = k.reg(), k.reg(), k.reg()
        k.alu(op="MOV", dst=b)
        k.alu(op="MOV", dst=s)
        for m in k.loop(span):
            ln = k.load(L, nmat + m)
            d = k.alu(ln, op="FFMA")
            rc = k.sfu(d, op="MUFU.RCP")
            k.alu(b, rc, op="FMUL", dst=b)
            k.alu(s, b, op="FFMA", dst=s)
            k.store(B, m, b)
            k.store(S, m, s)
        k.alu(op="MOV", dst=v)
        for m in k.loop(span):
            k.store(B_b, m)
            k.store(S_b, m)
        for i in k.loop(len(maturities)):
            mat, sr = k.const(), k.const()
            m = maturities[i] - 1
            bm = k.load(B, m, deps=mat)
            sm = k.load(S, m, deps=mat)
            sw = k.alu(bm, sr, sm, op="FFMA")
            sw = k.alu(sw, op="FADD")
            k.alu(sw, op="FSETP.LT.AND")
            with k.where(conds[i]):
                k.alu(v, sw, op="FFMA", dst=v)
                x = k.load(S_b, m, deps=mat)
                k.store(S_b, m, k.alu(x, sr, op="FFMA"), deps=mat)
                y = k.load(B_b, m, deps=mat)
                k.store(B_b, m, k.alu(y, op="FADD"), deps=mat)
        for mm in k.loop(span):
            m = span - 1 - mm
            n = m + nmat
            sb = k.load(S_b, m)
            bb = k.load(B_b, m)
            bb = k.alu(bb, sb, op="FFMA")
            k.store(B_b, m, bb)
            bm = k.load(B, m)
            ln = k.load(L, n)
            d = k.alu(ln, op="FFMA")
            rc = k.sfu(d, op="MUFU.RCP")
            lb = k.alu(bb, bm, rc, op="FMUL", count=2)
            k.store(L, n, lb)                          # L_b aliases L
            with k.where(m > 0):
                x = k.load(S_b, m - 1)
                k.store(S_b, m - 1, k.alu(x, sb, op="FADD"))
                y = k.load(B_b, m - 1)
                k.store(B_b, m - 1, k.alu(y, bb, rc, op="FFMA"))
        k.alu(op="MOV", dst=b)
        for n in k.loop(nmat):
            ln = k.load(L, n)
            d = k.alu(ln, op="FFMA")
            k.alu(div(k, b, d), op="MOV", dst=b)
        k.alu(b, v, op="FMUL", dst=v)
        for n in k.loop(nmat):
            ln = k.load(L, n)
            d = k.alu(ln, op="FFMA")
            q = div(k, v, d)
            k.store(L, n, k.alu(q, op="FMUL"))
        for n in k.loop(span):
            lb = k.load(L, nmat + n)
            k.store(L, nmat + n, k.alu(lb, b, op="FMUL"))
        return v

    def path_calc_b2(k, L_b, L2):
        for nn_ in k.loop(nmat):
            n = nmat - 1 - nn_
            v1 = k.reg()
            k.alu(op="MOV", dst=v1)
            for ii in k.loop(nn - 1 - n):
                i = nn - 1 - ii
                lam = k.const()
                l2a = k.load(L2, i + (n + 1) * nn)
                lb = k.load(L_b, i)
                t = k.alu(lam, l2a, op="FMUL")
                k.alu(v1, t, lb, op="FFMA", dst=v1)
                l2b = k.load(L2, i + n * nn)
                d = k.alu(l2b, op="FFMA")
                faci = k.alu(k.sfu(d, op="MUFU.RCP"), op="FMUL")
                ratio = k.alu(l2a, k.sfu(l2b, op="MUFU.RCP"), op="FMUL")
                w = k.alu(v1, lam, faci, op="FMUL", count=3)
                k.store(L_b, i, k.alu(lb, ratio, w, op="FFMA"))

    # Pathcalc_Portfolio_KernelGPU2: value only.
    with p.kernel("Pathcalc_Portfolio_KernelGPU2", grid=grid, block=block, regs=28) as k:
        tid, trips = path_loop(k)
        L, z = k.local("L", nn), k.local("z", nn)
        B, S = k.local("B", nmat), k.local("S", nmat)
        for it in k.loop(trips):
            path = tid + it * threads
            init(k, L, z)
            path_calc(k, L, z)
            v = portfolio(k, L, B, S)
            k.store(d_v, path, v)
    if greeks:
        with p.kernel("Pathcalc_Portfolio_KernelGPU", grid=grid, block=block, regs=32) as k:
            tid, trips = path_loop(k)
            L = k.local("L", nn)
            L2 = k.local("L2", nn * (nmat + 1))
            z = k.local("z", nn)
            B, S, B_b, S_b = (k.local(name, nmat) for name in ("B", "S", "B_b", "S_b"))
            for it in k.loop(trips):
                path = tid + it * threads
                init(k, L, z)
                path_calc(k, L, z, L2)
                v = portfolio_b(k, L, B, S, B_b, S_b)
                k.store(d_v, path, v)
                path_calc_b2(k, L, L2)
                lb = k.load(L, nn - 1)
                k.store(d_Lb, path, lb)
    return p.trace()


MODEL = ModelSpec(
    name="lib",
    klass="intra-CTA",
    description="LIB: LIBOR Monte Carlo; per-thread local arrays, reuse only within a thread",
    source="GPGPU-Sim ISPASS-2009 LIB: Pathcalc_Portfolio_KernelGPU2, Pathcalc_Portfolio_KernelGPU (libor.cu)",
    sizes={"tiny": dict(npath=256, nn=8, nmat=4), "small": dict(npath=2048, nn=16, nmat=8),
           "medium": dict(npath=1024, nn=80, nmat=40), "large": dict(npath=4096, nn=80, nmat=40)},
    build=build,
)
