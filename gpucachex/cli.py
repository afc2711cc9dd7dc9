"""The `gpucachex` command line: one sub-command per task, each a thin layer over the Python API."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path


class CliError(Exception):
    """A user-facing error: printed without a traceback, exit status 2."""


def _json_safe(value):
    """`value` with every NaN and infinity as None: JSON has no such numbers, and strict parsers
    (JavaScript's, Go's, serde) refuse the NaN token Python's json writes by default."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _print_table(rows: dict, title: str | None = None) -> None:
    if title:
        print(title)
    width = max((len(str(k)) for k in rows), default=0)
    for key, value in rows.items():
        if isinstance(value, float):
            # Counts the metrics hold as floats (l1d_global_fills, l1d_remote_hits) in full: six significant
            # digits printed 2874221 as 2.87422e+06. Fractions keep six.
            value = f"{value:.0f}" if value.is_integer() and abs(value) < 2**53 else f"{value:.6g}"
        print(f"  {str(key):<{width}}  {value}")


# ---- cache ----------------------------------------------------------------------------------

def _read_addresses(path: str):
    import numpy as np

    p = Path(path)
    if p.is_dir():   # "no such file" would send the user looking for a path that is there
        raise CliError(f"{path} is a directory, not an address file")
    if not p.is_file():
        raise CliError(f"{path}: no such file")
    size = p.stat().st_size
    if size % 8:
        raise CliError(f"{path}: size {size} bytes is not a multiple of 8 (expected raw little-endian uint64 addresses)")
    try:   # a file this process may not read ended in a PermissionError traceback
        return np.fromfile(p, dtype="<u8").astype(np.uint64, copy=False)
    except OSError as exc:
        raise CliError(f"{path}: cannot read ({exc.strerror or exc})") from None


# gpucachex.cache_run's keywords other than a policy's parameters: what --option says instead.
_WRITES_ONLY = "an address file holds reads only, which no write policy changes"
_CACHE_OWN_OPTIONS = {
    "sector_bytes": "give the sector size with --sector",
    "seed": "give the seed with --seed",
    "index": "this command indexes sets by line mod sets (gpucachex.cache_run's index= chooses another)",
    "write_back": _WRITES_ONLY,
    "write_allocate": _WRITES_ONLY,
    "write_policy": _WRITES_ONLY,
}


