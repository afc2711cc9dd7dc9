"""Kernel models: contract tests over the whole registry (a new model is checked automatically),
then one known-shape test per model derived from its CUDA source, the characterization, and the
CLI listing."""
import math

import numpy as np
import pytest

import tracebuild
from gpucachex import simulate, workloads
from gpucachex.cli import main as cli_main
from gpucachex.trace import OpClass, Space
from gpucachex.workloads.characterize import characterize, requests
from gpucachex.workloads.dsl import popcount

NAMES = workloads.names()
_CACHE: dict = {}


def tiny(name, **params):
    """Tiny traces are built once per test session (they are immutable by convention)."""
    key = (name, tuple(sorted(params.items())))
    if key not in _CACHE:
        _CACHE[key] = workloads.make(name, "tiny", **params)
    return _CACHE[key]


def lanes(k, sel) -> int:
    return int(popcount(k.mask[sel]).sum())


def opcode_is(trace, k, prefix: str) -> np.ndarray:
    names = np.array([op.startswith(prefix) for op in trace.opcodes])
    return names[k.opcode]


def row_addresses(k, rows) -> np.ndarray:
    rows = np.atleast_1d(rows)
    n = popcount(k.mask[rows])
    idx = np.repeat(k.addr_offset[rows].astype(np.int64) - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))
    return k.addresses[idx]


def array_range(k, name):
    base, nbytes = k.attrs["arrays"][name]
    return base, base + nbytes


def in_array(k, addrs, name) -> np.ndarray:
    lo, hi = array_range(k, name)
    return (addrs >= lo) & (addrs < hi)


# ---- the registry contract ------------------------------------------------------------------

def test_at_least_twenty_models_covering_every_class():
    assert len(NAMES) >= 20
    assert {workloads.spec(n).klass for n in NAMES} == set(workloads.classes())
    for name in NAMES:
        info = workloads.info(name)
        assert info["description"] and "\n" not in info["description"]
        assert info["source"] and info["class"] in workloads.classes()
        assert set(info["sizes"]) == {"tiny", "small", "medium", "large"}
        doc = __import__(workloads.spec(name).build.__module__, fromlist=["x"]).__doc__
        assert "Source:" in doc, f"{name}: the model's docstring must name its source"


@pytest.mark.parametrize("name", NAMES)
def test_tiny_trace_obeys_the_representation(name):
    t = tiny(name)
    t.validate()
    s = t.summary()
    assert t.name == name and t.source == workloads.spec(name).source
    assert 0 < s["warp_insts"] < (50_000 if name == "histogram" else 20_000)
    assert s["mem_insts"] > 0
    for k in t.kernels:
        # every warp ends with EXIT; memory instructions carry a width, others none (LDC excepted)
        table = k.warp_table()
        last = table[:, 2] + table[:, 3] - 1
        assert (k.op_class[last] == OpClass.EXIT).all()
        mem = (k.op_class == OpClass.LOAD) | (k.op_class == OpClass.STORE) | (k.op_class == OpClass.ATOMIC)
        assert (k.width[~mem] == 0).all()
        assert (k.width[mem & (k.space != Space.CONST)] > 0).all()
        assert k.shmem_bytes <= 48 * 1024 and 0 < k.nregs <= 63


@pytest.mark.parametrize("name", NAMES)
def test_every_address_is_inside_its_array(name):
    for k in tiny(name).kernels:
        ranges = sorted(k.attrs["arrays"].values())
        if "local" in k.attrs:
            ranges.append((k.attrs["local"]["base"], k.attrs["local"]["bytes"]))
            ranges.sort()
        lo = np.array([b for b, _ in ranges], dtype=np.uint64)
        hi = np.array([b + n for b, n in ranges], dtype=np.uint64)
        for space in (Space.GLOBAL, Space.LOCAL, Space.SHARED):
            rows = np.flatnonzero((k.width > 0) & (k.space == space))
            if not rows.size:
                continue
            a = row_addresses(k, rows)
            width = np.repeat(k.width[rows].astype(np.uint64), popcount(k.mask[rows]))
            if space == Space.SHARED:
                assert int((a + width).max()) <= k.shmem_bytes, f"{name}/{k.name}: shared access past the window"
                continue
            i = np.searchsorted(lo, a, side="right") - 1
            assert (i >= 0).all() and (a + width <= hi[i]).all(), f"{name}/{k.name}: address outside every array"


@pytest.mark.parametrize("name", NAMES)
def test_deterministic(name):
    a, b = tiny(name), workloads.make(name, "tiny")
    assert a.opcodes == b.opcodes and a.memcpys == b.memcpys and len(a.kernels) == len(b.kernels)
    for ka, kb in zip(a.kernels, b.kernels):
        for col, va in ka.columns().items():
            assert np.array_equal(va, getattr(kb, col)), f"{name}/{ka.name}: column {col} differs"
        assert np.array_equal(ka.addresses, kb.addresses)


def test_small_sizes_are_in_range():
    for name in NAMES:
        s = workloads.make(name, "small").summary()["warp_insts"]
        assert 50_000 <= s <= 500_000, f"{name} small: {s:,} warp instructions"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_medium_sizes_are_long_enough(name):
    s = workloads.make(name, "medium").summary()["warp_insts"]
    assert 1_000_000 <= s <= 5_000_000, f"{name} medium: {s:,} warp instructions"


