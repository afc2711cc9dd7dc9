"""gaussian: Gaussian elimination, two kernels per pivot with shrinking active regions.

Source: Rodinia, gaussian, kernels ``Fan1`` and ``Fan2`` (gaussian.cu).

Size is the parameter n. For t = 0 .. Size-2 the host launches Fan1<<<ceil(Size/512), 512>>> and
Fan2<<<(ceil(Size/4), ceil(Size/4)), (4, 4)>>> (MAXBLOCKSIZE = 512, BLOCK_SIZE_XY = 4).
Fan1: if (threadIdx.x + blockIdx.x*blockDim.x >= Size-1-t) return; m[Size*(tid+t+1) + t] =
a[Size*(tid+t+1) + t] / a[Size*t + t] (a column: one row per lane). Fan2: return if xidx >=
Size-1-t or yidx >= Size-t; a[Size*(xidx+1+t) + (yidx+t)] -= m[Size*(xidx+1+t) + t] *
a[Size*t + (yidx+t)]; if (yidx == 0) b[xidx+1+t] -= m[Size*(xidx+1+t) + (yidx+t)] * b[t]. A Fan2
CTA has 16 threads, so a warp is at most half full, and both kernels retire more threads at
every pivot: Atoofian's GSS (65% of lanes active at the L1, 37% at the L2).
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

MAXBLOCKSIZE = 512
BLOCK_SIZE_XY = 4


def build(n: int = 64):
    if n < 2:
        raise ValueError(f"gaussian: n must be at least 2, got {n}")
    p = Program("gaussian", source=MODEL.source)
    m = p.array("m_cuda", n * n)
    a = p.array("a_cuda", n * n)
    b = p.array("b_cuda", n)
    g1 = -(-n // MAXBLOCKSIZE)
    g2 = -(-n // BLOCK_SIZE_XY)
    for t in range(n - 1):
        with p.kernel("Fan1", grid=g1, block=MAXBLOCKSIZE, regs=10) as k:
            tid = k.blockIdx.x * MAXBLOCKSIZE + k.threadIdx.x
            k.alu(op="S2R", count=2)
            k.alu(op="IMAD")
            k.alu(op="ISETP.GE.AND")
            k.exit_where(tid >= n - 1 - t)
            row = n * (tid + t + 1) + t
            num = k.load(a, row)
            den = k.load(a, n * t + t)
            q = k.alu(num, k.sfu(den, op="MUFU.RCP"), op="FFMA", count=3)
            k.store(m, row, q)
        with p.kernel("Fan2", grid=(g2, g2), block=(BLOCK_SIZE_XY, BLOCK_SIZE_XY), regs=12) as k:
            xidx = k.blockIdx.x * BLOCK_SIZE_XY + k.threadIdx.x
            yidx = k.blockIdx.y * BLOCK_SIZE_XY + k.threadIdx.y
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=2)
            k.alu(op="ISETP.GE.AND")
            k.exit_where(xidx >= n - 1 - t)
            k.alu(op="ISETP.GE.AND")
            k.exit_where(yidx >= n - t)
            target = n * (xidx + 1 + t) + (yidx + t)
            mv = k.load(m, n * (xidx + 1 + t) + t)
            at = k.load(a, n * t + (yidx + t))
            av = k.load(a, target)
            k.store(a, target, k.alu(av, mv, at, op="FFMA"))
            with k.where(yidx == 0):
                mv = k.load(m, n * (xidx + 1 + t) + (yidx + t))
                bt = k.load(b, t)
                bv = k.load(b, xidx + 1 + t)
                k.store(b, xidx + 1 + t, k.alu(bv, mv, bt, op="FFMA"))
    return p.trace()


MODEL = ModelSpec(
    name="gaussian",
    klass="low-utilisation",
    description="gaussian: Fan1/Fan2 per pivot; 16-thread CTAs and retiring rows leave lanes idle",
    source="Rodinia gaussian: Fan1, Fan2 (gaussian.cu)",
    sizes={"tiny": dict(n=16), "small": dict(n=64), "medium": dict(n=128), "large": dict(n=256)},
    build=build,
)
