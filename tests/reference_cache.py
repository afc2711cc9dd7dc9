"""A deliberately simple pure-Python set-associative cache (LRU or FIFO), written from the
textbook definition and sharing no code with the C core: the independent reference the core is
checked against."""
from __future__ import annotations

from collections import OrderedDict


class ReferenceCache:
    def __init__(self, sets: int, ways: int, line_bytes: int, policy: str = "lru", write_back: bool = True,
                 write_allocate: bool = True, index: str = "mod"):
        assert policy in ("lru", "fifo")
        self.sets, self.ways, self.line_bytes = sets, ways, line_bytes
        self.policy, self.write_back, self.write_allocate, self.index = policy, write_back, write_allocate, index
        # Per set: line address -> dirty flag, ordered from the next victim to the last one.
        self.contents = [OrderedDict() for _ in range(sets)]
        self.stats = dict(accesses=0, reads=0, writes=0, hits=0, misses=0, read_misses=0, write_misses=0,
                          sector_misses=0, fills=0, evictions=0, writebacks=0, write_throughs=0)

    def set_of(self, line: int) -> int:
        if self.index == "fermi":
            # GPGPU-Sim's FERMI_HASH_SET_FUNCTION, bit by bit on the byte address.
            assert self.sets in (32, 64)
            address = line * self.line_bytes
            bit = lambda k: (address >> k) & 1
            upper = bit(13) | bit(14) << 1 | bit(15) << 2 | bit(17) << 3 | bit(19) << 4
            index = (line % 32) ^ upper
            return index | bit(12) << 5 if self.sets == 64 else index
        if self.index == "xor":
            k = (self.sets - 1).bit_length() if self.sets > 1 else 1
            k = max(k, 1)
            line = line ^ (line >> k) ^ (line >> (2 * k))
        return line % self.sets

    def access(self, address: int, write: bool = False) -> bool:
        s = self.stats
        line = address // self.line_bytes
        content = self.contents[self.set_of(line)]
        s["accesses"] += 1
        s["writes" if write else "reads"] += 1
        if line in content:
            s["hits"] += 1
            if self.policy == "lru":
                content.move_to_end(line)
            self._write(content, line, write)
            return True
        s["misses"] += 1
        s["write_misses" if write else "read_misses"] += 1
        if write and not self.write_allocate:
            s["write_throughs"] += 1
            return False
        if len(content) == self.ways:
            _, dirty = content.popitem(last=False)
            s["evictions"] += 1
            s["writebacks"] += int(dirty)
        content[line] = False
        s["fills"] += 1
        self._write(content, line, write)
        return False

    def _write(self, content, line, write):
        if not write:
            return
        if self.write_back:
            content[line] = True
        else:
            self.stats["write_throughs"] += 1
