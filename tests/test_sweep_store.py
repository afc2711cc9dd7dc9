"""Sweeps at scale: grid forms, stable run keys, the results store (resume, kill -9, Ctrl-C, concurrent
writers, failures, export), and the executors (threads, processes, Dask) giving identical rows."""
import contextlib
import hashlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from gpucachex import presets, simulate, workloads
from gpucachex.store import ResultsStore, StoreError
from gpucachex.sweep import SweepError, expand_grid, normalize, points, run_key, sweep, trace_digest

ROOT = Path(__file__).resolve().parents[1]
BASE = presets.get("gtx480")


def same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal row for row, every column but the measured wall time."""
    pd.testing.assert_frame_equal(a.drop(columns="wall_seconds").reset_index(drop=True),
                                  b.drop(columns="wall_seconds").reset_index(drop=True))


def run_script(code: str, *args: str, **popen) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # A shell starts its background jobs with SIGINT ignored, and Python then never turns SIGINT into
    # KeyboardInterrupt: give the script Ctrl-C as a terminal would, wherever the tests were started.
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), **popen)


def stored_count(path: Path) -> int:
    try:
        with sqlite3.connect(path, timeout=10) as db:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


# ---- grids ----------------------------------------------------------------------------------------

def test_zip_conditional_and_list_grids():
    assert expand_grid({"zip": {"a": [1, 2], "b": [3, 4]}, "c": [0, 1]}) == [
        {"a": 1, "b": 3, "c": 0}, {"a": 1, "b": 3, "c": 1}, {"a": 2, "b": 4, "c": 0}, {"a": 2, "b": 4, "c": 1}]
    # two zip groups are two axes of the product
    assert len(expand_grid({"zip": [{"a": [1, 2], "b": [3, 4]}, {"c": [5, 6, 7]}]})) == 6
    grid = {"p": ["none", "x", "y"],
            "when": [{"if": {"p": ["x", "y"]}, "grid": {"q": [1, 2]}}, {"if": {"q": 2}, "grid": {"r": [8, 9]}}]}
    assert expand_grid(grid) == [
        {"p": "none"}, {"p": "x", "q": 1}, {"p": "x", "q": 2, "r": 8}, {"p": "x", "q": 2, "r": 9},
        {"p": "y", "q": 1}, {"p": "y", "q": 2, "r": 8}, {"p": "y", "q": 2, "r": 9}]
    # a list of sub-grids, scalars allowed, duplicates dropped, order kept
    assert expand_grid([{"a": [1, 2]}, {"a": 2}, {"a": 3, "label": "three"}]) == [
        {"a": 1}, {"a": 2}, {"a": 3, "label": "three"}]


def test_grid_keys_nested_by_section_as_toml_writes_unquoted_dotted_keys():
    import tomllib

    spec = tomllib.loads("""
