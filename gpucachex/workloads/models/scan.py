"""scan: exclusive prefix sum of a large array in three kernels.

Source: NVIDIA CUDA SDK, scan, ``scanExclusiveLarge`` with kernels ``scanExclusiveShared``,
``scanExclusiveShared2`` and ``uniformUpdate`` (scan.cu).

THREADBLOCK_SIZE = 256. scanExclusiveShared<<<N/1024, 256>>>: pos = global x; idata4 =
d_Src[pos] (a uint4, 16 B per lane); scan4Exclusive: the thread's 4 values are summed, then
scan1Inclusive over the CTA in shared memory (s_Data[2*256], pos = 2*tid - (tid & (size-1)),
s_Data[pos] = 0; pos += size; s_Data[pos] = idata; for offset = 1; offset < size; offset <<= 1:
sync, t = s_Data[pos] + s_Data[pos - offset], sync, s_Data[pos] = t); d_Dst[pos] = odata4.
scanExclusiveShared2<<<ceil(N/1024/256), 256>>>: if (pos < N/1024) idata = d_Dst[1023 + 1024*pos] +
d_Src[1023 + 1024*pos] (one element per 4 KB: a strided gather), scan1Exclusive, d_Buf[pos] = odata.
uniformUpdate<<<N/1024, 256>>>: if (tid == 0) buf = d_Buffer[blockIdx.x]; sync; d_Data[pos] += buf.
"""
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

T = 256
MIN_LARGE_ARRAY_SIZE = 8 * T
MAX_LARGE_ARRAY_SIZE = 4 * T * T
MAX_BATCH_ELEMENTS = 64 * 1048576


def build(n: int = 1 << 18):
    # scanExclusiveLarge asserts that the array length is a power of two from MIN_LARGE_ARRAY_SIZE to
    # MAX_LARGE_ARRAY_SIZE and that the batch holds whole arrays, at most MAX_BATCH_ELEMENTS: the
    # shared-memory scan of size arrayLength/1024 is only a prefix sum for a power of two, and a
    # partial last array is no batch the host can launch.
    one_array = MIN_LARGE_ARRAY_SIZE <= n <= MAX_LARGE_ARRAY_SIZE and n & (n - 1) == 0
    batch = n > MAX_LARGE_ARRAY_SIZE and n % MAX_LARGE_ARRAY_SIZE == 0 and n <= MAX_BATCH_ELEMENTS
    if not (one_array or batch):
        raise ValueError(f"scan: n must be a power of two from {MIN_LARGE_ARRAY_SIZE} to {MAX_LARGE_ARRAY_SIZE} (one "
                         f"array) or a multiple of {MAX_LARGE_ARRAY_SIZE} up to {MAX_BATCH_ELEMENTS} (a batch of "
                         f"them), as scanExclusiveLarge asserts; got {n}")
    array_length = min(n, MAX_LARGE_ARRAY_SIZE)
    p = Program("scan", source=MODEL.source)
    d_buf = p.array("d_Buf", max(1, n // (4 * T)), "u32", copy_in=False)
    d_input = p.array("d_Input", n, "u32")
    d_output = p.array("d_Output", n, "u32", copy_in=False)

    def scan1(k, s, idata, size):
        tid = k.threadIdx.x
        pos = 2 * tid - (tid & (size - 1))
        k.alu(op="LOP3.LUT", count=2)
        k.store(s, pos)
        pos = pos + size
        k.store(s, pos, idata)
        offset = 1
        while offset < size:
            k.sync()
            a = k.load(s, pos)
            b = k.load(s, pos - offset)
            t = k.alu(a, b, op="IADD3")
            k.sync()
            k.store(s, pos, t)
            offset <<= 1
        return k.load(s, pos)

    blocks = n // (4 * T)
    with p.kernel("scanExclusiveShared", grid=blocks, block=T, regs=16) as k:
        s = k.shared("s_Data", 2 * T, "u32")
        pos = k.blockIdx.x * T + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        v = k.load(d_input, 4 * pos, width=16)                # uint4
        w = k.alu(v, op="IADD3", count=3)
        r = scan1(k, s, w, T)                                  # size/4 = 256 for the large path
        out = k.alu(r, v, op="IADD3", count=7)
        k.store(d_output, 4 * pos, out, width=16)
    n2 = n // (4 * T)
    with p.kernel("scanExclusiveShared2", grid=-(-n2 // T), block=T, regs=16) as k:
        s = k.shared("s_Data", 2 * T, "u32")
        pos = k.blockIdx.x * T + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        idata = k.reg()
        k.alu(op="MOV", dst=idata)
        with k.where(pos < n2):
            a = k.load(d_output, 4 * T - 1 + 4 * T * pos)
            b = k.load(d_input, 4 * T - 1 + 4 * T * pos)
            k.alu(a, b, op="IADD3", dst=idata)
        r = scan1(k, s, idata, array_length // (4 * T))
        r = k.alu(r, idata, op="IADD3")
        with k.where(pos < n2):
            k.store(d_buf, pos, r)
    with p.kernel("uniformUpdate", grid=blocks, block=T, regs=12) as k:
        buf = k.shared("buf", 1, "u32")
        tid = k.threadIdx.x
        pos = k.blockIdx.x * T + tid
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        with k.where(tid == 0):
            b = k.load(d_buf, k.blockIdx.x)
            k.store(buf, 0, b)
        k.sync()
        v = k.load(d_output, 4 * pos, width=16)
        b = k.load(buf, 0)
        k.store(d_output, 4 * pos, k.alu(v, b, op="IADD3", count=4), width=16)
    return p.trace()


MODEL = ModelSpec(
    name="scan",
    klass="streaming",
    description="scan: CTA-local shared-memory prefix sums, a strided pass, a uniform update",
    source="NVIDIA CUDA SDK scan: scanExclusiveShared, scanExclusiveShared2, uniformUpdate (scan.cu)",
    sizes={"tiny": dict(n=1 << 14), "small": dict(n=1 << 18), "medium": dict(n=1 << 22), "large": dict(n=1 << 24)},
    build=build,
)
