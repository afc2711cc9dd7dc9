"""HS3D: 3-D transient thermal stencil, one thread per (x, y) column marching through the layers.

Source: Rodinia, hotspot3D, kernel ``hotspotOpt1`` (opt1.cu, 3D.cu).

Launch: block (64, 4), grid (nx/64, ny/4); ``numiter`` launches swapping tIn/tOut. Per thread:
i = x index, j = y index, c = i + j*nx, xy = nx*ny; W = (i == 0) ? c : c - 1, E = (i == nx-1) ? c
: c + 1, N = (j == 0) ? c : c - nx, S = (j == ny-1) ? c : c + nx; temp1 = temp2 = tIn[c];
temp3 = tIn[c + xy]; tOut[c] = cc*temp2 + cw*tIn[W] + ce*tIn[E] + cs*tIn[S] + cn*tIn[N] + cb*temp1 +
ct*temp3 + sdc*p[c] + ct*amb; then for k in 1..nz-2 the indices advance by xy, temp3 = tIn[c + xy]
and the same 5-point plane reads, p[c] and the store; the last layer reuses temp3. Arrays are
allocated p, tIn, tOut. Neighbouring columns share lines inside a CTA; halos (N/S rows) are
shared with the CTAs above and below (ATA-Cache's low inter-core-locality HS3D).
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec


def build(n: int = 128, nz: int = 8, iterations: int = 2):
    nx = ny = n
    if nx % 64 or ny % 4 or nz < 2:
        raise ValueError(f"hotspot3d: nx must be a multiple of 64, ny of 4 and nz >= 2 (got {nx}, {ny}, {nz})")
    p = Program("hotspot3d", source=MODEL.source)
    size = nx * ny * nz
    pw = p.array("p_d", size)
    t_in = p.array("tIn_d", size)
    t_out = p.array("tOut_d", size, copy_in=False)
    xy = nx * ny
    for _ in range(iterations):
        with p.kernel("hotspotOpt1", grid=(nx // 64, ny // 4), block=(64, 4), regs=24) as k:
            i = k.blockIdx.x * 64 + k.threadIdx.x
            j = k.blockIdx.y * 4 + k.threadIdx.y
            c = i + j * nx
            W = np.where(i == 0, c, c - 1)
            E = np.where(i == nx - 1, c, c + 1)
            N = np.where(j == 0, c, c - nx)
            S = np.where(j == ny - 1, c, c + nx)
            k.alu(op="S2R", count=4)
            k.alu(op="IMAD", count=4)
            k.alu(op="SEL", count=4)
            temp2 = k.load(t_in, c, dst=k.reg())
            temp3 = k.load(t_in, c + xy, dst=k.reg())

            def layer(z, last=False):
                r = k.alu(temp2, op="FMUL")
                for q in k.unroll(4):                # tIn[W], tIn[E], tIn[S], tIn[N]: four loads in the source
                    r = k.alu(r, k.load(t_in, (W, E, S, N)[q] + z * xy), op="FFMA")
                r = k.alu(r, temp3, op="FFMA", count=2)
                r = k.alu(r, k.load(pw, c + z * xy), op="FFMA", count=2)
                k.store(t_out, c + z * xy, r)

            layer(0)
            for zz in k.loop(nz - 2):
                z = zz + 1
                k.alu(temp2, temp3, op="MOV", count=2)
                k.load(t_in, c + (z + 1) * xy, dst=temp3)
                layer(z)
                k.alu(op="IADD3", count=5)
            layer(nz - 1, last=True)
        t_in, t_out = t_out, t_in
    return p.trace()


MODEL = ModelSpec(
    name="hotspot3d",
    klass="stencil",
    description="HS3D: 3-D thermal stencil, each thread walks a column through the layers",
    source="Rodinia hotspot3D: hotspotOpt1 (opt1.cu)",
    sizes={"tiny": dict(n=64, nz=4, iterations=1), "small": dict(n=128, nz=8, iterations=2),
           "medium": dict(n=256, nz=8, iterations=4), "large": dict(n=512, nz=8, iterations=8)},
    build=build,
)