def test_bad_requests_name_the_problem():
    with pytest.raises(ValueError, match="unknown workload 'nope'"):
        workloads.make("nope")
    with pytest.raises(ValueError, match="unknown size 'huge'"):
        workloads.make("sgemm", "huge")
    with pytest.raises(TypeError, match="'sgemm' has no parameter 'm'"):
        workloads.make("sgemm", "tiny", m=3)
    with pytest.raises(ValueError, match="multiples of block=16"):
        workloads.make("sgemm", "tiny", n=40)
    # Parameters are integers (None where the model allows it); a value the model cannot build
    # from is reported with the model, the size and every parameter of the build.
    with pytest.raises(TypeError, match=r"'bfs': parameter nodes must be an integer, got 1\.5"):
        workloads.make("bfs", "tiny", nodes=1.5)
    with pytest.raises(TypeError, match=r"'gemm': parameter ni must be an integer or None, got 'x'"):
        workloads.make("gemm", "tiny", ni="x")
    with pytest.raises(TypeError, match="got True"):
        workloads.make("bfs", "tiny", nodes=True)
    with pytest.raises(ValueError, match=r"'lib' at size 'tiny' cannot be built with npath=256, nn=1, nmat=4, "):
        workloads.make("lib", "tiny", nn=1)
    # Counts, dimensions and iterations start at 1, seeds (and what a model declares) at 0: a zero or
    # negative count would build an empty or meaningless trace
    for name, key, value in [("vectoradd", "block", 0), ("bfs", "nodes", -5), ("hotspot", "sim_time", 0),
                             ("stencil", "iterations", -1), ("myocyte", "launches", 0), ("cfd", "iterations", -1)]:
        with pytest.raises(ValueError, match=rf"'{name}': parameter {key} must be at least 1, got {value}"):
            workloads.make(name, "tiny", **{key: value})
    with pytest.raises(ValueError, match="parameter seed must be at least 0, got -1"):
        workloads.make("bfs", "tiny", seed=-1)
    with pytest.raises(ValueError, match="parameter range_size must be at least 0, got -1"):
        workloads.make("btree", "tiny", range_size=-1)
    # and a model's own floor, where its kernels need more (a stencil's inner planes, fwt's radix-4 blocks)
    for name, key, low in [("stencil", "nz", 2), ("fwt", "log2n", 2)]:
        with pytest.raises(ValueError, match=rf"'{name}': parameter {key} must be at least {low}, got {low - 1}"):
            workloads.make(name, "tiny", **{key: low - 1})
        assert workloads.make(name, "tiny", **{key: low}).summary()["warp_insts"] > 0
    # and its ceiling: fwt's 1 << log2n is an int in the SDK (10**7 failed formatting a 3-million-digit count)
    for log2n in (31, 10**7):
        with pytest.raises(ValueError, match=rf"'fwt' at size 'tiny' cannot be built with log2n={log2n}: fwt: log2n "
                                             r"must be at most 30 \(the SDK computes 1 << log2N in an int\)"):
            workloads.make("fwt", "tiny", log2n=log2n)
    assert len(workloads.make("btree", "tiny", queries=0).kernels) == 1
    with pytest.raises(ValueError, match="'btree' at size 'tiny' with .*queries=0, range_queries=0.* launches no kernel"):
        workloads.make("btree", "tiny", queries=0, range_queries=0)
    with pytest.raises(TypeError, match="'lib': parameter greeks must be True or False, got -1"):
        workloads.make("lib", "tiny", greeks=-1)
    assert workloads.make("gemm", "tiny", ni=None).summary() == workloads.make("gemm", "tiny").summary()


@pytest.mark.parametrize("name, key, value", [
    ("vectoradd", "n", np.uint64(1000)),   # -np.uint64(1000) // 256 wrapped to a grid of 2^64 / 256 CTAs
    ("bfs", "nodes", np.uint32(1000)),
    ("sgemm", "n", np.int16(256)),         # np.int16(256) * 256 wrapped to 0 elements
    ("gemm", "n", np.int16(200)),
])
def test_numpy_integer_parameters_build_what_python_integers_build(name, key, value):
    """Parameters may be numpy integers; the models' size and grid arithmetic must not wrap in their
    dtype."""
    t = workloads.make(name, "tiny", **{key: value})
    same = workloads.make(name, "tiny", **{key: int(value)})
    assert t.summary() == same.summary()
    assert type(t.kernels[0].attrs["params"][key]) is int


def test_parameters_override_the_size():
    t = workloads.make("vectoradd", "tiny", n=1000)
    assert t.summary()["addresses"] == 3000
    assert t.kernels[0].attrs["params"]["n"] == 1000


def test_make_takes_the_name_size_form_of_sweeps():
    t = workloads.make("vectoradd:tiny", n=1000)
    assert t.summary() == workloads.make("vectoradd", "tiny", n=1000).summary()
    assert t.kernels[0].attrs["size"] == "tiny" and t.name == "vectoradd"
    assert workloads.make("vectoradd:tiny", "tiny").summary() == workloads.make("vectoradd", "tiny").summary()
    with pytest.raises(ValueError, match="names size 'tiny', but size='small' was given"):
        workloads.make("vectoradd:tiny", "small")
    with pytest.raises(ValueError, match="unknown size 'huge'"):
        workloads.make("vectoradd:huge")


# ---- known shapes, one per model ------------------------------------------------------------

def per_warp_counts(t, k, prefix):
    sel = opcode_is(t, k, prefix)
    key = k.cta.astype(np.int64) * k.warps_per_cta + k.warp
    return np.bincount(key[sel], minlength=k.grid_ctas * k.warps_per_cta)


