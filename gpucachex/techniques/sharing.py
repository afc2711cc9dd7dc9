"""Energy of the structures the shared-L1D organisations add (l1d.sharing = remote, decoupled, ata):
the cluster crossbar (a dynamic energy per flit, and leakage) and the extra tag comparisons (ATA's
aggregated tag array compares every global read with the other L1Ds' tags; remote-sharing's probes
look tags up in the other L1Ds), plus the leakage of ATA's comparator groups.

Sources:
- Leakage: Xu et al., ATA-Cache, Section IV-D: at 45 nm the crossbar and the comparator groups take
  1.02 mm^2 and 0.02 mm^2 and leak 5.55 mW in total, for 30 SMs in 3 clusters of 10. The 5.55 mW is
  split between them by area and, for other cluster sizes, scaled per cluster with the crossbar's
  crosspoints (ports squared) and the comparators' pairs of L1Ds (n (n - 1)).
- Crossbar dynamic energy: a flit's bits driven over XBAR_MM of on-chip wire at 0.121 pJ per bit
  and mm (Keckler et al., "GPUs and the Future of Parallel Computing", IEEE Micro 31(5), 2011,
  Table 1: 256 bits over 10 mm cost 310 pJ at 40 nm). XBAR_MM = 2 mm is an assumption: the wires
  from an SM's L1D into the crossbar and out to another L1D of its cluster (the paper's 0.34 mm^2
  crossbar per cluster is 0.58 mm on a side; the L1Ds sit around it).
- A remote tag lookup costs what a lookup of the L1D's own tag array costs (the CACTI entry of
  gpucachex.energy, comparators included).
- Other nodes (`EnergyParams.node_nm`): the leakage (45 nm) and the wire energy (40 nm, taken as the
  45 nm number) scale as the L1D's own numbers do, by the ratios of its CACTI entries at that node
  and at 45 nm (`energy.node_scale`: about 0.55 for energy and 0.53 for leakage at 32 nm).
Decoupled-sharing adds only the crossbar: its lookups are the home L1D's ordinary ones.
Override the numbers with EnergyParams(extra={"sharing.xbar_pj_per_bit_mm": ..., "sharing.xbar_mm": ...,
"sharing.leakage_mw": ...}): values at the run's node, used unscaled.
"""
from __future__ import annotations

from typing import Any, Mapping

from gpucachex import energy

PAPER_LEAKAGE_MW = 5.55           # crossbar + comparators, 45 nm, whole GPU (ATA-Cache, Section IV-D)
XBAR_AREA_MM2, CMP_AREA_MM2 = 1.02, 0.02
PAPER_SMS, PAPER_CLUSTER = 30, 10
XBAR_PJ_PER_BIT_MM = 310.0 / (256 * 10)  # 0.121 pJ/bit/mm (Keckler et al. 2011, 40 nm)
XBAR_MM = 2.0


def _leakage_w(config, params: energy.EnergyParams, part: str) -> float:
    """Leakage of one kind of structure over the GPU: crossbars or comparator groups."""
    n = config["l1d.cluster_size"]
    if n < 2:
        return 0.0
    _, leakage_scale = energy.node_scale(config, "l1d", params.node_nm)
    total_mw = params.extra.get("sharing.leakage_mw", PAPER_LEAKAGE_MW * leakage_scale)
    paper_clusters = PAPER_SMS // PAPER_CLUSTER
    area = XBAR_AREA_MM2 if part == "crossbar" else CMP_AREA_MM2
    per_paper_cluster_mw = total_mw * area / (XBAR_AREA_MM2 + CMP_AREA_MM2) / paper_clusters
    if part == "crossbar":
        scale = (n / PAPER_CLUSTER) ** 2
    else:
        scale = n * (n - 1) / (PAPER_CLUSTER * (PAPER_CLUSTER - 1))
    return per_paper_cluster_mw * scale * (config["core.sms"] / n) * 1e-3


def overhead_parts(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    """The added energy of a run, in joules, by structure."""
    mode = config["l1d.sharing"]
    if mode == "private" or config["l1d.cluster_size"] < 2:
        return {}
    seconds = metrics["seconds"]
    dynamic_scale, _ = energy.node_scale(config, "l1d", params.node_nm)
    pj_bit_mm = params.extra.get("sharing.xbar_pj_per_bit_mm", XBAR_PJ_PER_BIT_MM * dynamic_scale)
    mm = params.extra.get("sharing.xbar_mm", XBAR_MM)
    flit_pj = config["icnt.flit_bytes"] * 8 * pj_bit_mm * mm
    parts = {
        "crossbar_dynamic_j": metrics["cluster_flits"] * flit_pj * 1e-12,
        "crossbar_static_j": _leakage_w(config, params, "crossbar") * seconds,
    }
    if mode in ("ata", "remote"):
        entry, _ = energy.cache_energy("l1d", config["l1d.size_kb"], config["l1d.ways"], params.node_nm)
        entry = params.l1d or entry
        parts["remote_tag_dynamic_j"] = metrics["l1d_remote_tag_lookups"] * entry.tag_pj * 1e-12
    if mode == "ata":
        parts["comparator_static_j"] = _leakage_w(config, params, "comparator") * seconds
    return parts


def _overhead(metrics: Mapping[str, Any], config, params: energy.EnergyParams) -> dict[str, float]:
    parts = overhead_parts(metrics, config, params)
    out = {"l1d_dynamic_j": 0.0, "l1d_static_j": 0.0}
    for name, joules in parts.items():
        out["l1d_dynamic_j" if "dynamic" in name else "l1d_static_j"] += joules
    return out


for _name in ("remote", "decoupled", "ata"):
    energy.OVERHEADS[_name] = _overhead
energy.EXTRA_PARAMS["sharing.xbar_pj_per_bit_mm"] = "pJ to drive one bit over 1 mm of the cluster crossbar"
energy.EXTRA_PARAMS["sharing.xbar_mm"] = "mm of wire a flit crosses in the cluster crossbar"
energy.EXTRA_PARAMS["sharing.leakage_mw"] = "mW of crossbar and comparator leakage of ATA-Cache's 30-SM GPU"
