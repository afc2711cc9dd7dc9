"""Energy of a run, computed from the core's counters and line residencies after the simulation, so
every energy parameter can be swept without simulating again (`compute(metrics=row, config=...)`,
`recompute(frame, params, ...)`).

Per cache level (every SM's L1D, every L2 partition), in these units:
- dynamic, per event: a tag lookup (`tag_pj`, every lookup, rejected attempts included); a data-array
  read or write per 32 B (`read_line_pj / (line/32)`, `write_line_pj / (line/32)`): a request reads or
  writes the whole line in an unsectored cache, its 32 B sectors in a sectored one, and with a divided
  word line (`l1d.dwl`, `l2.dwl`) only the `segment_bytes` segments its byte mask touches (for the L2,
  the byte mask of the L1 request it serves, as in Atoofian and Manzak), so the data-array energy
  scales exactly with the touched segments; a fill per 32 B written (never divided: the fill brings
  the whole line or sector); a wake-up of a drowsy line; the structures of the active techniques
  (`OVERHEADS`);
- static: each line's data array leaks `data_leak_mw_per_line` while ON, that times the Table 3
  fraction for the drowsy Vdd while DROWSY, and `off_leakage_fraction` of it while OFF (gated Vdd);
  tags (`tag_leak_mw_per_line`) leak in full whatever a line's state (a drowsy line's tag stays
  awake to be compared), except in an L1D switched off whole by its admission technique
  (`l1d.admission` off, or AdmL1D after its decision): its tags are gated with the data and leak
  `off_leakage_fraction` for the line-cycles it spends switched off (`SWITCHED_OFF_LINE_CYCLES`), and
  so do the per-line bits of drowsy and decay (their overheads).
Every result key is in joules (`*_energy_j`) or average watts over the run (`*_power_w`).

Default per-cache numbers come from CACTI 7.0 (HewlettPackard/cacti, cache.cfg defaults with
itrs-hp cells and peripherals, 360 K, sequential access: tags first, then the hit way's data, a
full-line port of 1024 bits) run for the presets' geometries at 45 nm and 32 nm. CACTI accepts only
power-of-two associativity: the 6-way 48 KB L1D of gtx1080 uses the 64 KB 8-way numbers, and the 64-way
64 KB L1D of ata uses the 64 KB 16-way numbers with the tag energy scaled by 64/16 ways.
`write_line_pj` is CACTI's total write energy per access, which includes writing the way's tag entry
(2.5-5.6% of it for the presets' geometries): a fill installs a tag, and a store updates the line's
state bits. A writeback charges the write at the level below, not a data-array read of the victim
(as GPUWattch counts it); reading it out would add about 0.1% to the L2 energy of a write-heavy run.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Mapping

WARP_SIZE = 32
NOMINAL_VDD = 0.9
LINE_CAPACITANCE_PF = 1.0  # supply rail of one 128 B line (1024 cells, about 1 fF each)


def check_amount(value, what: str) -> None:
    """An energy, power or length parameter: a finite number >= 0 (a negative or NaN one would give a
    silently wrong energy)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number, got {type(value).__name__} {value!r}")
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class CacheEnergy:
    """Energy parameters of one cache instance with 128 B lines (CACTI gives them per line: the
    per-32 B and per-segment energies are these divided by the line's 32 B units)."""
    tag_pj: float                  # one tag lookup (every way of a set compared)
    read_line_pj: float            # reading a whole line from the data array
    write_line_pj: float           # writing a whole line (stores, fills)
    data_leak_mw_per_line: float   # data-array leakage of one ON line
    tag_leak_mw_per_line: float    # tag leakage per line (gated only with a switched-off L1D)
    wakeup_pj_per_line: float | None = None  # raising a drowsy line to full Vdd; None: WAKEUP_NOTE
    source: str = ""

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "source" and not (f.name == "wakeup_pj_per_line" and value is None):
                check_amount(value, f"CacheEnergy.{f.name}")

    @property
    def read_pj_per_32b(self) -> float:
        return self.read_line_pj / 4

    @property
    def write_pj_per_32b(self) -> float:
        return self.write_line_pj / 4


WAKEUP_NOTE = ("Raising a 128 B line's supply rail (1024 cells plus wiring, about 1 pF) from the drowsy Vdd to "
               "0.9 V draws C x 0.9 V x (0.9 V - Vdd) from the supply: 0.45 pJ from 0.4 V.")


def wakeup_pj(vdd: float, line_bytes: int = 128) -> float:
    """Energy of one wake-up from `vdd` (WAKEUP_NOTE), for a line of `line_bytes`."""
    return LINE_CAPACITANCE_PF * NOMINAL_VDD * (NOMINAL_VDD - vdd) * line_bytes / 128.0


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