[grid]
l1d.sharing = ["private", "ata"]
zip = { l2.ways = [8, 16], l2.size_kb = [768, 1536] }
when = [{ if = { l1d.sharing = "ata" }, grid = { l1d.cluster_size = [2, 3] } }]
""")
    assert spec["grid"]["l1d"] == {"sharing": ["private", "ata"]}   # what TOML makes of the dotted key
    quoted = {"l1d.sharing": ["private", "ata"], "zip": {"l2.ways": [8, 16], "l2.size_kb": [768, 1536]},
              "when": [{"if": {"l1d.sharing": "ata"}, "grid": {"l1d.cluster_size": [2, 3]}}]}
    assert expand_grid(spec["grid"]) == expand_grid(quoted)
    assert len(expand_grid(quoted)) == 6


def test_when_values_are_compared_in_the_keys_canonical_form():
    # 8.0 is the integer 8 and 1 the boolean true, as configurations take them
    grid = {"l1d.ways": [4, 8], "l1d.dwl": [False, True],
            "when": [{"if": {"l1d.ways": 8.0, "l1d.dwl": 1}, "grid": {"l1d.policy": ["lru", "fifo"]}}]}
    assert expand_grid(grid)[3:] == [{"l1d.ways": 8, "l1d.dwl": True, "l1d.policy": "lru"},
                                     {"l1d.ways": 8, "l1d.dwl": True, "l1d.policy": "fifo"}]


def test_when_names_a_swept_key_by_its_short_or_full_name():
    # It was refused as a key "this grid does not sweep (swept: ['loscache.table_entries'])".
    for swept, named in (("loscache.table_entries", "l2.loscache.table_entries"),
                         ("l2.loscache.table_entries", "loscache.table_entries")):
        grid = {swept: [4, 8], "when": [{"if": {named: 8}, "grid": {"l1d.ways": [2]}}]}
        assert expand_grid(grid) == [{swept: 4}, {swept: 8, "l1d.ways": 2}]
    with pytest.raises(ValueError, match=r"grid.when\[0\]: 'if' names l2.loscache.table_entries twice"):
        expand_grid({"loscache.table_entries": [4, 8], "when": [
            {"if": {"loscache.table_entries": 4, "l2.loscache.table_entries": 8}, "grid": {"l1d.ways": [2]}}]})


def test_points_of_one_configuration_are_one_run_and_one_row():
    """Sub-grids sharing a point (gtx480 has 4 L1D and 8 L2 ways), and values equal once configured."""
    df = sweep(BASE, [{"l1d.ways": [4, 8]}, {"l2.ways": [8, 16]}], ["vectoradd:tiny"], jobs=1)
    assert df[["l1d.ways", "l2.ways"]].values.tolist() == [[4, 8], [8, 8], [4, 16]]
    assert len(df) == df.attrs["sweep"]["runs"] == 3 and df["run_key"].is_unique
    for grid in ({"l1d.ways": [4, 4.0]}, {"l1d.dwl": [True, 1]}, {"zip": {"l1d.ways": [2, 2], "l2.ways": [8, 8.0]}}):
        assert len(points(BASE, grid, ["vectoradd:tiny"], seeds=[0, 1])) == 2, grid
    # the row keeps a label either point gave; two labels for one configuration are refused
    for grid in ([{"label": "base"}, {"l1d.ways": [4, 8]}], [{"l1d.ways": [4, 8]}, {"label": "base"}]):
        pts = points(BASE, grid, ["vectoradd:tiny"])
        assert [(dict(p.params)["label"], p.config["l1d.ways"]) for p in pts] == [("base", 4), (None, 8)], grid
    with pytest.raises(ValueError, match="grid points labelled 'base' and 'four' give the same configuration"):
        points(BASE, [{"label": "base"}, {"label": "four", "l1d.ways": 4}], ["vectoradd:tiny"])


@pytest.mark.parametrize("grid, error, match", [
    ({"a": "abc"}, TypeError, r"grid\['a'\] must be a list of values"),
    ({"a": []}, ValueError, "has no values"),
    ({"zip": {"a": [1, 2], "b": [1]}}, ValueError, "equal lengths"),
    ({"a": [1], "zip": {"a": [2]}}, ValueError, "'a' is swept twice"),
    ({"a": [1], "when": [{"if": {"b": 1}, "grid": {"c": [1]}}]}, ValueError, r"'if' names \['b'\]"),
    ({"a": [1], "when": [{"if": {"a": 1}}]}, ValueError, "each rule is"),
    ({"a": [1], "zip": []}, ValueError, r"grid.zip has no groups"),   # else the base would run alone
    ({"l1d": {}}, ValueError, r"grid\['l1d'\] is an empty section"),
    ({"l1d": {"zip": {"ways": [2]}}}, ValueError, r"'zip' inside the section 'l1d'"),
    ({"a": [1], "when": [{"if": {"a": 1}, "grid": {"a": [2]}}]}, ValueError, "already sweeps"),
    # an empty sub-grid left the points it matched as they were, without a word
    ({"a": [1, 2], "when": [{"if": {"a": 1}, "grid": {}}]}, ValueError, r"grid.when\[0\].grid is empty"),
    # an 'if' that matches no point would drop its sub-grid without a word: a value the key cannot take,
    # or one the grid does not sweep
    ({"l2.power": ["none", "loscache"], "when": [{"if": {"l2.power": "LoSCache"}, "grid": {"l2.ways": [8]}}]},
     ValueError, r"grid.when\[0\]: 'if' value 'LoSCache' of 'l2.power' can never match: l2.power must be one of"),
    ({"l1d.ways": [4, 8], "when": [{"if": {"l1d.ways": "8"}, "grid": {"l1d.policy": ["fifo"]}}]},
     ValueError, r"'if' value '8' of 'l1d.ways' can never match: l1d.ways must be a number"),
    ({"l1d.ways": [4, 8], "when": [{"if": {"l1d.ways": [16, 32]}, "grid": {"l1d.policy": ["fifo"]}}]}, ValueError,
     r"grid.when\[0\]: 'if' \{'l1d.ways': \[16, 32\]\} matches no point of the grid \(its values: \{'l1d.ways': \[4, 8\]\}\)"),
    ({"a": [1, 2], "when": [{"if": {"a": 3}, "grid": {"b": [1]}}]}, ValueError, "matches no point"),
    ([{"a": 1}, 5], TypeError, r"grid\[1\] must be a mapping"),
    ([], ValueError, r"empty list of sub-grids, which has no point; give None"),
    ("l1d.ways", TypeError, "grid must be a mapping"),
    # a when rule's sub-grid is named by its place, not as if it were the whole grid
    ({"a": [1, 2], "when": [{"if": {"a": 1}, "grid": "x"}]}, TypeError, r"^grid\.when\[0\]\.grid must be a mapping"),
    ({"a": [1, 2], "when": [{"if": {"a": 1}, "grid": [{"b": 1}, 3]}]}, TypeError,
     r"^grid\.when\[0\]\.grid\[1\] must be a mapping of keys to values, got 3"),
    ({"a": [1, 2], "when": [{"if": {"a": 1}, "grid": []}]}, ValueError, r"^grid\.when\[0\]\.grid is an empty list"),
])
def test_bad_grids_are_named(grid, error, match):
    with pytest.raises(error, match=match):
        expand_grid(grid)


def test_bad_sweep_arguments_fail_before_running(tmp_path):
    with pytest.raises(KeyError, match="unknown configuration key 'l1d.wayz'"):
        sweep(BASE, {"l1d.wayz": [2]}, ["bfs:tiny"])
    with pytest.raises(ValueError, match="neither an existing path nor a built-in workload"):
        sweep(BASE, None, ["nosuchkernel"])
    with pytest.raises(ValueError, match="unknown size 'huge'"):
        sweep(BASE, None, ["bfs:huge"])
    with pytest.raises(ValueError, match=r"seed -1 is outside 0 to 2\*\*64 - 1"):
        sweep(BASE, None, ["bfs:tiny"], seeds=[-1])
    with pytest.raises(ValueError, match="seed 18446744073709551616 is outside"):
        sweep(BASE, None, ["bfs:tiny"], seeds=[0, 2**64])
    with pytest.raises(TypeError, match="seeds must be a list"):
        sweep(BASE, None, ["bfs:tiny"], seeds=3)
    # A seed or workload listed twice would give duplicate rows, counted twice in every mean.
    with pytest.raises(ValueError, match=r"seed 1 is listed twice in \[1, 2, 1\]"):
        sweep(BASE, None, ["bfs:tiny"], seeds=[1, 2, 1])
    with pytest.raises(ValueError, match="workload 'bfs:tiny' is listed twice"):
        sweep(BASE, None, ["bfs:tiny", "vectoradd:tiny", "bfs:tiny"])
    with pytest.raises(ValueError, match=r"workload 'bfs:small' is the same workload \(bfs:small\) as 'bfs', listed"):
        sweep(BASE, None, ["bfs", "bfs:small"])
    # Two different traces under one name: their rows could not be told apart.
    small, big = workloads.make("vectoradd", "tiny"), workloads.make("vectoradd", "tiny", n=1000)
    with pytest.raises(ValueError, match=r"two different workloads are both named 'vectoradd' \(trace:"):
        sweep(BASE, None, [small, big])
    with pytest.raises(ValueError, match="executor must be one of"):
        sweep(BASE, None, ["bfs:tiny"], executor="mpi")
    with pytest.raises(ValueError, match="needs executor='dask'"):
        sweep(BASE, None, ["bfs:tiny"], address="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        sweep(BASE, None, ["bfs:tiny"], jobs=0)
    # A cluster at an address runs on its own workers: jobs would be ignored (checked before connecting).
    with pytest.raises(ValueError, match=r"jobs=4 sizes the LocalCluster .* the cluster at tcp://127.0.0.1:1 runs on "
                                         r"its own workers: leave jobs out"):
        sweep(BASE, None, ["bfs:tiny"], executor="dask", address="tcp://127.0.0.1:1", jobs=4)
    with pytest.raises(ValueError, match="errors must be"):
        sweep(BASE, None, ["bfs:tiny"], errors="ignore")
    with pytest.raises(TypeError, match="store must be"):
        sweep(BASE, None, ["bfs:tiny"], store=3)
    with pytest.raises(TypeError, match=r"progress must be True, False or None .* got 'no'"):
        sweep(BASE, None, ["bfs:tiny"], progress="no")   # a truthy string would have shown the bar
    assert not list(tmp_path.iterdir())


def test_numpy_grid_values_and_a_single_workload():
    df = sweep(BASE, {"l1d.ways": np.array([2, 4]), "l1d.size_kb": np.linspace(16, 32, 2)}, "vectoradd:tiny", jobs=1)
    assert df[["l1d.ways", "l1d.size_kb"]].values.tolist() == [[2, 16.0], [2, 32.0], [4, 16.0], [4, 32.0]]
    assert set(df["workload"]) == {"vectoradd:tiny"}


def test_rows_of_sub_grids_share_columns_with_configuration_values():
    grid = [{"label": "base"}, {"label": "big", "l1d.size_kb": 64, "l1d.ways": 8},
            {"zip": {"label": ["l2x2"], "l2.size_kb": [1536]}}]
    df = sweep(BASE, grid, ["sgemm:tiny"], jobs=1)
    assert list(df.columns[:4]) == ["label", "l1d.size_kb", "l1d.ways", "l2.size_kb"]
    assert df[["label", "l1d.size_kb", "l1d.ways", "l2.size_kb"]].values.tolist() == [
        ["base", 16.0, 4, 768.0], ["big", 64.0, 8, 768.0], ["l2x2", 16.0, 4, 1536.0]]
    n = normalize(df, ["l1d_misses", "cycles"], baseline="big")
    assert n.loc[n.label == "big", "l1d_misses_norm"].item() == 1.0
    assert n.loc[n.label == "base", "l1d_misses_norm"].item() == pytest.approx(
        df.loc[df.label == "base", "l1d_misses"].item() / df.loc[df.label == "big", "l1d_misses"].item())
    with pytest.raises(ValueError, match="no run of the sweep matches"):
        normalize(df, "cycles", baseline="nothing")
    with pytest.raises(KeyError, match="by column 'config' is not a column of the sweep"):
        normalize(df, "cycles", baseline="big", by=["workload", "config"])
    with pytest.raises(TypeError, match="metric 'label' holds .+ values, not numbers"):
        normalize(df, "label", baseline="big")
    assert normalize(df, "cycles", baseline="big", by="workload")["cycles_norm"].tolist() == \
        n["cycles_norm"].tolist()  # one column may be given as a string


# ---- keys and determinism -------------------------------------------------------------------------

KEY_SCRIPT = """
import json, sys
from gpucachex import presets, workloads
from gpucachex.sweep import points
pts = points(presets.get("gtx480"), {"l1d.ways": [2, 4]}, ["bfs", workloads.make("sgemm", "tiny")], seeds=[0, 7])
print(json.dumps([p.key() for p in pts]))
"""


def test_run_keys_are_stable_across_processes_and_distinct():
    here = [p.key() for p in points(BASE, {"l1d.ways": [2, 4]}, ["bfs", workloads.make("sgemm", "tiny")], seeds=[0, 7])]
    proc = run_script(KEY_SCRIPT, stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=120)
    assert json.loads(out) == here
    assert len(set(here)) == len(here) == 8
    # "bfs" means "bfs:small": the same run; a different size is not
    assert points(BASE, None, ["bfs"])[0].key() == points(BASE, None, ["bfs:small"])[0].key()
    assert points(BASE, None, ["bfs"])[0].key() != points(BASE, None, ["bfs:tiny"])[0].key()
    # the key covers the model version
    assert run_key(BASE.key(), "bfs:small", 0, "1.0+a") != run_key(BASE.key(), "bfs:small", 0, "1.0+b")


def test_the_model_version_follows_the_loaded_extension(monkeypatch):
    # The sources in csrc/ are not what runs after an edit without a rebuild, and an installed package
    # has none: the compiled extension's own bytes must change the version (and so every run key).
    import importlib

    from gpucachex import _core

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function

    monkeypatch.setattr(sweep_module, "_MODEL_VERSION", None)
    built = sweep_module.model_version()
    assert sweep_module.extension_digest() == hashlib.sha256(Path(_core.__file__).read_bytes()).hexdigest()
    monkeypatch.setattr(sweep_module, "_MODEL_VERSION", None)
    monkeypatch.setattr(sweep_module, "extension_digest", lambda: "another build")
    rebuilt = sweep_module.model_version()
    assert rebuilt != built and rebuilt.split("+")[0] == built.split("+")[0]
    assert sweep_module.model_version() is rebuilt   # computed once per process
    assert points(BASE, None, ["bfs:tiny"])[0].key() != run_key(BASE.key(), "bfs:tiny", 0, built)


def test_trace_digest_follows_content_not_identity(tmp_path):
    a, b = workloads.make("vectoradd", "tiny"), workloads.make("vectoradd", "tiny")
    assert trace_digest(a) == trace_digest(b)
    k = b.kernels[0]
    addresses = np.array(k.addresses)
    addresses[5] += 128
    b.kernels[0] = k.replace(addresses=addresses)
    assert trace_digest(a) != trace_digest(b)
    # a file's identity is its content: a copy under another name is the same workload
    a.save(tmp_path / "one.npz")
    (tmp_path / "two.npz").write_bytes((tmp_path / "one.npz").read_bytes())
    one, two = (points(BASE, None, [tmp_path / n])[0] for n in ("one.npz", "two.npz"))
    assert one.key() == two.key() and one.workload_name != two.workload_name


KERNEL = ("-kernel name = _Z1kPf\n-kernel id = 1\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-shmem = 0\n"
          "-nregs = 16\n-binary version = 80\n-cuda stream id = 0\n-accelsim tracer version = 4\n"
          "-enable lineinfo = 0\n\n#traces format = ...\n\n#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\n"
          "insts = {n}\n{body}0100 ffffffff 0 EXIT 0 0\n\n#END_TB\n")


def kernel_text(loads: int) -> str:
    """An Accel-Sim kernel trace of one warp doing `loads` dependent one-lane loads."""
    body = "".join(f"{16 * (i + 1):04x} 00000001 1 R2 LDG.E 1 R2 4 1 0x{0x1000 * (i + 1):x} 0\n" for i in range(loads))
    return KERNEL.format(n=loads + 1, body=body)


def test_a_kernelslist_is_keyed_by_the_kernel_files_it_lists(tmp_path):
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "kernel-1.traceg").write_text(kernel_text(1))
    (folder / "kernelslist.g").write_text("kernel-1.traceg\n")
    wl = [folder, folder / "kernelslist.g", folder / "kernel-1.traceg"]
    store = tmp_path / "s.sqlite"
    first = sweep(BASE, None, wl, store=store, jobs=1)
    assert first.attrs["sweep"] == dict(runs=3, stored=0, simulated=3, failed=0)
    assert len(set(first["cycles"])) == 1   # the same kernel however it is named
    # unchanged traces are read from the store (resume)
    assert sweep(BASE, None, wl, store=store, jobs=1).attrs["sweep"] == dict(runs=3, stored=3, simulated=0, failed=0)
    # re-tracing the kernel leaves the list as it was: each path is a new workload all the same
    (folder / "kernel-1.traceg").write_text(kernel_text(6))
    second = sweep(BASE, None, wl, store=store, jobs=1)
    assert second.attrs["sweep"] == dict(runs=3, stored=0, simulated=3, failed=0)
    assert set(second["cycles"]) == {simulate(BASE, folder / "kernelslist.g").metrics["cycles"]}
    assert second["cycles"][0] > first["cycles"][0]
    # a listing naming a kernel file that is gone fails before any run, naming it
    (folder / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    with pytest.raises(FileNotFoundError, match="kernel-2.traceg"):
        points(BASE, None, [folder / "kernelslist.g"])


def test_a_trace_file_re_traced_while_a_sweep_runs_is_a_failure_not_a_row_under_its_old_identity(
        tmp_path, monkeypatch):
    # The run key names the content the sweep read before it started; a run must not store what the
    # file holds by the time a worker reads it under that key (a later sweep would take it for the old trace).
    import importlib

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    path, store = tmp_path / "t.npz", tmp_path / "s.sqlite"
    workloads.make("vectoradd", "tiny").save(path)
    submit = sweep_module._ThreadRunner.submit

    def re_traced(self, p):
        workloads.make("vectoradd", "tiny", n=5000).save(path)   # before the worker reads the file
        return submit(self, p)

    monkeypatch.setattr(sweep_module._ThreadRunner, "submit", re_traced)
    with pytest.raises(SweepError, match=r"t\.npz: the file's content is not the one the sweep identified \(file:"):
        sweep(BASE, None, [path], store=store, jobs=1)
    with ResultsStore(store) as s:
        assert len(s) == 0 and len(s.failures()) == 1
    monkeypatch.undo()
    again = sweep(BASE, None, [path], store=store, jobs=1)   # the new content, under its own identity
    assert again["cycles"][0] == simulate(BASE, path)["cycles"]


def test_a_dask_worker_that_outlives_a_sweep_reads_a_re_traced_file_again(tmp_path):
    # A cluster's workers keep the workloads they read: the second sweep must not get the first
    # content's results under the re-traced file's identity.
    distributed = pytest.importorskip("distributed")
    path = tmp_path / "t.npz"
    workloads.make("vectoradd", "tiny").save(path)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        first = sweep(BASE, None, [path], executor="dask", address=cluster.scheduler_address, progress=False)
        workloads.make("vectoradd", "tiny", n=5000).save(path)
        second = sweep(BASE, None, [path], executor="dask", address=cluster.scheduler_address, progress=False)
    assert second["run_key"][0] != first["run_key"][0]
    assert second["cycles"][0] == simulate(BASE, path)["cycles"] != first["cycles"][0]


def test_registered_opcodes_are_part_of_a_trace_files_identity_and_reach_worker_processes(tmp_path):
    # isa.register_opcode changes how a trace file is read: a run stored before is not that run, and
    # spawned workers (which never see the registration themselves) must read the file the same way.
    from gpucachex import isa

    body = "".join(f"{16 * (i + 1):04x} ffffffff 1 R2 FFMA 3 R2 R3 R4 0\n" for i in range(8))
    trace = tmp_path / "ffma.traceg"
    trace.write_text(KERNEL.format(n=9, body=body))
    base, store = presets.get("gtx480", **{"core.sms": 1}), tmp_path / "s.sqlite"
    before = sweep(base, None, [trace], store=store, jobs=1)
    saved = isa.tables()
    try:
        isa.register_opcode("FFMA", "sfu")   # a dependent chain of SFU work is slower than of ALU work
        direct = simulate(base, trace)["cycles"]
        threads = sweep(base, None, [trace], store=store, jobs=1)
        assert threads.attrs["sweep"] == dict(runs=1, stored=0, simulated=1, failed=0)
        assert threads["cycles"][0] == direct > before["cycles"][0]
        procs = sweep(base, None, [trace], executor="processes", jobs=1)
        same_rows(threads, procs)
    finally:
        isa.install_tables(saved)
    # the built-in tables again: the first run's identity, read from the store
    again = sweep(base, None, [trace], store=store, jobs=1)
    assert again.attrs["sweep"] == dict(runs=1, stored=1, simulated=0, failed=0)
    same_rows(before, again)


def test_an_empty_name_and_a_folder_that_is_no_trace_fail_before_any_run(tmp_path, monkeypatch):
    # "" is the working folder to Path, and a folder's identity digests every file below it: both were
    # taken for trace folders, digested whole, and failed only run by run.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="a workload is an empty string"):
        points(BASE, None, ["vectoradd:tiny", ""])
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "kernel-1.traceg").write_text(kernel_text(1))
    with pytest.raises(ValueError, match=re.escape(f"workload 'a': the folder {tmp_path / 'a'} holds no "
                                                   f"kernelslist.g, so it is no trace")):
        points(BASE, None, ["a"])
    (tmp_path / "a" / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\n")
    with pytest.raises(FileNotFoundError, match="kernel-2.traceg"):
        points(BASE, None, [tmp_path / "a"])
    (tmp_path / "a" / "kernelslist.g").write_text("kernel-1.traceg\n")
    assert points(BASE, None, ["a"])[0].ref == ("path", str(tmp_path / "a"))


def test_identical_seeds_give_identical_rows():
    grid = {"l1d.ways": [2, 4], "core.scheduler": ["lrr", "gto"]}
    wl = ["bfs:tiny", "hotspot:tiny"]
    first = sweep(BASE, grid, wl, seeds=[0, 1], jobs=2)
    second = sweep(BASE, grid, wl, seeds=[1, 0], jobs=1)
    second = second.sort_values(["l1d.ways", "core.scheduler", "workload", "seed"], kind="stable")
    first = first.sort_values(["l1d.ways", "core.scheduler", "workload", "seed"], kind="stable")
    same_rows(first, second)
    assert first["run_key"].is_unique and len(first) == 16


# ---- the store ------------------------------------------------------------------------------------

def test_store_skips_finished_runs_and_rows_match(tmp_path):
    path = tmp_path / "store.sqlite"
    wl = ["vectoradd:tiny", "bfs:tiny"]
    fresh = sweep(BASE, {"l1d.ways": [2, 4]}, wl, seeds=[0, 1], store=path, jobs=2)
    assert fresh.attrs["sweep"] == dict(runs=8, stored=0, simulated=8, failed=0)
    again = sweep(BASE, {"l1d.ways": [2, 4]}, wl, seeds=[0, 1], store=path, jobs=2)
    assert again.attrs["sweep"] == dict(runs=8, stored=8, simulated=0, failed=0)
    same_rows(fresh, again)
    assert (again["wall_seconds"] == fresh["wall_seconds"]).all()  # read back, not re-measured
    more = sweep(BASE, {"l1d.ways": [2, 4, 8]}, wl, seeds=[0, 1], store=path, jobs=2)
    assert more.attrs["sweep"] == dict(runs=12, stored=8, simulated=4, failed=0)
    with ResultsStore(path) as store:
        assert len(store) == 12
        everything = store.results()
        assert everything["run_key"].is_unique
        assert set(everything["l1d.ways"]) == {2, 4, 8}
        store.check()
        cfg = store.config(fresh["config_key"][0])
        assert cfg.key() == fresh["config_key"][0] and cfg.name == "gtx480"


def test_a_run_read_back_equals_the_run_computed_nan_metrics_too(tmp_path):
    # ResultsStore's promise (and a resumed sweep's): a stored run equals the same run computed again.
    # A rate over nothing is the one object math.nan in Result.metrics; json read it back as another.
    cfg = BASE.replace(**{"l1d.admission": "off"})   # no L1D access: l1d_hit_rate is NaN
    path = tmp_path / "s.sqlite"
    df = sweep(cfg, None, ["vectoradd:tiny"], store=path, jobs=1)
    fresh = simulate(cfg, "vectoradd:tiny").metrics
    assert fresh["l1d_hit_rate"] != fresh["l1d_hit_rate"]
    with ResultsStore(path) as store:
        stored, _ = store.get(df["run_key"][0])
        assert stored == fresh
        assert store.results()["l1d_hit_rate"].dtype == float and store.results()["l1d_hit_rate"].isna().all()


def test_store_export_parquet_and_csv(tmp_path):
    path = tmp_path / "s.sqlite"
    df = sweep(BASE, {"l1d.ways": [2, 4]}, ["sgemm:tiny"], store=path, jobs=1)
    with ResultsStore(path) as store:
        pq = pd.read_parquet(store.export(tmp_path / "out" / "r.parquet"))
        csv = pd.read_csv(store.export(tmp_path / "r.csv"))
        with pytest.raises(ValueError, match="neither 'parquet' nor 'csv'"):
            store.export(tmp_path / "elsewhere" / "r.xlsx")
        assert not (tmp_path / "elsewhere").exists()   # refused before anything is made
    for frame in (pq, csv):
        assert sorted(frame["run_key"]) == sorted(df["run_key"])
        merged = df.merge(frame, on="run_key", suffixes=("", "_x"))
        assert (merged["cycles"] == merged["cycles_x"]).all()
        assert (merged["l1d.ways"] == merged["l1d.ways_x"]).all()


def test_store_export_to_parquet_of_labels_of_two_types(tmp_path):
    # Two sweeps into one store, labelled 3 and "wide": a Parquet column holds one type, so the
    # labels are written as text (as CSV writes them), and a missing one stays missing.
    path = tmp_path / "s.sqlite"
    sweep(BASE, [{"l1d.ways": 2, "label": 3}], ["sgemm:tiny"], store=path, jobs=1)
    sweep(BASE, [{"l1d.ways": 8, "label": "wide"}, {"l1d.ways": 16}], ["sgemm:tiny"], store=path, jobs=1)
    with ResultsStore(path) as store:
        pq = pd.read_parquet(store.export(tmp_path / "r.parquet")).sort_values("l1d.ways")
    assert list(pq["l1d.ways"]) == [2, 8, 16]
    assert list(pq["label"][:2]) == ["3", "wide"] and pd.isna(pq["label"].iloc[2])


def test_the_store_modules_example_exports_a_store_of_labels_of_two_types(tmp_path, monkeypatch):
    # DataFrame.to_parquet refuses a column of two types, which write_parquet (and export) write as text.
    import gpucachex.store

    monkeypatch.chdir(tmp_path)
    sweep(BASE, [{"l1d.ways": 2, "label": 3}], ["sgemm:tiny"], store="results/store.sqlite", jobs=1)
    sweep(BASE, [{"l1d.ways": 8, "label": "wide"}], ["sgemm:tiny"], store="results/store.sqlite", jobs=1)
    lines = [line[4:] for line in gpucachex.store.__doc__.splitlines() if line.startswith((">>> ", "... "))]
    assert lines
    exec("\n".join(lines), {"ResultsStore": ResultsStore})
    assert sorted(pd.read_parquet("results.parquet")["label"]) == ["3", "wide"]


def test_store_errors_are_clear(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        ResultsStore(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="not a usable results store"):
        ResultsStore(junk)
    other = tmp_path / "other.sqlite"
    ResultsStore(other).close()
    with sqlite3.connect(other) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    with pytest.raises(StoreError, match="format 99"):
        ResultsStore(other)


def open_read_only(monkeypatch) -> None:
    """Make SQLite open every file read-only, as it opens a file this process may not write (chmod 0444
    does not stop root, who runs the tests on some machines; a read-only URI stops everyone)."""
    connect = sqlite3.connect

    def read_only(path, *args, **kwargs):
        return connect(f"file:{Path(path).resolve()}?mode=ro", *args, uri=True, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", read_only)


def test_a_read_only_store_is_read_but_a_sweep_that_must_run_is_refused_first(tmp_path, monkeypatch):
    """Not at the first commit, after a run was simulated (and lost), as an error naming no file."""
    path = tmp_path / "s.sqlite"
    first = sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=path, jobs=1)
    before = path.read_bytes()
    open_read_only(monkeypatch)
    with ResultsStore(path) as store:  # an archived store can still be read
        assert store.read_only and len(store) == 1
    again = sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=path, jobs=1)  # nothing to run
    assert again.attrs["sweep"]["simulated"] == 0 and again["cycles"].tolist() == first["cycles"].tolist()
    ran = []
    monkeypatch.setattr("gpucachex.sim.simulate", lambda *a, **k: ran.append(a))
    with pytest.raises(StoreError, match=f"{re.escape(str(path))}: storing the 1 runs .* the file is read-only"):
        sweep(BASE, {"l1d.ways": [2, 4]}, ["vectoradd:tiny"], store=path, jobs=1)
    assert ran == [] and path.read_bytes() == before


@contextlib.contextmanager
def read_only_folder(folder: Path):
    """`folder` as this process may not write in it: chmod for a user; chattr +i for root, whom
    permissions do not stop. Skips the test where neither works."""
    os.chmod(folder, 0o555)
    undo = [lambda: os.chmod(folder, 0o755)]
    try:
        (folder / "probe").touch()
    except OSError:
        pass
    else:
        (folder / "probe").unlink()
        if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
            undo[0]()
            pytest.skip("cannot make a folder read-only for this user")
        undo.insert(0, lambda: subprocess.run(["chattr", "-i", str(folder)], check=True))
    try:
        yield
    finally:
        for step in undo:
            step()


def test_a_store_in_a_folder_this_process_may_not_write_is_read(tmp_path, monkeypatch):
    """SQLite needs a WAL store's -shm and -wal files beside it to read it, and cannot create them in
    a read-only folder (an archive, a read-only mount, another user's folder)."""
    folder = tmp_path / "archive"
    path = folder / "s.sqlite"
    first = sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=path, jobs=1)
    assert sorted(p.name for p in folder.iterdir()) == ["s.sqlite"]   # closed: its WAL files are gone
    before = path.read_bytes()
    with read_only_folder(folder):
        with ResultsStore(path) as store:
            assert store.read_only and len(store) == 1
            assert store.results()["cycles"].tolist() == first["cycles"].tolist()
        again = sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=path, jobs=1)   # nothing to run
        assert again.attrs["sweep"]["simulated"] == 0
        same_rows(again, first)
        ran = []
        monkeypatch.setattr("gpucachex.sim.simulate", lambda *a, **k: ran.append(a))
        with pytest.raises(StoreError, match=f"{re.escape(str(path))}: storing the 1 runs .* read-only"):
            sweep(BASE, {"l1d.ways": [2, 4]}, ["vectoradd:tiny"], store=path, jobs=1)
        assert ran == []
    assert path.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["s.sqlite"]


