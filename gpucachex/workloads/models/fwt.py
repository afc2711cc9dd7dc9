"""FWT: fast Walsh-Hadamard transform, used for a dyadic convolution.

Source: NVIDIA CUDA SDK, fastWalshTransform, kernels ``fwtBatch2Kernel``, ``fwtBatch1Kernel`` and
``modulateKernel`` (fastWalshTransform_kernel.cuh, fastWalshTransform.cu).

Host sequence (main): fwtBatchGPU(d_Data), fwtBatchGPU(d_Kernel), modulateGPU(d_Data, d_Kernel),
fwtBatchGPU(d_Data), with dataN = 2^log2Data. fwtBatchGPU: THREAD_N = 256; grid
((1 << log2N)/(4*THREAD_N), M) is computed once, then for (; log2N > 11; log2N -= 2, N >>= 2,
M <<= 2) fwtBatch2Kernel<<<grid, 256>>>(d, d, N/4) -- each thread: pos = global x;
lo = pos & (stride-1); i0 = ((pos - lo) << 2) + lo; i1..i3 = i0 + stride, +2*stride, +3*stride;
four loads, radix-4 butterfly, four stores -- then fwtBatch1Kernel<<<M, N/4, N*4 B>>> does the
remaining log2N <= 11 stages in shared memory (loads to s_data, radix-4 stages with
__syncthreads, an optional radix-2 stage, stores). modulateKernel<<<128, 256>>>: grid-stride
d_A[pos] *= d_B[pos] * rcpN. Each element is touched a few times per pass with large strides:
AdmL1D's Type-N FWT (hits in the L1 that do not help).
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

ELEMENTARY_LOG2SIZE = 11
THREAD_N = 256


def build(log2n: int = 16):
    # fwtBatchGPU computes N = 1 << log2N in an int; past 30 the arrays alone outgrow any memory, and
    # 1 << 10**7 only failed later, formatting its 3-million-digit element count.
    if log2n > 30:
        raise ValueError(f"fwt: log2n must be at most 30 (the SDK computes 1 << log2N in an int), got {log2n}")
    n_total = 1 << log2n
    p = Program("fwt", source=MODEL.source)
    d_kernel = p.array("d_Kernel", n_total)
    d_data = p.array("d_Data", n_total)

    def batch2(d, stride, grid):
        with p.kernel("fwtBatch2Kernel", grid=grid, block=THREAD_N, regs=16) as k:
            pos = k.blockIdx.x * THREAD_N + k.threadIdx.x
            n = THREAD_N * grid[0] * 4
            base = k.blockIdx.y * n
            k.alu(op="S2R", count=3)
            k.alu(op="LOP3.LUT", count=2)
            k.alu(op="IMAD", count=4)
            lo = pos & (stride - 1)
            i0 = ((pos - lo) << 2) + lo
            vals = [k.load(d, base + i0 + q * stride) for q in k.unroll(4)]    # D0..D3 = d_Src[i0..i3]
            out = k.alu(*vals, op="FADD", count=8)
            for q in k.unroll(4):                              # d_Dst[i0..i3] = ...: four statements
                k.store(d, base + i0 + q * stride, out)

    def batch1(d, m, log2n_left):
        n = 1 << log2n_left
        with p.kernel("fwtBatch1Kernel", grid=m, block=n // 4, regs=16) as k:   # extern __shared__ s_data[N]
            s = k.shared("s_data", n)
            tid = k.threadIdx.x
            base = k.blockIdx.x << log2n_left
            k.alu(op="S2R", count=2)
            k.alu(op="SHF.L", count=2)
            for it in k.loop(4):                               # pos = threadIdx.x; pos < N; pos += N/4
                pos = tid + it * (n // 4)
                v = k.load(d, base + pos)
                k.store(s, pos, v)
            stride = n >> 2
            while stride > 0:
                lo = tid & (stride - 1)
                i0 = ((tid - lo) << 2) + lo
                k.alu(op="LOP3.LUT", count=3)
                k.sync()
                vals = [k.load(s, i0 + q * stride) for q in k.unroll(4)]   # D0..D3 = s_data[i0..i3]
                out = k.alu(*vals, op="FADD", count=8)
                for q in k.unroll(4):                          # s_data[i0..i3] = ...: four statements
                    k.store(s, i0 + q * stride, out)
                stride >>= 2
            if log2n_left & 1:
                k.sync()
                for it in k.loop(2):                           # pos < N/2 with N/4 threads
                    pos = tid + it * (n // 4)
                    i0 = pos << 1
                    a, b = k.load(s, i0), k.load(s, i0 + 1)
                    r = k.alu(a, b, op="FADD", count=2)
                    k.store(s, i0, r)
                    k.store(s, i0 + 1, r)
            k.sync()
            for it in k.loop(4):
                pos = tid + it * (n // 4)
                v = k.load(s, pos)
                k.store(d, base + pos, v)

    def fwt_batch_gpu(d, log2n_):
        m = 1
        n = 1 << log2n_
        grid = (max(1, n // (4 * THREAD_N)), m)
        while log2n_ > ELEMENTARY_LOG2SIZE:
            batch2(d, n // 4, grid)
            log2n_ -= 2
            n >>= 2
            m <<= 2
        batch1(d, m, log2n_)

    fwt_batch_gpu(d_data, log2n)
    fwt_batch_gpu(d_kernel, log2n)
    with p.kernel("modulateKernel", grid=128, block=256, regs=10) as k:
        tid = k.blockIdx.x * 256 + k.threadIdx.x
        threads = 128 * 256
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        r = k.sfu(op="MUFU.RCP", dst=k.reg())
        # iterations of pos = tid; pos < N; pos += numThreads. np.maximum, not .clip after the
        # unary minus: -(x).clip(min=0) clips before negating and gave every thread 0 iterations
        for it in k.loop(np.maximum(0, -(-(n_total - tid) // threads))):
            pos = tid + it * threads
            a = k.load(d_data, pos)
            b = k.load(d_kernel, pos)
            k.store(d_data, pos, k.alu(a, b, r, op="FMUL", count=2))
    fwt_batch_gpu(d_data, log2n)
    return p.trace()


MODEL = ModelSpec(
    name="fwt",
    klass="streaming",
    description="FWT: radix-4 Walsh transform passes over the whole array, then shared-memory stages",
    source="NVIDIA CUDA SDK fastWalshTransform: fwtBatch1Kernel, fwtBatch2Kernel, modulateKernel "
           "(fastWalshTransform_kernel.cuh)",
    sizes={"tiny": dict(log2n=11), "small": dict(log2n=16), "medium": dict(log2n=19), "large": dict(log2n=21)},
    minimum={"log2n": 2},   # fwtBatch1Kernel's block has 2^log2n / 4 threads
    build=build,
)
