"""BFS: breadth-first search on a generated graph, one Kernel/Kernel2 launch pair per level.

Source: Rodinia, bfs (Harish and Narayanan, HiPC'07), kernels ``Kernel`` and ``Kernel2``
(kernel.cu, kernel2.cu, bfs.cu); graph from Rodinia's generator (data/bfs/inputGen/graphgen.cpp).

The graph: like graphgen, every node draws 2 to 4 edges to uniformly random nodes and each edge is
added in both directions (average degree ~6), adjacency lists in insertion order; source node 0.
Launch: MAX_THREADS_PER_BLOCK = 512; grid ceil(no_of_nodes/512) (one CTA of no_of_nodes threads
when smaller). The host repeats {stop = false; Kernel; Kernel2} while Kernel2 set *g_over.
Kernel: tid = blockIdx.x*512 + threadIdx.x; if (tid < no_of_nodes && g_graph_mask[tid]) {
g_graph_mask[tid] = false; for (i = nodes[tid].starting; i < nodes[tid].no_of_edges +
nodes[tid].starting; i++) { id = g_graph_edges[i]; if (!g_graph_visited[id]) { g_cost[id] =
g_cost[tid] + 1; g_updating_graph_mask[id] = true; } } }. The loop bound re-reads the Node struct
every iteration (the stores may alias it), and the neighbour reads are data-dependent gathers.
Kernel2: if (tid < no_of_nodes && g_updating_graph_mask[tid]) { mask = true; visited = true;
*g_over = true; updating = false; }. The model runs the algorithm on the host to get every
frontier, every neighbour id and every visited test, hence real addresses.
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

MAX_THREADS_PER_BLOCK = 512


def rodinia_graph(nodes: int, rng: np.random.Generator):
    """(starting, no_of_edges, edges) of a graph drawn like Rodinia's graphgen."""
    counts = rng.integers(2, 5, size=nodes)                    # MIN_EDGES..MAX_INIT_EDGES
    src = np.repeat(np.arange(nodes), counts)
    dst = rng.integers(0, nodes, size=src.size)
    # Edge e = (src, dst) is pushed to src's list then to dst's list, in generation order.
    owner = np.concatenate([src, dst])
    other = np.concatenate([dst, src])
    seq = np.concatenate([2 * np.arange(src.size), 2 * np.arange(src.size) + 1])
    order = np.lexsort((seq, owner))
    edges = other[order].astype(np.int64)
    degree = np.bincount(owner, minlength=nodes)
    starting = np.concatenate([[0], np.cumsum(degree)[:-1]])
    return starting.astype(np.int64), degree.astype(np.int64), edges


def build(nodes: int = 16384, seed: int = 0):
    rng = np.random.default_rng(seed)
    starting, degree, edges = rodinia_graph(nodes, rng)
    p = Program("bfs", source=MODEL.source)
    g_nodes = p.array("d_graph_nodes", nodes, 8)               # struct Node {int starting; int no_of_edges;}
    g_edges = p.array("d_graph_edges", edges.size, "i32")
    g_mask = p.array("d_graph_mask", nodes, "bool")
    g_updating = p.array("d_updating_graph_mask", nodes, "bool")
    g_visited = p.array("d_graph_visited", nodes, "bool")
    g_cost = p.array("d_cost", nodes, "i32")
    g_over = p.array("d_over", 1, "bool", copy_in=False)
    mask = np.zeros(nodes, dtype=bool)
    visited = np.zeros(nodes, dtype=bool)
    mask[0] = visited[0] = True
    blocks = -(-nodes // MAX_THREADS_PER_BLOCK)
    threads = min(nodes, MAX_THREADS_PER_BLOCK)
    while True:
        p.copy_in(g_over)
        updating = np.zeros(nodes, dtype=bool)
        with p.kernel("Kernel", grid=blocks, block=threads, regs=16) as k:
            tid = k.blockIdx.x * MAX_THREADS_PER_BLOCK + k.threadIdx.x
            k.alu(op="S2R", count=2)
            k.alu(op="IMAD")
            k.alu(op="ISETP.GE.AND")
            with k.where(tid < nodes):
                m = k.load(g_mask, tid)
                k.alu(m, op="ISETP.NE.AND")
                frontier = k.gather(mask, tid, fill=False)
                with k.where(frontier):
                    k.store(g_mask, tid)
                    st = k.load(g_nodes, tid, width=4)
                    ne = k.load(g_nodes, tid, offset=4, width=4)
                    k.alu(st, ne, op="IADD3")
                    k.alu(op="ISETP.GE.AND")
                    start = k.gather(starting, tid)
                    for it in k.loop(k.gather(degree, tid)):
                        i = start + it
                        e = k.load(g_edges, i)
                        nb = k.gather(edges, i)
                        v = k.load(g_visited, nb, deps=e)
                        k.alu(v, op="ISETP.NE.AND")
                        unvisited = ~k.gather(visited, nb, fill=True)
                        with k.where(unvisited):
                            c = k.load(g_cost, tid)
                            c1 = k.alu(c, op="IADD3")
                            k.store(g_cost, nb, c1, deps=e)
                            k.store(g_updating, nb, deps=e)
                        updating[nb[k.active & unvisited]] = True
                        # the loop condition re-reads the node (the stores above may alias it)
                        st = k.load(g_nodes, tid, width=4)
                        ne = k.load(g_nodes, tid, offset=4, width=4)
                        k.alu(st, ne, op="IADD3")
        mask[:] = False
        with p.kernel("Kernel2", grid=blocks, block=threads, regs=10) as k:
            tid = k.blockIdx.x * MAX_THREADS_PER_BLOCK + k.threadIdx.x
            k.alu(op="S2R", count=2)
            k.alu(op="IMAD")
            k.alu(op="ISETP.GE.AND")
            with k.where(tid < nodes):
                u = k.load(g_updating, tid)
                k.alu(u, op="ISETP.NE.AND")
                with k.where(k.gather(updating, tid, fill=False)):
                    k.store(g_mask, tid)
                    k.store(g_visited, tid)
                    k.store(g_over, 0)
                    k.store(g_updating, tid)
        mask[:] = updating
        visited |= updating
        if not updating.any():
            break
    return p.trace()


MODEL = ModelSpec(
    name="bfs",
    klass="irregular",
    description="BFS on a Rodinia-style random graph: frontier kernels with neighbour gathers",
    source="Rodinia bfs: Kernel, Kernel2 (kernel.cu, kernel2.cu, bfs.cu)",
    sizes={"tiny": dict(nodes=1024), "small": dict(nodes=16384), "medium": dict(nodes=262144),
           "large": dict(nodes=1048576)},
    build=build,
    minimum={"seed": 0},
)
