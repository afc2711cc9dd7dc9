"""The functional cache (`gpucachex.cache_run`): exact agreement with an independent reference,
known answers for every policy, and a clear error for every kind of bad input."""
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpucachex
from gpucachex.cli import main as cli_main
from reference_cache import ReferenceCache


def lines(*ids, line_bytes=64):
    return np.array(ids, dtype=np.uint64) * np.uint64(line_bytes)


# ---- agreement with the reference ---------------------------------------------------------

@st.composite
def workloads(draw):
    sets = draw(st.one_of(st.integers(1, 16), st.integers(1, 4096),
                          st.sampled_from([3, 5, 24, 32, 64, 96, 384, 1000, 4096])))
    ways = draw(st.one_of(st.integers(1, 8), st.integers(1, 64)))
    line_bytes = draw(st.sampled_from([32, 64, 128, 256]))
    n = draw(st.integers(1, 1500))
    # Concentrate accesses on a few sets so that replacement happens even in large caches:
    # line = set + sets * tag with few sets and a few more tags than ways.
    hot_sets = draw(st.lists(st.integers(0, sets - 1), min_size=1, max_size=4))
    tags = ways + draw(st.integers(0, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    hot = np.array(hot_sets, dtype=np.uint64)[rng.integers(0, len(hot_sets), n)]
    line = hot + np.uint64(sets) * rng.integers(0, tags, n).astype(np.uint64)
    # A fifth of the accesses anywhere in a footprint twice the cache.
    anywhere = rng.integers(0, 2 * sets * ways, n).astype(np.uint64)
    line = np.where(rng.random(n) < 0.2, anywhere, line)
    offset = rng.integers(0, line_bytes, n).astype(np.uint64)
    addresses = np.ascontiguousarray(line * np.uint64(line_bytes) + offset)
    writes = rng.random(n) < draw(st.sampled_from([0.0, 0.3, 0.7]))
    options = dict(write_back=draw(st.booleans()), write_allocate=draw(st.booleans()),
                   index=draw(st.sampled_from(["mod", "mod", "xor"] + (["fermi"] * 2 if sets in (32, 64) else []))))
    return sets, ways, line_bytes, addresses, writes, options


@pytest.mark.parametrize("policy", ["lru", "fifo"])
@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=workloads())
def test_matches_reference(policy, case):
    sets, ways, line_bytes, addresses, writes, options = case
    ref = ReferenceCache(sets, ways, line_bytes, policy, **options)
    for a, w in zip(addresses.tolist(), writes.tolist()):
        ref.access(a, w)
    write_policy = "write_back" if options["write_back"] else "write_through"
    got = gpucachex.cache_run(addresses, sets=sets, ways=ways, line_bytes=line_bytes, policy=policy, writes=writes,
                              write_policy=write_policy, write_allocate=options["write_allocate"],
                              index=options["index"])
    assert got == ref.stats


# Every registered policy, the ones users add included (README: the contract tests pick a new one up).
POLICIES = [p["name"] for p in gpucachex.policies()]


@pytest.mark.parametrize("policy", POLICIES)
def test_invariants_on_a_large_stream(policy):
    from gpucachex.functional import mixed_stream

    addrs = mixed_stream(200_000, footprint_bytes=1 << 22, seed=3)
    writes = np.random.default_rng(0).random(len(addrs)) < 0.25
    s = gpucachex.cache_run(addrs, sets=96, ways=6, line_bytes=128, policy=policy, writes=writes)
    assert s["hits"] + s["misses"] == s["accesses"] == len(addrs)
    assert s["reads"] + s["writes"] == s["accesses"]
    assert s["read_misses"] + s["write_misses"] == s["misses"]
    assert s["evictions"] <= s["fills"] <= s["misses"]
    assert s["fills"] - s["evictions"] <= 96 * 6  # what stays resident fits in the cache
    assert s["writebacks"] <= s["evictions"]
    assert gpucachex.cache_run(addrs, sets=96, ways=6, line_bytes=128, policy=policy, writes=writes) == s


# ---- known answers, one per policy -----------------------------------------------------------

def test_lru_known_answer():
    # 2 ways, lines A B A C B A: C evicts B (A was used more recently), B evicts A, A evicts C.
    s = gpucachex.cache_run(lines(0, 1, 0, 2, 1, 0), sets=1, ways=2, line_bytes=64, policy="lru")
    assert (s["hits"], s["misses"], s["evictions"]) == (1, 5, 3)


def test_fifo_known_answer():
    # Same trace: C evicts A (first in) despite A's hit, so B then hits; A evicts B.
    s = gpucachex.cache_run(lines(0, 1, 0, 2, 1, 0), sets=1, ways=2, line_bytes=64, policy="fifo")
    assert (s["hits"], s["misses"], s["evictions"]) == (2, 4, 2)


def test_srrip_known_answer_from_its_paper():
    # Jaleel et al. 2010: a reused pair a1 a2 survives the scan b1..b4 under 2-bit SRRIP-HP
    # (hits on a2 a1 and again a1 a2), while LRU loses both (hits only on a2 a1).
    trace = lines(1, 2, 2, 1, 11, 12, 13, 14, 1, 2)
    srrip = gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="srrip")
    lru = gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="lru")
    assert (srrip["hits"], srrip["evictions"]) == (4, 2)
    assert (lru["hits"], lru["evictions"]) == (2, 4)
    # With 1-bit RRPVs fills are "near" (0), so the scan can evict the pair: the policy parameter matters.
    nru = gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="srrip", rrpv_bits=1)
    assert nru["hits"] < srrip["hits"]