def test_a_new_store_in_a_read_only_folder_is_named_uncreatable_not_unusable(tmp_path):
    """No file to be "not a usable results store": the folder refuses the new file (or an empty file
    its journal), and the error says so before any run."""
    folder = tmp_path / "archive"
    folder.mkdir()
    (folder / "empty.sqlite").write_bytes(b"")
    with read_only_folder(folder):
        for name in ("new.sqlite", "empty.sqlite"):
            with pytest.raises(StoreError) as info:
                sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=folder / name, jobs=1)
            message = str(info.value)
            assert message.startswith(f"{folder / name}: cannot create a results store in {folder} (")
            assert "folder this process may write" in message and "not a usable" not in message
    assert sorted(p.name for p in folder.iterdir()) == ["empty.sqlite"]


def test_a_store_whose_log_cannot_be_read_in_a_read_only_folder_is_refused_by_name(tmp_path):
    """Committed runs still in the write-ahead log (a store copied while a sweep wrote it, or left by
    kill -9) cannot be read without the -shm file: an error, not a store that silently lacks them."""
    folder = tmp_path / "copy"
    folder.mkdir()
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store.put(dict(run_key="k", config_key=BASE.key(), workload="w", workload_id="w", seed=0, version="v",
                       params={}), BASE, {"cycles": 1}, 0.0)
        for name in ("s.sqlite", "s.sqlite-wal"):   # the run is in the log, not yet in the file
            (folder / name).write_bytes((tmp_path / name).read_bytes())
    assert (folder / "s.sqlite-wal").stat().st_size > 0
    with read_only_folder(folder):
        with pytest.raises(StoreError, match=r"s\.sqlite-wal.* read-only folder"):
            ResultsStore(folder / "s.sqlite")


