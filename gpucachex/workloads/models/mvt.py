"""Matrix-vector product and transpose: x1 += A y1, x2 += A^T y2 (PolyBench MVT).

Source: PolyBench/GPU (polybenchGpu and PolyBench-ACC CUDA), MVT, kernels ``mvt_kernel1`` and
``mvt_kernel2`` (mvt.cu).

Index arithmetic: block (32, 8) with a one-dimensional grid ceil(N/32) and
i = blockIdx.x*blockDim.x + threadIdx.x: the 8 warps of a CTA repeat the same work, as in the
source. kernel1: if (i < N): for j < N: x1[i] += a[i*N + j] * y_1[j] (a row per lane);
kernel2: for j < N: x2[i] += a[j*N + i] * y_2[j] (coalesced). x1[i] is loaded once before the
loop; later reads are forwarded from the store that stays in the loop (a may alias x1).
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 256):
    p = Program("mvt", source=MODEL.source)
    a = p.array("a_gpu", n * n)
    x1 = p.array("x1_gpu", n)
    x2 = p.array("x2_gpu", n)
    y1 = p.array("y_1_gpu", n)
    y2 = p.array("y_2_gpu", n)
    for name, x, y, transposed in (("mvt_kernel1", x1, y1, False), ("mvt_kernel2", x2, y2, True)):
        with p.kernel(name, grid=-(-n // 32), block=(32, 8), regs=12) as k:
            i = k.blockIdx.x * 32 + k.threadIdx.x
            k.alu(op="S2R", count=2)
            k.alu(op="IMAD")
            with k.where(i < n):
                acc = k.load(x, i, dst=k.reg())
                for j in k.loop(n):
                    v = k.load(a, j * n + i if transposed else i * n + j)
                    w = k.load(y, j)
                    k.alu(acc, v, w, op="FFMA", dst=acc)
                    k.store(x, i, acc)
    return p.trace()


MODEL = ModelSpec(
    name="mvt",
    klass="polybench",
    description="PolyBench MVT: A y1 (a row per lane) and A^T y2 (coalesced)",
    source="PolyBench/GPU MVT: mvt_kernel1, mvt_kernel2 (mvt.cu)",
    sizes={"tiny": dict(n=64), "small": dict(n=256), "medium": dict(n=1024), "large": dict(n=2048)},
    build=build,
)