def test_random_known_answers():
    # Cycling over 5 lines in a 4-way set: LRU never hits; random replacement keeps some lines,
    # its choice depends only on the seed, and victims are spread over the ways.
    trace = lines(*([0, 1, 2, 3, 4] * 400))
    assert gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="lru")["hits"] == 0
    runs = [gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="random", seed=s) for s in range(20)]
    assert all(r["evictions"] == r["misses"] - 4 for r in runs)
    assert all(0 < r["hits"] < 2000 for r in runs)
    assert runs[3] == gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="random", seed=3)
    assert len({r["hits"] for r in runs}) > 1
    # A uniformly random victim in a 4-way set keeps a given line with probability 3/4 per miss;
    # the long-run hit rate of this cyclic trace is then well away from 0 and from 1.
    rate = np.mean([r["hits"] for r in runs]) / 2000
    assert 0.3 < rate < 0.8
    # Seeds are 64-bit: numpy integers are taken as they are, and one out of range is refused rather
    # than masked into another seed's run (2**64 + 3 would be seed 3)
    assert gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="random", seed=np.uint64(3)) == runs[3]
    for bad in (-1, 2**64 + 3):
        with pytest.raises(ValueError, match=f"seed must be an integer from 0 to 2\\*\\*64 - 1, got {bad}"):
            gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="random", seed=bad)
    with pytest.raises(TypeError, match="seed must be a non-negative integer, got True"):
        gpucachex.cache_run(trace, sets=1, ways=4, line_bytes=64, policy="random", seed=True)


def test_write_policies_known_answers():
    # One 1-way set. Write-back allocate: W A, R B (A written back), W B, R A (B written back).
    trace, writes = lines(0, 1, 1, 0, line_bytes=128), np.array([1, 0, 1, 0], dtype=bool)
    s = gpucachex.cache_run(trace, sets=1, ways=1, line_bytes=128, writes=writes)
    assert (s["hits"], s["writebacks"], s["write_throughs"]) == (1, 2, 0)
    # Write-through no-allocate: W A (not allocated), R A, W A (hit, forwarded), R B.
    trace = lines(0, 0, 0, 1, line_bytes=128)
    s = gpucachex.cache_run(trace, sets=1, ways=1, line_bytes=128, writes=writes, write_policy="write_through",
                            write_allocate=False)
    assert (s["hits"], s["fills"], s["write_throughs"], s["writebacks"]) == (1, 2, 2, 0)