def cmd_cache(args) -> int:
    from gpucachex.functional import cache_run
    from gpucachex.sim import _ratio

    addrs = _read_addresses(args.trace)
    options = {}
    if args.sector is not None:
        options["sector_bytes"] = args.sector
    if args.write_through:
        # The file holds addresses only, every one a read: the write policy could not change a number.
        raise CliError("--write-through changes nothing here: an address file holds reads only (pass the "
                       "stores as writes= to gpucachex.cache_run to simulate a write policy)")
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--option expects key=value, got {item!r}")
        # cache_run takes its own keywords and the policy's parameters in one namespace: passed on,
        # sector_bytes overrode --sector without a word, and seed failed with "cache_run() got
        # multiple values".
        if key in _CACHE_OWN_OPTIONS:
            raise CliError(f"--option {key}: not a parameter of a replacement policy; {_CACHE_OWN_OPTIONS[key]}")
        if key in options:
            raise CliError(f"--option {key} is given twice")
        try:
            options[key] = int(value)
        except ValueError:
            try:   # 0.5, 1e3: the policy's own check says which it takes
                options[key] = float(value)
            except ValueError:
                raise CliError(f"--option {key}: {value!r} is not a number") from None
    try:
        stats = cache_run(addrs, sets=args.sets, ways=args.ways, line_bytes=args.line, policy=args.policy,
                          seed=args.seed, **options)
    except (ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None
    # A hit rate over no access (an empty file) is undefined: NaN (null in JSON), as simulate reports
    # it; a 0 would read as measured (every access missed).
    stats["hit_rate"] = _ratio(stats["hits"], stats["accesses"])
    if args.json:
        print(json.dumps(_json_safe(stats), indent=2, allow_nan=False))
    else:
        _print_table(stats, f"{args.trace}: {args.sets} sets x {args.ways} ways x {args.line} B, {args.policy}")
    return 0


def cmd_gen_addresses(args) -> int:
    from gpucachex.functional import mixed_stream

    if args.count < 0:
        raise CliError(f"--count must be >= 0, got {args.count}")
    if not 1 <= args.footprint_mb <= 1 << 44:   # 2**44 MB is the whole 64-bit address space
        raise CliError(f"--footprint-mb must be from 1 to {1 << 44} (64-bit addresses), got {args.footprint_mb}")
    try:
        addrs = mixed_stream(args.count, footprint_bytes=args.footprint_mb << 20, seed=args.seed)
    except (ValueError, MemoryError) as exc:
        raise CliError(str(exc)) from None
    out = Path(args.out)
    try:
        f = open(out, "wb")
    except OSError as exc:
        raise CliError(f"{args.out}: cannot write ({exc.strerror})") from None
    try:
        # Through Python's file rather than numpy's tofile, whose short write (a full disk) raises an
        # OSError without its reason: "cannot write (None)".
        with f:
            f.write(memoryview(addrs.astype("<u8")).cast("B"))
    except OSError as exc:
        if out.is_file():   # what was written would read as a shorter stream (not /dev/full itself)
            out.unlink()
        raise CliError(f"{args.out}: cannot write ({exc.strerror or exc})") from None
    print(f"wrote {len(addrs):,} addresses ({args.footprint_mb} MB footprint) to {args.out}")
    return 0


# ---- trace ----------------------------------------------------------------------------------

def _load_trace(args):
    from gpucachex.traceio import load_trace

    try:
        return load_trace(args.path, allow_missing_ctas=args.allow_missing_ctas)
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None


def cmd_trace_info(args) -> int:
    trace = _load_trace(args)
    summary = trace.summary()
    if args.json:
        out = dict(summary)
        if args.kernels:
            out = dict(summary=summary, kernels=json.loads(trace.kernels_frame().to_json(orient="records")))
        print(json.dumps(out, indent=2))
        return 0
    _print_table({key: f"{value:,}" for key, value in summary.items()},
                 f"{args.path}: {len(trace.kernels)} kernels, {len(trace.opcodes)} opcodes, "
                 f"{len(trace.memcpys)} memcpys")
    if args.kernels:
        import pandas as pd

        with pd.option_context("display.max_rows", None, "display.width", 200):
            print(trace.kernels_frame().to_string(index=False))
    return 0


def cmd_trace_convert(args) -> int:
    trace = _load_trace(args)
    out = Path(args.out)
    if out.is_dir():
        raise CliError(f"{args.out} is a directory; give the native file's path (e.g. {out / 'trace.npz'})")
    try:
        trace.save(out)
    except (ValueError, OSError) as exc:
        raise CliError(str(exc)) from None
    s = trace.summary()
    print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB): {len(trace.kernels)} kernels, "
          f"{s['warp_insts']:,} warp instructions, {s['addresses']:,} addresses")
    return 0


# ---- workloads ------------------------------------------------------------------------------

def _param_value(text: str):
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    if text.lower() in ("none", "null"):   # as `gpucachex workloads NAME` prints a parameter left to the model
        return None
    return text


