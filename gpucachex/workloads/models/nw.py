"""NW: Needleman-Wunsch sequence alignment, 16x16 blocks of the score matrix along anti-diagonals.

Source: Rodinia, nw, kernels ``needle_cuda_shared_1`` and ``needle_cuda_shared_2``
(needle_kernel.cu, needle.cu).

BLOCK_SIZE = 16 threads per CTA (half a warp). max_cols = max_rows = n + 1; block_width = n/16.
The host launches needle_cuda_shared_1<<<i, 16>>> for i = 1..block_width (upper-left triangle of
blocks), then needle_cuda_shared_2<<<i, 16>>> for i = block_width-1..1. CTA bx of launch i works
on block (b_index_x, b_index_y) = (bx, i-1-bx) (kernel 1) or (bx + block_width - i,
block_width - bx - 1) (kernel 2); index = cols*16*b_index_y + 16*b_index_x + tx + cols + 1,
index_n = ... + tx + 1, index_w = ... + cols, index_nw = cols*16*b_index_y + 16*b_index_x.
Per CTA: thread 0 loads the corner; 16 rows of ref into shared memory (ref[ty][tx] =
reference[index + cols*ty]); the west column and north row of the score matrix; then 16 + 15
anti-diagonal steps ``if (tx <= m) temp[..] = max(nw + ref, w - penalty, n - penalty)`` with a
barrier each; finally 16 row stores. Each block's data is read by one CTA and written once: the
lowest L2 reuse in LoSCache's set (NW's L2 energy drops to under 1%).
"""

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

BS = 16


def build(n: int = 320, penalty: int = 10):
    if n % BS or n < BS:
        raise ValueError(f"nw: n must be a positive multiple of {BS}, got {n}")
    cols = n + 1
    block_width = n // BS
    p = Program("nw", source=MODEL.source)
    reference = p.array("referrence_cuda", cols * cols, "i32")
    matrix = p.array("matrix_cuda", cols * cols, "i32")

    def needle(name, i, bxy):
        with p.kernel(name, grid=i, block=BS, regs=20) as k:
            tx = k.threadIdx.x
            bx_, by_ = bxy(k.blockIdx.x)
            base = cols * BS * by_ + BS * bx_
            index = base + tx + cols + 1
            index_n = base + tx + 1
            index_w = base + cols
            index_nw = base
            temp = k.shared("temp", (BS + 1) * (BS + 1), "i32")
            ref = k.shared("ref", BS * BS, "i32")
            k.alu(op="S2R", count=2)
            k.alu(op="IMAD", count=6)

            def corner():
                with k.where(tx == 0):
                    k.store(temp, 0, k.load(matrix, index_nw))

            if name.endswith("_1"):
                corner()
            for ty in k.loop(BS):
                k.store(ref, ty * BS + tx, k.load(reference, index + cols * ty))
            k.sync()
            if name.endswith("_2"):
                corner()
            k.store(temp, (tx + 1) * (BS + 1), k.load(matrix, index_w + cols * tx))
            k.sync()
            k.store(temp, tx + 1, k.load(matrix, index_n))
            k.sync()

            def cell(tix, tiy):
                nw_ = k.load(temp, (tiy - 1) * (BS + 1) + tix - 1)
                r = k.load(ref, (tiy - 1) * BS + tix - 1)
                w = k.load(temp, tiy * (BS + 1) + tix - 1)
                n_ = k.load(temp, (tiy - 1) * (BS + 1) + tix)
                v = k.alu(nw_, r, w, n_, op="IADD3", count=3)
                v = k.alu(v, op="IMNMX", count=2)
                k.store(temp, tiy * (BS + 1) + tix, v)

            for m in k.loop(BS):
                with k.where(tx <= m):
                    cell(tx + 1, m - tx + 1)
                k.sync()
            for mm in k.loop(BS - 1):
                m = BS - 2 - mm
                with k.where(tx <= m):
                    cell(tx + BS - m, BS - tx)
                k.sync()
            for ty in k.loop(BS):
                k.store(matrix, index + ty * cols, k.load(temp, (ty + 1) * (BS + 1) + tx + 1))

    for i in range(1, block_width + 1):
        needle("needle_cuda_shared_1", i, lambda bx, i=i: (bx, i - 1 - bx))
    for i in range(block_width - 1, 0, -1):
        needle("needle_cuda_shared_2", i, lambda bx, i=i: (bx + block_width - i, block_width - bx - 1))
    return p.trace()


MODEL = ModelSpec(
    name="nw",
    klass="dynamic-programming",
    description="NW: wavefront of 16x16 score blocks, 16-thread CTAs (half-warps)",
    source="Rodinia nw: needle_cuda_shared_1, needle_cuda_shared_2 (needle_kernel.cu)",
    sizes={"tiny": dict(n=64), "small": dict(n=320), "medium": dict(n=1024), "large": dict(n=2048)},
    build=build,
    minimum={"penalty": 0},
)
