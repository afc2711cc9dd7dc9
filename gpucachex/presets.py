"""Named GPU configurations: the configurations of the four papers and of the Accel-Sim log shipped
with the shared traces. Each preset is a set of overrides of the core's defaults (GPGPU-Sim's GTX 480)
with the source of its numbers. Latencies and bandwidths are in core cycles of the preset's clock.

>>> from gpucachex import presets
>>> presets.get("ata")["core.sms"]
30
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpucachex.config import Config


@dataclass(frozen=True)
class Preset:
    name: str
    description: str
    source: str
    overrides: dict[str, Any] = field(default_factory=dict)


# GPGPU-Sim's Fermi GTX 480: 15 SMs, 1536 threads / 8 CTAs / 48 warps / 32768 registers /
# 48 KB shared memory per SM, 16 KB 4-way 128 B L1D with 32 MSHRs, 768 KB L2 in 12 sub-partitions of
# 64 KB (8-way) behind 6 GDDR5 channels.
# Clocks (-gpgpu_clock_domains 700:700:700:924): GPGPU-Sim runs the SM, crossbar and L2 at 700 MHz, half
# the 1.4 GHz shader clock, because a 32-thread warp takes two shader cycles on Fermi's 16-wide SIMD
# groups: each of the two schedulers issues one warp instruction a 700 MHz cycle, and every latency of
# the config (-rop_latency 120, -dram_latency 100) counts those cycles. A channel moves 32 B per 924 MHz
# DRAM command cycle (2 chips x 4 B, QDR), 42.2 B per core cycle (177 GB/s in all); the GDDR5 timings
# CL = RCD = RP = 12 DRAM cycles are 9 core cycles.
# Every GPGPU-Sim 3.x GTX480 config gives the L2 32 MSHR entries of 4 merged requests
# (-gpgpu_cache:dl2 ...,A:32:4,4), against the L1D's 32 entries of 8 (-gpgpu_cache:dl1 ...,A:32:8,8).
# GPGPU-Sim 3.2.2's GTX480 config hashes the L1D set index (-gpgpu_cache:dl1 32:128:4,L:L:m:N:H), which
# the presets of the papers run on 3.2 use ("l1d.index": "fermi"); gtx480 itself keeps the modulo index
# so that any L1D geometry can be swept, and 3.1.1 (atoofian) predates the hash.
_FERMI = {
    "core.sms": 15, "core.max_threads": 1536, "core.max_ctas": 8, "core.max_warps": 48,
    "core.registers": 32768, "core.shmem_bytes": 49152, "core.schedulers": 2, "core.scheduler": "gto",
    "core.clock_mhz": 700.0,
    "l1d.size_kb": 16.0, "l1d.ways": 4, "l1d.line_bytes": 128, "l1d.mshr_entries": 32, "l1d.mshr_merge": 8,
    "l1d.miss_queue": 8, "l1d.hit_latency": 20, "l1d.store_blocked_by_reserved_set": True,
    "l2.size_kb": 768.0, "l2.partitions": 12, "l2.ways": 8, "l2.line_bytes": 128, "l2.latency": 120,
    "l2.mshr_entries": 32, "l2.mshr_merge": 4, "dram.channels": 6, "dram.bytes_per_cycle": 42.2, "dram.latency": 100,
    "dram.queue": 16, "dram.model": "frfcfs", "dram.t_cl": 9, "dram.t_rcd": 9, "dram.t_rp": 9,
}

PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("gtx480", "GPGPU-Sim's Fermi GTX 480: 15 SMs, 16 KB 4-way L1D, 768 KB L2, 6 channels",
           "GPGPU-Sim 3.x configs/GTX480/gpgpusim.config", dict(_FERMI)),
    Preset("loscache", "LoSCache's baseline: 15 SMs (GTO), 16 KB 4-way L1D, 768 KB 16-way L2 in 6 banks of 128 KB, "
                       "6 channels with 16-entry FR-FCFS queues",
           "Tan et al., LoSCache, Section V", {
               **_FERMI, "core.scheduler": "gto", "l2.partitions": 6, "l2.ways": 16, "l1d.index": "fermi",
               "dram.channels": 6, "dram.queue": 16, "dram.model": "frfcfs"}),
    Preset("admL1D", "AdmL1D's Table 1: 15 cores, 1024 threads / 48 warps / 32768 registers per core, 16 KB "
                     "32-set 4-way L1D with 32 MSHRs, 768 KB L2 in 6 banks of 128 KB, LRR scheduling",
           "Do, Kim, Kim, AdmL1D, Table 1, on GPGPU-Sim 3.2's GTX 480 (configs/3.x-cfgs/GTX480: 6 memory "
           "partitions of 2 sub-partitions, each an L2 slice of 64 sets x 8 ways x 128 B = 64 KB and its own "
           "crossbar port; the table's 64 sets / 8 ways per slice and 128 KB per bank are that configuration)", {
               **_FERMI, "core.max_threads": 1024, "core.max_warps": 48, "core.scheduler": "lrr",
               "l1d.index": "fermi", "l1d.mshr_entries": 32}),
    Preset("atoofian", "Atoofian and Manzak's Table 2: 16 SMs with a two-level scheduler, 16 KB 4-way L1D, "
                       "768 KB 16-way L2 in 6 banks of 128 KB, 6 FR-FCFS memory controllers",
           "Atoofian and Manzak, Power-Aware L1 and L2 Caches for GPGPUs, Table 2, on GPGPU-Sim 3.1.1's GTX 480 "
           "(6 memory partitions, each with one L2 bank: 768 KB / 6 = 128 KB, 64 sets x 16 ways x 128 B; 3.1.1 "
           "predates the Fermi L1D set-index hash, so the L1D index is the plain modulo; its clock domains "
           "700:1400:700:924 run the crossbar at twice the core clock, two flits a core cycle)", {
               **_FERMI, "core.sms": 16, "core.scheduler": "two_level", "core.two_level_active": 8,
               "l2.partitions": 6, "l2.ways": 16, "dram.channels": 6, "icnt.flits_per_cycle": 2}),
    Preset("ata", "ATA-Cache's Table II: 30 Volta-class SMs in 3 clusters of 10, 4 GTO schedulers, 64 KB 64-way "
                  "sectored L1D (4 banks, 32 cycles), 3 MB 16-way sectored L2 in 24 sub-partitions (188 cycles), "
                  "12 channels, 40 B crossbar flits",
           "Xu et al., ATA-Cache, Table II (DRAM timings converted from the 3.5 GHz memory clock to the 1.365 GHz "
           "core clock); the L1D checks tags at the end of its latency queue, as GPGPU-Sim 4.0, which the paper ran", {
               "core.sms": 30, "core.max_threads": 2048, "core.max_ctas": 32, "core.max_warps": 64,
               "core.registers": 65536, "core.shmem_bytes": 98304, "core.schedulers": 4, "core.scheduler": "gto",
               "core.clock_mhz": 1365.0, "l1i.size_kb": 128.0, "l1i.ways": 16,
               "l1d.size_kb": 64.0, "l1d.ways": 64, "l1d.line_bytes": 128, "l1d.sector_bytes": 32,
               "l1d.banks": 4, "l1d.hit_latency": 32, "l1d.latency_queue": True, "l1d.mshr_entries": 256,
               "l1d.mshr_merge": 8, "l1d.miss_queue": 16, "l1d.cluster_size": 10,
               "l2.size_kb": 3072.0, "l2.partitions": 24, "l2.ways": 16, "l2.line_bytes": 128,
               "l2.sector_bytes": 32, "l2.latency": 188, "l2.mshr_entries": 256, "l2.mshr_merge": 16,
               "l2.queue": 128,
               "icnt.flit_bytes": 40, "icnt.buffer": 512, "dram.channels": 12, "dram.banks": 16,
               "dram.bytes_per_cycle": 32.0, "dram.t_cl": 8, "dram.t_rcd": 8, "dram.t_rp": 8, "dram.latency": 100,
               "dram.queue": 64, "dram.model": "frfcfs"}),
    Preset("gtx1080", "The GTX 1080-like configuration of the Accel-Sim log in the shared traces: 20 SMs, 48 KB "
                      "6-way L1D that global loads skip, 2 MB L2 in 16 sub-partitions, 8 channels",
           "../shared/traces/vectoradd-100-32-trace/accelsim_log.txt (-gpgpu_cache:dl1 N:64:128:6,L:L:m:N:H, "
           "-gpgpu_cache:dl2 N:64:128:16, -gpgpu_n_mem 8 x 2 sub-partitions, -gpgpu_gmem_skip_L1D 1, "
           "-gpgpu_l2_rop_latency 120, -dram_latency 100, trace-mode latencies int 2, sp 2, dp 64, sfu 21, "
           "-gpgpu_l1_latency 1 behind Accel-Sim's L1D latency queue)", {
               "core.sms": 20, "core.max_threads": 2048, "core.max_ctas": 32, "core.max_warps": 64,
               "core.registers": 65536, "core.shmem_bytes": 98304, "core.schedulers": 2, "core.scheduler": "gto",
               "core.clock_mhz": 1607.0, "l1i.size_kb": 4.0, "l1i.ways": 4, "l1i.mshr_entries": 2,
               "core.alu_latency": 2, "core.alu_interval": 1, "core.sfu_latency": 21,
               "core.sfu_interval": 8, "core.fp64_latency": 64, "core.fp64_interval": 64, "core.tensor_latency": 32,
               "core.tensor_interval": 32, "core.smem_latency": 3,
               "l1d.size_kb": 48.0, "l1d.ways": 6, "l1d.line_bytes": 128, "l1d.mshr_entries": 128,
               "l1d.mshr_merge": 8, "l1d.miss_queue": 8, "l1d.hit_latency": 1, "l1d.latency_queue": True,
               "l1d.cache_global": False,
               "l1d.index": "fermi",
               "l2.size_kb": 2048.0, "l2.partitions": 16, "l2.ways": 16, "l2.line_bytes": 128, "l2.latency": 120,
               "l2.mshr_entries": 1024, "l2.mshr_merge": 1024, "l2.queue": 64,
               "icnt.flit_bytes": 32, "icnt.buffer": 64, "dram.channels": 8, "dram.latency": 100,
               "dram.bytes_per_cycle": 25.0, "dram.queue": 64, "dram.model": "frfcfs", "dram.banks": 16,
               "dram.t_cl": 8, "dram.t_rcd": 8, "dram.t_rp": 8}),
]}


def names() -> list[str]:
    """Names of the presets."""
    return list(PRESETS)


def describe(name: str) -> Preset:
    """The named preset: its description, source and the keys it sets (KeyError naming the known ones)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None


def get(name: str, /, **overrides: Any) -> Config:
    """The preset's configuration, optionally with dotted-key overrides."""
    # `name` positional-only: an override called "name" (a spec's [set] name = "mine") is an unknown
    # configuration key, not "get() got multiple values for argument 'name'".
    preset = describe(name)
    cfg = Config(preset.overrides, name=name)
    return cfg.replace(**overrides) if overrides else cfg