def cmd_workloads(args) -> int:
    import time

    from gpucachex import workloads

    if args.name is None:
        if args.size or args.param:
            raise CliError("--size and --param need a workload name")
        rows = [(m, workloads.spec(m).klass, workloads.spec(m).description) for m in workloads.names()]
        if args.json:
            print(json.dumps([dict(name=n, cls=c, description=d) for n, c, d in rows], indent=2))
            return 0
        w1, w2 = max(len(r[0]) for r in rows), max(len(r[1]) for r in rows)
        print(f"{'name':<{w1}}  {'class':<{w2}}  description")
        for n, c, d in rows:
            print(f"{n:<{w1}}  {c:<{w2}}  {d}")
        return 0
    try:
        info = workloads.info(args.name)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    params = {}
    for item in args.param or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--param expects key=value, got {item!r}")
        if key in params:   # the last would silently win, as --set and --option refuse
            raise CliError(f"--param {key} is given twice")
        params[key] = _param_value(value)
    if args.size is None:
        if params:
            raise CliError("--param needs --size")
        if args.json:
            print(json.dumps({k: v for k, v in info.items()}, indent=2, default=str))
            return 0
        print(f"{info['name']} ({info['class']}): {info['description']}")
        print(f"  source: {info['source']}")
        for size, p in info["sizes"].items():
            print(f"  {size:<6}  " + ", ".join(f"{k}={v}" for k, v in p.items()))
        return 0
    t0 = time.perf_counter()
    try:
        trace = workloads.make(args.name, args.size, **params)
    except (ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None
    summary = trace.summary()
    summary["kernels"] = len(trace.kernels)
    summary["generation_s"] = round(time.perf_counter() - t0, 3)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _print_table(summary, f"{args.name} ({args.size}{', ' if params else ''}"
                              f"{', '.join(f'{k}={v}' for k, v in params.items())})")
    return 0


# ---- simulate, presets, keys ----------------------------------------------------------------

SUMMARY_METRICS = ("cycles", "warp_insts", "thread_insts", "ipc", "l1d_accesses", "l1d_hit_rate",
                   "l1d_reservation_fails", "l2_accesses", "l2_hit_rate", "dram_reads", "dram_writes", "icnt_flits",
                   "avg_load_latency", "l1d_energy_j", "l2_energy_j", "l2_dead_time_fraction")


def _parse_sets(items: list[str] | None) -> dict:
    """--set key=value pairs, each value converted by the key's type in the schema."""
    from gpucachex.config import resolve_key, schema

    out = {}
    given: dict[str, str] = {}   # full key -> the --set item that gave it
    for item in items or []:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise CliError(f"--set expects key=value, got {item!r}")
        try:
            full = resolve_key(key.strip())
        except KeyError as exc:
            raise CliError(exc.args[0]) from None
        if full in given:   # the last would silently win, as Config refuses a key given twice
            raise CliError(f"--set: configuration key {full} is given twice ({given[full]!r} and {item!r})")
        given[full] = item
        spec = schema()[full]
        text = text.strip()
        try:
            if spec.type == "int":
                value = int(text)
            elif spec.type == "float":
                value = float(text)
            elif spec.type == "bool":
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError
                value = text.lower() in ("true", "1", "yes")
            else:
                value = text
        except ValueError:
            raise CliError(f"--set {key}: {text!r} is not a valid {spec.type}") from None
        out[full] = value
    return out


def cmd_simulate(args) -> int:
    from gpucachex import presets
    from gpucachex.sim import resolve_workload, simulate

    try:
        cfg = presets.get(args.preset).replace(**_parse_sets(args.set))
        trace = resolve_workload(args.workload)
    except (KeyError, ValueError, TypeError, OSError) as exc:
        # A KeyError's text is its first argument (str() would quote it); an OSError's first is its
        # number: a trace this process may not read printed "error: 13".
        raise CliError(exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)) from None
    show_progress = args.progress if args.progress is not None else (
        sys.stderr.isatty() and trace.summary()["warp_insts"] > 2_000_000)
    try:
        result = simulate(cfg, trace, seed=args.seed, progress=show_progress)
    except (ValueError, RuntimeError, MemoryError) as exc:
        raise CliError(str(exc)) from None
    metrics = result.metrics if args.all or args.json else {k: result.metrics[k] for k in SUMMARY_METRICS
                                                              if k in result.metrics}
    if args.json:
        print(json.dumps(_json_safe({"preset": args.preset, "workload": result.workload, "seed": args.seed,
                                     "config_key": cfg.key(), "metrics": metrics}), indent=2, default=str,
                         allow_nan=False))
    else:
        _print_table(metrics, f"{result.workload} on {args.preset} (seed {args.seed}, "
                              f"{result.wall_seconds:.2f} s simulated)")
    return 0


def cmd_presets(args) -> int:
    from gpucachex import presets
    from gpucachex.config import Config

    if not args.name:
        if args.json:
            print(json.dumps({n: presets.describe(n).description for n in presets.names()}, indent=2))
        else:
            for n in presets.names():
                print(f"  {n:<10} {presets.describe(n).description}")
        return 0
    try:
        p = presets.describe(args.name)
    except KeyError as exc:
        raise CliError(exc.args[0]) from None
    cfg = presets.get(args.name)
    values = cfg.to_dict() if args.all else cfg.diff(Config())
    if args.json:
        print(json.dumps({"name": p.name, "description": p.description, "source": p.source, "config_key": cfg.key(),
                          "values": values}, indent=2))
    else:
        print(f"{p.name}: {p.description}\nsource: {p.source}\nconfiguration key: {cfg.key()}")
        _print_table(values, "values (all keys)" if args.all else "values that differ from the core's defaults")
    return 0