NODES_NM = tuple(sorted({key[3] for key in CACTI_TABLE}))

# Atoofian and Manzak, Table 3: static power of a row of L1/L2 at each Vdd (mW), HSPICE with PTM 32 nm
# 6T cells. Only the ratios to 0.9 V are used (the drowsy leakage of a line relative to an ON line);
# the absolute leakage of a line comes from the CACTI table, so both caches and both nodes stay on one
# consistent scale.
TABLE3_STATIC_MW = {
    "l1d": {0.2: 0.04, 0.3: 0.056, 0.4: 0.08, 0.9: 1.081},
    "l2": {0.2: 0.26, 0.3: 0.36, 0.4: 0.53, 0.9: 6.7},
}


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
        raise ValueError(f"no energy table for {level} at {node_nm} nm (known nodes: {', '.join(map(str, NODES_NM))})")
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
    drowsy_vdd: float | None = None     # None: the run's drowsy.vdd (0.4 V when the core has no such key)
    dwl: Mapping[str, bool] | None = None  # level -> divided word line; None: the run's l1d.dwl / l2.dwl
    segment_bytes: int = 4              # divided-word-line segment: 4 (the paper), 8, 16 or 32 bytes
    dwl_select: str = "bytes"           # which segments an access activates: "bytes" (its byte mask) or
                                        # "lanes" (one 4 B segment per active lane, the paper's active mask)
    l1d: CacheEnergy | None = None      # override the table entry
    l2: CacheEnergy | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # technique parameters named in EXTRA_PARAMS

    def __post_init__(self):
        if isinstance(self.node_nm, bool) or not isinstance(self.node_nm, numbers.Integral):
            raise TypeError(f"node_nm must be an integer number of nanometres ({', '.join(map(str, NODES_NM))}), "
                            f"got {type(self.node_nm).__name__} {self.node_nm!r}")
        if self.node_nm not in NODES_NM:   # every energy, overrides' techniques too, is scaled from a table node
            raise ValueError(f"node_nm must be one of the nodes of the energy tables ({', '.join(map(str, NODES_NM))}), "
                             f"got {self.node_nm}")
        if self.segment_bytes not in (4, 8, 16, 32):
            raise ValueError(f"segment_bytes must be 4, 8, 16 or 32, got {self.segment_bytes}")
        # Named type checks first: a string would otherwise fail the comparisons below as "'<=' not
        # supported between instances of 'float' and 'str'", naming no parameter.
        check_amount(self.off_leakage_fraction, "off_leakage_fraction")
        if not 0.0 <= self.off_leakage_fraction <= 1.0:
            raise ValueError(f"off_leakage_fraction must be in [0, 1], got {self.off_leakage_fraction}")
        if self.drowsy_vdd is not None:
            check_amount(self.drowsy_vdd, "drowsy_vdd")
            drowsy_leakage_fraction("l1d", self.drowsy_vdd)  # range check
        if self.dwl_select not in ("bytes", "lanes"):
            raise ValueError(f"dwl_select must be 'bytes' or 'lanes', got {self.dwl_select!r}")
        if self.dwl_select == "lanes" and self.segment_bytes != 4:
            raise ValueError("dwl_select='lanes' drives one 4-byte segment per active lane: segment_bytes must be 4, "
                             f"got {self.segment_bytes}")
        if self.dwl is not None:
            if not isinstance(self.dwl, Mapping):
                raise TypeError(f"dwl must be a mapping such as {{'l1d': True}}, got {type(self.dwl).__name__}")
            if set(self.dwl) - {"l1d", "l2"}:
                raise ValueError(f"dwl keys must be 'l1d' or 'l2', got {sorted(self.dwl)}")
            for level, on in self.dwl.items():
                if not isinstance(on, bool):  # 'no' or 0.0001 would otherwise count as on
                    raise TypeError(f"dwl[{level!r}] must be True or False, got {type(on).__name__} {on!r}")
        for level in ("l1d", "l2"):
            entry = getattr(self, level)
            if entry is not None and not isinstance(entry, CacheEnergy):
                raise TypeError(f"{level} must be a CacheEnergy or None, got {type(entry).__name__}")
        if not isinstance(self.extra, Mapping):
            raise TypeError(f"extra must be a mapping of technique parameters, got {type(self.extra).__name__}")
        if self.extra:
            _load_technique_registries()
            for key, value in self.extra.items():
                if key not in EXTRA_PARAMS:
                    raise KeyError(f"unknown extra energy parameter {key!r} (known: {', '.join(sorted(EXTRA_PARAMS))})")
                check_amount(value, f"extra[{key!r}]")


