"""myocyte: cardiac myocyte ODE model; each launch evaluates the equations on one lane per CTA.

Source: Rodinia, myocyte (mode 0, the default ``myocyte.out 100 1 0``), kernel ``kernel`` with
device functions ``kernel_ecc`` and ``kernel_cam`` (kernel.cu, kernel_ecc.cu, kernel_cam.cu,
master.cu, embedded_fehlberg_7_8.cu).

master() copies d_initvalu (EQUATIONS = 91 floats) and d_params (PARAMETERS = 18) to the GPU and
launches kernel<<<2, NUMBER_THREADS = 32>>>; the Runge-Kutta-Fehlberg solver calls master 13
times per time step. kernel: ``if (bx == 0) { if (tx == 0) kernel_ecc(...) } else if (bx == 1)
{ if (tx == 0) { kernel_cam(... CaDyad = d_initvalu[35]*1e3 ...); kernel_cam(... [36] ...);
kernel_cam(... [37] ...) } }``: one lane of each 32-thread CTA does all the work, so about 1/32 of
the lanes are active (Atoofian's MYC: 4% at the L1, 2% at the L2). kernel_ecc reads d_params[15]
and 39 values of d_initvalu (offsets 0-20 and 22-39), evaluates ~1,100 floating-point operations
(59 exp, 9 log, 52 pow, 2 sqrt, 151 divisions; modelled as FP32 FFMA/MUFU, although double
literals promote part of them to FP64) and writes d_finavalu[0..45]; each kernel_cam reads 6
parameters and 15 state values at its offset (46, 61, 76), ~300 operations, and writes 15
derivatives and then d_finavalu[com_offset] (the source indexes d_finavalu where d_com is
meant; d_com is allocated and copied back but never written). Every launch has the same
instruction and address stream (the one data-dependent branch, on the membrane voltage, is taken
the resting-state way), so the model builds one launch and repeats it `launches` times.
"""
from gpucachex.workloads import dsl
from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

EQUATIONS, PARAMETERS = 91, 18
ECC_LOADS = list(range(0, 21)) + list(range(22, 40))
# kernel_cam's three calls: (valu_offset, params_offset, com_offset, the d_initvalu index of its Ca)
CAM_CALLS = ((46, 0, 0, 35), (61, 5, 1, 36), (76, 10, 2, 37))


def _math(k, inputs, exp=0, log=0, pow_=0, sqrt=0, div=0, fma=0):
    """A straight-line block of math with the source's operation counts, interleaved so each
    special function feeds later FFMAs."""
    src = list(inputs)[:3]
    r = k.alu(*src, op="FFMA")
    steps = [("EX2", exp), ("LG2", log), ("POW", pow_), ("RSQ", sqrt), ("RCP", div)]
    total_sfu = exp + log + pow_ + sqrt + div
    per = max(1, fma // max(1, total_sfu))
    left = fma
    for kind, count in steps:
        for _ in range(count):
            if kind == "POW":                                   # pow(x, y) = exp2(y * log2(x))
                r = k.alu(k.sfu(r, op="MUFU.LG2"), op="FMUL")
                r = k.sfu(r, op="MUFU.EX2")
            else:
                r = k.sfu(r, op=f"MUFU.{kind}")
            n = min(per, left)
            if n:
                r = k.alu(r, *src[:2], op="FFMA", count=n)
                left -= n
    if left:
        r = k.alu(r, op="FFMA", count=left)
    return r


def build(launches: int = 100):
    p = Program("myocyte", source=MODEL.source)
    d_initvalu = p.array("d_initvalu", EQUATIONS, copy_in=False)
    d_finavalu = p.array("d_finavalu", EQUATIONS, copy_in=False)
    d_params = p.array("d_params", PARAMETERS, copy_in=False)
    p.array("d_com", 3, copy_in=False)
    p.copy_in(d_initvalu)
    p.copy_in(d_params)
    with p.kernel("kernel", grid=2, block=32, regs=63) as k:
        bx, tx = k.blockIdx.x, k.threadIdx.x
        k.alu(op="S2R", count=2)
        k.alu(op="ISETP.NE.AND", count=2)
        with k.where((bx == 0) & (tx == 0)):                       # kernel_ecc
            cycle = k.load(d_params, 15)
            # straight-line source: d_initvalu_1 = d_initvalu[offset_1]; ... one load each, and
            # d_finavalu[offset_1] = ...; ... one store each
            vals = [k.load(d_initvalu, ECC_LOADS[q]) for q in k.unroll(len(ECC_LOADS))]
            r = _math(k, [cycle] + vals[-2:], exp=59, log=9, pow_=52, sqrt=2, div=151, fma=550)
            for off in k.unroll(46):
                k.store(d_finavalu, off, r)
        with k.where((bx == 1) & (tx == 0)):                       # three kernel_cam calls
            # kernel_cam is inlined at each of its three call sites: three copies of its code
            for call in k.unroll(3):
                valu_offset, params_offset, com_offset, ca = CAM_CALLS[call]
                c = k.load(d_initvalu, ca)
                c = k.alu(c, op="FMUL")
                prm = [k.load(d_params, params_offset + 1 + i) for i in k.unroll(4)]   # Btot .. PP1tot
                prm += [k.load(d_params, 16), k.load(d_params, 17)]
                vals = [k.load(d_initvalu, valu_offset + i) for i in k.unroll(15)]
                r = _math(k, [c] + prm[:1] + vals[:1], pow_=11, div=35, fma=170)
                for i in k.unroll(15):
                    k.store(d_finavalu, valu_offset + i, r)
                k.store(d_finavalu, com_offset, r)             # the source writes finavalu[com_offset], not d_com
    trace = p.trace()
    one = trace.kernels[0]
    # The copies share the one launch's columns, so the DSL's per-program check never sees them; but
    # a trace of `launches` launches is that many kernels to save and simulate: count them as the DSL
    # counts a loop of launches.
    per_launch = dsl.kernel_bytes(one)
    dsl.check_half_memory(f"program 'myocyte': {launches:,} launches of {per_launch:,} B each", launches * per_launch)
    trace.kernels = [one.replace(kernel_id=i + 1, attrs=dict(one.attrs)) for i in range(launches)]
    trace.memcpys = [(i, base, nbytes) for i in range(launches) for (_, base, nbytes) in trace.memcpys]
    return trace.validate()


MODEL = ModelSpec(
    name="myocyte",
    klass="low-utilisation",
    description="myocyte: ODE right-hand side on one lane of each of two 32-thread CTAs (~3% lanes active)",
    source="Rodinia myocyte: kernel, kernel_ecc, kernel_cam (kernel.cu, kernel_ecc.cu, kernel_cam.cu)",
    sizes={"tiny": dict(launches=4), "small": dict(launches=100), "medium": dict(launches=1000),
           "large": dict(launches=4000)},
    build=build,
)