def test_sectors_and_hashed_index():
    s = gpucachex.cache_run(np.array([0, 32, 8, 40, 128], dtype=np.uint64), sets=1, ways=1, line_bytes=128,
                            sector_bytes=32)
    assert (s["hits"], s["misses"], s["sector_misses"], s["evictions"]) == (2, 3, 1, 1)
    # A power-of-two stride maps every line to set 0 with the modulo index but spreads with xor.
    stride = np.arange(64, dtype=np.uint64) * np.uint64(32 * 128)
    trace = np.concatenate([stride, stride])
    mod = gpucachex.cache_run(trace, sets=32, ways=4, line_bytes=128, index="mod")
    xor = gpucachex.cache_run(trace, sets=32, ways=4, line_bytes=128, index="xor")
    assert mod["hits"] == 0 and xor["hits"] == 64


def test_a_no_allocate_write_to_a_missing_sector_is_a_sector_miss():
    # Read sector 0 of a line, then write its sector 1: the line is present and the sector is not,
    # whether or not the write allocates (the hook path of srrip and the fast path of lru alike).
    trace, writes = np.array([0, 32], dtype=np.uint64), np.array([False, True])
    for policy in ("lru", "srrip"):
        for allocate, fills in ((True, 2), (False, 1)):
            s = gpucachex.cache_run(trace, sets=1, ways=1, line_bytes=128, sector_bytes=32, writes=writes,
                                    write_allocate=allocate, policy=policy)
            assert (s["misses"], s["write_misses"], s["sector_misses"], s["fills"]) == (2, 1, 1, fills)


def test_fermi_index_spreads_a_4kb_row_pitch_as_gpgpu_sim_does():
    # 32 rows of a 4 KB-pitch matrix, read twice, in GPGPU-Sim's Fermi L1D (32 sets x 4 ways):
    # modulo puts every row in set 0; the Fermi hash puts row i in set (i >> 1) & 7 (address bits
    # 13-15 are row bits 1-3), four rows a set, so the second pass hits on all 32.
    rows = np.arange(32, dtype=np.uint64) * np.uint64(4096)
    trace = np.concatenate([rows, rows])
    mod = gpucachex.cache_run(trace, sets=32, ways=4, line_bytes=128, index="mod")
    fermi = gpucachex.cache_run(trace, sets=32, ways=4, line_bytes=128, index="fermi")
    assert mod["hits"] == 0 and fermi["hits"] == 32
    # With 64 sets address bit 12 (row bit 0) is the sixth index bit: of rows 0-23 only rows i and
    # i + 16 share a set, so two ways hold all 24.
    three = np.concatenate([rows[:24], rows[:24]])
    assert gpucachex.cache_run(three, sets=64, ways=2, line_bytes=128, index="fermi")["hits"] == 24
    with pytest.raises(ValueError, match="fermi set index needs 32 or 64 sets, got 16"):
        gpucachex.cache_run(trace, sets=16, ways=4, line_bytes=128, index="fermi")


def test_policies_are_listed_with_parameters():
    names = {p["name"]: p for p in gpucachex.policies()}
    assert {"lru", "fifo", "random", "srrip"} <= set(names)
    assert names["srrip"]["params"][0]["name"] == "rrpv_bits"


def test_input_is_not_copied_or_modified():
    addrs = np.arange(0, 1 << 16, 8, dtype=np.uint64)
    before = addrs.copy()
    gpucachex.cache_run(addrs, sets=8, ways=2, line_bytes=64)
    assert np.array_equal(addrs, before)
    # Read-only arrays are accepted (the core only reads).
    addrs.flags.writeable = False
    assert gpucachex.cache_run(addrs, sets=8, ways=2, line_bytes=64)["accesses"] == len(addrs)


# ---- bad input ------------------------------------------------------------------------------

