"""SRAD: speckle-reducing anisotropic diffusion of an image (Rodinia srad_v1).

Source: Rodinia, srad_v1, kernels ``extract``, ``prepare``, ``reduce``, ``srad``, ``srad2`` and
``compress`` (extract_kernel.cu ... compress_kernel.cu, main.cu).

The image is Nr x Nc floats, column-major (element ei = row + Nr*col); NUMBER_THREADS = 512,
blocks = ceil(Ne/512). main: extract; for each iteration { prepare; reduce launched on blocks2 =
blocks, then ceil(blocks2/512), ... until one CTA (no = elements left, mul *= 512 per level);
srad; srad2 }; compress. prepare: sums[ei] = I[ei]; sums2[ei] = I[ei]*I[ei] (I re-read after the
store, which may alias it). reduce: psum[tx] = sums[ei*mul] (strided above the first level), a
shared-memory tree for (i = 2; i <= 512; i *= 2) if ((tx+1) % i == 0) psum[tx] += psum[tx - i/2],
thread 511 writes sums[bx*mul*512]; when the last CTA is partial (nf < 512) it reduces the largest
power of two df <= nf and thread df-1 adds sums[bx*512 + df .. bx*512 + nf - 1] serially. srad:
row/col from ei; Jc = I[ei]; dN = I[iN[row] + Nr*col] - Jc, dS, dW = I[row + Nr*jW[col]] - Jc, dE
(index loads, then dependent image loads); diffusion coefficient c; stores dN, dS, dW, dE, c.
srad2: c[ei], c[iS[row] + Nr*col], c[row + Nr*jE[col]], the four derivatives, I[ei] += ...
(main passes d_dW, d_dE into parameters named dE, dW: the model keeps that crossing.)
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

NT = 512


def build(nr: int = 128, nc: int = 128, niter: int = 2):
    ne = nr * nc
    p = Program("srad", source=MODEL.source)
    d_I = p.array("d_I", ne, copy_in=False)
    d_iN = p.array("d_iN", nr, "i32")
    d_iS = p.array("d_iS", nr, "i32")
    d_jE = p.array("d_jE", nc, "i32")
    d_jW = p.array("d_jW", nc, "i32")
    d_sums = p.array("d_sums", ne, copy_in=False)
    d_sums2 = p.array("d_sums2", ne, copy_in=False)
    d_dN = p.array("d_dN", ne, copy_in=False)
    d_dS = p.array("d_dS", ne, copy_in=False)
    d_dW = p.array("d_dW", ne, copy_in=False)
    d_dE = p.array("d_dE", ne, copy_in=False)
    d_c = p.array("d_c", ne, copy_in=False)
    p.copy_in(d_I)
    blocks = -(-ne // NT)

    def ei_of(k):
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        return k.blockIdx.x * NT + k.threadIdx.x

    def elementwise(name, sfu_op):
        with p.kernel(name, grid=blocks, block=NT, regs=8) as k:
            ei = ei_of(k)
            with k.where(ei < ne):
                v = k.load(d_I, ei)
                v = k.alu(v, op="FMUL")
                k.store(d_I, ei, k.sfu(v, op=sfu_op))

    def tree(k, psum, psum2, limit, extra=None):
        tx = k.threadIdx.x
        i = 2
        while i <= limit:
            cond = (tx + 1) % i == 0
            if extra is not None:
                cond = cond & extra
            k.alu(op="ISETP.EQ.AND", count=2)
            with k.where(cond):
                for q in k.unroll(2):                     # d_psum and d_psum2: two statements
                    s = (psum, psum2)[q]
                    a = k.load(s, tx)
                    b = k.load(s, tx - i // 2)
                    k.store(s, tx, k.alu(a, b, op="FADD"))
            k.sync()
            i *= 2

    def reduce(g, no, mul):
        with p.kernel("reduce", grid=g, block=NT, regs=16) as k:
            tx, bx = k.threadIdx.x, k.blockIdx.x
            ei = ei_of(k)
            nf = NT - (g * NT - no)
            psum = k.shared("d_psum", NT)
            psum2 = k.shared("d_psum2", NT)
            with k.where(ei < no):
                k.store(psum, tx, k.load(d_sums, ei * mul))
                k.store(psum2, tx, k.load(d_sums2, ei * mul))
            k.sync()

            def write_out(at):
                with k.where(tx == at):
                    k.store(d_sums, bx * mul * NT, k.load(psum, tx))
                    k.store(d_sums2, bx * mul * NT, k.load(psum2, tx))

            if nf == NT:
                tree(k, psum, psum2, NT)
                write_out(NT - 1)
                return
            with k.where(bx != g - 1):
                tree(k, psum, psum2, NT)
                write_out(NT - 1)
            with k.otherwise():
                df = 0
                for i in k.loop(9):                       # for (i = 2; i <= 512; i *= 2) if (nf >= i) df = i
                    if nf >= 2 << i:
                        df = 2 << i
                    k.alu(op="ISETP.GE.AND")
                    k.alu(op="SEL")
                tree(k, psum, psum2, df, extra=tx < df)
                with k.where(tx == df - 1):
                    a, b = k.load(psum, tx), k.load(psum2, tx)
                    for j in k.loop(nf - df):
                        i = (g - 1) * NT + df + j
                        k.alu(a, k.load(d_sums, i), op="FADD", dst=a)
                        k.alu(b, k.load(d_sums2, i), op="FADD", dst=b)
                    k.store(d_sums, bx * mul * NT, a)
                    k.store(d_sums2, bx * mul * NT, b)

    elementwise("extract", "MUFU.EX2")
    for _ in range(niter):
        with p.kernel("prepare", grid=blocks, block=NT, regs=8) as k:
            ei = ei_of(k)
            with k.where(ei < ne):
                v = k.load(d_I, ei)
                k.store(d_sums, ei, v)
                v = k.load(d_I, ei)
                k.store(d_sums2, ei, k.alu(v, op="FMUL"))
        g, no, mul = blocks, ne, 1
        while g:
            reduce(g, no, mul)
            no = g
            if g == 1:
                g = 0
            else:
                mul *= NT
                g = -(-g // NT)
        with p.kernel("srad", grid=blocks, block=NT, regs=24) as k:
            ei = ei_of(k)
            row, col = ei % nr, ei // nr            # the source's (ei+1) % Nr - 1 with its fix-up
            k.alu(op="IMAD.HI", count=6)
            k.alu(op="ISETP.EQ.AND", count=2)
            with k.where(ei < ne):
                jc = k.load(d_I, ei)
                iN = k.load(d_iN, row)
                dN = k.load(d_I, (row - 1).clip(min=0) + nr * col, deps=iN)
                iS = k.load(d_iS, row)
                dS = k.load(d_I, (row + 1).clip(max=nr - 1) + nr * col, deps=iS)
                jW = k.load(d_jW, col)
                dW = k.load(d_I, row + nr * (col - 1).clip(min=0), deps=jW)
                jE = k.load(d_jE, col)
                dE = k.load(d_I, row + nr * (col + 1).clip(max=nc - 1), deps=jE)
                g2 = k.alu(dN, dS, dW, dE, jc, op="FFMA", count=6)
                g2 = k.alu(g2, k.sfu(jc, op="MUFU.RCP"), op="FMUL", count=2)
                q = k.alu(g2, op="FFMA", count=4)
                q = k.alu(q, k.sfu(q, op="MUFU.RCP"), op="FFMA", count=3)
                c = k.sfu(k.alu(q, op="FADD"), op="MUFU.RCP")
                c = k.alu(c, op="FMNMX", count=2)
                k.store(d_dN, ei, dN)
                k.store(d_dS, ei, dS)
                k.store(d_dE, ei, dW)                 # parameter d_dW is main's d_dE
                k.store(d_dW, ei, dE)
                k.store(d_c, ei, c)
        with p.kernel("srad2", grid=blocks, block=NT, regs=20) as k:
            ei = ei_of(k)
            row, col = ei % nr, ei // nr
            k.alu(op="IMAD.HI", count=6)
            k.alu(op="ISETP.EQ.AND", count=2)
            with k.where(ei < ne):
                cN = k.load(d_c, ei)
                iS = k.load(d_iS, row)
                cS = k.load(d_c, (row + 1).clip(max=nr - 1) + nr * col, deps=iS)
                jE = k.load(d_jE, col)
                cE = k.load(d_c, row + nr * (col + 1).clip(max=nc - 1), deps=jE)
                d = k.alu(cN, k.load(d_dN, ei), op="FMUL")
                d = k.alu(d, cS, k.load(d_dS, ei), op="FFMA")
                d = k.alu(d, cN, k.load(d_dE, ei), op="FFMA")   # parameter d_dW is main's d_dE
                d = k.alu(d, cE, k.load(d_dW, ei), op="FFMA")
                v = k.load(d_I, ei)
                k.store(d_I, ei, k.alu(v, d, op="FFMA", count=2))
    elementwise("compress", "MUFU.LG2")
    return p.trace()


MODEL = ModelSpec(
    name="srad",
    klass="stencil",
    description="SRAD (srad_v1): 4-neighbour image diffusion with index-array indirection and reductions",
    source="Rodinia srad_v1: extract, prepare, reduce, srad, srad2, compress (srad_v1/*_kernel.cu)",
    sizes={"tiny": dict(nr=64, nc=48, niter=1), "small": dict(nr=128, nc=128, niter=2),
           "medium": dict(nr=502, nc=458, niter=2), "large": dict(nr=502, nc=458, niter=10)},
    build=build,
)