def test_a_failed_commit_is_a_store_error_naming_the_file_and_run(tmp_path):
    path = tmp_path / "s.sqlite"
    with ResultsStore(path, timeout=0.2) as store:
        writer = sqlite3.connect(path, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")   # another writer that does not finish: the store waits 0.2 s
        try:
            with pytest.raises(StoreError, match=rf"{re.escape(str(path))}: storing run [0-9a-f]+ failed: "
                                                 rf"database is locked"):
                sweep(BASE, {"l1d.ways": [2]}, ["vectoradd:tiny"], store=store, jobs=1)
        finally:
            writer.execute("ROLLBACK")
            writer.close()
        assert len(store) == 0


def test_another_programs_database_is_refused_and_left_unchanged(tmp_path):
    foreign = tmp_path / "analysis.sqlite"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE measurements (x REAL)")
        db.execute("INSERT INTO measurements VALUES (1.5)")
    db.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match=r"another program \(tables measurements\)"):
        ResultsStore(foreign)
    assert foreign.read_bytes() == before  # no tables added, journal mode untouched
    # An empty file (or an empty SQLite database) becomes a store.
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with ResultsStore(empty) as store:
        assert len(store) == 0
    with ResultsStore(empty) as store:  # and opens again as one
        assert len(store) == 0