GOOD = np.arange(16, dtype=np.uint64) * np.uint64(64)


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(sets=0), ValueError, "sets must be a positive integer, got 0"),
    (dict(sets=-4), ValueError, "sets must be a positive integer, got -4"),
    (dict(ways=0), ValueError, "ways must be a positive integer"),
    (dict(ways=65), ValueError, "ways must be between 1 and 64, got 65"),
    (dict(line_bytes=0), ValueError, "line_bytes must be a positive integer"),
    (dict(line_bytes=96), ValueError, "line_bytes must be a power of two, got 96"),
    (dict(line_bytes=-128), ValueError, "line_bytes must be a positive integer"),
    (dict(sets=2.5), TypeError, "sets must be an int"),
    (dict(policy="belady"), ValueError,
     r"unknown policy 'belady' \(known: " + ", ".join(p["name"] for p in gpucachex.policies()) + r"\)"),
    (dict(policy="lru", rrpv_bits=2), ValueError, "unknown option 'rrpv_bits' for policy 'lru'"),
    (dict(policy="srrip", rrpv_bits=9), ValueError, "rrpv_bits must be between 1 and 8, got 9"),
    (dict(policy="srrip", rrpv_bits="two"), TypeError, "rrpv_bits of policy 'srrip' must be a number"),
    (dict(sector_bytes=48), ValueError, "sector_bytes must be a power of two"),
    # named, with the value given (a too large sector_bytes was reported as the sets, ways and line size;
    # the others said "int too big to convert" or "must be real number, not complex")
    (dict(sector_bytes=2**40), ValueError, "sector_bytes must be at most 4294967295, got 1099511627776"),
    (dict(sector_bytes=-32), ValueError, r"sector_bytes must be positive \(or 0 for no sectors\), got -32"),
    (dict(sector_bytes=32.0), TypeError, "sector_bytes must be an integer, got 32.0"),
    (dict(sets=2**64), ValueError, "sets must be at most 4294967295, got 18446744073709551616"),
    (dict(sets=-2**64), ValueError, "sets must be a positive integer, got -18446744073709551616"),
    (dict(policy="srrip", rrpv_bits=10**400), ValueError,
     "srrip: rrpv_bits must be between 1 and 8, got an integer too large for a float"),
    (dict(policy="srrip", rrpv_bits=2j), TypeError, "option rrpv_bits of policy 'srrip' must be a number, got complex"),
    (dict(policy="srrip", rrpv_bits=np.array([2, 3])), TypeError,
     "option rrpv_bits of policy 'srrip' must be a number, got numpy.ndarray"),
    (dict(index="crc"), ValueError, "index must be 'mod', 'xor' or 'fermi', got 'crc'"),
    (dict(write_policy="write_around"), ValueError, "write_policy must be 'write_back' or 'write_through'"),
    # Truth values are not bools: each of these once meant write_allocate=True.
    (dict(write_allocate="False"), TypeError, "write_allocate must be a bool, got 'False'"),
    (dict(write_allocate="no"), TypeError, "write_allocate must be a bool, got 'no'"),
    (dict(write_allocate=0.5), TypeError, "write_allocate must be a bool, got 0.5"),
    (dict(write_allocate=[0]), TypeError, r"write_allocate must be a bool, got \[0\]"),
    (dict(write_back="False"), TypeError, "write_back must be a bool, got 'False'"),
    # sector_bytes=True ran with 1-byte sectors; an index that is no string got an error naming
    # nothing ("argument 10 must be str")
    (dict(sector_bytes=True, line_bytes=8), TypeError, "sector_bytes must be an integer, got True"),
    (dict(index=1), TypeError, "index must be 'mod', 'xor' or 'fermi', got 1"),
    # write_back=True once silently won over write_policy="write_through".
    (dict(write_policy="write_through", write_back=True), ValueError,
     "write_policy='write_through' contradicts write_back=True"),
    (dict(write_policy="write_back", write_back=False), ValueError,
     "write_policy='write_back' contradicts write_back=False"),
])
def test_bad_geometry_and_options(kwargs, error, match):
    args = dict(sets=4, ways=2, line_bytes=64)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        gpucachex.cache_run(GOOD, **args)