def cmd_keys(args) -> int:
    from gpucachex.config import close_names, number_text, schema

    keys = [s for s in schema().values() if not args.pattern or args.pattern in s.name]
    if not keys:
        raise CliError(f"no configuration key contains {args.pattern!r} "
                       f"({close_names(args.pattern, schema(), 'gpucachex keys lists them all')})")
    if args.json:
        print(json.dumps([{"name": s.name, "type": s.type, "default": s.default, "min": s.min, "max": s.max,
                           "choices": s.choices, "doc": s.doc, "technique": s.technique} for s in keys], indent=2))
        return 0
    for s in keys:
        rng = f"one of {', '.join(s.choices)}" if s.choices else "true/false" if s.type == "bool" else \
            f"{number_text(s.min)}..{number_text(s.max)}"
        print(f"  {s.name:<34} {s.type:<9} default {s.default!s:<10} {rng}\n      {s.doc}")
    return 0
# ---- sweeps and reproduce ------------------------------------------------------------------

def _sweep_options(args) -> dict:
    """Store, executor and progress options shared by `sweep` and `reproduce`."""
    from gpucachex.store import ResultsStore, StoreError

    # An empty value (an unset shell variable: --out "$DIR") would silently mean the current folder for
    # --out, the default store for --store, and a cluster started on this machine for --address.
    for option, value, what in (("--out", args.out, "a folder"), ("--store", args.store, "a file"),
                                ("--address", args.address, "the Dask scheduler's address, such as tcp://HOST:8786")):
        if value is not None and not value.strip():
            raise CliError(f"{option} is empty; give {what}")
    if args.address is not None and args.executor != "dask":
        raise CliError("--address needs --executor dask")
    if args.store and args.no_store:   # one of them would be silently ignored
        raise CliError(f"--store {args.store} and --no-store contradict each other; give one")
    if args.jobs is not None and args.jobs < 1:
        raise CliError(f"--jobs must be at least 1, got {args.jobs}")
    if args.jobs is not None and args.address is not None:   # it would be ignored
        raise CliError(f"--jobs sizes the local Dask cluster started without --address; the cluster at "
                       f"{args.address} runs on its own workers: leave --jobs out")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is a file, not a folder")
    try:  # before anything runs: a folder that cannot be made would otherwise fail after the sweep
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"--out {out}: cannot create the folder ({exc.strerror})") from None
    try:  # an existing folder this process may not write (another user's, a read-only mount) fails the same
        import tempfile

        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as exc:
        raise CliError(f"--out {out}: cannot write in the folder ({exc.strerror})") from None
    options = {"executor": "local" if args.executor == "threads" else args.executor, "progress": not args.no_progress}
    if args.address:
        from gpucachex.sweep import connect_dask

        try:  # before anything runs, rather than once per sweep
            connect_dask(args.address).close()
        except (ValueError, ConnectionError) as exc:
            raise CliError(str(exc)) from None
        options["address"] = args.address
    if not args.no_store:
        path = Path(args.store) if args.store else Path(args.out) / args.default_store
        try:
            options["store"] = ResultsStore(path)
        except StoreError as exc:
            raise CliError(str(exc)) from None
    return options


