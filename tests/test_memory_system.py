"""Known answers for the memory system's plumbing: DRAM queue and bandwidth, FR-FCFS banks, crossbar
flit timing, arbitration among SMs, the L2's partition hash and its sectored hits."""
from gpucachex import presets, simulate
from tracebuild import KernelSpec, alu, build, ld, lanes

LINE = 128


def stream(n_ctas, warps, loads, base=0x1000000):
    """Every warp loads `loads` distinct lines, independently of each other."""
    progs = [[[ld(1 + i, lanes(base + ((c * warps + w) * loads + i) * LINE)) for i in range(loads)]
              for w in range(warps)] for c in range(n_ctas)]
    return build([KernelSpec(progs)])


def one_channel(**overrides):
    """8 SMs whose loads skip the L1D, 2 L2 partitions on one DRAM channel, MSHRs never the bound."""
    return presets.get("gtx480").replace(**{
        "core.sms": 8, "l1i.size_kb": 0, "l1d.cache_global": False, "l2.partitions": 2, "dram.channels": 1,
        "l2.mshr_entries": 256, "dram.model": "simple", **overrides})


def achieved(r):
    return r["dram_bytes"] / r["cycles"]


def test_the_dram_queue_is_not_held_while_misses_cross_the_l2_latency():
    # A fetch enters the scheduler's 16 entries only when it reaches the channel. Were it to take its
    # entry at the L2 lookup, 16 entries per 240-cycle latency would serve 8.5 B a cycle, not 42.
    trace = stream(32, 8, 16)
    short = simulate(one_channel(**{"dram.queue": 16, "l2.latency": 1}), trace)
    long = simulate(one_channel(**{"dram.queue": 16, "l2.latency": 240}), trace)
    assert long["dram_reads"] == short["dram_reads"] == 32 * 8 * 16
    assert achieved(long) > 0.85 * achieved(short) > 0.85 * 0.85 * 42.2


def test_dram_bandwidth_is_not_rounded_up_per_burst():
    # A 128 B burst at 42.2 B a cycle takes 3.03 cycles; rounded up to 4 it would serve 32 B a cycle.
    trace = stream(32, 8, 16)
    rates = {bpc: achieved(simulate(one_channel(**{"dram.queue": 256, "dram.bytes_per_cycle": bpc}), trace))
             for bpc in (32.0, 42.2)}
    assert 0.9 * 32.0 < rates[32.0] <= 32.0
    assert 0.9 * 42.2 < rates[42.2] <= 42.2


def test_row_hits_to_one_bank_follow_each_other_at_the_bus_pace():
    # 512 consecutive lines in one 64 KB row: the bank takes the next column command once a burst is
    # over, and CAS latency is a pipeline delay, so a long t_cl does not slow the stream.
    trace = stream(8, 8, 8)
    cfg = one_channel(**{"l2.partitions": 1, "dram.queue": 64, "dram.latency": 0, "dram.row_bytes": 65536,
                         "dram.bytes_per_cycle": 32.0, "dram.t_rcd": 0, "dram.t_rp": 0})
    simple = simulate(cfg.replace(**{"dram.t_cl": 30}), trace)
    frfcfs = simulate(cfg.replace(**{"dram.t_cl": 30, "dram.model": "frfcfs"}), trace)
    assert frfcfs["dram_row_hits"] == 511 and frfcfs["dram_row_misses"] == 1
    assert frfcfs["cycles"] < 1.05 * simple["cycles"]


