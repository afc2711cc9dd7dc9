"""SASS opcode classification: maps an opcode such as ``LDG.E.CG`` to the instruction class, memory
space and flags the timing model needs. The table is keyed by the base opcode (the text before the
first dot); users extend it with `register_opcode` before loading a trace.

Sources: the SASS instruction set references in NVIDIA's CUDA Binary Utilities documentation
(Pascal to Hopper) and the opcode groups Accel-Sim's trace front end distinguishes.
"""
from __future__ import annotations

import numpy as np

from gpucachex.trace import Flag, OpClass, Space

_L, _S, _A = OpClass.LOAD, OpClass.STORE, OpClass.ATOMIC

# base opcode -> (OpClass, Space)
OPCODE_TABLE: dict[str, tuple[int, int]] = {
    # global / generic memory (a generic LD/ST is global here; the text trace reader resolves each one
    # from its kernel's shared and local windows, see GENERIC_OPCODES)
    "LDG": (_L, Space.GLOBAL), "LD": (_L, Space.GLOBAL), "LDGSTS": (_L, Space.GLOBAL),
    "STG": (_S, Space.GLOBAL), "ST": (_S, Space.GLOBAL),
    "ATOM": (_A, Space.GLOBAL), "ATOMG": (_A, Space.GLOBAL), "RED": (_A, Space.GLOBAL), "REDG": (_A, Space.GLOBAL),
    # local memory (register spills, per-thread arrays)
    "LDL": (_L, Space.LOCAL), "STL": (_S, Space.LOCAL),
    # shared memory
    "LDS": (_L, Space.SHARED), "LDSM": (_L, Space.SHARED), "STS": (_S, Space.SHARED), "ATOMS": (_A, Space.SHARED),
    # constant memory (served by the constant cache; traces carry no addresses for it)
    "LDC": (_L, Space.CONST), "ULDC": (_L, Space.CONST),
    # texture
    "TEX": (_L, Space.TEX), "TLD": (_L, Space.TEX), "TLD4": (_L, Space.TEX), "TXQ": (_L, Space.TEX),
    "TMML": (_L, Space.TEX), "TXD": (_L, Space.TEX), "TEXS": (_L, Space.TEX), "TLDS": (_L, Space.TEX),
    "TLD4S": (_L, Space.TEX), "TXA": (_L, Space.TEX),
    # surface memory: a surface is a CUDA array in global memory that the texture path reads, writes
    # and updates. Global, not 'tex': tex is read-only, and a trace writing it is refused.
    "SULD": (_L, Space.GLOBAL), "SUST": (_S, Space.GLOBAL), "SUATOM": (_A, Space.GLOBAL), "SURED": (_A, Space.GLOBAL),
    # special function unit
    "MUFU": (OpClass.SFU, Space.NONE), "RRO": (OpClass.SFU, Space.NONE),
    # double precision
    "DADD": (OpClass.FP64, Space.NONE), "DMUL": (OpClass.FP64, Space.NONE), "DFMA": (OpClass.FP64, Space.NONE),
    "DSETP": (OpClass.FP64, Space.NONE), "DMNMX": (OpClass.FP64, Space.NONE), "DSET": (OpClass.FP64, Space.NONE),
    # tensor cores
    "HMMA": (OpClass.TENSOR, Space.NONE), "IMMA": (OpClass.TENSOR, Space.NONE), "DMMA": (OpClass.TENSOR, Space.NONE),
    "BMMA": (OpClass.TENSOR, Space.NONE), "HGMMA": (OpClass.TENSOR, Space.NONE),
    # control flow
    **{op: (OpClass.BRANCH, Space.NONE) for op in (
        "BRA", "BRX", "JMP", "JMX", "CALL", "RET", "BSSY", "BSYNC", "SSY", "SYNC", "PBK", "BRK", "PCNT", "CONT",
        "WARPSYNC", "YIELD", "KILL", "BPT", "JCAL", "PRET", "PEXIT")},
    "BAR": (OpClass.BARRIER, Space.NONE),
    "EXIT": (OpClass.EXIT, Space.NONE),
    **{op: (OpClass.MEMBAR, Space.NONE) for op in ("MEMBAR", "FENCE", "ERRBAR", "CCTL", "CCTLL", "DEPBAR")},
    "NOP": (OpClass.NOP, Space.NONE),
}

# Generic loads and stores: which memory they access depends on the address, not the opcode, so the
# text trace reader (gpucachex.traceio) decides it per instruction from the addresses.
GENERIC_OPCODES = frozenset({"LD", "ST"})