# Technique name -> function(metrics, config, params) -> {"l1d_dynamic_j": .., "l2_static_j": .., ...}
# giving the energy of the technique's own structures. Techniques register here from their module in
# gpucachex/techniques/. A technique selected for both caches (l1d.power and l2.power) is called once
# and returns the terms of both.
OVERHEADS: dict[str, Callable[[Mapping[str, Any], Any, EnergyParams], dict[str, float]]] = {}

# Name -> description of every EnergyParams.extra key a technique's overhead reads; techniques register
# theirs from gpucachex/techniques/, so a misspelt key is refused instead of silently ignored.
EXTRA_PARAMS: dict[str, str] = {}

# l1d.admission technique name -> function(metrics, config) -> the L1D line-cycles (all SMs) the technique
# kept the L1D switched off whole, tags included. Derived from the run's counters, so that energy stays
# recomputable from a finished run; techniques register here from gpucachex/techniques/.
SWITCHED_OFF_LINE_CYCLES: dict[str, Callable[[Mapping[str, Any], Any], float]] = {}


def _load_technique_registries() -> None:
    """The modules of gpucachex/techniques/ fill OVERHEADS, EXTRA_PARAMS and SWITCHED_OFF_LINE_CYCLES when
    imported; they import this module, so they are imported on first use instead of at the top."""
    import gpucachex.techniques  # noqa: F401


TECHNIQUE_KEYS = ("l1d.admission", "l1d.power", "l2.power", "l1d.sharing")
LEVELS = ("l1d", "l2")

# Segments of each size touched by all data-array accesses and by writes (the core's counters).
_SEGMENT_COUNTERS = {4: ("words_touched", "write_words_touched"), 8: ("segments8", "write_segments8"),
                     16: ("segments16", "write_segments16"), 32: ("segments32", "write_sectors")}


class _LevelView(Mapping):
    """The statistics of one level inside a flat metrics mapping (l2_hits -> hits)."""

    def __init__(self, metrics: Mapping[str, Any], level: str):
        self._m, self._p = metrics, level + "_"

    def __getitem__(self, key):
        try:
            return self._m[self._p + key]
        except KeyError:
            raise KeyError(f"the run's metrics have no {self._p + key!r}: energy needs the core's counters "
                           "(a Result's metrics, or a sweep row)") from None

    def __iter__(self):
        return (k[len(self._p):] for k in self._m if k.startswith(self._p))

    def __len__(self):
        return sum(1 for _ in self)


def switched_off_line_cycles(metrics: Mapping[str, Any], config, level: str) -> float:
    """Line-cycles (all instances) `level` spent switched off whole by its admission technique
    (`SWITCHED_OFF_LINE_CYCLES`): the tags, and every per-line structure a technique adds (drowsy
    bits, decay counters), are gated with the data then. 0 for the L2, which has no such technique."""
    _load_technique_registries()
    if level != "l1d":
        return 0.0
    switched_off = SWITCHED_OFF_LINE_CYCLES.get(config["l1d.admission"])
    return switched_off(metrics, config) if switched_off is not None else 0.0


def level_entry(config, level: str, params: EnergyParams) -> tuple[CacheEnergy, str]:
    """The energy parameters of one instance of `level` in `config` (table entry or override), and a
    note when the table's nearest geometry stands in for it."""
    if level not in LEVELS:
        raise ValueError(f"level must be 'l1d' or 'l2', got {level!r}")
    size_kb = config[f"{level}.size_kb"] / (1 if level == "l1d" else config["l2.partitions"])
    entry, note = cache_energy(level, size_kb, config[f"{level}.ways"], params.node_nm)
    override = getattr(params, level)
    return (override, "") if override is not None else (entry, note)


def node_scale(config, level: str, node_nm: int) -> tuple[float, float]:
    """(dynamic, leakage) factors from 45 nm to `node_nm` for numbers published at 45 nm (a technique's
    counters, comparators or wires): the ratios of the CACTI entry of `level`'s geometry at the node to
    the one at 45 nm, data-array read energy and data-array leakage per line, so that such numbers
    follow the node as the cache they are charged to does. (1, 1) at 45 nm."""
    size_kb = config[f"{level}.size_kb"] / (1 if level == "l1d" else config["l2.partitions"])
    at_node, _ = cache_energy(level, size_kb, config[f"{level}.ways"], node_nm)
    at_45, _ = cache_energy(level, size_kb, config[f"{level}.ways"], 45)
    return (at_node.read_line_pj / at_45.read_line_pj,
            at_node.data_leak_mw_per_line / at_45.data_leak_mw_per_line)


