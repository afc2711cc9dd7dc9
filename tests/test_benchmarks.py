"""The scripts in benchmarks/: each runs with tiny arguments and prints what its docstring says, and
refuses bad arguments with a usage error before any work. Nothing here checks a speed."""
import importlib.util
import re
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run(script: str, *argv: str, monkeypatch, capsys, replace: dict | None = None) -> str:
    """Run benchmarks/<script>.py's main() in this process with `argv` (and the module's names in
    `replace` swapped for others); its standard output."""
    spec = importlib.util.spec_from_file_location(f"bench_{script}", BENCHMARKS / f"{script}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, value in (replace or {}).items():
        monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(sys, "argv", [f"{script}.py", *argv])
    module.main()
    return capsys.readouterr().out


def refused(script: str, *argv: str, monkeypatch, capsys) -> str:
    """The usage error benchmarks/<script>.py gives for `argv`."""
    with pytest.raises(SystemExit) as exc:
        run(script, *argv, monkeypatch=monkeypatch, capsys=capsys)
    assert exc.value.code == 2
    return capsys.readouterr().err


def test_l2_power_overhead_runs_and_refuses_no_repeat(monkeypatch, capsys):
    out = run("l2_power_overhead", "--size", "tiny", "--repeat", "1", "vectoradd", monkeypatch=monkeypatch,
              capsys=capsys)
    rates = re.findall(r"(none|loscache|ideal_gating) +([0-9.]+) M warp inst/s", out)
    assert [t for t, _ in rates] == ["none", "loscache", "ideal_gating"] and all(float(r) > 0 for _, r in rates)
    # no run to time printed 0.00 M warp inst/s for every technique
    assert "--repeat must be at least 1, got 0" in refused("l2_power_overhead", "--repeat", "0",
                                                           monkeypatch=monkeypatch, capsys=capsys)
    assert "unknown workload 'nope'" in refused("l2_power_overhead", "--size", "tiny", "vectoradd", "nope",
                                                monkeypatch=monkeypatch, capsys=capsys)
    assert "invalid choice: 'huge'" in refused("l2_power_overhead", "--size", "huge",
                                               monkeypatch=monkeypatch, capsys=capsys)


def test_l2_power_overhead_times_the_simulation_alone(monkeypatch, capsys):
    """The rate is warp instructions over the run's own wall_seconds, whatever simulate() does around it."""
    from gpucachex import simulate

    def timed_apart(config, trace, **kwargs):
        r = simulate(config, trace, **kwargs)
        r.wall_seconds = r["warp_insts"] / 2e6  # 2 M warp instructions per second, by construction
        return r

    out = run("l2_power_overhead", "--size", "tiny", "--repeat", "2", "vectoradd", monkeypatch=monkeypatch,
              capsys=capsys, replace={"simulate": timed_apart})
    assert re.findall(r"([0-9.]+) M warp inst/s", out) == ["2.00"] * 3, out
