"""LoSCache on the Python side: the energy of its own hardware, charged to the L2 (the paper counts
"accessing our hardware extensions", the prediction tables and the extended L2 tags, in the L2's
energy), and the prediction metrics a sweep row gives.

Every number below comes from CACTI 7.0 (HewlettPackard/cacti, built beside the project), run with
the settings behind `gpucachex.energy.CACTI_TABLE` (cache.cfg defaults, itrs-hp cells and
peripherals, 360 K, sequential access) so that base and overhead are comparable:

- Prediction table, per SM: a fully associative structure searched by PC (32-bit CAM tag) whose
  entries hold the L2 block address (25 bits), the predicted count (6 bits) and the threshold (2 bits,
  enough for the default maximum of 3); modelled as a fully associative cache with 8-byte blocks
  (33 bits rounded up: the numbers are an upper bound) and one search port,
  `-size = entries x 8 bytes, -block size 8, -associativity 0, -tag size 32, -search port 1`.
  Every LD/ST request searches it and reads the matching entry; inserting a PC during the prediction
  phase and the update at its end write an entry; it leaks all the time.
- Extended L2 tags: the 6-bit access counter in every L2 line's tag. CACTI run for each L2 geometry of
  the energy table with its default tag width (47 - log2(size) + log2(2 x ways - 1) bits) and with 6 bits
  more; the ratios (extended / base) of the tag-array read energy and leakage are applied to the
  run's tag entry. Each L2 tag lookup reads the counters with the tags, and each L2 access writes its
  line's counter back (charged like another read of the extra bits: an upper bound, a write touches
  one way's 6 bits); each table-update message at a phase end reads one extended tag.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

from gpucachex import energy

# CACTI 7.0, fully associative prediction table: entries -> (search pJ, read pJ, write pJ, leakage mW), per node.
TABLE_CACTI: dict[int, dict[int, tuple[float, float, float, float]]] = {
    45: {
        8: (3.20811, 2.48359, 2.47543, 0.917359),
        16: (3.75794, 2.49724, 2.64610, 1.11610),
        32: (4.83732, 2.52956, 2.99245, 1.52059),
        64: (7.01601, 2.60766, 3.69863, 2.53941),
        128: (11.2583, 2.72508, 5.07219, 4.38453),
        256: (21.7731, 3.02481, 7.88421, 8.46325),
    },
    32: {
        8: (1.65554, 1.34616, 1.35370, 0.500520),
        16: (1.93253, 1.35447, 1.44715, 0.606231),
        32: (2.47627, 1.37341, 1.63638, 0.821614),
        64: (3.57181, 1.42001, 2.02354, 1.37204),
        128: (6.41268, 1.49043, 2.77509, 2.52275),
        256: (10.9864, 1.66573, 4.31264, 4.57654),
    },
}

# CACTI 7.0, L2 tag array with 6 more bits per tag: (KB, ways, node) -> (read-energy ratio, leakage ratio).
EXT_TAG_CACTI: dict[tuple[int, int, int], tuple[float, float]] = {
    (64, 8, 45): (3.61079 / 3.16023, 5.06934 / 4.57165),
    (96, 16, 45): (6.79647 / 5.90348, 10.9558 / 10.1352),
    (128, 8, 45): (4.31309 / 3.77627, 8.48760 / 7.52943),
    (128, 16, 45): (7.14560 / 6.18826, 12.4720 / 11.4223),
    (64, 8, 32): (1.84223 / 1.61086, 2.72375 / 2.45597),
    (96, 16, 32): (3.44635 / 2.98619, 5.86194 / 5.41929),
    (128, 8, 32): (2.27916 / 1.99132, 4.56530 / 4.05032),
    (128, 16, 32): (3.66187 / 3.16669, 6.67741 / 6.11202),
}


def table_energy(entries: int, node_nm: int = 45) -> tuple[float, float, float, float]:
    """(search pJ, read pJ, write pJ, leakage mW) of one SM's prediction table of `entries` entries:
    CACTI's numbers, interpolated linearly in log2(entries) between the sizes run, scaled in proportion
    above 256 entries, and the 8-entry numbers (an upper bound) below 8."""
    if node_nm not in TABLE_CACTI:
        raise ValueError(f"no prediction-table energy at {node_nm} nm (known: {sorted(TABLE_CACTI)})")
    if entries < 1:
        raise ValueError(f"table entries must be positive, got {entries}")
    table = TABLE_CACTI[node_nm]
    sizes = sorted(table)
    if entries <= sizes[0]:
        return table[sizes[0]]
    if entries >= sizes[-1]:
        return tuple(v * entries / sizes[-1] for v in table[sizes[-1]])
    for lo, hi in zip(sizes, sizes[1:]):
        if lo <= entries <= hi:
            w = (math.log2(entries) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
            return tuple((1 - w) * a + w * b for a, b in zip(table[lo], table[hi]))
    raise AssertionError("unreachable")  # pragma: no cover


def extended_tag_ratios(size_kb: float, ways: int, node_nm: int = 45) -> tuple[float, float]:
    """(read-energy ratio, leakage ratio) of the L2 tag array with the 6-bit counters, for the CACTI
    geometry nearest to (size_kb, ways) at the node, as `energy.cache_energy` picks it."""
    keys = [k for k in EXT_TAG_CACTI if k[2] == node_nm]
    if not keys:
        raise ValueError(f"no extended-tag energy at {node_nm} nm")
    key = min(keys, key=lambda k: (abs(math.log2(size_kb / k[0])), abs(math.log2(ways / k[1]))))
    return EXT_TAG_CACTI[key]


def overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    """Energy of the prediction tables and the extended L2 tags over the run, charged to the L2."""
    node = params.node_nm
    search, read, write, leak_mw = table_energy(int(config["l2.loscache.table_entries"]), node)
    table_dyn_pj = (metrics["loscache_table_lookups"] * (search + read)
                    + (metrics["loscache_table_inserts"] + metrics["loscache_table_updates"]) * write)
    table_static_j = leak_mw * 1e-3 * config["core.sms"] * metrics["seconds"]

    parts = config["l2.partitions"]
    entry, _ = energy.cache_energy("l2", config["l2.size_kb"] / parts, config["l2.ways"], node)
    entry = params.l2 or entry
    dyn_ratio, leak_ratio = extended_tag_ratios(config["l2.size_kb"] / parts, config["l2.ways"], node)
    extra_tag_pj = entry.tag_pj * (dyn_ratio - 1.0)
    tag_dyn_pj = (metrics["l2_tag_lookups"] + metrics["l2_accesses"]) * extra_tag_pj
    tag_dyn_pj += metrics["loscache_table_updates"] * entry.tag_pj * dyn_ratio
    tag_static_j = entry.tag_leak_mw_per_line * (leak_ratio - 1.0) * 1e-3 * metrics["l2_lines"] * metrics["seconds"]
    return {"l2_dynamic_j": (table_dyn_pj + tag_dyn_pj) * 1e-12, "l2_static_j": table_static_j + tag_static_j}


energy.OVERHEADS["loscache"] = overhead


def prediction_summary(frame):
    """Per row of a sweep (a DataFrame of runs): accuracy, the share of L2 accesses that carried a
    prediction (coverage), and the shares of under- and over-predictions."""
    import pandas as pd

    out = pd.DataFrame(index=frame.index)
    total = frame["l2_predictions"].where(frame["l2_predictions"] > 0)
    out["accuracy"] = frame["l2_prediction_accuracy"]
    out["under_share"] = frame["l2_under_predictions"] / total
    out["over_share"] = frame["l2_over_predictions"] / total
    out["coverage"] = frame["loscache_predicted_l2_accesses"] / frame["l2_accesses"].where(frame["l2_accesses"] > 0)
    return out
