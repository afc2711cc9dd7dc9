"""General matrix multiply C = alpha*A*B + beta*C, one thread per element of C (PolyBench GEMM).

Source: PolyBench/GPU (polybenchGpu and PolyBench-ACC CUDA), GEMM, kernel ``gemm_kernel``
(gemm.cu).

Index arithmetic: block (32, 8); grid (ceil(NI/32), ceil(NJ/8)); j = x index, i = y index;
if (i < NI && j < NJ): c[i*NJ + j] *= beta; for k < NK: c[i*NJ + j] += alpha * a[i*NK + k] *
b[k*NJ + j]. Per iteration a warp loads one a element (all 32 lanes share i: a broadcast), 32
consecutive b elements, and stores c (a, b may alias c, so the store stays in the loop; the
reload of c is forwarded from it). No shared-memory tiling: every warp of a CTA row streams the
same row of a, every CTA column the same columns of b.
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 96, ni: int | None = None, nj: int | None = None, nk: int | None = None):
    ni, nj, nk = (n if v is None else v for v in (ni, nj, nk))
    p = Program("gemm", source=MODEL.source)
    A = p.array("A_gpu", ni * nk)
    B = p.array("B_gpu", nk * nj)
    C = p.array("C_gpu", ni * nj)
    # The source sizes the grid's x extent from NI and y from NJ although x indexes j.
    with p.kernel("gemm_kernel", grid=(-(-ni // 32), -(-nj // 8)), block=(32, 8), regs=20) as k:
        j = k.blockIdx.x * 32 + k.threadIdx.x
        i = k.blockIdx.y * 8 + k.threadIdx.y
        k.alu(op="S2R", count=4)
        k.alu(op="IMAD", count=2)
        with k.where((i < ni) & (j < nj)):
            out = i * nj + j
            acc = k.load(C, out, dst=k.reg())
            k.alu(acc, op="FMUL", dst=acc)
            k.store(C, out, acc)
            for kk in k.loop(nk):
                a = k.load(A, i * nk + kk)
                b = k.load(B, kk * nj + j)
                t = k.alu(a, op="FMUL")
                k.alu(acc, t, b, op="FFMA", dst=acc)
                k.store(C, out, acc)
    return p.trace()


MODEL = ModelSpec(
    name="gemm",
    klass="polybench",
    description="PolyBench GEMM: one thread per C element, untiled k loop",
    source="PolyBench/GPU GEMM: gemm_kernel (gemm.cu)",
    sizes={"tiny": dict(n=32), "small": dict(n=96), "medium": dict(n=256), "large": dict(n=384)},
    build=build,
)