def cmd_sweep(args) -> int:
    from gpucachex.experiments import Context, load_spec
    from gpucachex.store import StoreError, write_parquet

    try:
        spec = load_spec(args.spec, quick=args.quick)
    except (OSError, ValueError) as exc:
        raise CliError(str(exc)) from None
    options = _sweep_options(args)
    options["errors"] = "skip"  # failed runs are listed below; the others' rows are still written
    ctx = Context(out_dir=Path(args.out), quick=args.quick, jobs=args.jobs, sweep_options=options)
    try:
        frame = ctx.sweep(spec["path"])
    except (KeyError, ValueError, TypeError, OSError, StoreError) as exc:
        # OSError: a missing trace, and OUT/NAME.csv that cannot be written (a folder of that name, a
        # read-only file, a full disk), which ended in a traceback after every run.
        raise CliError(str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)) from None
    finally:
        if "store" in options:
            options["store"].close()
    csv = ctx.outputs[-1].paths[0]
    written = [csv]
    if args.parquet:
        parquet = str(Path(csv).with_suffix(".parquet"))
        try:
            write_parquet(frame, parquet)
        except OSError as exc:
            raise CliError(f"--parquet: cannot write {parquet} ({exc}); {csv} holds the rows") from None
        written.append(parquet)
    stats = frame.attrs.get("sweep", {})
    store = f" (store {options['store'].path})" if "store" in options else ""
    print(f"{spec['name']}: {stats.get('runs', len(frame))} runs: {stats.get('stored', 0)} from the store{store}, "
          f"{stats.get('simulated', len(frame))} simulated, {stats.get('failed', 0)} failed; wrote {', '.join(written)}")
    failures = frame.attrs.get("failures", [])
    for failure in failures[:10]:
        print(f"  failed: {failure['workload']} seed {failure['seed']} {failure['params']}: {failure['error']}",
              file=sys.stderr)
    if len(failures) > 10:   # the first ten stand for the rest; say how many are not shown
        more = " (the store's failures() lists them)" if "store" in options else ""
        print(f"  and {len(failures) - 10} more failed runs{more}", file=sys.stderr)
    return 1 if stats.get("failed") else 0


def cmd_reproduce(args) -> int:
    from gpucachex.reproduce import reproduce, select

    try:
        select(args.only)
    except KeyError as exc:
        raise CliError(exc.args[0]) from None
    options = _sweep_options(args)
    try:
        report = reproduce(args.out, quick=args.quick, only=args.only, jobs=args.jobs, sweep_options=options)
    finally:
        if "store" in options:
            options["store"].close()
    figures = sum(o.kind == "figure" for r in report.runs for o in r.outputs)
    print(f"{len(report.runs)} experiments, {figures} figures in {report.seconds:.0f} s; index: "
          f"{', '.join(str(p) for p in report.index)}")
    if report.failed:
        print(f"failed: {', '.join(r.name for r in report.failed)} (see the index page)", file=sys.stderr)
        return 1
    return 0


def _add_sweep_commands(sub) -> None:
    running = argparse.ArgumentParser(add_help=False)
    running.add_argument("--quick", action="store_true", help="the specs' [quick] variants: minutes on a laptop")
    running.add_argument("--store", metavar="PATH", help="results store (SQLite file); default: OUT/results.sqlite")
    running.add_argument("--no-store", action="store_true", help="keep no results store (nothing to resume from)")
    running.add_argument("--executor", choices=["local", "threads", "processes", "dask"], default="local",
                         help="local/threads: a thread pool (default); processes; dask: a Dask cluster")
    running.add_argument("--jobs", type=int, metavar="N", help="workers (default: every core)")
    running.add_argument("--address", metavar="tcp://HOST:PORT",
                         help="Dask scheduler (with --executor dask; default: a local cluster)")
    running.add_argument("--no-progress", action="store_true", help="no progress bars")

    p = sub.add_parser("sweep", parents=[running], help="run a sweep spec (experiments/NAME.toml) into a CSV")
    p.add_argument("spec", help="a sweep spec: a TOML file, or the name of one in experiments/")
    p.add_argument("--out", default="results", help="folder for NAME.csv and the default store (default: results)")
    p.add_argument("--parquet", action="store_true", help="also write NAME.parquet")
    p.set_defaults(func=cmd_sweep, default_store="results.sqlite")

    p = sub.add_parser("reproduce", parents=[running],
                       help="run every paper's experiments: figures (PNG, PDF), CSVs and an index page")
    p.add_argument("--out", required=True, help="output folder (one subfolder per experiment, index.md, index.html)")
    p.add_argument("--only", action="append", metavar="NAME[,NAME]", help="run only these experiments")
    p.set_defaults(func=cmd_reproduce, default_store="results.sqlite")


