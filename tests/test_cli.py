"""`gpucachex simulate` from the command line: --set values as the configuration takes them, and --json
output that strict JSON parsers read."""
import importlib
import json
import math
import os
import sys
from types import SimpleNamespace

import gpucachex
from gpucachex import cli, presets


def test_set_refuses_a_key_given_twice_under_any_name(capsys):
    # The last value would silently win, as Config refuses a key given twice.
    for first in ("l2.loscache.prediction_period=50", "loscache.prediction_period=50"):
        assert cli.main(["simulate", "bfs:tiny", "--set", "l2.power=loscache", "--set", first,
                         "--set", "l2.loscache.prediction_period=400", "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert (f"gpucachex simulate: error: --set: configuration key l2.loscache.prediction_period is given "
                f"twice ('{first}' and 'l2.loscache.prediction_period=400')") in captured.err


def _not_json(token):
    raise AssertionError(f"{token} is not JSON")


def test_simulate_json_writes_null_for_a_metric_with_no_value(capsys):
    # admL1D_decision_cycle is NaN when the run ends before admL1D's warm-up does: JSON has no NaN.
    assert cli.main(["simulate", "vectoradd:tiny", "--preset", "admL1D", "--set", "core.sms=3",
                     "--set", "l1d.admission=admL1D", "--set", "admL1D.warmup_cycles=100000000", "--json"]) == 0
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    out = json.loads(text, parse_constant=_not_json)
    assert out["metrics"]["admL1D_decision_cycle"] is None
    assert out["metrics"]["cycles"] > 0
    assert out["config_key"] == presets.get("admL1D").replace(**{
        "core.sms": 3, "l1d.admission": "admL1D", "admL1D.warmup_cycles": 100000000}).key()


def test_ctrl_c_mentions_the_results_store_only_where_one_keeps_the_finished_runs(capsys, monkeypatch, tmp_path):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("gpucachex.sim.simulate", interrupted)
    # The module, which the package's `sweep` function hides as an attribute.
    monkeypatch.setattr(importlib.import_module("gpucachex.sweep"), "sweep", interrupted)
    spec = tmp_path / "s.toml"
    spec.write_text('preset = "gtx480"\nworkloads = ["vectoradd"]\nsize = "tiny"\n')
    for argv, stored in ((["simulate", "vectoradd:tiny"], False),
                         (["sweep", str(spec), "--out", str(tmp_path / "a"), "--no-store"], False),
                         (["sweep", str(spec), "--out", str(tmp_path / "b")], True)):
        assert cli.main(argv) == 130
        err = capsys.readouterr().err
        assert f"gpucachex {argv[0]}: interrupted" in err
        assert ("results store" in err) == stored, err


def test_store_and_no_store_together_are_refused_before_anything_runs(capsys, monkeypatch, tmp_path):
    ran = []
    monkeypatch.setattr(importlib.import_module("gpucachex.sweep"), "sweep", lambda *a, **k: ran.append(a))
    spec = tmp_path / "s.toml"
    spec.write_text('preset = "gtx480"\nworkloads = ["vectoradd"]\nsize = "tiny"\n')
    store = tmp_path / "kept.sqlite"
    for command in (["sweep", str(spec)], ["reproduce", "--only", "drowsy"]):
        assert cli.main([*command, "--out", str(tmp_path / "out"), "--store", str(store), "--no-store"]) == 2
        assert "--no-store contradict each other" in capsys.readouterr().err
    assert ran == [] and not store.exists()


def test_a_reader_that_stops_early_gets_no_traceback(monkeypatch, capsys):
    """`gpucachex workloads | head -1`: head closes the pipe and the CLI's writes find it closed; that
    ended in a BrokenPipeError traceback."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with os.fdopen(write_end, "w") as closed_pipe:
        monkeypatch.setattr(sys, "stdout", closed_pipe)
        assert cli.main(["workloads"]) == 1
    assert capsys.readouterr().err == ""


def test_sweep_error_is_reachable_from_the_package():
    # gpucachex.sweep is the function, so the exception's module path cannot be spelled through it
    from gpucachex.sweep import SweepError

    assert gpucachex.SweepError is SweepError


def test_simulate_prints_a_count_held_as_a_float_in_full(capsys, monkeypatch):
    # Several counters are floats in Result.metrics (l1d_global_fills); six significant digits turned
    # 2874221 into 2.87422e+06. Fractions keep six.
    metrics = {"cycles": 2265814, "l1d_global_fills": 2874221.0, "ipc": 25.310137, "l2_hit_rate": 0.6750707654550694,
               "l1d_on_fraction": 1.0, "l2_dead_time_fraction": math.nan}
    monkeypatch.setattr("gpucachex.sim.simulate",
                        lambda *a, **k: SimpleNamespace(metrics=metrics, workload="bfs", wall_seconds=1.0))
    assert cli.main(["simulate", "vectoradd:tiny", "--all"]) == 0
    rows = dict(line.split() for line in capsys.readouterr().out.splitlines()[1:])
    assert rows == {"cycles": "2265814", "l1d_global_fills": "2874221", "ipc": "25.3101", "l2_hit_rate": "0.675071",
                    "l1d_on_fraction": "1", "l2_dead_time_fraction": "nan"}


def test_simulate_says_why_a_trace_cannot_be_read(capsys, monkeypatch, tmp_path):
    # The error printed an OSError's first argument, its number: "gpucachex simulate: error: 13".
    trace = tmp_path / "mine.npz"
    trace.write_bytes(b"")

    def refused(path, *args, **kwargs):   # chmod 000, which root reads anyway
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(gpucachex, "load_trace", refused)
    assert cli.main(["simulate", str(trace)]) == 2
    assert capsys.readouterr().err == f"gpucachex simulate: error: [Errno 13] Permission denied: '{trace}'\n"
    assert cli.main(["simulate", "vectoradd:tiny", "--preset", "gtx9000"]) == 2
    assert capsys.readouterr().err.startswith("gpucachex simulate: error: unknown preset 'gtx9000' (known: gtx480")
