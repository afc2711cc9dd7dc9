"""3-D convolution (PolyBench/GPU 3DCONV): one kernel launch per interior plane i.

Source: PolyBench/GPU (Grauer-Gray et al.; polybenchGpu and PolyBench-ACC CUDA), 3DCONV,
kernel ``convolution3D_kernel`` (3DConvolution.cu).

Index arithmetic: block (32, 8); grid (ceil(NK/32), ceil(NJ/8)); the host loops
``for i in 1..NI-2: convolution3D_kernel<<<grid, block>>>(..., i)``; per thread k = x index,
j = y index; ``if (i < NI-1 && j < NJ-1 && k < NK-1 && i > 0 && j > 0 && k > 0)``
``B[i*NK*NJ + j*NK + k] = c11*A[(i-1)*NK*NJ + (j-1)*NK + (k-1)] + ...``. The source names 15
A terms, four of which repeat the (i-1, j-1, k-1) and (i+1, j-1, k-1) elements; a compiler loads
each distinct element once (no store intervenes), so the model issues the 11 distinct loads.
Neighbouring CTAs and consecutive launches read overlapping planes: inter-CTA and inter-kernel
reuse, the kind ATA-Cache counts conv3d among its high inter-core-locality applications for.
"""

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

# (di, dj, dk) of the distinct A elements, in the order the expression first names them.
TAPS = [(-1, -1, -1), (1, -1, -1), (0, -1, 0), (0, 0, 0), (0, 1, 0), (-1, -1, 1), (1, -1, 1),
        (-1, 0, 1), (1, 0, 1), (-1, 1, 1), (1, 1, 1)]


def build(n: int = 64, ni: int | None = None, nj: int | None = None, nk: int | None = None):
    ni, nj, nk = (n if v is None else v for v in (ni, nj, nk))
    if min(ni, nj, nk) < 3:
        raise ValueError(f"conv3d: every dimension must be at least 3, got {ni}x{nj}x{nk}")
    p = Program("conv3d", source=MODEL.source)
    A = p.array("A_gpu", ni * nj * nk)
    B = p.array("B_gpu", ni * nj * nk, copy_in=False)
    grid = (-(-nk // 32), -(-nj // 8))
    for i in range(1, ni - 1):
        with p.kernel("convolution3D_kernel", grid=grid, block=(32, 8), regs=20) as k:
            kk = k.blockIdx.x * 32 + k.threadIdx.x
            j = k.blockIdx.y * 8 + k.threadIdx.y
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=2)
            k.alu(op="ISETP.LT.AND", count=3)
            with k.where((j < nj - 1) & (kk < nk - 1) & (j > 0) & (kk > 0)):
                acc = None
                for t in k.unroll(len(TAPS)):        # straight-line source: one load instruction per tap
                    di, dj, dk = TAPS[t]
                    v = k.load(A, (i + di) * (nk * nj) + (j + dj) * nk + (kk + dk))
                    acc = k.alu(v, acc, op="FFMA" if acc is not None else "FMUL")
                k.alu(acc, op="FFMA", count=4)       # the repeated terms still add their products
                k.store(B, i * (nk * nj) + j * nk + kk, acc)
    return p.trace()


MODEL = ModelSpec(
    name="conv3d",
    klass="regular-inter-CTA",
    description="PolyBench 3-D convolution: 11-point stencil, one launch per plane",
    source="PolyBench/GPU 3DCONV: convolution3D_kernel (3DConvolution.cu)",
    sizes={"tiny": dict(n=24), "small": dict(n=64), "medium": dict(n=128), "large": dict(n=256)},
    build=build,
)
