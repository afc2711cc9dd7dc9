"""A deliberately simple pure-Python reader of Accel-Sim .traceg text, written from the format
description in ../shared/traces/README.md and sharing no code with the C parser: the independent
reference the parser's columns and totals are checked against. Valid input only."""
from __future__ import annotations

import lzma
from pathlib import Path


def read_kernel(path: Path) -> dict:
    """Header values and one row per instruction, rows sorted by (cta, warp) in program order."""
    opener = lzma.open if path.name.endswith(".xz") else open
    with opener(path, "rt") as f:
        lines = f.read().splitlines()
    header = {}
    i = 0
    while not lines[i].startswith("#"):
        if lines[i].startswith("-"):
            key, _, value = lines[i][1:].partition("=")
            header[key.strip()] = value.strip()
        i += 1
    grid = [int(x) for x in header["grid dim"].strip("()").split(",")]
    version = int(header.get("accelsim tracer version", "0"))
    lineinfo = header.get("enable lineinfo", "0") == "1"
    rows = []
    cta = warp = None
    for line in lines[i + 1:]:
        words = line.split()
        if not words or words[0] in ("#BEGIN_TB", "#END_TB") or words[0] in ("insts", "cluster"):
            continue
        if words[0] == "thread":
            x, y, z = (int(v) for v in line.split("=")[1].split(","))
            cta = x + y * grid[0] + z * grid[0] * grid[1]
            continue
        if words[0] == "warp":
            warp = int(words[2])
            continue
        if version < 3:
            words = words[4:]
        if lineinfo:
            words = words[1:]
        pc, mask = int(words[0], 16), int(words[1], 16)
        n_dst = int(words[2])
        dst = words[3:3 + n_dst]
        opcode = words[3 + n_dst]
        n_src = int(words[4 + n_dst])
        src = words[5 + n_dst:5 + n_dst + n_src]
        rest = words[5 + n_dst + n_src:]
        width = int(rest[0])
        lanes = [lane for lane in range(32) if mask >> lane & 1]
        addresses = []
        if width > 0:
            mode = int(rest[1])
            if mode == 0:
                addresses = [int(a, 16) for a in rest[2:2 + len(lanes)]]
            elif mode == 1:
                base, stride = int(rest[2], 16), int(rest[3])
                addresses = [(base + k * stride) % 2**64 for k in range(len(lanes))]
            else:
                address = int(rest[2], 16)
                for k in range(len(lanes)):
                    if k:
                        address = (address + int(rest[2 + k])) % 2**64
                    addresses.append(address)
        reg = lambda r: int(r[1:]) if r[0] == "R" and r[1:].isdigit() else 255  # noqa: E731
        rows.append(dict(cta=cta, warp=warp, pc=pc, opcode=opcode, mask=mask, width=width,
                         dst=[reg(r) for r in dst], src=[reg(r) for r in src], addresses=addresses))
    rows.sort(key=lambda r: (r["cta"], r["warp"]))  # stable: program order within a warp
    return dict(header=header, rows=rows)


def read_kernelslist(path: Path) -> tuple[list[Path], list[tuple[int, int, int]]]:
    files, memcpys = [], []
    for line in path.read_text().splitlines():
        if line.startswith("MemcpyHtoD"):
            _, dst, nbytes = line.split(",")
            memcpys.append((len(files), int(dst, 16), int(nbytes)))
        elif line.startswith("kernel"):
            files.append(path.parent / line.strip())
    return files, memcpys


def totals(kernels: list[dict]) -> dict:
    """The Trace.summary() totals counted from reference rows."""
    out = dict(ctas=0, warps=0, warp_insts=0, thread_insts=0, mem_insts=0, addresses=0)
    for k in kernels:
        rows = k["rows"]
        out["ctas"] += len({r["cta"] for r in rows})
        out["warps"] += len({(r["cta"], r["warp"]) for r in rows})
        out["warp_insts"] += len(rows)
        out["thread_insts"] += sum(bin(r["mask"]).count("1") for r in rows)
        out["mem_insts"] += sum(1 for r in rows if r["width"] > 0)
        out["addresses"] += sum(len(r["addresses"]) for r in rows)
    return out
