"""b+tree: batched key lookups (findK) and range lookups (findRangeK) on a generated B+ tree.

Source: Rodinia, b+tree, kernels ``findK`` (kernel/kernel_gpu_cuda.cu) and ``findRangeK``
(kernel/kernel_gpu_cuda_2.cu); tree layout from ``transform_to_cuda`` (main.c).

The tree: `keys` records with keys 0..keys-1 in a B+ tree of order 256 (DEFAULT_ORDER) whose
nodes are filled to a random 50-100% (as after insertions), flattened breadth-first into
``knode {int location; int indices[257]; int keys[257]; bool is_leaf; int num_keys;}`` (2068 B):
keys[0] = INT_MIN, the node's keys, then INT_MAX; indices[i] = BFS number of child i, or the
record index in a leaf. Launch: one CTA per query, order (256) threads.
findK: for (i = 0; i < height; i++) { if (knodes[currKnode[bid]].keys[thid] <= keys[bid] &&
knodes[currKnode[bid]].keys[thid+1] > keys[bid]) { if (knodes[offset[bid]].indices[thid] <
knodes_elem) offset[bid] = knodes[offset[bid]].indices[thid]; } __syncthreads(); if (thid == 0)
currKnode[bid] = offset[bid]; __syncthreads(); } then the leaf test keys[thid] == keys[bid] and
ans[bid].value = records[indices[thid]].value. findRangeK does the same for start[bid] (through
currKnode/offset) and end[bid] = start + rSize (lastKnode/offset_2) and writes recstart/reclen.
Every query reads the root and the upper levels: the CTAs share them (ATA-Cache's high
inter-core-locality class); the leaves are scattered. The model descends the real tree.

Known difference: Rodinia's host code gives findRangeK its own device copy of the tree
(kernel_gpu_cuda_wrapper_2.cu allocates and copies knodesD again) and its command files run the
range queries first; here findK runs first and both kernels read one copy, so findRangeK can find
the upper levels in the L2. About 2-4% of the L2 reuse crosses the two kernels: a fresh copy moves
gtx480's cycles by +3.3% at size small and +0.1% at medium.
"""
import numpy as np

from gpucachex.workloads.dsl import Program
from gpucachex.workloads.spec import ModelSpec

ORDER = 256
KNODE_BYTES = 4 + 4 * (ORDER + 1) + 4 * (ORDER + 1) + 4 + 4     # 2068
OFF_INDICES = 4
OFF_KEYS = 4 + 4 * (ORDER + 1)
INT_MIN, INT_MAX = -(2 ** 31), 2 ** 31 - 1


