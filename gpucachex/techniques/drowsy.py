"""Drowsy lines on the Python side: the energy of their own per-line hardware, registered in
`gpucachex.energy.OVERHEADS` (the residencies themselves are in the energy model's static terms, the
wake-ups in its dynamic terms).

Each line keeps a drowsy bit and its voltage-select switches at full Vdd (Flautner et al.): the bit
leaks like one data cell at full Vdd (a line's data leakage divided by its bits). Setting and clearing
it rides on the wake-up, which the energy model charges.
"""
from __future__ import annotations

from typing import Any, Mapping

from gpucachex import energy


def levels_with(config, name: str) -> list[str]:
    """The cache levels whose line power technique is `name`."""
    return [lvl for lvl, key in (("l1d", "l1d.power"), ("l2", "l2.power")) if config[key] == name]


def bit_leakage_j(metrics, config, level: str, params: energy.EnergyParams, bits_per_line: int) -> float:
    """Leakage over the run of `bits_per_line` full-Vdd cells added to every line of `level`."""
    entry, _ = energy.level_entry(config, level, params)
    line_bytes = config[f"{level}.line_bytes"]
    leak_w_per_bit = entry.data_leak_mw_per_line * line_bytes / 128.0 * 1e-3 / (line_bytes * 8)
    return leak_w_per_bit * bits_per_line * metrics[f"{level}_lines"] * metrics["seconds"]


def overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    return {f"{level}_static_j": bit_leakage_j(metrics, config, level, params, 1)
            for level in levels_with(config, "drowsy")}


energy.OVERHEADS["drowsy"] = overhead
