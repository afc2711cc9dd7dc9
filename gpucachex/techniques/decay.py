"""Cache decay on the Python side: the energy of its per-line counters, registered in
`gpucachex.energy.OVERHEADS`.

Each line has a 2-bit saturating counter at full Vdd (Kaxiras et al.): two cells of leakage per line,
ticked by a global counter every decay.interval / 4 cycles and reset by every access; a tick or a
reset writes 2 bits (the data array's write energy per bit). While an L1D is switched off whole by its
admission technique its counters are gated with its lines, as its tags are: they leak
`off_leakage_fraction` and are not ticked.
"""
from __future__ import annotations

from typing import Any, Mapping

from gpucachex import energy
from gpucachex.techniques.drowsy import bit_leakage_j, levels_with

COUNTER_BITS = 2
TICKS_PER_INTERVAL = 4


def overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    out = {}
    for level in levels_with(config, "decay"):
        entry, _ = energy.level_entry(config, level, params)
        bit_write_pj = entry.write_pj_per_32b / 256
        ticks = metrics["cycles"] * TICKS_PER_INTERVAL // config["decay.interval"]
        ticked_lines = metrics[f"{level}_lines"]
        switched_off = energy.switched_off_line_cycles(metrics, config, level)
        if switched_off:
            # The counters of a switched-off L1D are gated with its lines: not ticked (ticks are spread
            # evenly over the run, so its off line-cycles take their share of them).
            ticked_lines -= switched_off / metrics["cycles"]
        writes = ticks * ticked_lines + metrics[f"{level}_accesses"]
        out[f"{level}_dynamic_j"] = writes * COUNTER_BITS * bit_write_pj * 1e-12
        out[f"{level}_static_j"] = bit_leakage_j(metrics, config, level, params, COUNTER_BITS)
    return out


energy.OVERHEADS["decay"] = overhead
