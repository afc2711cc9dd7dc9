"""MM: tiled single-precision matrix multiply C = A x B with shared-memory tiles.

Source: NVIDIA CUDA SDK, matrixMul, kernel ``MatrixMulCUDA<BLOCK_SIZE>`` (matrixMul.cu; the
``matrixMul`` of GPGPU-Sim-era SDKs and the LoSCache paper's Fig. 4 with its AS()/BS() macros).

Index arithmetic, per thread (tx, ty) of CTA (bx, by), BLOCK_SIZE x BLOCK_SIZE threads:
    aBegin = wA*BS*by; aEnd = aBegin + wA - 1; aStep = BS; bBegin = BS*bx; bStep = BS*wB
    for (a = aBegin, b = bBegin; a <= aEnd; a += aStep, b += bStep):
        As[ty][tx] = A[a + wA*ty + tx]; Bs[ty][tx] = B[b + wB*ty + tx]; __syncthreads()
        for k < BS (unrolled): Csub += As[ty][k] * Bs[k][tx]
        __syncthreads()
    C[wB*BS*by + BS*bx + wB*ty + tx] = Csub
grid (wB/BS, hA/BS). Every CTA in a row of the grid reads the same A tiles and every CTA in a
column the same B tiles: the inter-CTA locality LoSCache measures (>99% of MM's accesses).
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 128, block: int = 16, ha: int | None = None, wb: int | None = None):
    """C (ha x wb) = A (ha x n) x B (n x wb); all dimensions multiples of `block`."""
    ha = n if ha is None else ha
    wb = n if wb is None else wb
    wa = n
    bs = block
    if min(wa, ha, wb) < bs or wa % bs or ha % bs or wb % bs:
        raise ValueError(f"sgemm: matrix dimensions ({ha}x{wa}, {wa}x{wb}) must be positive multiples of block={bs}")
    p = Program("sgemm", source=MODEL.source)
    A = p.array("d_A", ha * wa)
    B = p.array("d_B", wa * wb)
    C = p.array("d_C", ha * wb, copy_in=False)
    with p.kernel("MatrixMulCUDA", grid=(wb // bs, ha // bs), block=(bs, bs), regs=24) as k:
        tx, ty = k.threadIdx.x, k.threadIdx.y
        bx, by = k.blockIdx.x, k.blockIdx.y
        As = k.shared("As", bs * bs)
        Bs = k.shared("Bs", bs * bs)
        k.alu(op="S2R", count=4)                      # block and thread indices
        k.alu(op="IMAD", count=4)                     # aBegin, bBegin, a + wA*ty + tx, b + wB*ty + tx
        a_row = wa * bs * by + wa * ty + tx
        b_col = bs * bx + wb * ty + tx
        csub = k.reg()
        k.alu(op="MOV", dst=csub)
        for it in k.loop(wa // bs):
            a = k.load(A, a_row + it * bs)
            b = k.load(B, b_col + it * bs * wb)
            k.store(As, ty * bs + tx, a)
            k.store(Bs, ty * bs + tx, b)
            k.sync()
            for kk in k.unroll(bs):
                x = k.load(As, ty * bs + kk)
                y = k.load(Bs, kk * bs + tx)
                k.alu(csub, x, y, op="FFMA", dst=csub)
            k.sync()
            k.alu(op="IADD3", count=2)                # a += aStep, b += bStep
        k.alu(op="IMAD", count=2)
        k.store(C, wb * bs * by + bs * bx + wb * ty + tx, csub)
    return p.trace()


MODEL = ModelSpec(
    name="sgemm",
    klass="regular-inter-CTA",
    description="MM: tiled SGEMM, 16x16 CTAs staging A and B tiles in shared memory",
    source="NVIDIA CUDA SDK matrixMul: MatrixMulCUDA<BLOCK_SIZE> (matrixMul.cu)",
    sizes={"tiny": dict(n=48), "small": dict(n=128), "medium": dict(n=256), "large": dict(n=448)},
    build=build,
)
