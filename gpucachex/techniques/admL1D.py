"""AdmL1D on the Python side: the energy of its own hardware (two counters per SM and a comparator,
the paper's Fig. 4), the L1D line-cycles it keeps switched off (whose tags are gated with the data),
and the per-SM view of a run (the paper's Fig. 5).

The counters are updated once per L1D attempt during the warm-up only; the comparator fires once.
Their cost is tiny next to the L1D's (a tag lookup alone is 1.14 pJ at 45 nm) and is charged so that
the comparison with the baseline is not flattered:
- a 32-bit counter update: about 32 flip-flops clocked plus a carry chain of which a few bits toggle,
  about 0.1 pJ at 45 nm (a 45 nm flip-flop clocks at 2-5 fJ); `EnergyParams.extra["admL1D_counter_pj"]`;
- leakage of 2 x 32 counter bits, a 32-bit multiply-compare and the control, about 300 gates at
  roughly 10 nW each at 45 nm: 3 uW per SM; `EnergyParams.extra["admL1D_leak_uw_per_sm"]`.
At another node (`EnergyParams.node_nm`) both 45 nm numbers scale as the L1D's own do: by the ratios of
its CACTI entries at that node and at 45 nm (`energy.node_scale`: about 0.55 for energy and 0.53 for
leakage at 32 nm). A value given in `extra` is taken as the run's node's, unscaled.
"""
from __future__ import annotations

from typing import Any, Mapping

from gpucachex import energy

COUNTER_PJ = 0.1          # one 32-bit counter update at 45 nm
LEAK_UW_PER_SM = 3.0      # two counters, the comparator and control of one SM


def overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    """Energy of AdmL1D's counters and comparators over the run, charged to the L1D."""
    dynamic_scale, leakage_scale = energy.node_scale(config, "l1d", params.node_nm)
    counter_pj = float(params.extra.get("admL1D_counter_pj", COUNTER_PJ * dynamic_scale))
    leak_uw = float(params.extra.get("admL1D_leak_uw_per_sm", LEAK_UW_PER_SM * leakage_scale))
    updates = metrics["admL1D_warmup_fails"] + metrics["admL1D_warmup_accesses"]
    dynamic = updates * counter_pj * 1e-12
    static = leak_uw * 1e-6 * config["core.sms"] * metrics["seconds"]
    return {"l1d_dynamic_j": dynamic, "l1d_static_j": static}


energy.OVERHEADS["admL1D"] = overhead
energy.EXTRA_PARAMS["admL1D_counter_pj"] = "pJ of one AdmL1D counter update"
energy.EXTRA_PARAMS["admL1D_leak_uw_per_sm"] = "uW of leakage of one SM's AdmL1D counters and comparator"


def switched_off_line_cycles(metrics: Mapping[str, Any], config) -> float:
    """L1D line-cycles (all SMs) spent switched off: every line of each SM the decision switched off,
    from the decision cycle (the end of the warm-up) to the end of the run."""
    if not metrics["admL1D_decided"]:
        return 0.0
    lines_per_sm = metrics["l1d_lines"] / config["core.sms"]
    return metrics["admL1D_sms_off"] * lines_per_sm * (metrics["cycles"] - metrics["admL1D_decision_cycle"])


def no_l1d_line_cycles(metrics: Mapping[str, Any], config) -> float:
    """l1d.admission = off, AdmL1D's no-L1D reference point: every line is switched off from cycle 0."""
    return metrics["l1d_lines"] * metrics["cycles"]


energy.SWITCHED_OFF_LINE_CYCLES["admL1D"] = switched_off_line_cycles
energy.SWITCHED_OFF_LINE_CYCLES["off"] = no_l1d_line_cycles


def per_sm(result):
    """One row per SM of a run: the L1D's accesses, misses, hits and reservation fails over the whole
    run (by reason and in total), and, for an AdmL1D run, the R-to-A its warm-up measured and whether
    it was switched off."""
    import pandas as pd

    per = result.raw["l1d_per_cache"]
    frame = pd.DataFrame({"sm": range(len(per["accesses"])), "accesses": per["accesses"],
                          "hits": per["hits"], "misses": per["misses"]})
    reasons = ("line_alloc", "mshr_entry", "mshr_merge", "miss_queue")
    for r in reasons:
        frame[f"fails_{r}"] = per[f"fail_{r}"]
    frame["fails"] = frame[[f"fails_{r}" for r in reasons]].sum(axis=1)
    frame["r_to_a"] = frame["fails"] / frame["accesses"].where(frame["accesses"] > 0)
    m = result.metrics
    if "admL1D_sm0_r_to_a" in m:
        frame["warmup_r_to_a"] = [m[f"admL1D_sm{i}_r_to_a"] for i in frame["sm"]]
        frame["switched_off"] = [bool(m[f"admL1D_sm{i}_off"]) for i in frame["sm"]]
    return frame
