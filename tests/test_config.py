"""Configurations and presets: immutable, validated at construction with errors that name the key,
changed by dotted keys, and identified by a key that is stable across processes."""
import subprocess
import sys

import pytest

from gpucachex import presets
from gpucachex.config import Config, schema


def test_every_paper_preset_exists_and_builds():
    assert {"gtx480", "loscache", "admL1D", "atoofian", "ata", "gtx1080"} <= set(presets.names())
    for name in presets.names():
        cfg = presets.get(name)
        assert cfg.name == name
        assert cfg.l1d_lines > 0 and cfg.l2_lines > 0


@pytest.mark.parametrize("name, key, value", [
    ("gtx480", "core.sms", 15), ("gtx480", "l1d.size_kb", 16.0), ("gtx480", "l1d.ways", 4),
    ("gtx480", "l2.size_kb", 768.0), ("gtx480", "dram.channels", 6),
    ("loscache", "l2.ways", 16), ("loscache", "l2.partitions", 6), ("loscache", "core.scheduler", "gto"),
    ("admL1D", "core.scheduler", "lrr"), ("admL1D", "l1d.mshr_entries", 32), ("admL1D", "core.max_threads", 1024),
    # AdmL1D's Table 1 "64-sets/8-ways/6-banks, 128KB/bank": GPGPU-Sim 3.2's two 64 KB slices per bank.
    ("admL1D", "l2.partitions", 12), ("admL1D", "l2.ways", 8), ("admL1D", "dram.channels", 6),
    ("atoofian", "core.sms", 16), ("atoofian", "core.scheduler", "two_level"),
    # GPGPU-Sim 3.x's GTX480 L2 MSHR: -gpgpu_cache:dl2 ...,A:32:4,4 (32 entries, 4 requests each).
    ("gtx480", "l2.mshr_merge", 4), ("loscache", "l2.mshr_merge", 4), ("admL1D", "l2.mshr_merge", 4),
    ("atoofian", "l2.mshr_merge", 4), ("gtx480", "l2.mshr_entries", 32), ("gtx480", "l1d.mshr_merge", 8),
    # -gpgpu_clock_domains 700:700:700:924 (3.2) and 700:1400:700:924 (3.1): cycles are 700 MHz core cycles,
    # a channel moves 32 B per 924 MHz DRAM cycle.
    ("gtx480", "core.clock_mhz", 700.0), ("admL1D", "core.clock_mhz", 700.0), ("loscache", "core.clock_mhz", 700.0),
    ("atoofian", "core.clock_mhz", 700.0), ("gtx480", "dram.bytes_per_cycle", 42.2), ("gtx480", "dram.t_cl", 9),
    ("gtx480", "icnt.flits_per_cycle", 1), ("atoofian", "icnt.flits_per_cycle", 2),
    ("ata", "core.sms", 30), ("ata", "l1d.size_kb", 64.0), ("ata", "l1d.ways", 64), ("ata", "l1d.sector_bytes", 32),
    ("ata", "l2.size_kb", 3072.0), ("ata", "l1d.cluster_size", 10), ("ata", "core.schedulers", 4),
    ("ata", "l1d.latency_queue", True), ("gtx1080", "l1d.latency_queue", True), ("gtx480", "l1d.latency_queue", False),
    ("gtx1080", "core.sms", 20), ("gtx1080", "l1d.ways", 6), ("gtx1080", "l1d.cache_global", False),
    ("gtx1080", "l2.partitions", 16),
    # GPGPU-Sim 3.2's Fermi L1D hash where the paper (or the log) ran it; gtx480 stays freely sweepable.
    ("loscache", "l1d.index", "fermi"), ("admL1D", "l1d.index", "fermi"), ("gtx1080", "l1d.index", "fermi"),
    ("gtx480", "l1d.index", "mod"), ("atoofian", "l1d.index", "mod"), ("ata", "l1d.index", "mod"),
])
def test_presets_follow_their_sources(name, key, value):
    assert presets.get(name)[key] == value