def drowsy_vdd(config, params: EnergyParams) -> float:
    if params.drowsy_vdd is not None:
        return params.drowsy_vdd
    return config["drowsy.vdd"] if "drowsy.vdd" in config else 0.4


def data_units(metrics: Mapping[str, Any], config, level: str, params: EnergyParams) -> tuple[float, float]:
    """Data-array reads and writes by requests, in 32 B units: whole lines (unsectored), the 32 B
    sectors touched (sectored), or with a divided word line the activated segments x segment_bytes
    / 32: the segments the request's byte mask touches (dwl_select "bytes", the default), or one
    4 B segment per active lane of the instruction (dwl_select "lanes": Atoofian and Manzak drive lane
    i's sub-word-line from bit i of the active mask, so the data energy follows warp utilisation)."""
    raw = _LevelView(metrics, level)
    line_bytes = config[f"{level}.line_bytes"]
    sector_bytes = config[f"{level}.sector_bytes"] or line_bytes
    dwl = (params.dwl or {}).get(level, config[f"{level}.dwl"])
    if dwl and params.dwl_select == "lanes":
        # 32 lanes drive the 32 segments of a 128 B line; a 64 B line has 16 segments per 32 lanes.
        per_lane = line_bytes / WARP_SIZE / 32
        writes = raw["write_lanes_sum"] * per_lane
        return raw["lanes_sum"] * per_lane - writes, writes
    if dwl:
        total_key, write_key = _SEGMENT_COUNTERS[params.segment_bytes]
        writes = raw[write_key]
        reads = raw[total_key] - writes
        unit = params.segment_bytes / 32
        return reads * unit, writes * unit
    if sector_bytes < line_bytes:
        # Whole sectors of the cache's own size, in 32 B units (a 64 B sector touched counts 2).
        return float(raw["read_units"]), float(raw["write_units"])
    per_line = line_bytes / 32
    return raw["data_reads"] * per_line, raw["data_writes"] * per_line


def level_energy(metrics: Mapping[str, Any], config, level: str, params: EnergyParams) -> dict[str, float]:
    """Energy terms of one cache level (all instances), in joules."""
    cfg = config
    raw = _LevelView(metrics, level)
    instances = cfg["core.sms"] if level == "l1d" else cfg["l2.partitions"]
    entry, note = level_entry(cfg, level, params)
    line_bytes = cfg[f"{level}.line_bytes"]
    scale = line_bytes / 128.0  # the table is for 128 B lines; energy per line scales with its bits
    vdd = drowsy_vdd(cfg, params)
    wake = entry.wakeup_pj_per_line * scale if entry.wakeup_pj_per_line is not None else wakeup_pj(vdd, line_bytes)
    reads32, writes32 = data_units(metrics, cfg, level, params)
    pj = {
        "tag": raw["tag_lookups"] * entry.tag_pj,
        "data_read": reads32 * entry.read_pj_per_32b,
        "data_write": writes32 * entry.write_pj_per_32b,
        "fill": raw["fill_sectors"] * entry.write_pj_per_32b,
        "wakeup": raw["wakeups"] * wake,
    }
    clock_hz = cfg["core.clock_mhz"] * 1e6
    leak_w = entry.data_leak_mw_per_line * scale * 1e-3  # one ON line
    by_state = {
        "on": leak_w * raw["resid_on"] / clock_hz,
        "drowsy": leak_w * drowsy_leakage_fraction(level, vdd) * raw["resid_drowsy"] / clock_hz,
        "off": leak_w * params.off_leakage_fraction * raw["resid_off"] / clock_hz,
    }
    data_static_j = sum(by_state.values())
    tag_line_cycles = raw["lines"] * metrics["cycles"]
    switched_off = switched_off_line_cycles(metrics, cfg, level)
    if switched_off:
        tag_line_cycles -= (1.0 - params.off_leakage_fraction) * switched_off
    tag_static_j = entry.tag_leak_mw_per_line * 1e-3 * tag_line_cycles / clock_hz
    out = {f"{level}_{k}_energy_j": v * 1e-12 for k, v in pj.items()}
    for state, joules in by_state.items():
        out[f"{level}_static_{state}_energy_j"] = joules
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