def test_crossbar_ports_are_timed_in_flits_not_whole_packets():
    # One SM reads 2,048 lines that hit in the L2: its reply port carries 2,048 five-flit packets. At
    # two flits a cycle a packet takes 2.5 cycles; rounded up per packet it would take 3 (1.67 flits a
    # cycle), and three and four flits a cycle would both give 2.5.
    n, base = 2048, 0x2000000
    warps = [[ld(1 + i, lanes(base + (w * 16 + i) * LINE)) for i in range(16)] for w in range(n // 16)]
    trace = build([KernelSpec([warps[c * 8:(c + 1) * 8] for c in range(n // 128)])], memcpys=[(0, base, n * LINE)])
    cfg = presets.get("gtx480").replace(**{"core.sms": 1, "l1i.size_kb": 0, "l1d.cache_global": False,
                                            "l2.prefill": True, "l2.queue": 4096})
    for fpc in (2, 3, 4):
        r = simulate(cfg.replace(**{"icnt.flits_per_cycle": fpc}), trace)
        assert r["l2_hits"] == n and r["icnt_reply_flits"] == 5 * n
        assert r["icnt_reply_flits"] / r["cycles"] > 0.9 * fpc


def test_sms_competing_for_one_partition_are_served_in_turn():
    # Eight SMs run the same loads, all to L2 partition 0, whose input buffer stays full. Who may send
    # into a freed slot rotates; with SM 0 always first, SM 7 waited 70 times as often as SM 0.
    parts, il = 12, 256

    def line_of_partition_0(k):
        return 0x1000000 + (k // 2) * parts * il + (k % 2) * LINE

    progs = [[[ld(1 + i, lanes(line_of_partition_0((s * 8 + w) * 16 + i))) for i in range(16)] for w in range(8)]
             for s in range(8)]
    cfg = presets.get("gtx480").replace(**{"core.sms": 8, "l1i.size_kb": 0, "icnt.buffer": 1})
    r = simulate(cfg, build([KernelSpec(progs)]))
    fails = r.raw["l1d_per_cache"]["fail_miss_queue"]
    assert min(fails) > 0 and max(fails) < 1.3 * min(fails)


def two_passes(n_lines, base=0x1000000):
    """Four SMs read n_lines consecutive lines, then read them all again."""
    per_sm = n_lines // 4
    progs = []
    for s in range(4):
        first = [ld(1 + i % 200, lanes(base + (s * per_sm + i) * LINE)) for i in range(per_sm)]
        again = [ld(1 + i % 200, lanes(base + (s * per_sm + i) * LINE)) for i in range(per_sm)]
        progs.append([first])
        progs.append([again])
    return build([KernelSpec(progs[0::2]), KernelSpec(progs[1::2])])


def test_the_xor_partition_hash_keeps_every_l2_set_in_use():
    # 768 consecutive lines in a 768-line L2 of 12 partitions (8 sets of 8 ways each): the hashed
    # chunk gives each line its partition and its place within the partition (the hash is
    # invertible, so no two chunks share both), and this footprint fills every frame once: the second
    # pass hits everywhere. Placing lines within the partition by the unhashed chunk sent 28 chunks
    # of this footprint to full sets while other sets had room.
    n = 768
    for index in ("mod", "xor"):
        cfg = presets.get("gtx480").replace(**{"core.sms": 4, "l1i.size_kb": 0, "l1d.cache_global": False,
                                                "l2.partitions": 12, "dram.channels": 6, "l2.size_kb": 96.0,
                                                "l2.ways": 8, "l2.index": index})
        r = simulate(cfg, two_passes(n, base=0x200000))
        assert r["l2_accesses"] == 2 * n and r["l2_misses"] == n, index


def test_a_sectored_l2_serves_a_present_sector_while_the_line_fetches_another():
    # A warp reads sector 0 of a line, then sector 1 (a fetch), then sector 0 again: as in GPGPU-Sim's
    # sector cache the third read hits at once instead of waiting for the sector-1 fetch.
    cfg = presets.get("loscache").replace(**{"core.sms": 1, "core.max_ctas": 1, "core.schedulers": 1,
                                              "l1i.size_kb": 0, "l1d.cache_global": False, "l2.sector_bytes": 32})
    a = 0x100000
    prog = [ld(1, lanes(a, n=8)), alu(dst=(2,), src=(1,)), ld(3, lanes(a + 32, n=8), src=(2,)),
            ld(4, lanes(a, n=8), src=(2,)), alu(dst=(5,), src=(4,))]
    r = simulate(cfg, build([KernelSpec([[prog]])]))
    assert r["l2_hits"] == 1 and r["l2_pending_hits"] == 0 and r["l2_misses"] == 2 and r["dram_reads"] == 2


def test_the_l2_prefill_fills_only_the_copied_sectors_of_a_new_line():
    # A 32-byte copy to sector 0 of a line, then a read of its sector 2: a sectored L2 holds only what
    # the copy wrote (as GPGPU-Sim fills its sectors one by one), so the read misses and fetches its
    # sector; the whole line was once marked valid and the read hit. Copied a second time (the line
    # is then present), or unsectored (the line is its one sector), nothing changes.
    a = 0x100000
    prog = [ld(1, lanes(a + 64, n=8)), alu(dst=(2,), src=(1,))]
    cfg = presets.get("gtx480").replace(**{"core.sms": 1, "l1i.size_kb": 0, "l1d.cache_global": False,
                                            "l2.prefill": True})
    for sector, copies, hits in ((32, [(0, a, 32)], 0), (32, [(0, a, 32), (0, a, 32)], 0), (32, [(0, a, 128)], 1),
                                 (0, [(0, a, 32)], 1)):
        r = simulate(cfg.replace(**{"l2.sector_bytes": sector}), build([KernelSpec([[prog]])], memcpys=copies))
        assert r.raw["l2_prefill_lines"] == 1
        assert (r["l2_hits"], r["dram_reads"]) == (hits, 1 - hits), (sector, copies)
