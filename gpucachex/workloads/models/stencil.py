"""ST3D: 7-point 3-D Jacobi stencil with thread coarsening and a shared-memory plane.

Source: Parboil, stencil, kernel ``block2D_hybrid_coarsen_x`` (src/cuda/kernels.cu, main.cu).

Launch: block (tx=32, ty=4); grid ((nx + 63)/64, (ny + 3)/4); dynamic shared 2*32*4 floats;
``iteration`` launches swapping A0 and Anext. Index3D(nx, ny, i, j, k) = i + nx*(j + ny*k).
Per thread: i = bx*64 + tx, i2 = i + 32, j = by*4 + ty; sh_id = tx + ty*64, sh_id2 = sh_id + 32;
zero both shared slots, sync; bottom = A0[i, j, 0] and sh_A0[sh_id] = A0[i, j, 1] (and the same
for i2); sync; for k in 1..nz-2: top = A0[i, j, k+1]; if (w_region) { a_up = y_h_bound ?
A0[i, j+1, k] : sh_A0[sh_id + 64]; a_down = y_l_bound ? A0[i, j-1, k] : sh_A0[sh_id - 64];
a_left_right = x_l_bound ? A0[i-1, j, k] : sh_A0[sh_id - 1]; Anext[i, j, k] = (top + bottom + a_up +
a_down + sh_A0[sh_id + 1] + a_left_right)*c1 - sh_A0[sh_id]*c0 } and the same for i2 with
x_h_bound and sh_A0[sh_id2 + 1]; sync; bottom = sh_A0[sh_id]; sh_A0[sh_id] = top (both); sync.
A warp is one ty row, so the y-bound selects are warp-uniform and the x-bound ones split lane 0
(or 31) from the rest: both sides of each select are issued.
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

TX, TY = 32, 4


def build(nx: int = 128, ny: int = 128, nz: int = 16, iterations: int = 1):
    p = Program("stencil", source=MODEL.source)
    size = nx * ny * nz
    a0 = p.array("d_A0", size)
    anext = p.array("d_Anext", size)

    def idx3(i, j, k_):
        return i + nx * (j + ny * k_)

    for _ in range(iterations):
        grid = ((nx + 2 * TX - 1) // (2 * TX), (ny + TY - 1) // TY)
        with p.kernel("block2D_hybrid_coarsen_x", grid=grid, block=(TX, TY), regs=30) as k:
            tx, ty = k.threadIdx.x, k.threadIdx.y
            i = k.blockIdx.x * 2 * TX + tx
            i2 = i + TX
            j = k.blockIdx.y * TY + ty
            sh = k.shared("sh_A0", 2 * TX * TY)        # extern __shared__, sh_size = tx*2*ty floats
            sh_id = tx + ty * 2 * TX
            sh_id2 = sh_id + TX
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=6)
            k.store(sh, sh_id)
            k.store(sh, sh_id2)
            k.sync()
            w_region = (i > 0) & (j > 0) & (i < nx - 1) & (j < ny - 1)
            w_region2 = (j > 0) & (i2 < nx - 1) & (j < ny - 1)
            x_l = tx == 0
            x_h = tx == TX - 1
            y_l = ty == 0
            y_h = ty == TY - 1
            in1 = (i < nx) & (j < ny)
            in2 = (i2 < nx) & (j < ny)
            bottom, bottom2, top, top2 = k.reg(), k.reg(), k.reg(), k.reg()
            with k.where(in1):
                k.load(a0, idx3(i, j, 0), dst=bottom)
                k.store(sh, sh_id, k.load(a0, idx3(i, j, 1)))
            with k.where(in2):
                k.load(a0, idx3(i2, j, 0), dst=bottom2)
                k.store(sh, sh_id2, k.load(a0, idx3(i2, j, 1)))
            k.sync()

            def point(ii, sid, region, x_bound, x_off, top_r, bot_r, kk):
                with k.where(region):
                    vals = k.regs(3)
                    selects = ((y_h, idx3(ii, j + 1, kk), sid + 2 * TX),
                               (y_l, idx3(ii, j - 1, kk), sid - 2 * TX),
                               (x_bound, idx3(ii + x_off, j, kk), sid + x_off))
                    for q in k.unroll(3):               # a_top, a_down, a_left_right: three statements
                        r, (bound, g_idx, s_idx) = vals[q], selects[q]
                        with k.where(bound):
                            k.load(a0, g_idx, dst=r)
                        with k.otherwise():
                            k.load(sh, s_idx, dst=r)
                    other = k.load(sh, sid - x_off)
                    me = k.load(sh, sid)
                    v = k.alu(top_r, bot_r, *vals[:2], op="FADD", count=5)
                    v = k.alu(v, other, vals[2], me, op="FFMA", count=2)
                    k.store(anext, idx3(ii, j, kk), v)

            for zz in k.loop(nz - 2):
                kk = zz + 1
                with k.where(in1):
                    k.load(a0, idx3(i, j, kk + 1), dst=top)
                point(i, sh_id, w_region, x_l, -1, top, bottom, kk)
                with k.where(in2):
                    k.load(a0, idx3(i2, j, kk + 1), dst=top2)
                point(i2, sh_id2, w_region2, x_h, 1, top2, bottom2, kk)
                k.sync()
                k.load(sh, sh_id, dst=bottom)
                k.store(sh, sh_id, top)
                k.load(sh, sh_id2, dst=bottom2)
                k.store(sh, sh_id2, top2)
                k.sync()
        a0, anext = anext, a0
    return p.trace()


MODEL = ModelSpec(
    name="stencil",
    klass="stencil",
    description="ST3D: Parboil 7-point 3-D stencil, x-coarsened, plane staged in shared memory",
    source="Parboil stencil: block2D_hybrid_coarsen_x (src/cuda/kernels.cu)",
    sizes={"tiny": dict(nx=64, ny=64, nz=8), "small": dict(nx=128, ny=128, nz=16),
           "medium": dict(nx=128, ny=128, nz=32, iterations=4), "large": dict(nx=256, ny=256, nz=64, iterations=4)},
    minimum={"nz": 2},   # the bottom and top planes are read before the loop over the inner ones
    build=build,
)