def test_a_damaged_store_is_named_damaged_not_another_programs(tmp_path):
    path = tmp_path / "s.sqlite"
    ResultsStore(path).close()
    with sqlite3.connect(path) as db:
        page = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'meta'").fetchone()[0]
    db.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * page:root * page] = b"\x41" * page   # the meta table's page overwritten
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError) as info:
        ResultsStore(path)
    message = str(info.value)
    assert "not a usable results store" in message and "malformed" in message
    assert "another program" not in message

def test_failed_runs_are_recorded_never_stored_and_retried(tmp_path):
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a trace")
    path = tmp_path / "s.sqlite"
    with pytest.raises(SweepError, match=r"2 of 4 runs failed .*broken.npz") as info:
        sweep(BASE, {"l1d.ways": [2, 4]}, ["vectoradd:tiny", bad], store=path, jobs=2)
    assert len(info.value.frame) == 2 and len(info.value.failures) == 2
    with ResultsStore(path) as store:
        assert len(store) == 2
        failures = store.failures()
        assert len(failures) == 2 and failures["workload"].str.endswith("broken.npz").all()
        assert failures["error"].str.len().gt(0).all()
    skipped = sweep(BASE, {"l1d.ways": [2, 4]}, ["vectoradd:tiny", bad], store=path, jobs=2, errors="skip")
    assert skipped.attrs["sweep"] == dict(runs=4, stored=2, simulated=0, failed=2)
    assert list(skipped["workload"]) == ["vectoradd:tiny"] * 2
    assert [f["workload"] for f in skipped.attrs["failures"]] == [str(bad)] * 2


