"""histogram256: 256-bin byte histogram with per-warp sub-histograms updated by shared-memory
atomics, then a merge of the per-CTA partial histograms.

Source: NVIDIA CUDA SDK, histogram, kernels ``histogram256Kernel`` and
``mergeHistogram256Kernel`` (histogram256.cu, histogram_common.h, main.cpp).

histogram256Kernel<<<PARTIAL_HISTOGRAM256_COUNT = 240, 192>>> (WARP_COUNT = 6 warps):
s_Hist[6*256] in shared memory, s_WarpHist = s_Hist + (threadIdx.x >> 5)*256; the 8 words of
the CTA's s_Hist each thread clears; sync; for (pos = global x; pos < dataCount; pos += 192*240)
{ data = d_Data[pos]; four atomicAdd(s_WarpHist + byte, 1), one per byte of the word }; sync;
for (bin = threadIdx.x; bin < 256; bin += 192) { sum of the 6 warps' counts; d_PartialHistograms
[blockIdx.x*256 + bin] = sum }. mergeHistogram256Kernel<<<256, 256>>>: for (i = threadIdx.x;
i < 240; i += 256) sum += d_PartialHistograms[blockIdx.x + i*256] (a column: 1 KB stride); a
shared-memory tree; thread 0 writes d_Histogram[blockIdx.x]. The input bytes are uniformly random
(main.cpp fills h_Data with rand() % 256), so the atomic addresses are drawn from the same
distribution; lanes of a warp hitting the same bin serialise in the shared-memory unit.
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

BINS = 256
WARP_COUNT = 6
THREADS = WARP_COUNT * 32
MERGE_THREADS = 256


def build(byte_count: int = 1 << 20, partial_count: int = 240, seed: int = 0):
    if byte_count % 4:
        raise ValueError(f"histogram: byte_count must be a multiple of 4, got {byte_count}")
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, size=byte_count, dtype=np.uint8)
    words = data.view("<u4").astype(np.int64)
    data_count = byte_count // 4
    p = Program("histogram", source=MODEL.source)
    d_partial = p.array("d_PartialHistograms", partial_count * BINS, "u32", copy_in=False)
    d_data = p.array("d_Data", data_count, "u32")   # bytes, read as uint words
    d_hist = p.array("d_Histogram", BINS, "u32", copy_in=False)
    threads = partial_count * THREADS
    with p.kernel("histogram256Kernel", grid=partial_count, block=THREADS, regs=16) as k:
        tid = k.threadIdx.x
        s_hist = k.shared("s_Hist", WARP_COUNT * BINS, "u32")
        warp_base = (tid >> 5) * BINS
        k.alu(op="S2R", count=2)
        for i in k.unroll(WARP_COUNT * BINS // THREADS):
            k.store(s_hist, tid + i * THREADS)
        k.sync()
        gpos = k.blockIdx.x * THREADS + tid
        k.alu(op="IMAD")
        for it in k.loop(np.maximum(0, -(-(data_count - gpos) // threads))):
            pos = gpos + it * threads
            w = k.load(d_data, pos)
            word = k.gather(words, pos)
            for b in k.unroll(4):
                k.alu(w, op="BFE.U32")
                k.atomic(s_hist, warp_base + ((word >> (8 * b)) & 0xFF), deps=w)
        k.sync()
        for it in k.loop(np.maximum(0, -(-(BINS - tid) // THREADS))):
            bin_ = tid + it * THREADS
            total = k.reg()
            k.alu(op="MOV", dst=total)
            for i in k.unroll(WARP_COUNT):
                k.alu(total, k.load(s_hist, bin_ + i * BINS), op="IADD3", dst=total)
            k.store(d_partial, k.blockIdx.x * BINS + bin_, total)
    with p.kernel("mergeHistogram256Kernel", grid=BINS, block=MERGE_THREADS, regs=12) as k:
        tid = k.threadIdx.x
        s = k.shared("data", MERGE_THREADS, "u32")
        k.alu(op="S2R", count=2)
        total = k.reg()
        k.alu(op="MOV", dst=total)
        for it in k.loop(np.maximum(0, -(-(partial_count - tid) // MERGE_THREADS))):
            i = tid + it * MERGE_THREADS
            k.alu(total, k.load(d_partial, k.blockIdx.x + i * BINS), op="IADD3", dst=total)
        k.store(s, tid, total)
        stride = MERGE_THREADS // 2
        while stride > 0:
            k.sync()
            with k.where(tid < stride):
                a, b = k.load(s, tid), k.load(s, tid + stride)
                k.store(s, tid, k.alu(a, b, op="IADD3"))
            stride >>= 1
        with k.where(tid == 0):
            k.store(d_hist, k.blockIdx.x, k.load(s, 0))
    return p.trace()


MODEL = ModelSpec(
    name="histogram",
    klass="atomic",
    description="histogram256: shared-memory atomics on per-warp sub-histograms, then a merge",
    source="NVIDIA CUDA SDK histogram: histogram256Kernel, mergeHistogram256Kernel (histogram256.cu)",
    sizes={"tiny": dict(byte_count=1 << 14, partial_count=16), "small": dict(byte_count=1 << 20),
           "medium": dict(byte_count=1 << 24), "large": dict(byte_count=1 << 26)},
    build=build,
    minimum={"seed": 0},
)
