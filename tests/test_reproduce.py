"""`gpucachex reproduce` and `gpucachex sweep` on experiments of the tests' own (registered by a fixture),
so they do not depend on the papers' modules: folders, figures, CSVs, the index page, --only, failures,
and resuming from the store."""
import os
import re
import sys
import types

import pandas as pd
import pytest

from gpucachex import cli, experiments
from gpucachex.store import ResultsStore

SPEC = """
title = "Cycles of a tiny sweep over L1D ways"
preset = "gtx480"
workloads = ["vectoradd", "sgemm"]
size = "small"
seeds = [0]
[set]
"l1d.hit_latency" = 24
[grid]
"l1d.ways" = [2, 4]
[quick]
size = "tiny"
"""


def _tiny_run(ctx):
    from gpucachex import plot
    from gpucachex.sweep import normalize

    df = normalize(ctx.sweep("tiny_ways"), "cycles", {"l1d.ways": 4})
    ctx.figure(plot.normalized_bars(df, "cycles_norm", hue="l1d.ways"), "cycles", "Cycles normalised to 4 ways")
    ctx.figure(plot.lines(df, "l1d.ways", "l1d_hit_rate"), "hit_rate", "L1D hit rate against ways")


def _broken_run(ctx):
    ctx.sweep("tiny_ways")
    raise ValueError("boom")


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """Two experiments of the tests' own: `tiny` (a sweep, two figures) and `broken` (fails after its sweep)."""
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "tiny_ways.toml").write_text(SPEC)
    (specs / "tiny.md").write_text("# tiny\n\nThe paper's numbers and ours.\n")
    monkeypatch.setenv("GPUCACHEX_EXPERIMENTS", str(specs))
    for name, run in (("tiny", _tiny_run), ("broken", _broken_run)):
        module = types.ModuleType(f"gpucachex_tests.{name}")
        module.NAME, module.TITLE, module.run = name, f"The {name} experiment", run
        monkeypatch.setitem(sys.modules, f"gpucachex_tests.{name}", module)
    monkeypatch.setattr(experiments, "EXPERIMENTS", {"tiny": "gpucachex_tests.tiny", "broken": "gpucachex_tests.broken"})
    return specs


def _links(markdown: str) -> list[str]:
    return re.findall(r"\]\(([^)#]+)\)", markdown)