def test_a_trace_file_whose_name_is_not_utf8_is_swept_stored_and_failed_by_name(tmp_path):
    # Linux file names are bytes; Python holds those that are not UTF-8 as lone surrogates ("\udcff"),
    # which neither a frame's text column nor SQLite's text can hold: the sweep failed after its runs
    # (the store's commit, or the frame), and a broken file's failure could not be recorded.
    folder = os.fsencode(tmp_path)
    good = os.fsdecode(folder + b"/caf\xe9.npz")      # Latin-1 "café"
    bad = os.fsdecode(folder + b"/bro\xffken.npz")
    workloads.make("vectoradd", "tiny").save(good)
    Path(bad).write_bytes(b"not a trace")
    path = tmp_path / "s.sqlite"
    first = sweep(BASE, {"l1d.ways": [2, 4]}, [good, bad], store=path, jobs=1, errors="skip")
    shown = os.fsdecode(tmp_path) + "/caf\\xe9.npz"
    assert first.attrs["sweep"] == dict(runs=4, stored=0, simulated=2, failed=2)
    assert list(first["workload"]) == [shown] * 2
    assert [f["workload"] for f in first.attrs["failures"]] == [os.fsdecode(tmp_path) + "/bro\\xffken.npz"] * 2
    again = sweep(BASE, {"l1d.ways": [2, 4]}, [good], store=path, jobs=1)
    assert again.attrs["sweep"] == dict(runs=2, stored=2, simulated=0, failed=0)
    same_rows(again, first)
    with ResultsStore(path) as store:
        assert sorted(store.results()["workload"]) == [shown] * 2
        failures = store.failures()
        assert sorted(failures["workload"]) == [f["workload"] for f in first.attrs["failures"]]
        assert sorted(failures["error"]) == sorted(f["error"] for f in first.attrs["failures"])
        # An error that quotes such a name as Python holds it is stored with its bytes escaped too.
        store.put_failure(dict(run_key="k", config_key=BASE.key(), workload=bad, workload_id="w", seed=0,
                               version="v", params={}), f"cannot read {bad}", f"Traceback: {bad}")
        row = store.failures().set_index("run_key").loc["k"]
        assert row["error"] == "cannot read " + row["workload"] and row["workload"].endswith("/bro\\xffken.npz")


def test_seeds_past_the_signed_64_bit_range_are_stored_and_read_back(tmp_path):
    # Sweeps take seeds up to 2**64 - 1 (the core's); SQLite's integers stop at 2**63 - 1.
    seeds = [2**64 - 1, 2**63, 7]
    path = tmp_path / "s.sqlite"
    first = sweep(BASE, None, ["vectoradd:tiny"], seeds=seeds, store=path, jobs=1)
    assert first.attrs["sweep"] == dict(runs=3, stored=0, simulated=3, failed=0)
    again = sweep(BASE, None, ["vectoradd:tiny"], seeds=seeds, store=path, jobs=1)
    assert again.attrs["sweep"] == dict(runs=3, stored=3, simulated=0, failed=0)
    same_rows(again, first)
    bad = tmp_path / "broken.npz"
    bad.write_bytes(b"not a trace")
    skipped = sweep(BASE, None, [bad], seeds=[2**63 + 5], store=path, jobs=1, errors="skip")
    assert skipped.attrs["sweep"]["failed"] == 1
    with ResultsStore(path) as store:
        assert sorted(int(s) for s in store.results()["seed"]) == sorted(seeds)
        assert [int(s) for s in store.failures()["seed"]] == [2**63 + 5]


def test_ctrl_c_stops_the_runs_in_flight_and_keeps_the_finished_ones(tmp_path, monkeypatch):
    # Ctrl-C reaches only the sweep's thread: the pool's threads must be told to stop their runs (or
    # they simulate on, unseen, and the interpreter waits for them), and a run that finished but was not
    # read yet must still be committed.
    import importlib
    import threading

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    slow = workloads.make("bfs", "small")
    slow.kernels = slow.kernels * 40   # tens of seconds of simulation, were it not stopped
    slow.name = "bfs_40_times"
    wait = sweep_module._ThreadRunner.wait

    def interrupted(self, futures):
        wait(self, futures)   # the quick run finished ...
        raise KeyboardInterrupt   # ... and Ctrl-C arrives before the sweep reads it

    monkeypatch.setattr(sweep_module._ThreadRunner, "wait", interrupted)
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        sweep(BASE, None, ["vectoradd:tiny", slow], store=path, jobs=2)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("gpucachex-sweep")]
    with ResultsStore(path) as store:
        assert list(store.results()["workload"]) == ["vectoradd:tiny"]
        assert len(store.failures()) == 0   # a stopped run is no failure: the next sweep simply runs it


class _CtrlCAfterBegin:
    """A store's connection that raises KeyboardInterrupt as its first BEGIN returns, as Python raises a
    Ctrl-C that came while SQLite waited there for another writer to finish."""

    def __init__(self, db):
        self.db, self.armed = db, True

    def execute(self, sql, *args):
        cursor = self.db.execute(sql, *args)
        if sql == "BEGIN IMMEDIATE" and self.armed:
            self.armed = False
            raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name):
        return getattr(self.db, name)


def test_ctrl_c_while_a_commit_waits_for_the_store_leaves_no_transaction_open(tmp_path):
    # In a notebook the store outlives the interrupted sweep: an open transaction would keep every other
    # writer out, and fail the next sweep with "cannot start a transaction within a transaction".
    path = tmp_path / "s.sqlite"
    point = points(BASE, None, ["vectoradd:tiny"])[0]
    metrics = simulate(BASE, "vectoradd:tiny").metrics
    with ResultsStore(path) as store:
        store._db = _CtrlCAfterBegin(store._db)
        with pytest.raises(KeyboardInterrupt):
            store.put(point.info(), point.config, metrics, 1.0)
        assert not store._db.in_transaction
        with sqlite3.connect(path, timeout=0.1) as other:   # another writer gets in
            other.execute("INSERT OR REPLACE INTO meta VALUES ('probe', '')")
        assert store.put(point.info(), point.config, metrics, 1.0)
        assert point.key() in store


def test_a_run_whose_commit_ctrl_c_interrupted_is_committed_before_the_sweep_stops(tmp_path):
    # The run had finished: the commit the Ctrl-C rolled back is made again while the sweep stops, as
    # for the other finished runs in flight, not left for the next sweep to simulate again.
    with ResultsStore(tmp_path / "s.sqlite") as store:
        store._db = _CtrlCAfterBegin(store._db)
        with pytest.raises(KeyboardInterrupt):
            sweep(BASE, None, ["vectoradd:tiny", "sgemm:tiny"], store=store, jobs=1, progress=False)
        assert not store._db.in_transaction
        assert "vectoradd:tiny" in list(store.results()["workload"])


KILL_SCRIPT = """
import sys
from gpucachex import presets
from gpucachex.sweep import sweep
sweep(presets.get("gtx480"), {"l1d.ways": [2, 4, 8]}, ["sgemm:tiny"], seeds=range(100), store=sys.argv[1],
      jobs=2, progress=False)
"""