def test_geometry_derived_from_size():
    cfg = presets.get("gtx480")
    assert cfg.l1d_sets == 32 and cfg.l1d_lines == 128
    assert presets.get("gtx1080").l1d_sets == 64
    assert presets.get("ata").l1d_sets == 8
    assert presets.get("admL1D").l2_sets_per_partition == 64


def test_replace_with_dotted_keys_and_immutability():
    base = presets.get("gtx480")
    cfg = base.replace(**{"l1d.ways": 8, "core.scheduler": "lrr"})
    assert cfg["l1d.ways"] == 8 and base["l1d.ways"] == 4
    assert cfg.diff(base) == {"l1d.ways": 8, "core.scheduler": "lrr"}
    with pytest.raises(AttributeError, match="immutable"):
        cfg.name = "x"
    with pytest.raises(TypeError):
        cfg["l1d.ways"] = 2  # Mapping, not MutableMapping
    assert cfg.to_dict()["l1d.ways"] == 8
    assert cfg.to_dict(nested=True)["l1d"]["ways"] == 8


def test_numpy_scalars_are_taken_as_python_values():
    """Grids built with numpy (np.arange, a DataFrame column) hand numpy scalars to the configuration:
    they are checked and stored as the Python value, so the configuration and its key are the same."""
    import numpy as np

    base = presets.get("gtx480")
    cfg = base.replace(**{"l1d.ways": np.int64(8), "core.store_acks": np.bool_(False), "l1d.policy": np.str_("fifo"),
                          "l2.latency": np.float64(100.0)})
    plain = base.replace(**{"l1d.ways": 8, "core.store_acks": False, "l1d.policy": "fifo", "l2.latency": 100})
    assert cfg.key() == plain.key()
    assert type(cfg["l1d.ways"]) is int and type(cfg["core.store_acks"]) is bool and type(cfg["l1d.policy"]) is str
    with pytest.raises(ValueError, match="l1d.ways must be an integer, got 8.5"):
        base.replace(**{"l1d.ways": np.float64(8.5)})
    with pytest.raises(TypeError, match="l1d.ways must be a number, got bool True"):
        base.replace(**{"l1d.ways": np.bool_(True)})


