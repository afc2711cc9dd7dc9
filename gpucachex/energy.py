"""Energy of a run, computed from the core's counters and line residencies after the simulation, so
every energy parameter can be swept without simulating again.

Per cache (each SM's L1D, each L2 partition):
- dynamic: tag lookups; data-array reads and writes by requests (a whole line per access, or the
  sectors accessed in a sectored cache, or with a divided word line only the segments the request's
  byte mask touches); fills; wake-ups of drowsy lines; the structures of the active techniques;
- static: every line's data array leaks according to the cycles it spent ON, DROWSY (scaled by the
  drowsy voltage, Atoofian and Manzak's Table 3) and OFF (gated-Vdd residual); tags always leak.

Default per-cache numbers come from CACTI 7.0 (HewlettPackard/cacti, cache.cfg defaults with
itrs-hp cells and peripherals, 360 K, sequential access: tags first, then the hit way's data, a
full-line port of 1024 bits) run for the presets' geometries at 45 nm and 32 nm. CACTI accepts only
power-of-two associativity: the 6-way 48 KB L1D of gtx1080 uses the 64 KB 8-way numbers, and the 64-way
64 KB L1D of ata uses the 64 KB 16-way numbers with the tag energy scaled by 64/16 ways.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping

WARP_SIZE = 32


@dataclass(frozen=True)
class CacheEnergy:
    """Energy parameters of one cache instance with 128 B lines."""
    tag_pj: float                  # one tag lookup (every way of a set compared)
    read_line_pj: float            # reading a whole line from the data array
    write_line_pj: float           # writing a whole line (stores, fills)
    data_leak_mw_per_line: float   # data-array leakage of one ON line
    tag_leak_mw_per_line: float    # tag leakage per line (tags never sleep)
    wakeup_pj_per_line: float = 0.5  # restoring a drowsy line to full Vdd (see WAKEUP_NOTE)
    source: str = ""


WAKEUP_NOTE = ("Raising a 128 B line (1024 cells plus bit-line parasitics, about 1 pF) from 0.4 V to 0.9 V takes "
               "C x Vdd x dV = 1 pF x 0.9 V x 0.5 V = 0.45 pJ; 0.5 pJ is used.")

_CACTI = "CACTI 7.0, {geom}, {node} nm, itrs-hp, sequential access, 1024-bit port"

# (level, KB per instance, ways, node nm) -> CacheEnergy
CACTI_TABLE: dict[tuple[str, int, int, int], CacheEnergy] = {
    ("l1d", 16, 4, 45): CacheEnergy(1.140, 99.08, 125.00, 0.1633, 0.00949, source=_CACTI.format(geom="16 KB 4-way", node=45)),
    ("l1d", 64, 8, 45): CacheEnergy(3.160, 113.08, 234.05, 0.1496, 0.00893, source=_CACTI.format(geom="64 KB 8-way", node=45)),
    ("l1d", 64, 16, 45): CacheEnergy(5.530, 113.08, 235.90, 0.1496, 0.01693, source=_CACTI.format(geom="64 KB 16-way", node=45)),
    ("l2", 64, 8, 45): CacheEnergy(3.160, 113.08, 234.05, 0.1496, 0.00893, source=_CACTI.format(geom="64 KB 8-way", node=45)),
    ("l2", 96, 16, 45): CacheEnergy(5.903, 123.81, 307.07, 0.1481, 0.01320, source=_CACTI.format(geom="96 KB 16-way", node=45)),
    ("l2", 128, 8, 45): CacheEnergy(3.776, 134.57, 375.67, 0.1475, 0.00735, source=_CACTI.format(geom="128 KB 8-way", node=45)),
    ("l2", 128, 16, 45): CacheEnergy(6.188, 134.57, 377.70, 0.1475, 0.01115, source=_CACTI.format(geom="128 KB 16-way", node=45)),
    ("l1d", 16, 4, 32): CacheEnergy(0.572, 54.69, 68.76, 0.0872, 0.00508, source=_CACTI.format(geom="16 KB 4-way", node=32)),
    ("l1d", 64, 8, 32): CacheEnergy(1.611, 63.43, 128.18, 0.0795, 0.00480, source=_CACTI.format(geom="64 KB 8-way", node=32)),
    ("l1d", 64, 16, 32): CacheEnergy(2.760, 63.43, 129.08, 0.0795, 0.00904, source=_CACTI.format(geom="64 KB 16-way", node=32)),
    ("l2", 64, 8, 32): CacheEnergy(1.611, 63.43, 128.18, 0.0795, 0.00480, source=_CACTI.format(geom="64 KB 8-way", node=32)),
    ("l2", 96, 16, 32): CacheEnergy(2.986, 69.94, 168.00, 0.0786, 0.00706, source=_CACTI.format(geom="96 KB 16-way", node=32)),
    ("l2", 128, 8, 32): CacheEnergy(1.991, 76.47, 205.61, 0.0783, 0.00396, source=_CACTI.format(geom="128 KB 8-way", node=32)),
    ("l2", 128, 16, 32): CacheEnergy(3.167, 76.47, 206.61, 0.0783, 0.00597, source=_CACTI.format(geom="128 KB 16-way", node=32)),
}

# Atoofian and Manzak, Table 3: static power of a row of L1/L2 at each Vdd (mW), HSPICE with PTM 32 nm.
TABLE3_STATIC_MW = {
    "l1d": {0.2: 0.04, 0.3: 0.056, 0.4: 0.08, 0.9: 1.081},
    "l2": {0.2: 0.26, 0.3: 0.36, 0.4: 0.53, 0.9: 6.7},
}
NOMINAL_VDD = 0.9


def drowsy_leakage_fraction(level: str, vdd: float) -> float:
    """Leakage of a drowsy line relative to an ON line at `vdd` (Table 3, linear between its rows)."""
    table = TABLE3_STATIC_MW[level]
    volts = sorted(table)
    if not volts[0] <= vdd <= volts[-1]:
        raise ValueError(f"drowsy Vdd must be between {volts[0]} and {volts[-1]} V (Table 3), got {vdd}")
    nominal = table[NOMINAL_VDD]
    for lo, hi in zip(volts, volts[1:]):
        if lo <= vdd <= hi:
            w = (vdd - lo) / (hi - lo)
            return ((1 - w) * table[lo] + w * table[hi]) / nominal
    return table[vdd] / nominal  # pragma: no cover - unreachable: vdd is within the table


def cache_energy(level: str, size_kb: float, ways: int, node_nm: int = 45) -> tuple[CacheEnergy, str]:
    """The CACTI entry for a cache instance, and a note when it is the nearest geometry rather than
    an exact one (tag energy then scales with the ways compared)."""
    candidates = [(k, v) for k, v in CACTI_TABLE.items() if k[0] == level and k[3] == node_nm]
    if not candidates:
        raise ValueError(f"no energy table for {level} at {node_nm} nm (known nodes: 32, 45)")
    (lvl, kb, w, node), entry = min(candidates, key=lambda kv: (abs(math.log2(size_kb / kv[0][1])),
                                                              abs(math.log2(ways / kv[0][2]))))
    if (kb, w) == (size_kb, ways):
        return entry, ""
    scaled = replace(entry, tag_pj=entry.tag_pj * ways / w, tag_leak_mw_per_line=entry.tag_leak_mw_per_line * ways / w)
    return scaled, f"{level}: {size_kb:g} KB {ways}-way uses CACTI's {kb} KB {w}-way numbers, tag terms x {ways}/{w}"


@dataclass(frozen=True)
class EnergyParams:
    """Everything the energy of a run depends on besides the simulation itself."""
    node_nm: int = 45
    off_leakage_fraction: float = 0.03  # gated-Vdd keeps 3% of the leakage (Powell et al., ISLPED 2000)
    drowsy_vdd: float | None = None     # None: the run's drowsy.vdd
    dwl: Mapping[str, bool] | None = None  # level -> divided word line; None: the run's l1d.dwl / l2.dwl
    segment_bytes: int = 4              # divided-word-line segment: 4, 8, 16 or 32 bytes
    l1d: CacheEnergy | None = None      # override the table entry
    l2: CacheEnergy | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # technique-specific parameters

    def __post_init__(self):
        if self.segment_bytes not in (4, 8, 16, 32):
            raise ValueError(f"segment_bytes must be 4, 8, 16 or 32, got {self.segment_bytes}")
        if not 0.0 <= self.off_leakage_fraction <= 1.0:
            raise ValueError(f"off_leakage_fraction must be in [0, 1], got {self.off_leakage_fraction}")


# Technique name -> function(metrics, config, params) -> {"l1d_dynamic_j": .., "l2_static_j": .., ...}
# giving the energy of the technique's own structures. Techniques register here from their module in
# gpucachex/techniques/.
OVERHEADS: dict[str, Callable[[Mapping[str, Any], Any, EnergyParams], dict[str, float]]] = {}

TECHNIQUE_KEYS = ("l1d.admission", "l1d.power", "l2.power", "l1d.sharing")


def _segments(s: Mapping[str, Any], segment_bytes: int) -> int:
    return {4: s["words_touched"], 8: s["segments8"], 16: s["segments16"], 32: s["segments32"]}[segment_bytes]


class _LevelView(Mapping):
    """The statistics of one level inside a flat metrics mapping (l2_hits -> hits)."""

    def __init__(self, metrics: Mapping[str, Any], level: str):
        self._m, self._p = metrics, level + "_"

    def __getitem__(self, key):
        return self._m[self._p + key]

    def __iter__(self):
        return (k[len(self._p):] for k in self._m if k.startswith(self._p))

    def __len__(self):
        return sum(1 for _ in self)


def level_energy(metrics: Mapping[str, Any], config, level: str, params: EnergyParams) -> dict[str, float]:
    """Energy terms of one cache level (all instances), in joules."""
    cfg = config
    raw = _LevelView(metrics, level)
    instances = cfg["core.sms"] if level == "l1d" else cfg["l2.partitions"]
    size_kb = cfg[f"{level}.size_kb"] / (1 if level == "l1d" else cfg["l2.partitions"])
    entry, note = cache_energy(level, size_kb, cfg[f"{level}.ways"], params.node_nm)
    entry = getattr(params, level) or entry
    line_bytes = cfg[f"{level}.line_bytes"]
    scale = line_bytes / 128.0  # the table is for 128 B lines; energy per line scales with its bits
    read_line, write_line = entry.read_line_pj * scale, entry.write_line_pj * scale
    sector_bytes = cfg[f"{level}.sector_bytes"] or line_bytes
    dwl = (params.dwl or {}).get(level, cfg[f"{level}.dwl"])

    # Data-array accesses by requests: a whole line, the sectors, or (DWL) the touched segments.
    if dwl:
        segs = _segments(raw, params.segment_bytes)
        frac_unit = params.segment_bytes / line_bytes
        accessed_lines = segs * frac_unit
        # Reads and writes share the segment count in proportion to their sector counts.
        rs, ws = raw["read_sectors"], raw["write_sectors"]
        read_lines = accessed_lines * (rs / (rs + ws) if rs + ws else 0.0)
        write_lines = accessed_lines - read_lines
    elif sector_bytes < line_bytes:
        read_lines = raw["read_sectors"] * 32 / line_bytes
        write_lines = raw["write_sectors"] * 32 / line_bytes
    else:
        read_lines, write_lines = raw["data_reads"], raw["data_writes"]
    pj = {
        "tag": raw["tag_lookups"] * entry.tag_pj,
        "data_read": read_lines * read_line,
        "data_write": write_lines * write_line,
        "fill": raw["fill_sectors"] * 32 / line_bytes * write_line,
        "wakeup": raw["wakeups"] * entry.wakeup_pj_per_line,
    }
    vdd = params.drowsy_vdd if params.drowsy_vdd is not None else cfg["drowsy.vdd"] if "drowsy.vdd" in cfg else 0.4
    drowsy_frac = drowsy_leakage_fraction(level, vdd)
    clock_hz = cfg["core.clock_mhz"] * 1e6
    line_cycles_weighted = (raw["resid_on"] + drowsy_frac * raw["resid_drowsy"]
                            + params.off_leakage_fraction * raw["resid_off"])
    data_static_j = entry.data_leak_mw_per_line * 1e-3 * line_cycles_weighted / clock_hz
    tag_static_j = entry.tag_leak_mw_per_line * 1e-3 * raw["lines"] * metrics["cycles"] / clock_hz
    out = {f"{level}_{k}_energy_j": v * 1e-12 for k, v in pj.items()}
    dynamic = sum(pj.values()) * 1e-12
    static = data_static_j + tag_static_j
    out[f"{level}_data_static_energy_j"] = data_static_j
    out[f"{level}_tag_static_energy_j"] = tag_static_j
    out[f"{level}_static_energy_j"] = static
    out[f"{level}_dynamic_energy_j"] = dynamic
    out[f"{level}_energy_j"] = static + dynamic
    out[f"{level}_instances"] = instances
    if note:
        out[f"{level}_energy_note"] = note
    return out


def compute(result=None, params: EnergyParams | None = None, *, metrics: Mapping[str, Any] | None = None,
            config=None) -> dict[str, Any]:
    """Every energy term of a run (joules) and the average powers over its duration (watts).

    Give a `Result`, or the flat `metrics` of a run (for example a row of a sweep's DataFrame) with
    its `config`: energy needs only the counters and residencies, never a new simulation."""
    params = params or EnergyParams()
    if result is not None:
        metrics, config = result.metrics, result.config
    if metrics is None or config is None:
        raise TypeError("compute() needs a Result, or metrics= and config=")
    out: dict[str, Any] = {}
    for level in ("l1d", "l2"):
        out.update(level_energy(metrics, config, level, params))
    # The techniques' own structures (prediction tables, comparators, crossbars, ...).
    import gpucachex.techniques  # noqa: F401  (registers OVERHEADS)

    for name in {config[k] for k in TECHNIQUE_KEYS}:
        fn = OVERHEADS.get(name)
        if fn is None:
            continue
        for key, joules in fn(metrics, config, params).items():
            level, kind = key.split("_", 1)  # "l2_dynamic_j" -> ("l2", "dynamic_j")
            term = "dynamic" if kind.startswith("dynamic") else "static"
            out[f"{level}_{term}_energy_j"] += joules
            out[f"{level}_energy_j"] += joules
            out[f"{level}_overhead_energy_j"] = out.get(f"{level}_overhead_energy_j", 0.0) + joules
    seconds = metrics["seconds"]
    for level in ("l1d", "l2"):
        out.setdefault(f"{level}_overhead_energy_j", 0.0)
        for term in ("static", "dynamic"):
            out[f"{level}_{term}_power_w"] = out[f"{level}_{term}_energy_j"] / seconds if seconds else 0.0
        out[f"{level}_power_w"] = out[f"{level}_energy_j"] / seconds if seconds else 0.0
    out["cache_energy_j"] = out["l1d_energy_j"] + out["l2_energy_j"]
    out["energy_node_nm"] = params.node_nm
    return out


def recompute(frame, params: EnergyParams, config_of: Callable[[Mapping[str, Any]], Any]):
    """Energy columns of every row of a results DataFrame under other energy parameters, without
    simulating: `config_of(row)` gives each row's Config."""
    import pandas as pd

    rows = [compute(metrics=row, config=config_of(row), params=params) for _, row in frame.iterrows()]
    return pd.DataFrame(rows, index=frame.index)