def test_reproduce_writes_folders_figures_csvs_and_index(registry, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--quick", "--only", "tiny", "--out", str(out), "--jobs", "2", "--no-progress"]) == 0
    for name in ("cycles.png", "cycles.pdf", "hit_rate.png", "hit_rate.pdf", "tiny_ways.csv"):
        assert (out / "tiny" / name).stat().st_size > 0
    assert not (out / "broken").exists()
    frame = pd.read_csv(out / "tiny" / "tiny_ways.csv")
    assert sorted(frame["workload"]) == ["sgemm", "sgemm", "vectoradd", "vectoradd"]
    with ResultsStore(out / "results.sqlite") as store:
        stored = store.results()
        assert set(stored["workload_id"]) == {"vectoradd:tiny", "sgemm:tiny"}   # the [quick] size
        before = store.finished_at()
    md = (out / "index.md").read_text()
    assert "![Cycles normalised to 4 ways](tiny/cycles.png)" in md
    assert "[tiny_ways.csv](tiny/tiny_ways.csv): Cycles of a tiny sweep over L1D ways" in md
    assert sorted(_links(md)) == sorted(["tiny/", "tiny/cycles.png", "tiny/cycles.png", "tiny/cycles.pdf",
                                         "tiny/hit_rate.png", "tiny/hit_rate.png", "tiny/hit_rate.pdf",
                                         "tiny/tiny_ways.csv", "tiny/tiny.md"])
    assert all((out / link).exists() for link in _links(md))
    assert "The paper's numbers and ours." in (out / "tiny" / "tiny.md").read_text()
    page = (out / "index.html").read_text()
    assert '<img src="tiny/cycles.png" alt="Cycles normalised to 4 ways">' in page
    assert '<a href="tiny/tiny_ways.csv">tiny_ways.csv</a>' in page
    assert "1 experiments, 2 figures" in capsys.readouterr().out
    # again: every run comes from the store, the CSV is the same
    assert cli.main(["reproduce", "--quick", "--only", "tiny", "--out", str(out), "--no-progress"]) == 0
    with ResultsStore(out / "results.sqlite") as store:
        assert store.finished_at() == before
    pd.testing.assert_frame_equal(pd.read_csv(out / "tiny" / "tiny_ways.csv"), frame)


def test_reproduce_reports_a_failing_experiment_and_keeps_the_others(registry, tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--quick", "--out", str(out), "--no-progress", "--no-store"]) == 1
    assert (out / "tiny" / "cycles.png").exists()
    assert (out / "broken" / "tiny_ways.csv").exists()       # what it produced before failing
    md = (out / "index.md").read_text()
    assert "**Failed:** ValueError: boom" in md and 'raise ValueError("boom")' in md
    assert "failed: broken" in capsys.readouterr().err
    assert not (out / "results.sqlite").exists()


def test_reproduce_rejects_unknown_names_and_empty_registries(registry, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--only", "tiny,nope,nada", "--out", str(out)]) == 2
    assert "unknown experiments nope, nada (known: tiny, broken)" in capsys.readouterr().err
    assert not out.exists()
    assert cli.main(["reproduce", "--out", str(out), "--address", "tcp://127.0.0.1:1"]) == 2
    assert "--address needs --executor dask" in capsys.readouterr().err
    # A malformed scheduler address stops the command before any experiment runs.
    assert cli.main(["reproduce", "--out", str(out), "--executor", "dask", "--address", "nohost"]) == 2
    assert "Dask scheduler address 'nohost': " in capsys.readouterr().err
    assert not (out / "results.sqlite").exists()
    monkeypatch.setattr(experiments, "EXPERIMENTS", {})
    assert cli.main(["reproduce", "--out", str(out)]) == 2
    assert "no experiments are registered" in capsys.readouterr().err


def test_select_takes_one_string_as_one_item(registry):
    """reproduce(out, only="tiny") from Python: the string is a name (or "a,b"), not a list of letters
    reported as unknown experiments t, i, n, y."""
    from gpucachex.reproduce import select

    assert select("tiny") == ["tiny"]
    assert select("broken,tiny") == ["tiny", "broken"]
    assert select(["tiny", "tiny"]) == ["tiny"]
    with pytest.raises(KeyError, match=r"unknown experiment nope \(known: tiny, broken\)"):
        select("nope")


def test_cli_sweep_writes_csv_and_parquet_and_resumes(registry, tmp_path, capsys):
    out = tmp_path / "res"
    spec = registry / "tiny_ways.toml"
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(out), "--parquet", "--no-progress"]) == 0
    first = capsys.readouterr().out
    assert "4 runs: 0 from the store" in first and "4 simulated, 0 failed" in first
    csv, parquet = pd.read_csv(out / "tiny_ways.csv"), pd.read_parquet(out / "tiny_ways.parquet")
    assert len(csv) == 4 and list(csv["cycles"]) == list(parquet["cycles"])
    assert (csv["preset"] == "gtx480").all()
    # by name, from the experiments folder, with an explicit store: the store answers
    store = tmp_path / "other.sqlite"
    assert cli.main(["sweep", "tiny_ways", "--quick", "--out", str(out), "--store", str(store), "--no-progress"]) == 0
    assert cli.main(["sweep", "tiny_ways", "--quick", "--out", str(out), "--store", str(store), "--no-progress"]) == 0
    assert "4 runs: 4 from the store" in capsys.readouterr().out.splitlines()[-1]


def test_cli_sweep_reports_store_errors_without_a_traceback(registry, tmp_path, capsys, monkeypatch):
    from gpucachex.store import StoreError

    spec, store = registry / "tiny_ways.toml", tmp_path / "s.sqlite"

    def fail(self, info, *args):
        raise StoreError(f"{self.path}: storing run {info['run_key']} failed: disk I/O error")

    monkeypatch.setattr(ResultsStore, "put", fail)
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(tmp_path / "o"), "--store", str(store),
                     "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"gpucachex sweep: error: {store}: storing run" in err and "disk I/O error" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("edits, message", [
    ([('workloads = ["vectoradd", "sgemm"]', 'workloads = "vectoradd"')],
     "'workloads' must be a list of workload names or trace paths (strings), got 'vectoradd'"),
    ([('workloads = ["vectoradd", "sgemm"]', 'workloads = ["vectoradd", 3]')], "'workloads' must be a list"),
    ([('preset = "gtx480"', 'preset = 480')], "'preset' must be a string, got 480"),
    ([('seeds = [0]', 'seeds = [0, true]')], "'seeds' must be a list of non-negative integers"),
    # a table turned into a plain value, which TOML wants before the first table
    ([('[set]\n"l1d.hit_latency" = 24\n', ''), ('title =', 'set = 5\ntitle =')], "'set' must be a table"),
    ([('[grid]\n"l1d.ways" = [2, 4]\n', ''), ('title =', 'grid = 4\ntitle =')], "'grid' must be a table of swept keys"),
    ([('[quick]\nsize = "tiny"\n', ''), ('title =', 'quick = "tiny"\ntitle =')], "'quick' must be a table"),
    ([('size = "tiny"', 'size = 1')], "[quick]: 'size' must be a string, got 1"),
    ([('"l1d.ways" = [2, 4]', '"l1d.ways" = [2, 4]\n"l1d.hit_latency" = [20, 28]')],
     "['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
    ([('size = "tiny"', 'size = "tiny"\ngrid = { "l1d.hit_latency" = [20] }')],
     "with its [quick] table: ['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
    # every form of grid, short and full key names, and [set] nested by section
    ([('[grid]\n"l1d.ways" = [2, 4]\n', '[[grid]]\n"l1d.ways" = [2, 4]\n"l1d.hit_latency" = [20, 28]\n')],
     "['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
    ([('[grid]\n"l1d.ways" = [2, 4]\n', '[grid.zip]\n"l1d.ways" = [2, 4]\n"l1d.hit_latency" = [20, 28]\n')],
     "['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
    ([('"l1d.ways" = [2, 4]\n', '"l1d.ways" = [2, 4]\n[[grid.when]]\nif = { "l1d.ways" = 4 }\n'
                                 'grid = { "l1d.hit_latency" = [20, 28] }\n')],
     "['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
    ([('"l1d.hit_latency" = 24', '"loscache.prediction_period" = 50'),
      ('"l1d.ways" = [2, 4]', '"l1d.ways" = [2, 4]\n"l2.loscache.prediction_period" = [100, 200]')],
     "['l2.loscache.prediction_period'] both fixed in [set] and swept in [grid]"),
    ([('[set]\n"l1d.hit_latency" = 24\n', '[set.l1d]\nhit_latency = 24\n'),
      ('"l1d.ways" = [2, 4]', '"l1d.ways" = [2, 4]\n"l1d.hit_latency" = [20, 28]')],
     "['l1d.hit_latency'] both fixed in [set] and swept in [grid]"),
])
def test_sweep_spec_types_are_checked_before_any_run(registry, tmp_path, capsys, edits, message):
    """A spec value of the wrong type is refused by name before anything runs, in the full and the quick
    variant alike; a string of workloads would otherwise be swept letter by letter."""
    text = SPEC
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    out = tmp_path / "o"
    assert cli.main(["sweep", str(bad), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and message in err
    assert not out.exists()


def test_unusable_output_folders_and_stores_stop_before_any_run(registry, tmp_path, capsys):
    """An --out that is a file or below one, or a store whose folder cannot be made, is a clear error
    before anything is simulated, not a traceback after the whole sweep."""
    spec = registry / "tiny_ways.toml"
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(a_file), "--no-progress"]) == 2
    assert f"--out {a_file} is a file, not a folder" in capsys.readouterr().err
    below = a_file / "sub"
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(below), "--no-store", "--no-progress"]) == 2
    assert f"--out {below}: cannot create the folder (Not a directory)" in capsys.readouterr().err
    assert cli.main(["reproduce", "--quick", "--only", "tiny", "--out", str(a_file), "--no-progress"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
    store = a_file / "results.sqlite"
    out = tmp_path / "out"
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(out), "--store", str(store), "--no-progress"]) == 2
    assert f"{store}: cannot create its folder {a_file}" in capsys.readouterr().err
    assert not (out / "tiny_ways.csv").exists()


def test_sweep_outputs_that_cannot_be_written_are_an_error_line(registry, tmp_path, capsys):
    # A folder where OUT/NAME.csv or .parquet goes (as a read-only file or a full disk fail) ended in an
    # IsADirectoryError traceback after every run.
    spec = registry / "tiny_ways.toml"
    out = tmp_path / "out"
    (out / "tiny_ways.csv").mkdir(parents=True)
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpucachex sweep: error: [Errno 21] Is a directory") and str(out / "tiny_ways.csv") in err
    assert err.count("\n") == 1
    (out / "tiny_ways.csv").rmdir()
    (out / "tiny_ways.parquet").mkdir()
    assert cli.main(["sweep", str(spec), "--quick", "--out", str(out), "--parquet", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"gpucachex sweep: error: --parquet: cannot write {out / 'tiny_ways.parquet'} (")
    assert err.endswith(f"); {out / 'tiny_ways.csv'} holds the rows\n") and err.count("\n") == 1
    assert len(pd.read_csv(out / "tiny_ways.csv")) == 4


def test_a_sweep_csv_cut_short_is_not_left_behind(registry, tmp_path, capsys, monkeypatch):
    # The disk filled up halfway through OUT/NAME.csv: the rows written so far stayed as that file.
    to_csv = pd.DataFrame.to_csv

    def half_then_full(frame, path, **kwargs):
        to_csv(frame.head(1), path, **kwargs)
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_full)
    out = tmp_path / "out"
    assert cli.main(["sweep", str(registry / "tiny_ways.toml"), "--quick", "--out", str(out), "--no-progress"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["results.sqlite"]


def test_empty_out_store_and_address_are_errors(registry, tmp_path, capsys, monkeypatch):
    """--out "$DIR" with DIR unset: not the current folder, silently filled with every experiment's files."""
    monkeypatch.chdir(tmp_path)
    spec = registry / "tiny_ways.toml"
    for command in (["sweep", str(spec)], ["reproduce", "--only", "tiny"]):
        assert cli.main([*command, "--quick", "--out", "", "--no-progress"]) == 2
        assert "--out is empty; give a folder" in capsys.readouterr().err
        assert cli.main([*command, "--quick", "--out", "out", "--store", " ", "--no-progress"]) == 2
        assert "--store is empty; give a file" in capsys.readouterr().err
        # --address "$SCHEDULER" unset: not a cluster started on this machine, nor ignored without dask
        for executor in ("dask", "threads"):
            assert cli.main([*command, "--quick", "--out", "out", "--executor", executor, "--address", "",
                             "--no-progress"]) == 2
            err = capsys.readouterr().err
            assert "--address is empty; give the Dask scheduler's address, such as tcp://HOST:8786" in err
        # --jobs with --address would be ignored: refused before connecting to the scheduler
        assert cli.main([*command, "--quick", "--out", "out", "--executor", "dask", "--address", "tcp://127.0.0.1:1",
                         "--jobs", "4", "--no-progress"]) == 2
        assert ("--jobs sizes the local Dask cluster started without --address; the cluster at tcp://127.0.0.1:1 "
                "runs on its own workers: leave --jobs out") in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["specs"]


def test_cli_sweep_errors(registry, tmp_path, capsys):
    assert cli.main(["sweep", str(tmp_path / "none.toml")]) == 2
    assert "no sweep spec" in capsys.readouterr().err
    (tmp_path / "folder.toml").mkdir()
    assert cli.main(["sweep", str(tmp_path / "folder.toml")]) == 2
    assert "folder.toml is a directory, not a sweep spec" in capsys.readouterr().err
    latin = tmp_path / "latin.toml"
    latin.write_bytes(SPEC.replace("Cycles", "Cycl\xe9s").encode("latin-1"))
    assert cli.main(["sweep", str(latin)]) == 2
    assert f"{latin}: not UTF-8 text, as TOML must be" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text(SPEC.replace('title =', 'colour = "red"\ntitle ='))
    assert cli.main(["sweep", str(bad), "--out", str(tmp_path)]) == 2
    assert "unknown keys ['colour']" in capsys.readouterr().err
    # a misspelt key is pointed at the one it looks like, at the top and in [quick]
    bad.write_text(SPEC.replace('size = "small"', 'sizes = "small"'))
    assert cli.main(["sweep", str(bad), "--out", str(tmp_path)]) == 2
    assert "unknown keys ['sizes'] (close: size, seeds; known: [" in capsys.readouterr().err
    bad.write_text(SPEC.replace('size = "tiny"', 'sise = "tiny"'))
    assert cli.main(["sweep", str(bad), "--out", str(tmp_path)]) == 2
    assert "unknown keys in [quick]: ['sise'] (close: size; known: ['grid', 'notes'," in capsys.readouterr().err
    bad.write_text(SPEC.replace('"l1d.ways" = [2, 4]', '"l1d.wayz" = [2, 4]'))
    assert cli.main(["sweep", str(bad), "--out", str(tmp_path), "--no-progress"]) == 2
    assert f"{bad}: unknown configuration key 'l1d.wayz'" in capsys.readouterr().err
    # Errors found in the spec's values name its file too, before any run.
    for old, new, message in (('"l1d.ways" = [2, 4]', '"l1d.ways" = []', "grid['l1d.ways'] has no values"),
                              ('preset = "gtx480"', 'preset = "gtx999"', "unknown preset 'gtx999'"),
                              # not "get() got multiple values for argument 'name'"
                              ('"l1d.hit_latency" = 24', 'name = "mine"', "unknown configuration key 'name'"),
                              ('workloads = ["vectoradd", "sgemm"]', 'workloads = ["vectorad"]',
                               "workload 'vectorad:small' is neither")):
        assert old in SPEC
        bad.write_text(SPEC.replace(old, new))
        assert cli.main(["sweep", str(bad), "--out", str(tmp_path / "p"), "--no-progress"]) == 2
        assert f"{bad}: {message}" in capsys.readouterr().err
        assert not (tmp_path / "p").exists() or not any((tmp_path / "p").glob("*.csv"))
    broken = tmp_path / "broken.npz"
    broken.write_bytes(b"nope")
    bad.write_text(SPEC.replace('workloads = ["vectoradd", "sgemm"]', f'workloads = ["vectoradd", "{broken}"]'))
    assert cli.main(["sweep", str(bad), "--quick", "--out", str(tmp_path / "o"), "--no-progress"]) == 1
    captured = capsys.readouterr()
    assert "4 runs: 0 from the store" in captured.out and "2 failed" in captured.out
    assert "failed: " + str(broken) in captured.err
    assert len(pd.read_csv(tmp_path / "o" / "bad.csv")) == 2
    # ten failures are shown, and how many more there are
    bad.write_text(SPEC.replace('workloads = ["vectoradd", "sgemm"]', f'workloads = ["{broken}"]')
                   .replace("seeds = [0]", "seeds = [0, 1, 2, 3, 4, 5]"))
    assert cli.main(["sweep", str(bad), "--quick", "--out", str(tmp_path / "m"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert err.count("failed: " + str(broken)) == 10
    assert err.endswith("  and 2 more failed runs (the store's failures() lists them)\n")


def test_a_spec_of_one_model_at_two_sizes_keeps_the_sizes_apart(tmp_path):
    """The workload column shows models by name while they all run at the spec's size (as the papers'
    figures name them), and name:size once a model runs at another: bfs:tiny and bfs:small rows would
    otherwise look like two seeds of one workload."""
    spec = tmp_path / "sizes.toml"
    ctx = experiments.Context(out_dir=tmp_path / "out", sweep_options={"progress": False})
    spec.write_text('preset = "gtx480"\nworkloads = ["vectoradd:tiny", "vectoradd:small"]\nsize = "tiny"\n')
    assert list(ctx.sweep(str(spec))["workload"]) == ["vectoradd:tiny", "vectoradd:small"]
    assert list(pd.read_csv(tmp_path / "out" / "sizes.csv")["workload"]) == ["vectoradd:tiny", "vectoradd:small"]
    assert experiments.workload_classes(["vectoradd:tiny", "a/trace"]) == [
        experiments.workload_classes(["vectoradd"])[0], ""]
    spec.write_text('preset = "gtx480"\nworkloads = ["vectoradd", "bfs:tiny"]\nsize = "tiny"\n')
    assert list(ctx.sweep(str(spec))["workload"]) == ["vectoradd", "bfs"]


def test_an_existing_out_folder_that_cannot_be_written_stops_before_any_run(registry, tmp_path, capsys):
    """Not after every run was simulated (sweep --no-store), nor as a traceback (reproduce)."""
    out = tmp_path / "read_only"
    out.mkdir()
    out.chmod(0o555)
    try:
        if os.access(out, os.W_OK):
            pytest.skip("this user writes in read-only folders (root): chmod cannot make one")
        for command in (["sweep", str(registry / "tiny_ways.toml")], ["reproduce", "--only", "tiny"]):
            assert cli.main([*command, "--quick", "--out", str(out), "--no-store", "--no-progress"]) == 2
            assert f"--out {out}: cannot write in the folder (Permission denied)" in capsys.readouterr().err
    finally:
        out.chmod(0o755)


def test_an_experiment_whose_folder_cannot_be_made_fails_alone(registry, tmp_path, capsys, monkeypatch):
    """An experiment that writes nothing itself still gets its page copied into its folder: when that
    fails (a file in the folder's place, which stops root too), it is that experiment's failure, and
    the others and the index page still come."""
    module = types.ModuleType("gpucachex_tests.quiet")
    module.NAME, module.TITLE, module.run = "quiet", "The quiet experiment", lambda ctx: None
    monkeypatch.setitem(sys.modules, "gpucachex_tests.quiet", module)
    monkeypatch.setattr(experiments, "EXPERIMENTS", {"quiet": "gpucachex_tests.quiet", "tiny": "gpucachex_tests.tiny"})
    (registry / "quiet.md").write_text("# quiet\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "quiet").write_text("a file where the experiment's folder goes")
    assert cli.main(["reproduce", "--quick", "--out", str(out), "--no-store", "--no-progress"]) == 1
    assert "failed: quiet" in capsys.readouterr().err
    assert "**Failed:** FileExistsError" in (out / "index.md").read_text()
    assert (out / "tiny" / "cycles.png").exists() and (out / "tiny" / "tiny.md").exists()


def test_the_copied_page_keeps_the_files_it_links(registry, tmp_path):
    """experiments/ata.md shows the full run's figures from experiments/ata/: its copy in the output folder
    needs them at the same relative path, or every image on it is broken; a link to a name the experiment
    writes itself keeps the experiment's file."""
    (registry / "tiny").mkdir()
    (registry / "tiny" / "full_run.png").write_bytes(b"the full run's figure")
    (registry / "cycles.png").write_bytes(b"not this run's figure")
    (registry / "tiny.md").write_text("# tiny\n\n![Full run](tiny/full_run.png)\n\n![Ours](cycles.png)\n\n"
                                      "[paper](https://example.org/paper.pdf), [below](#numbers), "
                                      "[outside](../secret.txt)\n")
    (tmp_path / "secret.txt").write_text("outside the specs' folder")
    out = tmp_path / "out"
    assert cli.main(["reproduce", "--quick", "--only", "tiny", "--out", str(out), "--no-store", "--no-progress"]) == 0
    page = out / "tiny" / "tiny.md"
    assert (out / "tiny" / "tiny" / "full_run.png").read_bytes() == b"the full run's figure"
    assert (out / "tiny" / "cycles.png").read_bytes().startswith(b"\x89PNG")   # the experiment's own figure
    assert not (out / "secret.txt").exists()
    local = [link for link in _links(page.read_text()) if "://" not in link and not link.startswith("..")]
    assert local and all((page.parent / link).is_file() for link in local)


def test_a_spec_workload_in_the_working_folder_is_a_path(tmp_path, monkeypatch):
    """A workload "va.npz" has no "/" but exists: a trace file, not a model "va.npz" at the spec's size."""
    from gpucachex import workloads

    workloads.make("vectoradd", "tiny").save(tmp_path / "va.npz")
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "relative.toml"
    spec.write_text('preset = "gtx480"\nworkloads = ["va.npz", "vectoradd"]\nsize = "tiny"\n')
    assert experiments.spec_workloads(experiments.load_spec(spec)) == ["va.npz", "vectoradd:tiny"]
    frame = experiments.Context(out_dir=tmp_path / "out", sweep_options={"progress": False}).sweep(str(spec))
    assert list(frame["workload"]) == ["va.npz", "vectoradd"]
    assert frame["cycles"][0] == frame["cycles"][1]   # the same kernel, from the file and from the model


def test_an_installed_package_carries_the_experiment_specs_and_reads_them(tmp_path, monkeypatch):
    """`pip install .` (not editable) left experiments/ behind: reproduce failed with "experiment specs
    not found". build_py copies the folder into the package, where experiments_dir() looks first."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    build = tmp_path / "lib"
    subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(build)], cwd=root, check=True,
                   capture_output=True)
    specs = build / "gpucachex" / "experiments" / "specs"
    for name in ("loscache_main.toml", "ata.md", "ata/ata_fig8_ipc.png"):
        assert (specs / name).read_bytes() == (root / "experiments" / name).read_bytes()
    # The installed module finds them beside itself, wherever the repository is.
    monkeypatch.delenv("GPUCACHEX_EXPERIMENTS", raising=False)
    monkeypatch.setattr(experiments, "__file__", str(build / "gpucachex" / "experiments" / "__init__.py"))
    assert experiments.experiments_dir() == specs
    assert experiments.load_spec("loscache_main")["preset"] == experiments.load_spec(
        root / "experiments" / "loscache_main.toml")["preset"]