# Modifiers that make a load or store skip the (incoherent) L1D: cache-global, cache-volatile, volatile.
BYPASS_MODIFIERS = ("CG", "CV", "VOLATILE")
# A strong access (Volta and later) skips it only at a scope wider than the SM, where other SMs' writes
# must be seen: .STRONG.GPU and .STRONG.SYS. At CTA or SM scope the SM's own L1D is coherent for it, so
# LDG.E.STRONG.SM is cached. (Accel-Sim's trace front end bypasses .STRONG.GPU only; system scope is
# wider still.) A bare .SYS, without STRONG, is the default scope Volta's SASS prints on ordinary loads.
STRONG_BYPASS_SCOPES = ("GPU", "SYS")


def register_opcode(base: str, op_class: str | int, space: str | int = "none") -> None:
    """Teach the classifier a base opcode, e.g. ``register_opcode("LDGX", "load", "global")``. Loads,
    stores and atomics name the memory space they access; every other class has none."""
    if not isinstance(base, str) or not base or "." in base or not base.replace("_", "").isalnum():
        raise ValueError(f"base opcode must be a name without modifiers, got {base!r}")
    cls = OpClass.NAMES.index(op_class) if isinstance(op_class, str) and op_class in OpClass.NAMES else op_class
    spc = Space.NAMES.index(space) if isinstance(space, str) and space in Space.NAMES else space
    if not isinstance(cls, int) or not 0 <= cls < len(OpClass.NAMES):
        raise ValueError(f"unknown instruction class {op_class!r} (known: {', '.join(OpClass.NAMES)})")
    if not isinstance(spc, int) or not 0 <= spc < len(Space.NAMES):
        raise ValueError(f"unknown memory space {space!r} (known: {', '.join(Space.NAMES)})")
    memory = cls in (OpClass.LOAD, OpClass.STORE, OpClass.ATOMIC)
    if memory and spc == Space.NONE:
        raise ValueError(f"{base}: class {OpClass.NAMES[cls]!r} accesses memory; name its space "
                         f"({', '.join(Space.NAMES[1:])})")
    if not memory and spc != Space.NONE:
        raise ValueError(f"{base}: only loads, stores and atomics access a memory space; class "
                         f"{OpClass.NAMES[cls]!r} has space 'none', got {Space.NAMES[spc]!r}")
    OPCODE_TABLE[base] = (cls, spc)


def is_known(opcode: str) -> bool:
    """Whether the classifier knows the base opcode; an unknown one it takes for ALU work."""
    return opcode.split(".")[0] in OPCODE_TABLE


def classify(opcode: str) -> tuple[int, int, int]:
    """(op_class, space, flags) of a full opcode such as ``LDG.E.128.CG``; unknown opcodes are ALU."""
    parts = opcode.split(".")
    op_class, space = OPCODE_TABLE.get(parts[0], (OpClass.ALU, Space.NONE))
    flags = 0
    mods = parts[1:]
    strong_wide = "STRONG" in mods and any(m in STRONG_BYPASS_SCOPES for m in mods)
    if space in (Space.GLOBAL, Space.LOCAL) and (strong_wide or any(m in BYPASS_MODIFIERS for m in mods)):
        flags |= Flag.BYPASS_L1
    return op_class, space, flags


def classify_table(opcodes: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-opcode-index lookup arrays (op_class, space, flags) for a trace's opcode name table."""
    rows = [classify(op) for op in opcodes] or [(0, 0, 0)]
    arr = np.array(rows, dtype=np.uint8).reshape(-1, 3)
    return arr[:, 0].copy(), arr[:, 1].copy(), arr[:, 2].copy()


def tables() -> dict:
    """Every table that decides how opcodes are classified, as plain data (picklable, JSON): what another
    process needs to read traces and build models as this one does, `register_opcode`'s additions included."""
    return {"opcodes": {op: [int(c), int(s)] for op, (c, s) in sorted(OPCODE_TABLE.items())},
            "generic": sorted(GENERIC_OPCODES), "bypass_modifiers": list(BYPASS_MODIFIERS),
            "strong_bypass_scopes": list(STRONG_BYPASS_SCOPES)}


def install_tables(t: dict) -> None:
    """Classify opcodes as the process that wrote `t` (with `tables`) does: sweep workers get the
    registrations of the process that runs the sweep this way."""
    global GENERIC_OPCODES, BYPASS_MODIFIERS, STRONG_BYPASS_SCOPES
    OPCODE_TABLE.clear()
    OPCODE_TABLE.update({op: (int(c), int(s)) for op, (c, s) in t["opcodes"].items()})
    GENERIC_OPCODES = frozenset(t["generic"])
    BYPASS_MODIFIERS = tuple(t["bypass_modifiers"])
    STRONG_BYPASS_SCOPES = tuple(t["strong_bypass_scopes"])


# The tables as this file defines them: model_version() covers this file's source, so only a change
# from these (register_opcode, or edits at run time) has to enter a workload's identity.
BUILT_IN_TABLES = tables()