def _groups(total: int, lo: int, hi: int, rng: np.random.Generator) -> np.ndarray:
    """Split `total` items into consecutive groups of lo..hi items (the last absorbs the rest)."""
    if total <= hi:
        return np.array([total])
    sizes = rng.integers(lo, hi + 1, size=total // lo + 1)
    ends = np.cumsum(sizes)
    n = int(np.searchsorted(ends, total))
    sizes = sizes[:n + 1].copy()
    sizes[n] = total - (ends[n - 1] if n else 0)
    if sizes[n] < lo and n:                           # fold a short tail into its neighbour
        merged = sizes[n - 1] + sizes[n]
        if merged <= hi:
            sizes = np.concatenate([sizes[:n - 1], [merged]])
        else:
            sizes[n - 1], sizes[n] = merged - merged // 2, merged // 2
    return sizes


class Tree:
    """A bulk-loaded B+ tree in Rodinia's breadth-first knode layout."""

    def __init__(self, n_keys: int, rng: np.random.Generator) -> None:
        leaf_sizes = _groups(n_keys, ORDER // 2, ORDER - 1, rng)       # at most order-1 keys per node
        levels = [leaf_sizes]                                          # children (or records) per node
        while levels[-1].size > 1:
            levels.append(_groups(levels[-1].size, ORDER // 2, ORDER, rng))  # at most order children
        levels.reverse()                                               # root first
        self.height = len(levels) - 1
        self.level_sizes = levels
        self.level_offset = np.cumsum([0] + [lv.size for lv in levels])   # BFS numbering
        self.n_nodes = int(self.level_offset[-1])
        self.leaf_first_key = np.concatenate([[0], np.cumsum(leaf_sizes)[:-1]])

    def path(self, key: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """For each key (< n_keys), the BFS node index visited at every level (root to leaf) and
        the slot thid that matches at that level (child position, or key position in the leaf)."""
        leaf = np.searchsorted(self.leaf_first_key, key, side="right") - 1
        slots = [key - self.leaf_first_key[leaf] + 1]                 # keys[0] is INT_MIN
        nodes = [leaf]
        child = leaf
        for lv in range(self.height - 1, -1, -1):
            first_child = np.concatenate([[0], np.cumsum(self.level_sizes[lv])[:-1]])
            parent = np.searchsorted(first_child, child, side="right") - 1
            slots.append(child - first_child[parent])
            nodes.append(parent)
            child = parent
        nodes.reverse()
        slots.reverse()
        return [self.level_offset[lv] + nd for lv, nd in enumerate(nodes)], slots

    def node_keys(self, node: np.ndarray, thid: np.ndarray) -> np.ndarray:
        """knodes[node].keys[thid] (vectorised), as transform_to_cuda lays them out."""
        lv = np.searchsorted(self.level_offset, node, side="right") - 1
        out = np.full(node.shape, INT_MAX, dtype=np.int64)
        out[thid == 0] = INT_MIN
        for level in np.unique(lv):
            sel = lv == level
            pos = node[sel] - self.level_offset[level]
            count = self.level_sizes[level][pos]
            t = thid[sel]
            if level == self.height:                                  # leaf: keys[1..count]
                first = self.leaf_first_key[pos]
                val = np.where((t >= 1) & (t <= count), first + t - 1, INT_MAX)
            else:                                                     # separators: count-1 keys
                first_child = np.concatenate([[0], np.cumsum(self.level_sizes[level])[:-1]])
                child = first_child[pos] + t
                child_level_first = (self.leaf_first_key if level + 1 == self.height else
                                     self._first_key_of_level(level + 1))
                ok = (t >= 1) & (t <= count - 1)
                val = np.where(ok, child_level_first[np.minimum(child, child_level_first.size - 1)], INT_MAX)
            out[sel] = np.where(t == 0, INT_MIN, val)
        return out

    def _first_key_of_level(self, level: int) -> np.ndarray:
        first = self.leaf_first_key
        for lv in range(self.height - 1, level - 1, -1):
            fc = np.concatenate([[0], np.cumsum(self.level_sizes[lv])[:-1]])
            first = first[fc]
        return first


def build(keys: int = 262144, queries: int = 256, range_queries: int = 128, range_size: int = 3000,
          seed: int = 0):
    rng = np.random.default_rng(seed)
    tree = Tree(keys, rng)
    p = Program("btree", source=MODEL.source)
    records = p.array("recordsD", keys, "i32")
    knodes = p.array("knodesD", tree.n_nodes, KNODE_BYTES)
    height = tree.height

    if queries:
        qkeys = np.minimum((rng.random(queries) * keys).astype(np.int64), keys - 1)
        nodes, slots = tree.path(qkeys)
        currKnode = p.array("currKnodeD", queries, "i64")
        offset = p.array("offsetD", queries, "i64")
        keysD = p.array("keysD", queries, "i32")
        ans = p.array("ansD", queries, "i32")
        with p.kernel("findK", grid=queries, block=ORDER, regs=22) as k:
            thid, bid = k.threadIdx.x, k.blockIdx.x
            k.alu(op="S2R", count=2)
            for i in k.loop(height):
                cur = k.load(currKnode, bid)
                key = k.load(keysD, bid)
                node = nodes[i][bid]
                kt = k.load(knodes, node, offset=OFF_KEYS + 4 * thid, width=4, deps=cur)
                k.alu(kt, key, op="ISETP.LE.AND")
                with k.where(tree.node_keys(node, thid) <= qkeys[bid]):
                    kt1 = k.load(knodes, node, offset=OFF_KEYS + 4 * (thid + 1), width=4, deps=cur)
                    k.alu(kt1, key, op="ISETP.GT.AND")
                    with k.where(thid == slots[i][bid]):
                        off = k.load(offset, bid)
                        idx = k.load(knodes, node, offset=OFF_INDICES + 4 * thid, width=4, deps=off)
                        k.alu(idx, op="ISETP.LT.AND")
                        k.store(offset, bid, idx)
                k.sync()
                with k.where(thid == 0):
                    off = k.load(offset, bid)
                    k.store(currKnode, bid, off)
                k.sync()
            cur = k.load(currKnode, bid)
            key = k.load(keysD, bid)
            leaf = nodes[height][bid]
            kt = k.load(knodes, leaf, offset=OFF_KEYS + 4 * thid, width=4, deps=cur)
            k.alu(kt, key, op="ISETP.EQ.AND")
            with k.where(thid == slots[height][bid]):
                idx = k.load(knodes, leaf, offset=OFF_INDICES + 4 * thid, width=4, deps=cur)
                v = k.load(records, qkeys[bid], deps=idx)
                k.store(ans, bid, v)

    if range_queries:
        start = np.minimum((rng.random(range_queries) * keys).astype(np.int64), keys - 1)
        end = start + range_size
        s_nodes, s_slots = tree.path(start)
        e_nodes, e_slots = tree.path(np.minimum(end, keys - 1))
        past_end = end >= keys      # the end key is not in the tree: its descent ends at the last leaf
        currKnode = p.array("currKnodeD_2", range_queries, "i64")
        offset = p.array("offsetD_2", range_queries, "i64")
        lastKnode = p.array("lastKnodeD", range_queries, "i64")
        offset_2 = p.array("offset_2D", range_queries, "i64")
        startD = p.array("startD", range_queries, "i32")
        endD = p.array("endD", range_queries, "i32")
        recstart = p.array("ansDStart", range_queries, "i32", copy_in=False)
        reclen = p.array("ansDLength", range_queries, "i32", copy_in=False)
        with p.kernel("findRangeK", grid=range_queries, block=ORDER, regs=26) as k:
            thid, bid = k.threadIdx.x, k.blockIdx.x
            k.alu(op="S2R", count=2)
            for i in k.loop(height):
                halves = ((currKnode, offset, startD, s_nodes, s_slots, start),
                          (lastKnode, offset_2, endD, e_nodes, e_slots, np.minimum(end, keys - 1)))
                for h in k.unroll(2):                   # the source writes the start and end tests out twice
                    cur_arr, off_arr, key_arr, nodes, slots, qk = halves[h]
                    cur = k.load(cur_arr, bid)
                    key = k.load(key_arr, bid)
                    node = nodes[i][bid]
                    kt = k.load(knodes, node, offset=OFF_KEYS + 4 * thid, width=4, deps=cur)
                    k.alu(kt, key, op="ISETP.LE.AND")
                    with k.where(tree.node_keys(node, thid) <= qk[bid]):
                        kt1 = k.load(knodes, node, offset=OFF_KEYS + 4 * (thid + 1), width=4, deps=cur)
                        k.alu(kt1, key, op="ISETP.GT.AND")
                        with k.where(thid == slots[i][bid]):
                            cur = k.load(cur_arr, bid)
                            idx = k.load(knodes, node, offset=OFF_INDICES + 4 * thid, width=4, deps=cur)
                            k.alu(idx, op="ISETP.LT.AND")
                            k.store(off_arr, bid, idx)
                k.sync()
                with k.where(thid == 0):
                    k.store(currKnode, bid, k.load(offset, bid))
                    k.store(lastKnode, bid, k.load(offset_2, bid))
                k.sync()
            cur = k.load(currKnode, bid)
            key = k.load(startD, bid)
            leaf = s_nodes[height][bid]
            kt = k.load(knodes, leaf, offset=OFF_KEYS + 4 * thid, width=4, deps=cur)
            k.alu(kt, key, op="ISETP.EQ.AND")
            with k.where(thid == s_slots[height][bid]):
                idx = k.load(knodes, leaf, offset=OFF_INDICES + 4 * thid, width=4, deps=cur)
                k.store(recstart, bid, idx)
            k.sync()
            last = k.load(lastKnode, bid)
            key = k.load(endD, bid)
            leaf = e_nodes[height][bid]
            kt = k.load(knodes, leaf, offset=OFF_KEYS + 4 * thid, width=4, deps=last)
            k.alu(kt, key, op="ISETP.EQ.AND")
            with k.where((thid == e_slots[height][bid]) & ~past_end[bid]):
                idx = k.load(knodes, leaf, offset=OFF_INDICES + 4 * thid, width=4, deps=last)
                rs = k.load(recstart, bid)
                k.store(reclen, bid, k.alu(idx, rs, op="IADD3"))
    return p.trace()


MODEL = ModelSpec(
    name="btree",
    klass="irregular",
    description="b+tree: one CTA per query descends a 256-ary B+ tree (findK, findRangeK)",
    source="Rodinia b+tree: findK (kernel_gpu_cuda.cu), findRangeK (kernel_gpu_cuda_2.cu)",
    sizes={"tiny": dict(keys=16384, queries=16, range_queries=8),
           "small": dict(keys=262144, queries=256, range_queries=128),
           "medium": dict(keys=1048576, queries=4096, range_queries=2048),
           "large": dict(keys=1048576, queries=10000, range_queries=6000)},
    build=build,
    minimum={"queries": 0, "range_queries": 0, "range_size": 0, "seed": 0},
)