def test_key_is_stable_across_processes_and_sensitive_to_values():
    cfg = presets.get("ata").replace(**{"l1d.sharing": "private"})
    out = subprocess.run([sys.executable, "-c",
                          "from gpucachex import presets; "
                          "print(presets.get('ata').replace(**{'l1d.sharing': 'private'}).key())"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == cfg.key()
    assert cfg.key() != cfg.replace(**{"l1d.ways": 32}).key()
    # -0.0 (np.linspace's, a sign flipped) is the same configuration as 0.0, in a store too
    zero = cfg.replace(**{"l1d.admL1D.b_threshold": 0.0})
    assert cfg.replace(**{"l1d.admL1D.b_threshold": -0.0}).key() == zero.key()
    assert cfg == presets.get("ata") and hash(cfg) == hash(presets.get("ata"))


def test_configs_pickle_and_keep_their_key():
    import pickle

    cfg = presets.get("ata").replace(**{"l1d.sharing": "ata"})
    again = pickle.loads(pickle.dumps(cfg))
    assert again == cfg and again.key() == cfg.key() and again.name == "ata"


def test_nested_overrides_round_trip_and_bad_mappings_are_named():
    cfg = presets.get("loscache").replace(**{"l2.power": "loscache", "l2.loscache.table_entries": 8})
    nested = cfg.to_dict(nested=True)
    assert nested["l2"]["loscache"]["table_entries"] == 8
    assert Config(nested) == cfg and Config(nested).key() == cfg.key()
    assert Config({"l1d": {"ways": 8}, "loscache": {"max_threshold": 5}})["l1d.ways"] == 8
    assert Config({"loscache": {"max_threshold": 5}})["l2.loscache.max_threshold"] == 5
    with pytest.raises(ValueError, match=r"configuration key l1d\.ways is given twice$"):
        Config({"l1d.ways": 4, "l1d": {"ways": 8}})
    with pytest.raises(ValueError, match=r"l2\.loscache\.table_entries is given twice \(as "
                                         r"'l2\.loscache\.table_entries' and 'loscache\.table_entries'\)"):
        Config({"l2.loscache.table_entries": 8, "loscache.table_entries": 16})
    # An empty section is no change, but only under a section's name: a misspelt one would vanish unseen.
    assert Config({"l1d": {}, "loscache": {}, "l2": {"loscache": {}}}) == Config()
    with pytest.raises(KeyError, match=r"unknown configuration section 'l1dd' \(close: l1d"):
        Config({"l1dd": {}})
    with pytest.raises(KeyError, match=r"unknown configuration section 'l2\.loscahe'"):
        Config({"l2": {"loscahe": {}}})
    with pytest.raises(TypeError, match=r"configuration keys are strings such as 'l1d\.ways', got 1"):
        Config({1: 2})
    with pytest.raises(TypeError, match=r"overrides must be a mapping of keys to values .* got str 'l1d\.ways=8'"):
        Config("l1d.ways=8")
    # diff against overrides of the defaults, as well as against a Config
    assert cfg.diff({"l2": {"loscache": {"table_entries": 8}}, "l2.power": "loscache"}) == cfg.diff(
        Config({"l2.loscache.table_entries": 8, "l2.power": "loscache"}))
    assert presets.get("gtx480").diff(presets.get("gtx480", l1d={"ways": 8})) == {"l1d.ways": 4}


def test_short_names_resolve_to_the_unique_full_key():
    cfg = presets.get("gtx480").replace(**{"sms": 30})
    assert cfg["core.sms"] == 30
    with pytest.raises(KeyError, match="ambiguous"):
        presets.get("gtx480").replace(ways=8)


@pytest.mark.parametrize("change, error, match", [
    ({"core.sms": 0}, ValueError, r"core\.sms must be between 1 and 1024, got 0"),
    ({"l1d.ways": 128}, ValueError, r"l1d\.ways must be between 1 and 64"),
    ({"l1d.size_kb": 0.25, "l1d.ways": 4}, ValueError, r"l1d\.size_kb = 0\.25 holds 2 lines of 128 bytes, fewer than l1d\.ways = 4"),
    ({"l1d.size_kb": 10.1}, ValueError, r"l1d\.size_kb = 10\.1 is not a whole number of sets"),
    # the lines of one partition against its ways, not the whole L2's 24 lines "fewer than" 8 ways
    ({"l2.size_kb": 3.0, "l2.partitions": 6}, ValueError,
     r"l2\.size_kb = 3 holds 4 lines of 128 bytes in each partition, fewer than l2\.ways = 8$"),
    # the core printed numbers with six digits: 16.0000001 read "16", a size that looks valid
    ({"l1d.size_kb": 16.0000001}, ValueError, r"l1d\.size_kb = 16\.0000001 is not a whole number of sets"),
    ({"l1d.power": "drowsy", "drowsy.window": 1234567, "drowsy.period": 7654321}, ValueError,
     r"drowsy\.window \(1234567\) and drowsy\.period \(7654321\) select different policies"),
    ({"l1d.index": "fermi", "l1d.size_kb": 8.0}, ValueError,
     r"l1d\.index = 'fermi' \(GPGPU-Sim's Fermi hash\) needs 32 or 64 L1D sets; l1d\.size_kb = 8 with 4 ways of "
     r"128 bytes gives 16"),
    ({"core.scheduler": "fifo"}, ValueError, r"core\.scheduler must be one of lrr, gto, two_level, got 'fifo'"),
    ({"core.alu_latency": -1}, ValueError, r"core\.alu_latency must be between 0 and"),
    # bounds in full: "between 1 and 1.67772e+07, got 16777217" seemed to refuse a value in range
    ({"core.registers": 16777217}, ValueError, r"core\.registers must be between 1 and 16777216, got 16777217$"),
    ({"l1d.size_kb": 10**400}, ValueError,
     r"l1d\.size_kb must be between 0\.03125 and 1048576, got an integer too large for a float$"),
    ({"l2.latency": 1.5}, ValueError, r"l2\.latency must be an integer, got 1\.5"),
    ({"l1d.policy": "belady"}, ValueError, r"l1d\.policy must be one of lru, fifo, random, srrip"),
    ({"l2.power": "magic"}, ValueError, r"l2\.power must be one of"),
    ({"no.such.key": 1}, KeyError, r"unknown configuration key 'no\.such\.key' \(`gpucachex keys` lists them\)"),
    ({"l1d.wayz": 4}, KeyError, r"unknown configuration key 'l1d\.wayz' \(close: l1d\.ways"),
    ({"dram.channels": 5}, ValueError, r"l2\.partitions \(12\) must be a multiple of dram\.channels \(5\)"),
    ({"l1d.cache_global": "yes"}, TypeError, r"l1d\.cache_global must be a bool"),
    # the value too, as for numbers: which of a grid's values is wrong
    ({"l2.power": 1}, TypeError, r"l2\.power must be a string \(one of none, .*\), got int 1$"),
    ({"l1d.latency_queue": "yes"}, TypeError, r"l1d\.latency_queue must be a bool"),
    ({"dram.latency_jitter": -1}, ValueError, r"dram\.latency_jitter must be between 0 and 100000, got -1"),
    ({"dram.latency_jitter": 2.5}, ValueError, r"dram\.latency_jitter must be an integer, got 2\.5"),
    # the bounds in their exact digits: `:g` gave 1.04858e+06 (1048580, which the key refuses)
    ({"dram.queue": 1048577}, ValueError, r"dram\.queue must be between 2 and 1048576, got 1048577$"),
    ({"l1d.size_kb": 0.03}, ValueError, r"l1d\.size_kb must be between 0\.03125 and 1048576, got 0\.03$"),
    ({"l1d.line_bytes": 96}, ValueError, r"l1d\.line_bytes must be a power of two"),
    ({"core.sms": 15, "l1d.cluster_size": 4}, ValueError, r"core\.sms \(15\) must be a multiple of l1d\.cluster_size \(4\)"),
    ({"l1d.line_bytes": 64}, ValueError, r"l1d\.line_bytes \(64\) and l2\.line_bytes \(128\) must be equal"),
    ({"l1d.line_bytes": 64, "l2.line_bytes": 64}, ValueError,
     r"l1i\.line_bytes \(128\) must not exceed l2\.line_bytes \(64\).*at most 64, or l1i\.size_kb = 0"),
])
def test_bad_configurations_name_the_key(change, error, match):
    with pytest.raises(error, match=match):
        presets.get("gtx480").replace(**change)


def test_overrides_called_name_or_self_are_unknown_keys():
    # The arguments' own names: "get() got multiple values for argument 'name'" said nothing of the key.
    with pytest.raises(KeyError, match=r"unknown configuration key 'name'"):
        presets.get("gtx480", name="mine")
    with pytest.raises(KeyError, match=r"unknown configuration key 'self'"):
        presets.get("gtx480").replace(self=1)


def test_unknown_preset():
    with pytest.raises(KeyError, match="unknown preset 'gtx9000'"):
        presets.get("gtx9000")


def test_schema_documents_every_key():
    keys = schema()
    assert len(keys) > 60
    for spec in keys.values():
        assert spec.doc, spec.name
        assert spec.name.count(".") >= 1
    assert keys["core.scheduler"].choices == ("lrr", "gto", "two_level")
    assert Config()["core.sms"] == keys["core.sms"].default


def test_cli_keys_lists_matches_and_names_a_pattern_that_matches_none(capsys):
    from gpucachex.cli import main

    assert main(["keys", "loscache.max"]) == 0
    out = capsys.readouterr().out
    assert "l2.loscache.max_threshold" in out and "l1d.ways" not in out
    assert main(["keys", "core.registers"]) == 0
    assert "1..16777216" in capsys.readouterr().out   # not %g's 1..1.67772e+07
    assert main(["keys", "l1d.wayz"]) == 2
    assert "no configuration key contains 'l1d.wayz' (close: l1d.ways" in capsys.readouterr().err


def test_cli_keys_prints_every_range_in_its_exact_digits(capsys):
    # `:g` printed six significant digits: core.registers' 16777216 read 1.67772e+07.
    import re

    from gpucachex.cli import main

    assert main(["keys"]) == 0
    ranges = re.findall(r"^  (\S+) +(?:int|float) +default +\S+ +(\S+)\.\.(\S+)$", capsys.readouterr().out, re.M)
    numeric = {s.name: s for s in schema().values() if s.type in ("int", "float")}
    assert sorted(name for name, _, _ in ranges) == sorted(numeric)
    for name, low, high in ranges:
        assert (float(low), float(high)) == (numeric[name].min, numeric[name].max), name
    assert ("core.registers", "1", "16777216") in ranges


def test_submodules_are_attributes_of_the_package_and_load_on_first_use():
    # A fresh interpreter: `import gpucachex` must not load matplotlib, and `gpucachex.presets` must work
    # without a separate `from gpucachex import presets`.
    code = ("import sys, gpucachex\n"
            "assert 'matplotlib' not in sys.modules\n"
            "assert gpucachex.presets.get('gtx480')['core.sms'] == 15\n"
            "assert 'sgemm' in gpucachex.workloads.names()\n"
            "assert 'plot' in dir(gpucachex)\n"
            "try:\n    gpucachex.presetz\nexcept AttributeError as e:\n    assert 'presetz' in str(e)\n"
            "else:\n    raise SystemExit('no error')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("values, error, match", [
    # the core reads C strings: "l1d.ways\0junk" set l1d.ways, and "lru\0junk" chose lru, silently
    ({"l1d.ways\0junk": 4}, ValueError, r"configuration key 'l1d.ways\\x00junk' contains a NUL character"),
    ({"l1d.policy": "lru\0junk"}, ValueError, r"l1d.policy: the value 'lru\\x00junk' contains a NUL character"),
    ({"l1d.policy": "lru\udcff"}, ValueError, r"l1d.policy: the value 'lru\\udcff' is not valid UTF-8"),
    # Python's own messages left the key out
    ({"l1d.ways": 10**400}, ValueError, "l1d.ways: the integer given is too large for a float"),
    ({"l1d.ways": 4j}, TypeError, "l1d.ways must be a number, bool or string, got complex"),
    # its own range check, with bounds and value in full (not 1.67772e+07 for 16777216)
    ({"core.registers": 16777217}, ValueError, r"core\.registers must be between 1 and 16777216, got 16777217$"),
    ({"core.sms": 15.0000001}, ValueError, r"core\.sms must be an integer, got 15\.0000001$"),
])
def test_the_core_names_the_key_it_cannot_read(values, error, match):
    from gpucachex import _core

    with pytest.raises(error, match=match):
        _core.check_config(values)


def test_a_policy_option_name_with_a_nul_is_refused_not_cut():
    import numpy as np

    from gpucachex import _core

    addresses = np.arange(16, dtype=np.uint64) * np.uint64(64)
    with pytest.raises(ValueError, match=r"policy parameter name 'rrpv_bits\\x00x' contains a NUL character"):
        _core.cache_run(addresses, None, 4, 2, 64, "srrip", policy_params={"rrpv_bits\0x": 3})
