"""hotspot: transient 2-D thermal simulation with pyramid (ghost-zone) tiling in shared memory.

Source: Rodinia, hotspot, kernel ``calculate_temp`` (hotspot.cu).

BLOCK_SIZE = 16; EXPAND_RATE = 2; border = pyramid_height; the host sizes the grid
(ceil(cols/smallBlockCol), ceil(rows/smallBlockRow)) of 16x16 threads with smallBlockCol = 16 -
2*pyramid_height and launches ``for (t = 0; t < total_iterations; t += pyramid_height)
calculate_temp<<<...>>>(MIN(pyramid_height, total_iterations - t), power, temp[src], temp[dst], ...)``
swapping temp buffers. The kernel computes its own small_block = 16 - 2*iteration from that
argument, so a last, shorter launch steps its tiles further apart than the grid was sized for.
Per thread: blkY = small_block*by - border, blkX likewise; yidx = blkY + ty, xidx = blkX + tx;
index = cols*yidx + xidx; if in range: temp_on_cuda[ty][tx] = temp_src[index], power_on_cuda[ty][tx]
= power[index]; then `iteration` steps in shared memory, each ``if (IN_RANGE(tx, i+1, 14-i) &&
IN_RANGE(ty, i+1, 14-i) && inside the valid range)`` computing temp_t from the 4 neighbours and
copying it back after a barrier; finally the threads still computing write temp_dst[index].
Overlapping halos are read by neighbouring CTAs (a little inter-CTA reuse); the rest streams.
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

BS = 16


def build(n: int = 192, pyramid_height: int = 2, sim_time: int = 2):
    rows = cols = n
    small = BS - 2 * pyramid_height
    if small < 1:
        raise ValueError(f"hotspot: pyramid_height {pyramid_height} leaves no block for BLOCK_SIZE {BS}")
    border = pyramid_height
    grid = (-(-cols // small), -(-rows // small))
    p = Program("hotspot", source=MODEL.source)
    temp = [p.array("MatrixTemp[0]", rows * cols), p.array("MatrixTemp[1]", rows * cols, copy_in=False)]
    power = p.array("MatrixPower", rows * cols)
    src, dst = 1, 0
    for t in range(0, sim_time, pyramid_height):
        src, dst = dst, src
        iteration = min(pyramid_height, sim_time - t)
        # small_block_rows = BLOCK_SIZE - iteration*2: from the launch's own iteration count, while
        # the grid and the border come from pyramid_height
        small_k = BS - 2 * iteration
        with p.kernel("calculate_temp", grid=grid, block=(BS, BS), regs=32) as k:
            tx, ty = k.threadIdx.x, k.threadIdx.y
            blk_y = small_k * k.blockIdx.y - border
            blk_x = small_k * k.blockIdx.x - border
            yidx, xidx = blk_y + ty, blk_x + tx
            index = cols * yidx + xidx
            T_on = k.shared("temp_on_cuda", BS * BS)
            P_on = k.shared("power_on_cuda", BS * BS)
            T_t = k.shared("temp_t", BS * BS)
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=8)                    # block bounds and indices
            k.sfu(op="MUFU.RCP", count=4)                # step/Cap, 1/Rx, 1/Ry, 1/Rz
            k.alu(op="ISETP.GE.AND", count=4)
            in_range = (yidx >= 0) & (yidx <= rows - 1) & (xidx >= 0) & (xidx <= cols - 1)
            with k.where(in_range):
                tv = k.load(temp[src], index)
                pv = k.load(power, index)
                k.store(T_on, ty * BS + tx, tv)
                k.store(P_on, ty * BS + tx, pv)
            k.sync()
            valid_ymin = np.where(blk_y < 0, -blk_y, 0)
            valid_ymax = np.where(blk_y + BS - 1 > rows - 1, BS - 1 - (blk_y + BS - 1 - rows + 1), BS - 1)
            valid_xmin = np.where(blk_x < 0, -blk_x, 0)
            valid_xmax = np.where(blk_x + BS - 1 > cols - 1, BS - 1 - (blk_x + BS - 1 - cols + 1), BS - 1)
            N = np.maximum(ty - 1, valid_ymin)
            S = np.minimum(ty + 1, valid_ymax)
            W = np.maximum(tx - 1, valid_xmin)
            E = np.minimum(tx + 1, valid_xmax)
            k.alu(op="IMNMX", count=8)
            computed = np.zeros(k.n_slots, dtype=bool)
            for i in range(iteration):
                c = ((tx >= i + 1) & (tx <= BS - i - 2) & (ty >= i + 1) & (ty <= BS - i - 2)
                     & (tx >= valid_xmin) & (tx <= valid_xmax) & (ty >= valid_ymin) & (ty <= valid_ymax))
                computed = c
                k.alu(op="ISETP.GE.AND", count=4)
                with k.where(c):
                    me = k.load(T_on, ty * BS + tx)
                    pw = k.load(P_on, ty * BS + tx)
                    s_ = k.load(T_on, S * BS + tx)
                    n_ = k.load(T_on, N * BS + tx)
                    e_ = k.load(T_on, ty * BS + E)
                    w_ = k.load(T_on, ty * BS + W)
                    r = k.alu(me, pw, s_, n_, e_, op="FFMA", count=9)
                    k.store(T_t, ty * BS + tx, k.alu(r, w_, op="FFMA"))
                k.sync()
                if i == iteration - 1:
                    break
                with k.where(c):
                    v = k.load(T_t, ty * BS + tx)
                    k.store(T_on, ty * BS + tx, v)
                k.sync()
            with k.where(computed):
                v = k.load(T_t, ty * BS + tx)
                k.store(temp[dst], index, v)
    return p.trace()


MODEL = ModelSpec(
    name="hotspot",
    klass="stencil",
    description="hotspot: 2-D thermal stencil, 16x16 tiles with halos in shared memory",
    source="Rodinia hotspot: calculate_temp (hotspot.cu)",
    sizes={"tiny": dict(n=48), "small": dict(n=192), "medium": dict(n=512, sim_time=4),
           "large": dict(n=1024, sim_time=6)},
    build=build,
)