def test_sgemm_shape():
    n = 48
    t = tiny("sgemm")
    (k,) = t.kernels
    assert k.grid == (3, 3, 1) and k.block == (16, 16, 1) and k.warps_per_cta == 8
    iters = n // 16
    assert (per_warp_counts(t, k, "LDG") == 2 * iters).all()
    assert (per_warp_counts(t, k, "STS") == 2 * iters).all()
    assert (per_warp_counts(t, k, "LDS") == 2 * 16 * iters).all()
    assert (per_warp_counts(t, k, "BAR") == 2 * iters).all()
    assert (per_warp_counts(t, k, "STG") == 1).all()
    assert (per_warp_counts(t, k, "FFMA") == 16 * iters).all()
    # A[a + wA*ty + tx] for warp 0 (ty = 0, 1) of CTA (0, 0), first tile; CTAs of a grid row share A
    ldg = np.flatnonzero(opcode_is(t, k, "LDG"))
    a0 = array_range(k, "d_A")[0]
    first = row_addresses(k, ldg[0])
    expect = a0 + 4 * np.array([ty * n + tx for ty in range(2) for tx in range(16)], dtype=np.uint64)
    assert np.array_equal(first, expect)
    a_loads = [row_addresses(k, r) for r in ldg if k.warp[r] == 0 and in_array(k, row_addresses(k, r), "d_A").all()]
    by_cta = {}
    for r in ldg:
        if k.warp[r] == 0:
            by_cta.setdefault(int(k.cta[r]), []).append(row_addresses(k, r))
    assert all(np.array_equal(x, y) for x, y in zip(by_cta[0][0::2], by_cta[1][0::2]))   # A tiles
    assert len(a_loads) == 9 * iters


def test_conv3d_shape():
    n = 24
    t = tiny("conv3d")
    assert len(t.kernels) == n - 2
    for i, k in enumerate(t.kernels, start=1):
        assert k.grid == (1, 3, 1) and k.block == (32, 8, 1)
        ld = opcode_is(t, k, "LDG")
        st = opcode_is(t, k, "STG")
        interior = (n - 2) * (n - 2)
        assert lanes(k, ld) == 11 * interior and lanes(k, st) == interior
        b0 = array_range(k, "B_gpu")[0]
        got = (row_addresses(k, np.flatnonzero(st)) - np.uint64(b0)) // 4
        expect = {i * n * n + j * n + kk for j in range(1, n - 1) for kk in range(1, n - 1)}
        assert set(got.tolist()) == expect


def test_doitgen_shape():
    n = 12
    t = tiny("doitgen")
    assert [k.name for k in t.kernels] == ["doitgen_kernel1", "doitgen_kernel2"] * n
    k1 = t.kernels[0]
    threads = n * n                                   # p < NP and q < NQ
    assert lanes(k1, opcode_is(t, k1, "LDG")) == 2 * n * threads
    assert lanes(k1, opcode_is(t, k1, "STG")) == (n + 1) * threads
    # the A load is warp-uniform (one q per warp): every lane of an instruction hits one address
    for r in np.flatnonzero(opcode_is(t, k1, "LDG"))[:40]:
        a = row_addresses(k1, r)
        if in_array(k1, a, "AGpu").all():
            assert np.unique(a).size == 1


def test_gemm_shape():
    n = 32
    t = tiny("gemm")
    (k,) = t.kernels
    assert lanes(k, opcode_is(t, k, "LDG")) == (1 + 2 * n) * n * n
    assert lanes(k, opcode_is(t, k, "STG")) == (1 + n) * n * n


