"""cfd: unstructured-grid finite-volume solver for the 3-D Euler equations (Rodinia euler3d).

Source: Rodinia, cfd, kernels ``cuda_initialize_variables``, ``cuda_compute_step_factor``,
``cuda_compute_flux`` and ``cuda_time_step`` (euler3d.cu).

Layout: structure of arrays, variable v of element i at variables[i + v*nelr] (NVAR = 5),
neighbours elements_surrounding_elements[i + j*nelr] and normals[i + (j + k*NNB)*nelr] (NNB = 4,
NDIM = 3); nelr = nel rounded up to BLOCK_SIZE (192) and the padding elements copy the last
element's neighbours; every kernel runs nelr/192 CTAs of 192 threads, i = blockDim.x*blockIdx.x
+ threadIdx.x, without a bounds check. Per iteration: compute_step_factor, then RK = 3 times
compute_flux and time_step (old_variables is refreshed by a device-to-device cudaMemcpy, not a
kernel). compute_flux reads its element's 5 variables, then for each of the 4 faces (a loop under
``#pragma unroll``: each face has its own instructions) the neighbour index and normal; if
(nb >= 0) it gathers the neighbour's 5 variables (the irregular part), else if (nb == -1) a wing
wall or (nb == -2) the far field (constants).
The mesh is generated (Rodinia ships fvcorr.domn.097K): elements of a 3-D lattice with 4 face
neighbours each, as in a tetrahedral mesh, numbered in lattice order with random swaps inside
blocks of 64 elements, so neighbours are near but not adjacent in memory; faces leaving the
lattice in z are walls (-1), the others far field (-2).
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

BLOCK = 192
NNB, NDIM, NVAR, RK = 4, 3, 5, 3


def generate_mesh(nel: int, rng: np.random.Generator) -> np.ndarray:
    """(nel, NNB) neighbour table: element ids, -1 for wall faces, -2 for far-field faces."""
    nz = max(2, round(nel ** (1 / 3) / 2))
    nxy = -(-nel // nz)
    nx = max(1, int(np.sqrt(nxy)))
    ny = -(-nxy // nx)
    e = np.arange(nel)
    x, y, z = e % nx, (e // nx) % ny, e // (nx * ny)
    sx = np.where((y + z) % 2 == 0, 1, -1)
    sy = np.where((x + z) % 2 == 0, 1, -1)
    cand = [(x + sx, y, z), (x, y + sy, z), (x, y, z - 1), (x, y, z + 1)]
    nb = np.empty((nel, NNB), dtype=np.int64)
    for j, (cx, cy, cz) in enumerate(cand):
        idx = cx + nx * (cy + ny * cz)
        inside = (cx >= 0) & (cx < nx) & (cy >= 0) & (cy < ny) & (cz >= 0) & (cz < nz) & (idx < nel)
        nb[:, j] = np.where(inside, idx, np.where((cz < 0) | (cz >= nz), -1, -2))
    # Local renumbering: a random permutation inside each block of 64 elements.
    perm = np.arange(nel)
    for b0 in range(0, nel, 64):
        perm[b0:b0 + 64] = b0 + rng.permutation(min(64, nel - b0))
    new_id = np.empty(nel, dtype=np.int64)
    new_id[perm] = np.arange(nel)           # element perm[k] becomes element k
    table = nb[perm]
    return np.where(table >= 0, new_id[np.maximum(table, 0)], table)


def build(nel: int = 6144, iterations: int = 1, seed: int = 0):
    rng = np.random.default_rng(seed)
    mesh = generate_mesh(nel, rng)
    nelr = BLOCK * -(-nel // BLOCK)
    ese = np.concatenate([mesh, np.repeat(mesh[-1:], nelr - nel, axis=0)])   # padding copies the last
    ese_flat = ese.T.ravel()                 # elements_surrounding_elements[i + j*nelr]
    p = Program("cfd", source=MODEL.source)
    areas = p.array("areas", nelr)
    elements = p.array("elements_surrounding_elements", nelr * NNB, "i32")
    normals = p.array("normals", nelr * NDIM * NNB)
    variables = p.array("variables", nelr * NVAR, copy_in=False)
    old_variables = p.array("old_variables", nelr * NVAR, copy_in=False)
    fluxes = p.array("fluxes", nelr * NVAR, copy_in=False)
    step_factors = p.array("step_factors", nelr, copy_in=False)
    grid = nelr // BLOCK

    def index(k):
        k.alu(op="S2R", count=2)
        k.alu(op="IMAD")
        return k.blockIdx.x * BLOCK + k.threadIdx.x

    def flow_state(k, rho, mom, energy):
        """compute_velocity, compute_speed_sqd, compute_pressure, compute_speed_of_sound."""
        inv = k.sfu(rho, op="MUFU.RCP")
        vel = k.alu(mom, inv, op="FMUL", count=3)
        sq = k.alu(vel, op="FFMA", count=3)
        pres = k.alu(energy, rho, sq, op="FFMA", count=3)
        t = k.alu(pres, inv, op="FMUL")
        sound = k.sfu(t, op="MUFU.RSQ")
        sound = k.alu(sound, t, op="FMUL")
        return vel, sq, pres, sound

    for arr in (variables, old_variables, fluxes):
        with p.kernel("cuda_initialize_variables", grid=grid, block=BLOCK, regs=10) as k:
            i = index(k)
            for j in k.loop(NVAR):
                v = k.const()
                k.store(arr, i + j * nelr, v)

    for _ in range(iterations):
        with p.kernel("cuda_compute_step_factor", grid=grid, block=BLOCK, regs=20) as k:
            i = index(k)
            rho = k.load(variables, i)
            mom = [k.load(variables, i + (1 + d) * nelr) for d in k.unroll(NDIM)]   # momentum.x, .y, .z: three loads
            energy = k.load(variables, i + 4 * nelr)
            _, sq, _, sound = flow_state(k, rho, mom, energy)
            a = k.load(areas, i)
            sa = k.sfu(a, op="MUFU.RSQ")
            ss = k.sfu(sq, op="MUFU.RSQ")
            t = k.alu(sa, ss, sound, op="FFMA", count=3)
            r = k.sfu(t, op="MUFU.RCP")
            k.store(step_factors, i, k.alu(r, op="FMUL"))
        for j in range(RK):
            with p.kernel("cuda_compute_flux", grid=grid, block=BLOCK, regs=63) as k:
                i = index(k)
                rho = k.load(variables, i, dst=k.reg())
                mom = [k.load(variables, i + (1 + d) * nelr) for d in k.unroll(NDIM)]
                energy = k.load(variables, i + 4 * nelr)
                vel, sq, pres, sound = flow_state(k, rho, mom, energy)
                k.alu(vel, pres, op="FFMA", count=12, dst=k.reg())    # compute_flux_contribution
                speed = k.sfu(sq, op="MUFU.RSQ", dst=k.reg())
                flux = k.reg()
                k.alu(op="MOV", count=5, dst=flux)
                for jj in k.unroll(NNB):                    # #pragma unroll: each face has its own loads
                    nb_host = k.gather(ese_flat, i + jj * nelr)
                    nb = k.load(elements, i + jj * nelr)
                    nrm = [k.load(normals, i + (jj + d * NNB) * nelr) for d in k.unroll(NDIM)]
                    ln = k.alu(*nrm, op="FFMA", count=3)
                    ln = k.alu(k.sfu(ln, op="MUFU.RSQ"), ln, op="FMUL")
                    k.alu(nb, op="ISETP.GE.AND")
                    with k.where(nb_host >= 0):
                        rho_n = k.load(variables, nb_host, deps=nb)
                        mom_n = [k.load(variables, nb_host + (1 + d) * nelr, deps=nb) for d in k.unroll(NDIM)]
                        e_n = k.load(variables, nb_host + 4 * nelr, deps=nb)
                        _, sq_n, pres_n, sound_n = flow_state(k, rho_n, mom_n, e_n)
                        k.alu(mom_n, pres_n, op="FFMA", count=12)         # the neighbour's contribution
                        sp = k.sfu(sq_n, op="MUFU.RSQ")
                        factor = k.alu(ln, speed, sp, sound, op="FFMA", count=4)
                        k.alu(flux, factor, rho, rho_n, op="FFMA", count=5, dst=flux)
                        k.alu(flux, ln, op="FFMA", count=15, dst=flux)
                    with k.otherwise():
                        k.alu(nb, op="ISETP.EQ.AND")
                        with k.where(nb_host == -1):                         # wing
                            k.alu(flux, ln, pres, op="FFMA", count=3, dst=flux)
                        with k.where(nb_host == -2):                         # far field
                            ff = k.const()
                            k.alu(flux, ln, ff, op="FFMA", count=15, dst=flux)
                for v in k.unroll(NVAR):                    # five fluxes[...] = statements
                    k.store(fluxes, i + v * nelr, flux)
            with p.kernel("cuda_time_step", grid=grid, block=BLOCK, regs=16) as k:
                i = index(k)
                sf = k.load(step_factors, i)
                factor = k.alu(k.sfu(sf, op="MUFU.RCP"), sf, op="FFMA", count=2)
                for q in k.unroll(NVAR):                     # five statements, in the source's order:
                    v = (0, 4, 1, 2, 3)[q]                   # density, energy, momentum
                    o = k.load(old_variables, i + v * nelr)
                    f = k.load(fluxes, i + v * nelr)
                    k.store(variables, i + v * nelr, k.alu(o, factor, f, op="FFMA"))
    return p.trace()


MODEL = ModelSpec(
    name="cfd",
    klass="irregular",
    description="cfd (euler3d): flux kernel gathers 4 neighbours' state on an unstructured mesh",
    source="Rodinia cfd: cuda_compute_step_factor, cuda_compute_flux, cuda_time_step (euler3d.cu)",
    sizes={"tiny": dict(nel=384), "small": dict(nel=6144), "medium": dict(nel=24576, iterations=2),
           "large": dict(nel=97046, iterations=2)},
    build=build,
    minimum={"seed": 0},
)
