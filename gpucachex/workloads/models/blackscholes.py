"""BlackScholes: European option pricing, one option per thread iteration.

Source: NVIDIA CUDA SDK, BlackScholes, kernel ``BlackScholesGPU`` with device functions
``BlackScholesBodyGPU`` and ``cndGPU`` (BlackScholes_kernel.cu[h]), in its classic form (CUDA SDK
2.x-4.x, the GPGPU-Sim era): BlackScholesGPU<<<480, 128>>>(d_CallResult, d_PutResult,
d_StockPrice, d_OptionStrike, d_OptionYears, R, V, OPT_N) with a grid-stride loop
``for (opt = tid; opt < optN; opt += THREAD_N)``; arrays of OPT_N floats allocated in that order.
(The current sample processes float2 pairs with one option pair per thread; the access stream is
the same three streamed reads and two streamed writes.) Per option: sqrtf, __logf, two cndGPU
calls (each an RCP, an exp and a polynomial), __expf.
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(options: int = 131072, grid: int = 480, block: int = 128):
    p = Program("blackscholes", source=MODEL.source)
    call = p.array("d_CallResult", options, copy_in=False)
    put = p.array("d_PutResult", options, copy_in=False)
    price = p.array("d_StockPrice", options)
    strike = p.array("d_OptionStrike", options)
    years = p.array("d_OptionYears", options)
    threads = grid * block
    with p.kernel("BlackScholesGPU", grid=grid, block=block, regs=24) as k:
        tid = k.blockIdx.x * block + k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD", count=2)
        for it in k.loop(np.maximum(0, -(-(options - tid) // threads))):
            opt = tid + it * threads
            s = k.load(price, opt)
            x = k.load(strike, opt)
            t = k.load(years, opt)
            sqrt_t = k.alu(k.sfu(t, op="MUFU.RSQ"), t, op="FMUL")
            lg = k.sfu(k.alu(s, k.sfu(x, op="MUFU.RCP"), op="FMUL"), op="MUFU.LG2")
            d1 = k.alu(lg, t, sqrt_t, op="FFMA", count=4)
            d1 = k.alu(d1, k.sfu(sqrt_t, op="MUFU.RCP"), op="FMUL")
            d2 = k.alu(d1, sqrt_t, op="FFMA")
            cnd = []
            for d in (d1, d2):                                 # cndGPU
                kk = k.sfu(k.alu(d, op="FFMA"), op="MUFU.RCP")
                poly = k.alu(kk, op="FFMA", count=5)
                e = k.sfu(k.alu(d, op="FMUL", count=2), op="MUFU.EX2")
                c = k.alu(poly, e, op="FMUL", count=2)
                cnd.append(k.alu(c, d, op="FSEL", count=2))
            exp_rt = k.sfu(k.alu(t, op="FMUL", count=2), op="MUFU.EX2")
            cr = k.alu(s, cnd[0], x, exp_rt, cnd[1], op="FFMA", count=3)
            pr = k.alu(x, exp_rt, cnd[1], s, cnd[0], op="FFMA", count=4)
            k.store(call, opt, cr)
            k.store(put, opt, pr)
    return p.trace()


MODEL = ModelSpec(
    name="blackscholes",
    klass="streaming",
    description="BlackScholes: three streamed inputs, two streamed outputs, SFU-heavy",
    source="NVIDIA CUDA SDK BlackScholes: BlackScholesGPU, BlackScholesBodyGPU (BlackScholes_kernel.cu)",
    sizes={"tiny": dict(options=4096, grid=32), "small": dict(options=131072),
           "medium": dict(options=1 << 20), "large": dict(options=4_000_000)},
    build=build,
)
