"""BiCG sub-kernel of the BiCGStab solver: s = A^T r and q = A p (PolyBench BICG).

Source: PolyBench/GPU (polybenchGpu and PolyBench-ACC CUDA), BICG, kernels ``bicg_kernel1`` and
``bicg_kernel2`` (bicg.cu).

Index arithmetic: block (256, 1); kernel1 grid ceil(NY/256): j = global x; if (j < NY): s[j] = 0;
for i < NX: s[j] += r[i] * A[i*NY + j] (coalesced A rows, broadcast r). kernel2 grid ceil(NX/256):
i = global x; if (i < NX): q[i] = 0; for j < NY: q[i] += A[i*NY + j] * p[j] (each lane walks its
own row: a 32-line access per warp instruction, the uncoalesced half of BICG). The stores to
s[j] / q[i] stay in the loop (the vectors may alias A).
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 1024, nx: int | None = None, ny: int | None = None):
    nx, ny = (n if v is None else v for v in (nx, ny))
    p = Program("bicg", source=MODEL.source)
    A = p.array("A_gpu", nx * ny)
    r = p.array("r_gpu", nx)
    s = p.array("s_gpu", ny)
    pv = p.array("p_gpu", ny)
    q = p.array("q_gpu", nx)
    with p.kernel("bicg_kernel1", grid=-(-ny // 256), block=256, regs=12) as k:
        j = k.blockIdx.x * 256 + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        with k.where(j < ny):
            acc = k.reg()
            k.alu(op="MOV", dst=acc)
            k.store(s, j, acc)
            for i in k.loop(nx):
                a = k.load(r, i)
                b = k.load(A, i * ny + j)
                k.alu(acc, a, b, op="FFMA", dst=acc)
                k.store(s, j, acc)
    with p.kernel("bicg_kernel2", grid=-(-nx // 256), block=256, regs=12) as k:
        i = k.blockIdx.x * 256 + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        with k.where(i < nx):
            acc = k.reg()
            k.alu(op="MOV", dst=acc)
            k.store(q, i, acc)
            for jj in k.loop(ny):
                a = k.load(A, i * ny + jj)
                b = k.load(pv, jj)
                k.alu(acc, a, b, op="FFMA", dst=acc)
                k.store(q, i, acc)
    return p.trace()


MODEL = ModelSpec(
    name="bicg",
    klass="polybench",
    description="PolyBench BiCG: A^T r (coalesced) and A p (one row per lane)",
    source="PolyBench/GPU BICG: bicg_kernel1, bicg_kernel2 (bicg.cu)",
    sizes={"tiny": dict(n=192), "small": dict(n=1024), "medium": dict(n=2048), "large": dict(n=5120)},
    build=build,
)