def interrupt_after_20_runs(path: Path, sig: int) -> subprocess.Popen:
    """Start KILL_SCRIPT's sweep on the store `path` and send it `sig` once it has stored 20 runs.
    Its 300 runs take a few seconds: on a machine that starves this process of the CPU for longer, the
    sweep can end between the poll and the signal. Then it starts again on a new store, up to 3 times."""
    for attempt in range(3):
        path.unlink(missing_ok=True)
        proc = run_script(KILL_SCRIPT, str(path), stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while stored_count(path) < 20:
                assert proc.poll() is None, "the sweep ended before it could be interrupted"
                assert time.monotonic() < deadline, "the sweep stored nothing"
                time.sleep(0.01)
            proc.send_signal(sig)
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if proc.returncode != 0:   # stopped by the signal (a finished sweep exits 0)
            return proc
        for suffix in ("-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
    raise AssertionError("the sweep finished before the signal reached it, 3 times")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_interrupted_sweep_loses_nothing_and_resumes(tmp_path, sig):
    path = tmp_path / "s.sqlite"
    proc = interrupt_after_20_runs(path, sig)
    with ResultsStore(path) as store:
        before = store.finished_at()
        store.check()
    assert 20 <= len(before) < 300, f"{len(before)} runs stored when the sweep was interrupted"
    if sig == signal.SIGINT:
        assert b"KeyboardInterrupt" in proc.stderr.read()
    frame = sweep(BASE, {"l1d.ways": [2, 4, 8]}, ["sgemm:tiny"], seeds=range(100), store=path, jobs=2)
    assert frame.attrs["sweep"] == dict(runs=300, stored=len(before), simulated=300 - len(before), failed=0)
    assert len(frame) == 300 and frame["run_key"].is_unique
    with ResultsStore(path) as store:
        after = store.finished_at()
        store.check()
    assert len(after) == 300
    assert {k: after[k] for k in before} == before   # finished runs were not run again
    # the rows read back equal a fresh computation
    check = sweep(BASE, {"l1d.ways": [2, 4, 8]}, ["sgemm:tiny"], seeds=[0, 50, 99], jobs=2)
    same_rows(check, frame[frame["seed"].isin([0, 50, 99])])


CONCURRENT_SCRIPT = """
import json, sys
from gpucachex import presets
from gpucachex.sweep import sweep
seeds = list(range(40))
if sys.argv[2] == "reversed":
    seeds.reverse()
df = sweep(presets.get("gtx480"), {"l1d.ways": [2, 4]}, ["sgemm:tiny", "hotspot:tiny"], seeds=seeds,
           store=sys.argv[1], jobs=1, progress=False)
df.sort_values("run_key").to_csv(sys.argv[3], index=False)
print(json.dumps(df.attrs["sweep"]))
"""


def test_opening_a_store_while_another_connection_writes_it_waits(tmp_path):
    # A second sweep opening a store file the first is still creating: switching the file to WAL
    # mode needs it to itself, and SQLite refuses that at once while another connection writes.
    # The store waits for the writer instead of calling the file unusable.
    import threading

    from gpucachex.store import _SCHEMA, STORE_FORMAT

    path = tmp_path / "s.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    for statement in _SCHEMA.split(";"):
        other.execute(statement)
    other.execute("INSERT INTO meta VALUES ('format', ?)", (str(STORE_FORMAT),))
    release = threading.Timer(0.3, lambda: other.execute("COMMIT"))
    release.start()
    t0 = time.monotonic()
    with ResultsStore(path) as store:
        assert len(store) == 0
    assert time.monotonic() - t0 >= 0.25  # it waited for the writer
    release.join()
    other.close()


def test_two_concurrent_sweeps_share_one_store(tmp_path):
    path = tmp_path / "s.sqlite"
    procs = [run_script(CONCURRENT_SCRIPT, str(path), order, str(tmp_path / f"{order}.csv"), stdout=subprocess.PIPE,
                        text=True) for order in ("forward", "reversed")]
    stats = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        stats.append(json.loads(out))
    for s in stats:
        assert s["runs"] == 160 and s["failed"] == 0 and s["stored"] + s["simulated"] == 160
    assert 160 <= stats[0]["simulated"] + stats[1]["simulated"] <= 320
    with ResultsStore(path) as store:
        store.check()
        assert len(store) == 160
        assert store.results()["run_key"].is_unique
    a, b = (pd.read_csv(tmp_path / f"{o}.csv") for o in ("forward", "reversed"))
    same_rows(a, b)


# ---- executors ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_processes_executor_equals_threads(tmp_path):
    trace = workloads.make("sgemm", "tiny")
    grid = {"l1d.ways": [2, 4]}
    wl = ["bfs:tiny", trace]
    threads = sweep(BASE, grid, wl, seeds=[0, 1], jobs=2)
    procs = sweep(BASE, grid, wl, seeds=[0, 1], jobs=2, executor="processes", store=tmp_path / "s.sqlite")
    same_rows(threads, procs)


def test_an_unreachable_dask_scheduler_is_named():
    pytest.importorskip("distributed")
    from gpucachex.sweep import connect_dask

    with pytest.raises(ConnectionError, match=r"cannot reach the Dask scheduler at tcp://127.0.0.1:1 \("):
        connect_dask("tcp://127.0.0.1:1", timeout="1s")
    with pytest.raises(ValueError, match="Dask scheduler address 'nohost'"):
        connect_dask("nohost")
    with pytest.raises(TypeError, match="a Dask scheduler address is a string"):
        connect_dask(8786)


@pytest.mark.slow
def test_dask_local_cluster_equals_local_sweep(tmp_path):
    distributed = pytest.importorskip("distributed")
    grid = {"l1d.ways": [2, 4], "core.scheduler": ["lrr", "gto"]}
    wl = ["bfs:tiny", "vectoradd:tiny", workloads.make("sgemm", "tiny")]
    local = sweep(BASE, grid, wl, seeds=[0, 1], jobs=2)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        remote = sweep(BASE, grid, wl, seeds=[0, 1], executor="dask", address=cluster.scheduler_address,
                       store=tmp_path / "s.sqlite")
    same_rows(local, remote)
    assert remote.attrs["sweep"]["simulated"] == 24
    # no address: the sweep starts its own LocalCluster (and closes it); the store answers the rest
    own = sweep(BASE, {"l1d.ways": [2, 4, 8]}, ["bfs:tiny"], seeds=[0], executor="dask", jobs=1,
                store=tmp_path / "s.sqlite")
    assert own.attrs["sweep"] == dict(runs=3, stored=2, simulated=1, failed=0)
    expected = local[(local["workload"] == "bfs:tiny") & (local["seed"] == 0)
                     & (local["core.scheduler"] == BASE["core.scheduler"])].drop(columns="core.scheduler")
    same_rows(own[own["l1d.ways"] != 8], expected)


def test_a_dask_worker_dying_fails_at_most_the_runs_that_needed_its_data(tmp_path, monkeypatch):
    # The only worker of a cluster dies mid-sweep, taking what was scattered to it (the opcode tables
    # every run needed, an in-memory Trace): Dask cancels the runs that waited for it, and
    # distributed.wait raised for them all, ending the sweep with Dask's FuturesCancelledError.
    distributed = pytest.importorskip("distributed")
    import importlib

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    wait = sweep_module._DaskRunner.wait
    killed = []

    def killing(self, futures):
        if not killed:
            killed.extend(self.client.run(os.getpid).values())
            os.kill(killed[0], signal.SIGKILL)   # its nanny starts another
        return wait(self, futures)

    monkeypatch.setattr(sweep_module._DaskRunner, "wait", killing)
    trace = workloads.make("sgemm", "tiny")
    wl, path = ["vectoradd:tiny", trace], tmp_path / "s.sqlite"
    df = sweep(BASE, None, wl, seeds=[0, 1, 2], executor="dask", jobs=1, store=path, progress=False, errors="skip")
    assert killed
    stats = df.attrs["sweep"]
    assert stats["runs"] == 6 and stats["simulated"] + stats["failed"] == 6 and df["run_key"].is_unique
    # Built-in workloads need no scattered data: Dask runs them again elsewhere. A run of the lost Trace
    # may fail, saying why; the Trace is scattered again for the runs after it.
    for failure in df.attrs.get("failures", []):
        assert failure["workload"] == "sgemm" and "the Dask cluster cancelled the run" in failure["error"]
    assert (df["workload"] == "vectoradd:tiny").sum() == 3
    monkeypatch.undo()
    again = sweep(BASE, None, wl, seeds=[0, 1, 2], store=path, jobs=1)   # the failed ones, retried
    assert again.attrs["sweep"]["failed"] == 0
    same_rows(again, sweep(BASE, None, wl, seeds=[0, 1, 2], jobs=1))


def test_ctrl_c_stops_the_worker_processes_and_keeps_the_finished_runs(tmp_path, monkeypatch):
    # Ctrl-C that reaches the sweeping process alone (kill -INT of its pid, an IDE's stop button): the
    # workers simulated their runs on, unseen, and the interpreter waited for them at exit.
    import importlib
    import multiprocessing

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    slow = workloads.make("bfs", "small")
    slow.kernels = slow.kernels * 40   # seconds of simulation, were it not stopped
    slow.name = "bfs_40_times"
    wait = sweep_module._ProcessRunner.wait
    workers = []

    def interrupted(self, futures):
        workers.extend(self.pool._processes)
        wait(self, futures)   # the quick run finished ...
        raise KeyboardInterrupt   # ... and Ctrl-C arrives before the sweep reads it

    monkeypatch.setattr(sweep_module._ProcessRunner, "wait", interrupted)
    path = tmp_path / "s.sqlite"
    with pytest.raises(KeyboardInterrupt):
        sweep(BASE, None, ["vectoradd:tiny", slow], store=path, jobs=2, executor="processes", progress=False)
    assert workers and not [p.pid for p in multiprocessing.active_children() if p.pid in workers]
    with ResultsStore(path) as store:
        assert list(store.results()["workload"]) == ["vectoradd:tiny"]
        assert len(store.failures()) == 0   # a stopped run is no failure: the next sweep simply runs it


def test_a_worker_running_another_model_fails_its_runs_instead_of_storing_them_under_the_sweeps(tmp_path,
                                                                                                monkeypatch):
    # A Dask worker left on an older install (or a worker process started after the sources changed) would
    # compute with its own model, and its rows would be stored under the run keys of the sweep's model.
    # Here the sweeping process claims another model; its spawned workers run the real one.
    import importlib

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    real = sweep_module.model_version()
    monkeypatch.setattr(sweep_module, "_MODEL_VERSION", "0.0+feedfacecafe")
    path = tmp_path / "s.sqlite"
    with pytest.raises(SweepError, match=rf"this worker runs gpucachex model {re.escape(real)}, not the sweep's "
                                         rf"0\.0\+feedfacecafe"):
        sweep(BASE, None, ["vectoradd:tiny"], store=path, jobs=1, executor="processes", progress=False)
    with ResultsStore(path) as store:
        assert len(store) == 0 and len(store.failures()) == 1
    monkeypatch.undo()
    assert sweep(BASE, None, ["vectoradd:tiny"], store=path, jobs=1, executor="processes",
                 progress=False).attrs["sweep"]["failed"] == 0


def test_a_dask_sweep_gives_a_growing_cluster_more_runs(monkeypatch):
    # An adaptive cluster may start with one worker or none: runs in flight follow the workers it has
    # now, or it is never given the work to grow for.
    distributed = pytest.importorskip("distributed")
    import importlib

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    monkeypatch.setattr(sweep_module._DaskRunner, "WINDOW_REFRESH_S", 0.0)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        runner = sweep_module._DaskRunner(None, cluster.scheduler_address, {})
        try:
            assert runner.window == 2
            cluster.scale(3)
            runner.client.wait_for_workers(3, timeout=60)
            assert runner.window == 6
        finally:
            runner.close()


def test_a_dask_runner_that_fails_to_start_closes_the_cluster_it_started(monkeypatch):
    distributed = pytest.importorskip("distributed")
    import importlib

    sweep_module = importlib.import_module("gpucachex.sweep")   # the package's `sweep` is the function
    started = []

    class Recording(distributed.LocalCluster):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    def refused(self, *args, **kwargs):
        raise RuntimeError("scatter refused")

    monkeypatch.setattr(distributed, "LocalCluster", Recording)
    monkeypatch.setattr(distributed.Client, "scatter", refused)
    with pytest.raises(RuntimeError, match="scatter refused"):
        sweep_module._DaskRunner(1, None, {"t": workloads.make("vectoradd", "tiny")})
    assert len(started) == 1 and started[0].status.name == "closed"


@pytest.mark.parametrize("grid, ignored", [
    ({"l2.power": ["none", "loscache"], "loscache.prediction_period": [25, 100]}, "l2.loscache.prediction_period"),
    ({"l2.policy": ["lru", "srrip"], "l2.srrip.rrpv_bits": [2, 3]}, "l2.srrip.rrpv_bits"),
    ({"l1d.power": ["none", "drowsy"], "drowsy.window": [0, 10]}, "drowsy.window"),
])
def test_grid_points_that_differ_only_in_keys_their_runs_do_not_read_are_named(grid, ignored):
    # The baseline with period 25 and with period 100 are one run twice (and normalize finds two
    # baselines per workload): say so, and how to sweep the key only where it is read.
    with pytest.warns(UserWarning, match=rf"^1 grid point\(s\) repeat the runs of others, differing from them only in "
                                         rf"{re.escape(ignored)}, read only by a technique or replacement policy"):
        assert len(points(BASE, grid, ["vectoradd:tiny"])) == 4
    key = next(k for k in grid if not k.startswith(("l1d.power", "l2.power", "l2.policy")))
    switch = next(k for k in grid if k != key)
    conditional = {switch: grid[switch], "when": [{"if": {switch: grid[switch][1]}, "grid": {key: grid[key]}}]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(points(BASE, conditional, ["vectoradd:tiny"])) == 3
        # a key read by every point (the L1D's ways), and drowsy's window where the L2 is drowsy
        points(BASE, {"l1d.ways": [2, 4], "l2.power": ["none", "loscache"]}, ["vectoradd:tiny"])
        points(BASE, {"l1d.power": ["none", "drowsy"], "l2.power": ["drowsy"], "drowsy.window": [0, 10]},
               ["vectoradd:tiny"])


def test_a_sweeps_warning_of_repeated_runs_names_the_line_that_called_the_sweep():
    # Not a line of gpucachex/sweep.py: a notebook shows a warning once per line it names, so a warning
    # naming the sweep's own line was shown by the first sweep that repeated runs, and by no later one
    # (the same cell run again, another cell), and a script's user was pointed at our code, not theirs.
    grid = {"l2.power": ["none", "loscache"], "loscache.prediction_period": [25, 100]}
    with pytest.warns(UserWarning, match=r"^1 grid point\(s\) repeat the runs of others") as record:
        sweep(BASE, grid, ["vectoradd:tiny"], progress=False)
    assert [Path(w.filename) for w in record] == [Path(__file__)]
    with pytest.warns(UserWarning, match=r"^1 grid point\(s\) repeat the runs of others") as record:
        points(BASE, grid, ["vectoradd:tiny"])
    assert [Path(w.filename) for w in record] == [Path(__file__)]