def test_bicg_shape():
    n = 192
    t = tiny("bicg")
    k1, k2 = t.kernels
    assert k1.grid == (1, 1, 1) and k1.block == (256, 1, 1)
    assert lanes(k1, opcode_is(t, k1, "LDG")) == 2 * n * n
    # kernel 2 walks a row per lane: every A load of a full warp touches 32 different lines
    for r in np.flatnonzero(opcode_is(t, k2, "LDG"))[:20]:
        a = row_addresses(k2, r)
        if in_array(k2, a, "A_gpu").all() and a.size == 32:
            assert np.unique(a // 128).size == 32


@pytest.mark.parametrize("name", ["atax", "mvt"])
def test_atax_mvt_repeat_the_work_in_eight_warps(name):
    t = tiny(name)
    for k in t.kernels:
        assert k.block == (32, 8, 1) and k.warps_per_cta == 8
        mem = np.flatnonzero((k.width > 0) & (k.cta == 0))
        streams = [row_addresses(k, mem[k.warp[mem] == w]) for w in range(8)]
        assert all(np.array_equal(streams[0], s) for s in streams[1:])
    if name == "mvt":
        k = t.kernels[0]
        assert (per_warp_counts(t, k, "LDG") == 1 + 2 * 64).all()   # x1[i] once, then a and y_1


def test_lib_is_local_memory_and_two_global_stores():
    t = tiny("lib")
    npath = 256
    k2, k1 = t.kernels
    assert (k2.grid, k2.block) == ((4, 1, 1), (64, 1, 1))
    for k, stores in ((k2, 1), (k1, 2)):
        glob = (k.width > 0) & (k.space == Space.GLOBAL)
        assert (k.op_class[glob] == OpClass.STORE).all() and lanes(k, glob) == stores * npath
        loc = np.flatnonzero((k.width > 0) & (k.space == Space.LOCAL))
        assert loc.size > 10 * glob.sum()
        for r in loc[:50]:                       # a warp's local access is 128 contiguous bytes
            a = row_addresses(k, r)
            assert np.array_equal(np.diff(a.astype(np.int64)), np.full(31, 4))


def test_bfs_runs_the_real_search():
    from gpucachex.workloads.models.bfs import rodinia_graph
    nodes = 1024
    t = tiny("bfs")
    starting, degree, edges = rodinia_graph(nodes, np.random.default_rng(0))
    cost = np.full(nodes, -1)
    cost[0] = 0
    frontier = [0]
    while frontier:
        nxt = []
        for u in frontier:
            for v in edges[starting[u]:starting[u] + degree[u]]:
                if cost[v] < 0:
                    cost[v] = cost[u] + 1
                    nxt.append(v)
        frontier = nxt
    levels = cost.max() + 1
    assert [k.name for k in t.kernels] == ["Kernel", "Kernel2"] * levels     # the last pair finds nothing new
    # each reached node's adjacency list is read exactly once, over the Kernel launches
    edge_reads = 0
    for k in t.kernels[0::2]:
        rows = np.flatnonzero(k.width > 0)
        edge_reads += int(in_array(k, row_addresses(k, rows), "d_graph_edges").sum())
    assert edge_reads == int(degree[cost >= 0].sum())


def test_btree_descends_to_the_queried_record():
    from gpucachex.workloads.models.btree import ORDER, Tree
    t = tiny("btree")
    keys, queries = 16384, 16
    rng = np.random.default_rng(0)
    tree = Tree(keys, rng)
    qkeys = np.minimum((rng.random(queries) * keys).astype(np.int64), keys - 1)
    find_k = t.kernels[0]
    assert find_k.name == "findK" and find_k.grid == (queries, 1, 1) and find_k.block == (ORDER, 1, 1)
    rows = np.flatnonzero(find_k.width > 0)
    a = row_addresses(find_k, rows)
    cta = np.repeat(find_k.cta[rows], popcount(find_k.mask[rows]))
    rec = in_array(find_k, a, "recordsD")
    base = array_range(find_k, "recordsD")[0]
    assert np.array_equal(cta[rec], np.arange(queries))
    assert np.array_equal((a[rec] - np.uint64(base)) // 4, qkeys)
    # every query reads the root node: all CTAs share it
    root_lo = array_range(find_k, "knodesD")[0]
    root = (a >= root_lo) & (a < root_lo + 2068)
    assert set(cta[root].tolist()) == set(range(queries)) and tree.height >= 1


def test_cfd_gathers_the_neighbours():
    from gpucachex.workloads.models.cfd import BLOCK, NNB, generate_mesh
    nel = 384
    t = tiny("cfd")
    assert [k.name for k in t.kernels] == ["cuda_initialize_variables"] * 3 + ["cuda_compute_step_factor"] + \
        ["cuda_compute_flux", "cuda_time_step"] * 3
    mesh = generate_mesh(nel, np.random.default_rng(0))
    flux = t.kernels[4]
    assert flux.grid == (nel // BLOCK, 1, 1)
    interior = int((mesh >= 0).sum())
    assert lanes(flux, opcode_is(t, flux, "LDG")) == nel * (5 + NNB * 4) + 5 * interior
    assert lanes(flux, opcode_is(t, flux, "STG")) == 5 * nel


def test_vectoradd_streams_once():
    t = tiny("vectoradd", n=1000)
    (k,) = t.kernels
    assert k.grid == (4, 1, 1) and k.block == (256, 1, 1)
    rows = np.flatnonzero(k.width > 0)
    assert lanes(k, rows) == 3000
    assert all(np.unique(row_addresses(k, r) // 128).size == 1 for r in rows)


def test_fwt_kernel_sequence():
    t = tiny("fwt", log2n=15)
    pass_ = ["fwtBatch2Kernel", "fwtBatch2Kernel", "fwtBatch1Kernel"]
    assert [k.name for k in t.kernels] == pass_ * 2 + ["modulateKernel"] + pass_
    b1 = t.kernels[2]
    assert b1.grid == (16, 1, 1) and b1.block == (512, 1, 1) and b1.shmem_bytes == 8192
    b2 = t.kernels[0]
    assert b2.grid == (32, 1, 1) and lanes(b2, opcode_is(t, b2, "LDG")) == 4 * 32 * 256


def test_fwt_modulate_reads_both_arrays_once():
    # modulateKernel<<<128, 256>>>: for (pos = tid; pos < N; pos += 32768) d_A[pos] *= d_B[pos] * rcpN;
    # with N = 2^16 every thread runs two iterations: each element of d_Data and d_Kernel is
    # loaded once and each element of d_Data stored once
    t = tiny("fwt", log2n=16)
    (k,) = [k for k in t.kernels if k.name == "modulateKernel"]
    ld = row_addresses(k, np.flatnonzero(opcode_is(t, k, "LDG")))
    st = row_addresses(k, np.flatnonzero(opcode_is(t, k, "STG")))
    n = 1 << 16
    for name in ("d_Data", "d_Kernel"):
        lo, _ = array_range(k, name)
        assert np.array_equal(np.sort(ld[in_array(k, ld, name)]), lo + 4 * np.arange(n, dtype=np.uint64))
    lo, _ = array_range(k, "d_Data")
    assert ld.size == 2 * n and np.array_equal(np.sort(st), lo + 4 * np.arange(n, dtype=np.uint64))


def test_blackscholes_options():
    t = tiny("blackscholes", options=1000, grid=2)
    (k,) = t.kernels
    assert lanes(k, opcode_is(t, k, "LDG")) == 3000 and lanes(k, opcode_is(t, k, "STG")) == 2000
    assert (opcode_is(t, k, "MUFU") & (k.mask != 0)).sum() > 7 * 1000 / 32


def test_scan_three_kernels_and_vector_accesses():
    t = tiny("scan")
    assert [k.name for k in t.kernels] == ["scanExclusiveShared", "scanExclusiveShared2", "uniformUpdate"]
    assert [k.grid[0] for k in t.kernels] == [16, 1, 16]
    k = t.kernels[0]
    assert set(k.width[opcode_is(t, k, "LDG")].tolist()) == {16}


@pytest.mark.parametrize("n", [3 * 1024, 6 * 1024, (1 << 18) + 1024, 3 << 17, 1 << 27, 1024])
def test_scan_refuses_lengths_scan_exclusive_large_asserts_against(n):
    """The shared-memory scan of arrayLength/1024 elements is a prefix sum only for a power of two
    (3072 elements scanned 3-element segments), and a batch must hold whole 262,144-element arrays
    of at most 64 Mi elements in all: scanExclusiveLarge asserts both."""
    with pytest.raises(ValueError, match=rf"'scan' at size 'tiny' cannot be built with n={n}: scan: n must be a "
                                         rf"power of two from 2048 to 262144 \(one array\) or a multiple of 262144 "
                                         rf"up to 67108864 \(a batch of them\), as scanExclusiveLarge asserts; got {n}"):
        workloads.make("scan", "tiny", n=n)


def test_scan_takes_one_array_or_a_batch_of_whole_ones():
    for good in (2048, 1 << 14, 3 << 18):
        assert workloads.make("scan", "tiny", n=good).kernels[0].grid[0] == good // 1024


def test_hotspot_writes_every_cell_once():
    n = 48
    t = tiny("hotspot")
    (k,) = t.kernels
    assert k.grid == (4, 4, 1) and k.block == (16, 16, 1) and k.shmem_bytes == 3 * 1024
    st = np.flatnonzero(opcode_is(t, k, "STG"))
    a = row_addresses(k, st)
    assert a.size == n * n and np.unique(a).size == n * n


def test_hotspot_short_last_launch_steps_its_own_tiles():
    # sim_time 3 with pyramid_height 2: launches of iteration = MIN(2, 3 - t) = 2, then 1. The grid
    # (4x4, small block 12) and the border (2) come from pyramid_height; the kernel's small block
    # is 16 - 2*iteration, 14 in the last launch, whose computing threads still write each cell
    # once (12-cell steps would write the tiles' overlaps twice: 2916 lanes)
    n = 48
    t = workloads.make("hotspot", n=n, pyramid_height=2, sim_time=3)
    assert [k.grid for k in t.kernels] == [(4, 4, 1)] * 2
    for k, dst in zip(t.kernels, ("MatrixTemp[1]", "MatrixTemp[0]")):
        a = row_addresses(k, np.flatnonzero(opcode_is(t, k, "STG")))
        assert a.size == n * n and np.unique(a).size == n * n and in_array(k, a, dst).all()


def test_hotspot3d_loads_per_column():
    n, nz = 64, 4
    t = tiny("hotspot3d")
    (k,) = t.kernels
    assert k.grid == (1, 16, 1) and k.block == (64, 4, 1)
    assert lanes(k, opcode_is(t, k, "LDG")) == n * n * (7 + 6 * (nz - 2) + 5)
    assert lanes(k, opcode_is(t, k, "STG")) == n * n * nz


def test_stencil_updates_the_interior_once():
    nx, ny, nz = 64, 64, 8
    t = tiny("stencil")
    (k,) = t.kernels
    assert k.grid == (1, 16, 1) and k.block == (32, 4, 1)
    st = row_addresses(k, np.flatnonzero(opcode_is(t, k, "STG")))
    assert st.size == (nx - 2) * (ny - 2) * (nz - 2) == np.unique(st).size
    # lane 0's west neighbour comes from global memory, the other lanes' from shared memory
    lds = opcode_is(t, k, "LDS") & (k.mask != 0)
    assert lds.sum() > 0


def test_srad_kernel_sequence():
    t = tiny("srad")
    assert [k.name for k in t.kernels] == ["extract", "prepare", "reduce", "reduce", "srad", "srad2", "compress"]
    assert [k.grid[0] for k in t.kernels[2:4]] == [6, 1]
    k = t.kernels[4]
    assert lanes(k, opcode_is(t, k, "STG")) == 5 * 64 * 48
    assert lanes(k, opcode_is(t, k, "LDG")) == 9 * 64 * 48


def test_histogram_atomics_follow_the_data():
    t = tiny("histogram")
    k = t.kernels[0]
    assert k.grid == (16, 1, 1) and k.block == (192, 1, 1)
    atom = np.flatnonzero(k.op_class == OpClass.ATOMIC)
    assert (k.space[atom] == Space.SHARED).all()
    a = row_addresses(k, atom).astype(np.int64)
    bins = (a // 4) % 256
    data = np.random.default_rng(0).integers(0, 256, size=1 << 14, dtype=np.uint8)
    assert np.array_equal(np.bincount(bins, minlength=256), np.bincount(data, minlength=256))


def test_nw_wavefront():
    n = 64
    t = tiny("nw")
    assert [k.name for k in t.kernels] == ["needle_cuda_shared_1"] * 4 + ["needle_cuda_shared_2"] * 3
    assert [k.grid[0] for k in t.kernels] == [1, 2, 3, 4, 3, 2, 1]
    assert all(k.block == (16, 1, 1) and (k.mask <= 0xFFFF).all() for k in t.kernels)
    written = np.concatenate([row_addresses(k, np.flatnonzero(opcode_is(t, k, "STG"))) for k in t.kernels])
    assert written.size == n * n == np.unique(written).size


def test_gaussian_shape_and_utilisation():
    t = tiny("gaussian")
    assert [k.name for k in t.kernels] == ["Fan1", "Fan2"] * 15
    assert all((k.mask <= 0xFFFF).all() for k in t.kernels[1::2])     # 4x4 CTAs: half warps
    u = characterize(t)["mem_warp_util"]
    assert 0.1 < u < 0.5


def test_myocyte_uses_one_lane_per_cta():
    t = tiny("myocyte")
    assert len(t.kernels) == 4 and all(k.grid == (2, 1, 1) and k.block == (32, 1, 1) for k in t.kernels)
    k = t.kernels[0]
    assert set(k.mask[k.width > 0].tolist()) == {1}
    c = characterize(t)
    assert c["warp_util"] < 0.1 and c["mem_warp_util"] < 0.05


def test_myocyte_refuses_more_launches_than_memory_holds(monkeypatch):
    """myocyte repeats one traced launch, so the DSL's program check never sees the copies: a huge
    launch count built a list of kernels until the OS killed the process. It is refused up front,
    counted as the DSL counts a loop of launches."""
    from gpucachex.workloads import dsl

    per_launch = sum(c.nbytes for c in tiny("myocyte").kernels[0].columns().values())
    per_launch += tiny("myocyte").kernels[0].addresses.nbytes
    monkeypatch.setattr(dsl, "memory_bytes", lambda: 200 * per_launch)   # room for 100 launches
    assert len(workloads.make("myocyte", "tiny", launches=100).kernels) == 100
    with pytest.raises(MemoryError, match=r"'myocyte' at size 'tiny' with launches=101 does not fit in memory: "
                                          r"program 'myocyte': 101 launches of [\d,]+ B each take"):
        workloads.make("myocyte", "tiny", launches=101)


# Distinct PCs of the memory loads (global, shared, local) and stores of each kernel, counted in
# the benchmark's source: every load or store statement is its own instruction, including
# straight-line repeats, `#pragma unroll` copies and inlined device functions; a statement in a
# source loop is one instruction. (Loads the compiler merges, as each model's docstring says, count
# once.) A model that wrote straight-line code as a Python loop gave it one PC.
SOURCE_PCS = [
    # conv3d: the 15-term expression names 11 distinct A elements; one B store
    ("conv3d", {}, "convolution3D_kernel", (11, 1)),
    # hotspotOpt1: tIn[c], tIn[c+xy]; first plane tIn[W], [E], [S], [N], p[c]; loop body tIn[c+xy]
    # and the same 5; last plane the same 5 (2 + 5 + 6 + 5); tOut[c] in the 3 places
    ("hotspot3d", {}, "hotspotOpt1", (18, 3)),
    # fwtBatch2Kernel: D0..D3 = d_Src[i0..i3], then d_Dst[i0..i3] = ...
    ("fwt", dict(log2n=13), "fwtBatch2Kernel", (4, 4)),
    # fwtBatch1Kernel (log2N = 11, odd): d_Src[pos] (a loop), s_data[i0..i3] in the radix-4 loop,
    # s_data[i0], s_data[i1] in the radix-2 loop, s_data[pos] in the copy-out loop; stores
    # s_data[pos], s_data[i0..i3], s_data[i0], s_data[i1], d_Dst[pos]
    ("fwt", dict(log2n=13), "fwtBatch1Kernel", (8, 8)),
    # modulateKernel: d_A[pos] *= d_B[pos] * rcpN in a loop
    ("fwt", dict(log2n=13), "modulateKernel", (2, 1)),
    # cuda_compute_step_factor: density, momentum.x/.y/.z, density_energy, areas[i]
    ("cfd", {}, "cuda_compute_step_factor", (6, 1)),
    # cuda_compute_flux: 5 variables of i, then #pragma unroll over 4 faces of nb, normal.x/.y/.z
    # and the neighbour's 5 variables (5 + 4 * 9 = 41); 5 fluxes[...] stores
    ("cfd", {}, "cuda_compute_flux", (41, 5)),
    # cuda_time_step: step_factors[i], then 5 statements of old_variables[...] + factor*fluxes[...]
    ("cfd", {}, "cuda_time_step", (11, 5)),
    # kernel: kernel_ecc reads d_params[15] and 39 d_initvalu values and writes 46 d_finavalu;
    # kernel_cam, inlined 3 times: d_initvalu[35/36/37] in kernel(), 6 d_params, 15 d_initvalu,
    # 15 + 1 d_finavalu stores (40 + 3 * 22 = 106 loads, 46 + 3 * 16 = 94 stores)
    ("myocyte", {}, "kernel", (106, 94)),
    # findK loop: currKnodeD, keysD, keys[thid], keys[thid+1], offsetD, indices[thid], offsetD
    # (thid 0); then currKnodeD, keysD, keys[thid], indices[thid], recordsD
    ("btree", {}, "findK", (12, 3)),
    # findRangeK: the start and the end tests are written out twice (2 * 6), offsetD and
    # offset_2D (thid 0), then 4 loads for the start leaf and 5 for the end leaf
    ("btree", {}, "findRangeK", (23, 6)),
    # block2D_hybrid_coarsen_x: 4 loads before the loop; in it top, then for i a_left_right,
    # a_down, a_top (each a global and a shared load), sh_A0[sh_id+1], sh_A0[sh_id]; the same for
    # i2 with top2; the 2 swap loads (4 + 2 * 9 + 2)
    ("stencil", dict(nx=128, ny=16, nz=4), "block2D_hybrid_coarsen_x", (24, 8)),
]


@pytest.mark.parametrize("name, params, kernel, counts", SOURCE_PCS, ids=[f"{n}-{k}" for n, _, k, _ in SOURCE_PCS])
def test_each_source_load_and_store_has_its_own_pc(name, params, kernel, counts):
    t = workloads.make(name, "tiny", **params)
    mem = [(k.space == Space.GLOBAL) | (k.space == Space.SHARED) | (k.space == Space.LOCAL) for k in t.kernels]
    launches = [(k, m) for k, m in zip(t.kernels, mem) if k.name == kernel]
    assert launches
    for k, m in launches:
        got = tuple(np.unique(k.pc[m & (k.op_class == c)]).size for c in (OpClass.LOAD, OpClass.STORE))
        assert got == counts, f"{name} {kernel}: (load, store) PCs {got}, the source has {counts}"


def test_srad_reduce_tree_has_a_pc_per_shared_array():
    # reduce's tree: d_psum[tx] = d_psum[tx] + d_psum[tx-i/2]; d_psum2[tx] = ... (two statements).
    # Its first launch has full CTAs: d_sums, d_sums2 (2 global), the tree's 4 shared loads and
    # the 2 of the final write
    k = next(k for k in tiny("srad").kernels if k.name == "reduce")
    ld = k.op_class == OpClass.LOAD
    assert [np.unique(k.pc[ld & (k.space == s)]).size for s in (Space.GLOBAL, Space.SHARED)] == [2, 6]


# ---- characterization -------------------------------------------------------------------------

def test_characterization_tells_the_locality_classes_apart():
    mm, lib, bfs, va = (characterize(tiny(n)) for n in ("sgemm", "lib", "bfs", "vectoradd"))
    assert mm["reuse_inter"] > 0.99 and mm["lines_multi_sm"] > 0.9
    assert lib["reuse_intra"] > 0.99 and lib["lines_multi_cta"] < 0.01
    assert bfs["lines_per_warp_lanes"] > 3 * va["lines_per_warp_lanes"] and bfs["warp_util"] < 0.5
    assert va["req_per_line"] == 1.0 and va["l2_hit"] == 0.0 and va["l1_hit"] == 0.0


@pytest.mark.parametrize("opcode, l1_hit", [("LDG.E", 0.5), ("LDG.E.CG", None), ("LDG.E.STRONG.GPU", None),
                                            ("LDL", 0.5), ("LDL.CG", 0.5)])
def test_functional_l1_sees_only_the_loads_the_l1d_caches(opcode, l1_hit):
    """Two loads of one line: uncached global loads (.CG, strong GPU scope) go to the L2 only, as in
    the timing model, which caches local data whatever the modifiers. When no load reaches the L1D
    (l1_hit None), its hit rate is undefined in both: NaN."""
    line = tracebuild.lanes(0x10000000)
    prog = [tracebuild.ld(1, line, opcode=opcode), tracebuild.ld(2, line, opcode=opcode, src=(1,)),
            tracebuild.Inst("EXIT")]
    t = tracebuild.build([tracebuild.KernelSpec([[prog]], threads_per_cta=32)])
    c = characterize(t)
    assert c["l2_hit"] == 0.5
    assert requests(t)["bypass"].tolist() == [l1_hit is None] * 2
    r = simulate("gtx480", t, energy=False)
    if l1_hit is None:
        assert math.isnan(c["l1_hit"])
        assert r["l1d_accesses"] == 0 and math.isnan(r["l1d_hit_rate"])
    else:
        assert c["l1_hit"] == r["l1d_hit_rate"] == l1_hit


@pytest.mark.parametrize("store, l1_hit, fills", [("STG.E", 0.0, 2), ("STG.E.CG", 0.5, 1), ("RED.E.ADD", 0.5, 1),
                                                  ("STL", 2 / 3, 1), (None, 0.5, 1)])
def test_functional_l1_global_stores_write_evict(store, l1_hit, fills):
    """Load A, store A, load A on one SM: a global store evicts the line from the L1D (Fermi's
    write-evict, as in the timing model), so the second load misses. A .CG store and an atomic go
    to the L2 without touching the L1D; a local store is an access of the write-back L1D and keeps
    the line. The functional rate counts loads and local accesses only; the timing model's line
    fills say whether the second load missed."""
    line = tracebuild.lanes(0x10000000)
    between = [] if store is None else [tracebuild.st(line, opcode=store, src=(1,))]
    ld = "LDL" if store == "STL" else "LDG.E"
    prog = [tracebuild.ld(1, line, opcode=ld), *between, tracebuild.ld(2, line, opcode=ld, src=(1,)),
            tracebuild.Inst("EXIT")]
    t = tracebuild.build([tracebuild.KernelSpec([[prog]], threads_per_cta=32)])
    assert characterize(t)["l1_hit"] == l1_hit
    assert simulate("gtx480", t, energy=False)["l1d_fills"] == fills


def test_functional_l1_is_lru():
    # without stores the write-evict pass is the LRU cache that cache_run simulates
    from gpucachex import cache_run
    from gpucachex.workloads.characterize import l1_write_evict_hits

    lines = np.random.default_rng(1).integers(0, 400, size=20000)
    r = cache_run((lines * 128).astype(np.uint64), sets=32, ways=4, line_bytes=128, policy="lru")
    assert l1_write_evict_hits(lines, np.zeros(lines.size, dtype=bool), 32, 4) == (r["hits"], r["accesses"])


def test_characterization_refuses_what_it_cannot_count():
    t = tiny("vectoradd")
    # n_sms = 0 divided by zero and returned numbers; a granularity of 0 or 96 formed no blocks.
    for bad in (0, -2, 1.5, True):
        with pytest.raises(ValueError, match=f"n_sms must be a positive integer, got {bad!r}"):
            characterize(t, n_sms=bad)
    for bad in (0, 96):
        with pytest.raises(ValueError, match=f"granularity must be a power of two of bytes, got {bad}"):
            requests(t, granularity=bad)
    with pytest.raises(TypeError, match="a Trace is characterized .* got str"):
        characterize("vectoradd")
    assert characterize(t, n_sms=np.int64(15)) == characterize(t)


def test_characterization_rates_over_nothing_are_nan_not_zero():
    """A share or rate with nothing to divide by is undefined, as in the timing model's metrics: it
    read 0.0, which looks measured (no reuse inside the CTA, every L1 access missed)."""
    from gpucachex.workloads.characterize import COLUMNS, format_cell, simulated_metrics

    def one(prog):
        return tracebuild.build([tracebuild.KernelSpec([[prog + [tracebuild.Inst("EXIT")]]], threads_per_cta=32)])

    # ALU only: no memory instruction, no request
    c = characterize(one([tracebuild.alu(dst=(1,))]))
    assert (c["warp_util"], c["requests"], c["footprint_mb"]) == (1.0, 0, 0.0)
    undefined = [k for k in c if k not in ("kernels", "warp_insts", "mem_insts", "warp_util", "requests",
                                           "footprint_mb")]
    assert undefined and [k for k in undefined if not math.isnan(c[k])] == []
    # one read of one line: nothing is re-referenced, the L1 and the L2 each take one access and miss
    c = characterize(one([tracebuild.ld(1, tracebuild.lanes(0x10000000))]))
    assert (c["req_per_line"], c["l1_hit"], c["l2_hit"]) == (1.0, 0.0, 0.0)
    assert all(math.isnan(c[f"reuse_{k}"]) for k in ("intra", "inter", "kernel"))
    # no load the L1 caches: its hit rate is undefined, the L2's is not
    cg = tracebuild.ld(1, tracebuild.lanes(0x10000000), opcode="LDG.E.CG")
    c = characterize(one([cg, tracebuild.ld(2, tracebuild.lanes(0x10000000), opcode="LDG.E.CG", src=(1,))]))
    assert math.isnan(c["l1_hit"]) and c["l2_hit"] == 0.5
    assert simulated_metrics(one([cg]))["l2_acc_per_line"] is math.nan    # no line count given
    # the docs table shows such a cell as n/a
    assert [format_cell(f, math.nan) for _, _, f in COLUMNS] == ["n/a"] * len(COLUMNS)


def test_simulated_metrics_come_from_the_timing_model():
    from gpucachex.workloads.characterize import simulated_metrics
    stream = simulated_metrics(tiny("vectoradd"), lines=100)
    assert stream["sim_l2_hit"] < 0.05 and stream["sim_l1_hit"] < 0.05  # read once, never again
    from gpucachex import workloads
    reuse = simulated_metrics(workloads.make("sgemm", "small"))
    assert reuse["sim_l2_hit"] > 0.5  # tiles re-read by the CTAs of a row and a column
    assert stream["sim_cycles"] > 0 and stream["l2_acc_per_line"] > 0


def docs_table() -> dict[str, dict[str, str]]:
    """docs/workloads.md's character table: model -> column heading -> cell."""
    from pathlib import Path
    lines = (Path(__file__).resolve().parents[1] / "docs" / "workloads.md").read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| model | class | warp insts"))
    names = [h.strip() for h in lines[head].strip("|").split("|")]
    rows = {}
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = dict(zip(names, cells))
    return rows


def assert_docs_row(name, simulated: bool):
    from gpucachex.workloads.characterize import COLUMNS, LINE, format_cell, simulated_metrics
    trace = workloads.make(name, "small")                  # the size the page is generated at
    row = characterize(trace)
    if simulated:
        row.update(simulated_metrics(trace, "gtx480", lines=int(round(row["footprint_mb"] * 2 ** 20 / LINE))))
    doc = docs_table()[name]
    stale = {h: (doc[h], format_cell(f, row[c])) for c, h, f in COLUMNS if c in row and doc[h] != format_cell(f, row[c])}
    assert not stale, (f"docs/workloads.md is stale for {name} (column: (page, now)): {stale}; regenerate it with "
                       "python -m gpucachex.workloads.characterize")


# docs/workloads.md is generated; these keep it honest. A cheap sample of the simulator-independent
# columns (models with unrolled loads, stores the functional L1 evicts, hotspot's launches); the
# slow test checks every model, the timing model's columns too.
@pytest.mark.parametrize("name", ["conv3d", "cfd", "fwt", "hotspot", "srad", "nw", "gaussian", "myocyte",
                                  "vectoradd"])
def test_docs_workloads_table_is_current(name):
    assert_docs_row(name, simulated=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_docs_workloads_table_is_current_with_the_timing_model(name):
    assert_docs_row(name, simulated=True)


# ---- command line -----------------------------------------------------------------------------

def test_cli_lists_every_model_with_its_class(capsys):
    assert cli_main(["workloads"]) == 0
    out = capsys.readouterr().out
    for name in NAMES:
        line = next(x for x in out.splitlines() if x.split()[0] == name)
        assert workloads.spec(name).klass in line and workloads.spec(name).description in line


def test_cli_describes_and_generates(capsys):
    assert cli_main(["workloads", "sgemm"]) == 0
    assert "MatrixMulCUDA" in capsys.readouterr().out
    assert cli_main(["workloads", "sgemm", "--size", "tiny", "--param", "n=32", "--json"]) == 0
    assert '"warp_insts": 4128' in capsys.readouterr().out
    assert cli_main(["workloads", "nope"]) == 2
    assert "unknown workload 'nope'" in capsys.readouterr().err
    assert cli_main(["workloads", "sgemm", "--size", "tiny", "--param", "m=1"]) == 2
    assert "has no parameter 'm'" in capsys.readouterr().err
    # parameters are printed as key=value, None included, and read back the same way
    assert cli_main(["workloads", "gemm"]) == 0
    assert "tiny    n=32, ni=None, nj=None, nk=None" in capsys.readouterr().out
    assert cli_main(["workloads", "gemm", "--size", "tiny", "--param", "ni=None", "--json"]) == 0
    tiny = workloads.make("gemm", "tiny").summary()["warp_insts"]
    assert f'"warp_insts": {tiny}' in capsys.readouterr().out


def test_cli_refuses_a_parameter_given_twice(capsys):
    # The last --param silently won, and the title printed only it: "sgemm (tiny, n=64)".
    assert cli_main(["workloads", "sgemm", "--size", "tiny", "--param", "n=32", "--param", "n=64"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "gpucachex workloads: error: --param n is given twice\n"


def test_every_parameter_can_be_overridden_by_keyword():
    """make(name, size, **params) passes every parameter, so none may be called 'size' (gaussian's
    matrix dimension is n); a model declaring one is refused at registration."""
    from gpucachex.workloads.spec import ModelSpec

    for name in workloads.names():
        assert "size" not in workloads.info(name)["defaults"], name
    assert workloads.make("gaussian", "tiny", n=8).kernels[0].attrs["params"] == {"n": 8}
    assert len(workloads.make("gaussian", "tiny", n=8).kernels) == 2 * 7   # Fan1 and Fan2 per pivot

    def build(size: int = 4):
        raise AssertionError("never built")

    with pytest.raises(ValueError, match="model 'm': a parameter may not be called 'size'"):
        ModelSpec("m", "streaming", "d", "s", {s: {} for s in workloads.SIZES}, build)