# ---- parser ---------------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpucachex", description="Design-space exploration of GPU caches.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("cache", help="functional cache simulation of raw little-endian uint64 addresses")
    p.add_argument("trace", help="file of raw little-endian uint64 byte addresses")
    p.add_argument("--sets", type=int, required=True)
    p.add_argument("--ways", type=int, required=True)
    p.add_argument("--line", type=int, required=True, help="line size in bytes")
    p.add_argument("--policy", default="lru", help="replacement policy (see `gpucachex keys l1d.policy`)")
    p.add_argument("--sector", type=int, help="sector size in bytes (default: unsectored)")
    # Kept only to say why it is refused: an address file holds reads only, which no write policy changes.
    p.add_argument("--write-through", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=0, help="seeds the random policy (default 0)")
    p.add_argument("--option", action="append", metavar="KEY=VALUE", help="policy parameter, e.g. rrpv_bits=3")
    p.add_argument("--json", action="store_true", help="print the counters as JSON")
    p.set_defaults(func=cmd_cache)

    p = sub.add_parser("simulate", help="run a workload on a GPU configuration")
    p.add_argument("workload", help="a trace (kernelslist.g, folder, .traceg[.xz], .npz) or a kernel model "
                                    "name, optionally with a size: bfs, bfs:medium")
    p.add_argument("--preset", default="gtx480", help="GPU configuration (see `gpucachex presets`)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="override a configuration key, e.g. --set l1d.ways=8 --set l2.power=loscache")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds the run's random choices: random replacement, LoSCache's predictor CTAs and "
                        "dram.latency_jitter (default 0)")
    p.add_argument("--json", action="store_true", help="print every metric as JSON")
    p.add_argument("--all", action="store_true", help="print every metric, not a summary")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: on a terminal, for runs over 2 M warp instructions)")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("presets", help="list the named GPU configurations, or show one")
    p.add_argument("name", nargs="?", help="the preset to show (all are listed without it)")
    p.add_argument("--all", action="store_true", help="every key, not only those that differ from the defaults")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_presets)

    p = sub.add_parser("keys", help="list the configuration keys with their types, defaults and meaning")
    p.add_argument("pattern", nargs="?", help="only keys containing this text")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_keys)

    p = sub.add_parser("gen-addresses", help="write a synthetic mixed streaming/random address file")
    p.add_argument("out")
    p.add_argument("--count", type=int, default=10_000_000, help="how many addresses (default 10000000)")
    p.add_argument("--footprint-mb", type=int, default=64,
                   help="the addresses fall in this many MB from address 0 (default 64)")
    p.add_argument("--seed", type=int, default=0, help="seeds the address generator (default 0)")
    p.set_defaults(func=cmd_gen_addresses)

    p = sub.add_parser("trace", help="inspect and convert workload traces")
    tsub = p.add_subparsers(dest="trace_command", required=True, metavar="TRACE_COMMAND")
    loading = argparse.ArgumentParser(add_help=False)
    loading.add_argument("path", help="kernelslist.g (or its folder), .traceg, .traceg.xz or native .npz file")
    loading.add_argument("--allow-missing-ctas", action="store_true",
                         help="accept kernel files holding fewer thread blocks than their grid")
    q = tsub.add_parser("info", parents=[loading], help="totals of a trace (ctas, warps, instructions, addresses)")
    q.add_argument("--json", action="store_true", help="print the totals as JSON")
    q.add_argument("--kernels", action="store_true", help="also list every kernel")
    q.set_defaults(func=cmd_trace_info)
    q = tsub.add_parser("convert", parents=[loading], help="write a trace in the native format (fast to reload)")
    q.add_argument("out", help="native file to write (e.g. trace.npz)")
    q.set_defaults(func=cmd_trace_convert)

    p = sub.add_parser("workloads", help="list the kernel models, or describe or generate one")
    p.add_argument("name", nargs="?", help="a model: show its source, sizes and parameters")
    p.add_argument("--size", choices=["tiny", "small", "medium", "large"], help="generate it and print its totals")
    p.add_argument("--param", action="append", metavar="KEY=VALUE", help="override a model parameter, e.g. n=64")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_workloads)

    _add_sweep_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
        sys.stdout.flush()  # a reader gone away raises here, handled below, not in the interpreter's exit
        return code
    except CliError as exc:
        # The whole command, as argparse's own usage errors name it ("gpucachex trace info").
        command = " ".join(filter(None, (args.command, getattr(args, "trace_command", None))))
        print(f"gpucachex {command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Only sweeps keep runs, and only with a store: elsewhere the note would promise a result that is gone.
        stored = args.command in ("sweep", "reproduce") and not args.no_store
        kept = " (finished runs are kept in the results store)" if stored else ""
        print(f"gpucachex {args.command}: interrupted{kept}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`gpucachex workloads | head`): nothing is left to say to it. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again, as Python's signal docs advise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
