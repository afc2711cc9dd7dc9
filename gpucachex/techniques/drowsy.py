"""Drowsy lines on the Python side: the energy of their own per-line hardware, registered in
`gpucachex.energy.OVERHEADS` (the residencies themselves are in the energy model's static terms, the
wake-ups in its dynamic terms).

Each line keeps a drowsy bit and its voltage-select switches at full Vdd (Flautner et al.): the bit
leaks like one data cell at full Vdd (a line's data leakage divided by its bits), except while the L1D
is switched off whole by its admission technique (the bit is gated with the line, as the tags are).
Setting and clearing it rides on the wake-up, which the energy model charges.
"""
from __future__ import annotations

from typing import Any, Mapping

from gpucachex import energy


def levels_with(config, name: str) -> list[str]:
    """The cache levels whose line power technique is `name`."""
    return [lvl for lvl, key in (("l1d", "l1d.power"), ("l2", "l2.power")) if config[key] == name]


def bit_leakage_j(metrics, config, level: str, params: energy.EnergyParams, bits_per_line: int) -> float:
    """Leakage over the run of `bits_per_line` full-Vdd cells added to every line of `level`. While an
    L1D is switched off whole (`energy.switched_off_line_cycles`) they are gated with its lines and
    tags and leak `off_leakage_fraction`."""
    entry, _ = energy.level_entry(config, level, params)
    line_bytes = config[f"{level}.line_bytes"]
    leak_w_per_bit = entry.data_leak_mw_per_line * line_bytes / 128.0 * 1e-3 / (line_bytes * 8)
    joules = leak_w_per_bit * bits_per_line * metrics[f"{level}_lines"] * metrics["seconds"]
    switched_off = energy.switched_off_line_cycles(metrics, config, level)
    if switched_off:
        gated_seconds = (1.0 - params.off_leakage_fraction) * switched_off / (config["core.clock_mhz"] * 1e6)
        joules -= leak_w_per_bit * bits_per_line * gated_seconds
    return joules


def overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    return {f"{level}_static_j": bit_leakage_j(metrics, config, level, params, 1)
            for level in levels_with(config, "drowsy")}


energy.OVERHEADS["drowsy"] = overhead
