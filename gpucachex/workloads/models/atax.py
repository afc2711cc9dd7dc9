"""Matrix transpose and vector multiply y = A^T (A x) (PolyBench ATAX).

Source: PolyBench/GPU (polybenchGpu and PolyBench-ACC CUDA), ATAX, kernels ``atax_kernel1`` and
``atax_kernel2`` (atax.cu).

Index arithmetic: block (DIM_THREAD_BLOCK_X, DIM_THREAD_BLOCK_Y) = (32, 8) but a one-dimensional
grid ceil(NX/32) and an index that ignores threadIdx.y: i = blockIdx.x*blockDim.x + threadIdx.x.
So the 8 warps of a CTA compute the same 32 elements, redundantly, as the benchmark does.
kernel1: if (i < NX): tmp[i] = 0; for j < NY: tmp[i] += A[i*NY + j] * x[j] (a row per lane).
kernel2: j = same index; if (j < NY): y[j] = 0; for i < NX: y[j] += A[i*NY + j] * tmp[i]
(coalesced). The eight copies of each access are intra-CTA reuse the real benchmark has too.
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 256, nx: int | None = None, ny: int | None = None):
    nx, ny = (n if v is None else v for v in (nx, ny))
    p = Program("atax", source=MODEL.source)
    A = p.array("A_gpu", nx * ny)
    x = p.array("x_gpu", ny)
    y = p.array("y_gpu", ny)
    tmp = p.array("tmp_gpu", nx)
    with p.kernel("atax_kernel1", grid=-(-nx // 32), block=(32, 8), regs=12) as k:
        i = k.blockIdx.x * 32 + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        with k.where(i < nx):
            acc = k.reg()
            k.alu(op="MOV", dst=acc)
            k.store(tmp, i, acc)
            for j in k.loop(ny):
                a = k.load(A, i * ny + j)
                b = k.load(x, j)
                k.alu(acc, a, b, op="FFMA", dst=acc)
                k.store(tmp, i, acc)
    with p.kernel("atax_kernel2", grid=-(-ny // 32), block=(32, 8), regs=12) as k:
        j = k.blockIdx.x * 32 + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        with k.where(j < ny):
            acc = k.reg()
            k.alu(op="MOV", dst=acc)
            k.store(y, j, acc)
            for i in k.loop(nx):
                a = k.load(A, i * ny + j)
                b = k.load(tmp, i)
                k.alu(acc, a, b, op="FFMA", dst=acc)
                k.store(y, j, acc)
    return p.trace()


MODEL = ModelSpec(
    name="atax",
    klass="polybench",
    description="PolyBench ATAX: A x then A^T tmp; 8 redundant warps per CTA as in the source",
    source="PolyBench/GPU ATAX: atax_kernel1, atax_kernel2 (atax.cu)",
    sizes={"tiny": dict(n=64), "small": dict(n=256), "medium": dict(n=1024), "large": dict(n=2048)},
    build=build,
)
