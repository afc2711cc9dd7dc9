"""Multi-resolution analysis kernel (PolyBench doitgen): sum[r][q][p] = sum_s A[r][q][s] * C4[s][p].

Source: PolyBench/GPU (polybenchGpu and PolyBench-ACC CUDA), DOITGEN, kernels ``doitgen_kernel1``
and ``doitgen_kernel2`` (doitgen.cu).

Index arithmetic: block (32, 8); grid (ceil(NP/32), ceil(NR/8)) (the y extent uses NR although
threads index q, as in the source); for r in 0..NR-1 the host launches kernel1 then kernel2.
kernel1: p = x index, q = y index; if (p < NP && q < NQ): sum[r*NQ*NP + q*NP + p] = 0; for s < NP:
sum[...] = sum[...] + A[r*NQ*NP + q*NP + s] * C4[s*NP + p]. The reload of sum[...] is forwarded
from the previous store, but A and C4 may alias sum, so the store stays in the loop: per
iteration one warp-uniform A load (every lane has the same q), one coalesced C4 load and one
store. kernel2: A[r*NQ*NP + q*NP + p] = sum[...]. Every CTA re-reads all of C4 and the CTAs of a
grid row share A's rows: inter-CTA reuse (ATA-Cache's high-locality class).
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 32, nr: int | None = None, nq: int | None = None, np_: int | None = None):
    nr, nq, npp = (n if v is None else v for v in (nr, nq, np_))
    if min(nr, nq, npp) < 1:
        raise ValueError("doitgen: dimensions must be positive")
    p = Program("doitgen", source=MODEL.source)
    A = p.array("AGpu", nr * nq * npp)
    C4 = p.array("C4Gpu", npp * npp)
    S = p.array("sumGpu", nr * nq * npp)
    grid = (-(-npp // 32), -(-nr // 8))
    for r in range(nr):
        with p.kernel("doitgen_kernel1", grid=grid, block=(32, 8), regs=16) as k:
            pp = k.blockIdx.x * 32 + k.threadIdx.x
            q = k.blockIdx.y * 8 + k.threadIdx.y
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=3)
            with k.where((pp < npp) & (q < nq)):
                out = r * nq * npp + q * npp + pp
                acc = k.reg()
                k.alu(op="MOV", dst=acc)
                k.store(S, out, acc)
                for s in k.loop(npp):
                    a = k.load(A, r * nq * npp + q * npp + s)
                    c = k.load(C4, s * npp + pp)
                    k.alu(acc, a, c, op="FFMA", dst=acc)
                    k.store(S, out, acc)
        with p.kernel("doitgen_kernel2", grid=grid, block=(32, 8), regs=8) as k:
            pp = k.blockIdx.x * 32 + k.threadIdx.x
            q = k.blockIdx.y * 8 + k.threadIdx.y
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=3)
            with k.where((pp < npp) & (q < nq)):
                idx = r * nq * npp + q * npp + pp
                v = k.load(S, idx)
                k.store(A, idx, v)
    return p.trace()


MODEL = ModelSpec(
    name="doitgen",
    klass="regular-inter-CTA",
    description="PolyBench doitgen: per-slice matrix product, every CTA re-reads C4",
    source="PolyBench/GPU DOITGEN: doitgen_kernel1, doitgen_kernel2 (doitgen.cu)",
    sizes={"tiny": dict(n=12), "small": dict(n=32), "medium": dict(n=64), "large": dict(n=96)},
    build=build,
)