def compute(result=None, params: EnergyParams | Mapping[str, Any] | None = None, *,
            metrics: Mapping[str, Any] | None = None, config=None) -> dict[str, Any]:
    """Every energy term of a run (joules) and the average powers over its duration (watts).

    Give a `Result`, or the flat `metrics` of a run (for example a row of a sweep's DataFrame) with
    its `config`: energy needs only the counters and residencies, never a new simulation. `params`:
    EnergyParams, or a mapping of its fields (``{"node_nm": 32}``)."""
    params = as_params(params)
    if result is not None:
        metrics, config = result.metrics, result.config
    if metrics is None or config is None:
        raise TypeError("compute() needs a Result, or metrics= and config=")
    out: dict[str, Any] = {}
    for level in LEVELS:
        out.update(level_energy(metrics, config, level, params))
    # The techniques' own structures (prediction tables, comparators, crossbars, ...).
    _load_technique_registries()
    for name in dict.fromkeys(config[k] for k in TECHNIQUE_KEYS):
        fn = OVERHEADS.get(name)
        if fn is None:
            continue
        for key, joules in fn(metrics, config, params).items():
            level, kind = key.split("_", 1)  # "l2_dynamic_j" -> ("l2", "dynamic_j")
            if level not in LEVELS or kind not in ("dynamic_j", "static_j"):
                raise ValueError(f"energy overhead of {name!r} returned {key!r}: keys must be "
                                 "<l1d|l2>_<dynamic|static>_j")
            term = kind[:-2]
            out[f"{level}_{term}_energy_j"] += joules
            out[f"{level}_energy_j"] += joules
            out[f"{level}_overhead_energy_j"] = out.get(f"{level}_overhead_energy_j", 0.0) + joules
    seconds = metrics["seconds"]
    for level in LEVELS:
        out.setdefault(f"{level}_overhead_energy_j", 0.0)
        for term in ("static", "dynamic"):
            out[f"{level}_{term}_power_w"] = out[f"{level}_{term}_energy_j"] / seconds if seconds else 0.0
        out[f"{level}_power_w"] = out[f"{level}_energy_j"] / seconds if seconds else 0.0
    out["cache_energy_j"] = out["l1d_energy_j"] + out["l2_energy_j"]
    out["cache_power_w"] = out["cache_energy_j"] / seconds if seconds else 0.0
    out["energy_node_nm"] = params.node_nm
    return out


ENERGY_TERMS = tuple(f"{level}_{t}" for level in LEVELS for t in (
    "static_energy_j", "dynamic_energy_j", "energy_j", "static_power_w", "dynamic_power_w", "power_w")) + (
    "cache_energy_j", "cache_power_w")


def compare(run: Mapping[str, Any], baseline: Mapping[str, Any], keys=ENERGY_TERMS) -> dict[str, float]:
    """Ratios run / baseline of energy and power terms (a Result's metrics, a compute() output or a
    sweep row each): ``compare(drowsy.metrics, base.metrics)["l2_static_energy_j"]``."""
    for what in ("workload", "seed"):   # a ratio across workloads or seeds is not the technique's effect
        mine, theirs = _identity(run, what), _identity(baseline, what)
        if mine is not None and theirs is not None and mine != theirs:
            raise ValueError(f"compare(): the run and its baseline ran different {what}s ({mine!r} and {theirs!r}); "
                             f"compare runs of the same workload and seed")
    run = getattr(run, "metrics", run)
    baseline = getattr(baseline, "metrics", baseline)
    return {k: (run[k] / baseline[k] if baseline[k] else float("nan")) for k in keys}


def _identity(run: Any, what: str) -> Any:
    """The workload or seed of a Result or a sweep row, None where it does not say (metrics alone)."""
    if hasattr(run, "metrics"):
        return getattr(run, what, None)
    return run.get(what) if hasattr(run, "get") else None   # a dict or a DataFrame row


def as_params(params: EnergyParams | Mapping[str, Any] | None) -> EnergyParams:
    """EnergyParams from itself, a mapping of its fields, or None (the defaults)."""
    if params is None:
        return EnergyParams()
    if isinstance(params, EnergyParams):
        return params
    if isinstance(params, Mapping):
        names = {f.name for f in fields(EnergyParams)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise TypeError(f"unknown energy parameters {unknown} (known: {', '.join(sorted(names))})")
        return EnergyParams(**params)
    raise TypeError(f"params must be EnergyParams or a mapping of its fields, got {type(params).__name__}")


def recompute(frame, params: EnergyParams | Mapping[str, Any], config_of: Callable[[Mapping[str, Any]], Any]):
    """Energy columns of every row of a results DataFrame under other energy parameters, without
    simulating: `config_of(row)` gives each row's Config."""
    import pandas as pd

    params = as_params(params)
    rows = [compute(metrics=row, config=config_of(row), params=params) for _, row in frame.iterrows()]
    return pd.DataFrame(rows, index=frame.index)