def test_unaligned_addresses_are_copied_for_the_core_which_refuses_them():
    # read in place through a uint64 pointer: one byte into a buffer is a misaligned read in C
    from gpucachex import _core

    shifted = np.frombuffer(bytearray(GOOD.nbytes + 1), np.uint64, offset=1, count=GOOD.size)
    shifted[:] = GOOD
    assert not shifted.flags.aligned
    assert gpucachex.cache_run(shifted, sets=4, ways=2, line_bytes=64) == \
        gpucachex.cache_run(GOOD, sets=4, ways=2, line_bytes=64)
    with pytest.raises(ValueError, match=r"addresses: the array must be aligned to its 8-byte items"):
        _core.cache_run(shifted, None, 4, 2, 64)


def test_write_flags_are_bools_in_the_core_too():
    from gpucachex import _core

    for name in ("write_back", "write_allocate"):
        with pytest.raises(TypeError, match=f"{name} must be a bool, got 'False'"):
            _core.cache_run(GOOD, None, 4, 2, 64, **{name: "False"})
    # W A then R A in one 1-way set: no-allocate leaves the read a miss, allocate makes it a hit.
    trace, writes = lines(0, 0, line_bytes=128), np.array([True, False])
    for allocate, hits in ((False, 0), (True, 1)):
        s = _core.cache_run(trace, writes, 1, 1, 128, write_allocate=allocate)
        assert s["hits"] == hits
    # Both spellings of the write policy, when they agree, are accepted.
    s = gpucachex.cache_run(trace, sets=1, ways=1, line_bytes=128, writes=writes, write_policy="write_through",
                            write_back=False)
    assert s["write_throughs"] == 1


@pytest.mark.parametrize("addresses, error, match", [
    (GOOD.astype(np.float64), TypeError, "addresses must have dtype uint64, got buffer format 'd'"),
    (GOOD.astype(np.int64), TypeError, "addresses must have dtype uint64"),
    (GOOD.astype(np.uint32), TypeError, "addresses must have dtype uint64"),
    (np.arange(32, dtype=np.uint64)[::2], ValueError, "addresses must be C-contiguous"),
    (np.zeros((4, 4), dtype=np.uint64), ValueError, "addresses must be one-dimensional"),
    ([0, 64, 128], TypeError, "addresses must be a numpy array of uint64, got list"),
    (None, TypeError, "addresses must be a numpy array of uint64, got NoneType"),
])
def test_bad_address_arrays(addresses, error, match):
    with pytest.raises(error, match=match):
        gpucachex.cache_run(addresses, sets=4, ways=2, line_bytes=64)


def test_bad_write_arrays():
    with pytest.raises(ValueError, match="writes has 3 elements but addresses has 16"):
        gpucachex.cache_run(GOOD, sets=4, ways=2, line_bytes=64, writes=np.zeros(3, dtype=bool))
    with pytest.raises(TypeError, match="writes must have dtype bool"):
        gpucachex.cache_run(GOOD, sets=4, ways=2, line_bytes=64, writes=np.zeros(16, dtype=np.int32))
    with pytest.raises(ValueError, match="writes must be C-contiguous"):
        gpucachex.cache_run(GOOD, sets=4, ways=2, line_bytes=64, writes=np.zeros(32, dtype=bool)[::2])


def test_empty_stream():
    s = gpucachex.cache_run(np.zeros(0, dtype=np.uint64), sets=4, ways=2, line_bytes=64)
    assert s["accesses"] == 0 and s["hits"] == 0


# ---- command line ---------------------------------------------------------------------------

def test_cli_cache_json(tmp_path, capsys):
    path = tmp_path / "trace.bin"
    lines(0, 1, 0, 2, 1, 0).astype("<u8").tofile(path)
    assert cli_main(["cache", str(path), "--sets", "1", "--ways", "2", "--line", "64", "--policy", "fifo", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["hits"], out["misses"], out["evictions"]) == (2, 4, 2)


def test_cli_cache_table_and_policy_option(tmp_path, capsys):
    path = tmp_path / "trace.bin"
    lines(1, 2, 2, 1, 11, 12, 13, 14, 1, 2).astype("<u8").tofile(path)
    assert cli_main(["cache", str(path), "--sets", "1", "--ways", "4", "--line", "64", "--policy", "srrip",
                     "--option", "rrpv_bits=2"]) == 0
    out = capsys.readouterr().out
    assert "hits" in out and " 4" in out
    # A number in any spelling reaches the policy, whose own check names what it takes.
    assert cli_main(["cache", str(path), "--sets", "1", "--ways", "4", "--line", "64", "--policy", "srrip",
                     "--option", "rrpv_bits=1e3"]) == 2
    assert "rrpv_bits must be between 1 and 8, got 1000" in capsys.readouterr().err
    assert cli_main(["cache", str(path), "--sets", "1", "--ways", "4", "--line", "64", "--policy", "srrip",
                     "--option", "rrpv_bits=two"]) == 2
    assert "--option rrpv_bits: 'two' is not a number" in capsys.readouterr().err


def test_cli_cache_option_takes_only_policy_parameters(tmp_path, capsys):
    # Lines 0, 1, 0 in one 2-way set of 128 B lines, 32 B sectors: 0x00 and 0x40 are different
    # sectors of line 0, so the second read of line 0 is a sector miss and nothing hits.
    path = tmp_path / "trace.bin"
    np.array([0x00, 0x80, 0x40], dtype="<u8").tofile(path)
    geometry = ["cache", str(path), "--sets", "1", "--ways", "2", "--line", "128", "--json"]
    assert cli_main([*geometry, "--sector", "32"]) == 0
    assert json.loads(capsys.readouterr().out)["hits"] == 0
    # --option sector_bytes=128 silently replaced --sector 32 (the read hit); --option seed=1 failed
    # with "cache_run() got multiple values for keyword argument 'seed'".
    for option, flag in (("sector_bytes=128", "--sector"), ("seed=1", "--seed"), ("index=1", "mod"),
                         ("write_back=0", "reads only"), ("write_allocate=0", "reads only")):
        assert cli_main([*geometry, "--sector", "32", "--option", option]) == 2
        err = capsys.readouterr().err
        assert f"--option {option.split('=')[0]}: not a parameter of a replacement policy" in err and flag in err
    # a parameter given twice: the second one silently won
    assert cli_main([*geometry, "--policy", "srrip", "--option", "rrpv_bits=3", "--option", "rrpv_bits=2"]) == 2
    assert "--option rrpv_bits is given twice" in capsys.readouterr().err


def test_cli_cache_hit_rate_of_an_empty_file_is_undefined(tmp_path, capsys):
    # No access, no hit rate: it printed 0 (every access missed), where simulate prints nan / null.
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    geometry = ["cache", str(path), "--sets", "4", "--ways", "2", "--line", "64"]
    assert cli_main([*geometry, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["accesses"] == 0 and out["hit_rate"] is None
    assert cli_main(geometry) == 0
    assert ["hit_rate", "nan"] in [line.split() for line in capsys.readouterr().out.splitlines()]


def test_cli_cache_errors(tmp_path, capsys):
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"\x00" * 12)
    assert cli_main(["cache", str(bad), "--sets", "4", "--ways", "2", "--line", "64"]) == 2
    assert "not a multiple of 8" in capsys.readouterr().err
    assert cli_main(["cache", str(tmp_path / "missing.bin"), "--sets", "4", "--ways", "2", "--line", "64"]) == 2
    assert "no such file" in capsys.readouterr().err
    good = tmp_path / "good.bin"
    GOOD.astype("<u8").tofile(good)
    assert cli_main(["cache", str(good), "--sets", "4", "--ways", "2", "--line", "96"]) == 2
    assert "line_bytes must be a power of two" in capsys.readouterr().err
    # An address file holds reads only: --write-through once printed the write-back numbers unchanged.
    assert cli_main(["cache", str(good), "--sets", "4", "--ways", "2", "--line", "64", "--write-through"]) == 2
    err = capsys.readouterr().err
    assert "--write-through changes nothing here: an address file holds reads only" in err and "writes=" in err


def test_cli_cache_names_a_folder_and_a_file_it_cannot_read(tmp_path, capsys, monkeypatch):
    geometry = ["--sets", "4", "--ways", "2", "--line", "64"]
    assert cli_main(["cache", str(tmp_path), *geometry]) == 2
    assert capsys.readouterr().err == f"gpucachex cache: error: {tmp_path} is a directory, not an address file\n"
    # A file this process may not read (chmod 000; root reads it anyway, so its refusal is played here)
    # ended in a PermissionError traceback.
    good = tmp_path / "good.bin"
    GOOD.astype("<u8").tofile(good)

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(np, "fromfile", refused)
    assert cli_main(["cache", str(good), *geometry]) == 2
    assert capsys.readouterr().err == f"gpucachex cache: error: {good}: cannot read (Permission denied)\n"


def test_cli_gen_addresses(tmp_path, capsys):
    out = tmp_path / "a.bin"
    assert cli_main(["gen-addresses", str(out), "--count", "1000", "--footprint-mb", "1"]) == 0
    data = np.fromfile(out, dtype="<u8")
    assert len(data) == 1000 and data.max() < (1 << 20)


def test_cli_gen_addresses_errors_write_nothing(tmp_path, capsys):
    out = tmp_path / "a.bin"
    for args, message in ((["--count", "-5"], "--count must be >= 0, got -5"),
                          (["--footprint-mb", "0"], "--footprint-mb must be from 1 to 17592186044416 (64-bit "
                                                    "addresses), got 0"),
                          # beyond the 64-bit address space (numpy's bound error named no option)
                          (["--footprint-mb", str(1 << 50)], f"got {1 << 50}"),
                          (["--seed", "-1"], "seed must be an integer from 0 to 2**64 - 1, got -1"),
                          (["--count", str(10**14)], "addresses need about")):
        assert cli_main(["gen-addresses", str(out), *args]) == 2
        assert message in capsys.readouterr().err
        assert not out.exists()
    assert cli_main(["gen-addresses", str(tmp_path / "no" / "such" / "dir.bin"), "--count", "10"]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_cli_gen_addresses_cut_short_says_why_and_leaves_no_file(tmp_path):
    # A file size limit (as a full disk) stops the write after 4,000 of 80,000 bytes: the error said
    # "cannot write (None)", and the 500 addresses written stayed as a file `cache` reads without a word.
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    out = tmp_path / "a.bin"
    run = subprocess.run([sys.executable, "-m", "gpucachex", "gen-addresses", str(out), "--count", "10000"],
                         capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(Path(gpucachex.__file__).parents[1])),
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (4000, 4000)))
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr == f"gpucachex gen-addresses: error: {out}: cannot write (File too large)\n"
    assert not out.exists()


@pytest.mark.parametrize("footprint", [4, 64, 1000, 1024, 1028])
def test_mixed_stream_stays_inside_small_footprints(footprint):
    from gpucachex.functional import mixed_stream

    # Streams are runs of 256 words; a footprint of fewer words must shorten them, not overrun it.
    addrs = mixed_stream(20_000, footprint_bytes=footprint, seed=5)
    assert addrs.max() < footprint and (addrs % 4 == 0).all()
    assert len(np.unique(addrs)) == footprint // 4  # and every word is reached


def test_mixed_stream_refuses_bad_arguments():
    from gpucachex.functional import mixed_stream

    with pytest.raises(TypeError, match="count must be an integer"):
        mixed_stream(10.5)
    with pytest.raises(TypeError, match="seed must be an integer"):
        mixed_stream(10, seed="1")
    with pytest.raises(ValueError, match="seed must be an integer from 0"):
        mixed_stream(10, seed=1 << 64)
    with pytest.raises(ValueError, match="stream_fraction"):
        mixed_stream(10, stream_fraction=1.5)
    with pytest.raises(MemoryError, match="addresses need about"):
        mixed_stream(10**14)
    with pytest.raises(ValueError, match=r"footprint_bytes must be at most 2\*\*64 .*got 18446744073709551620"):
        mixed_stream(10, footprint_bytes=(1 << 64) + 4)
    assert len(mixed_stream(np.int64(10))) == 10
    # The whole 64-bit space is a footprint like any other.
    assert len(mixed_stream(1000, footprint_bytes=1 << 64, align=1, seed=3)) == 1000
