"""The results store: one SQLite file holding one committed row per finished run (keyed by the run key
of gpucachex.sweep), so sweeps skip finished runs, resume after an interruption and can be shared.

Each finished run is committed in its own transaction in WAL mode, so killing a sweep (Ctrl-C,
kill -9, a crashing run) loses no run that had finished. Several sweeps, in several processes, may
write one store at once: writers wait for each other (busy timeout) and a run stored twice keeps its
first row (INSERT OR IGNORE on the run key). Failed runs go to their own table with their error and
are never taken for results; running the sweep again retries them.

>>> with ResultsStore("results/store.sqlite") as store:
...     store.export("results.parquet")
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

# Bump when the tables change meaning; a store of another format is refused with a clear error.
STORE_FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS configs (
    config_key TEXT PRIMARY KEY,
    preset     TEXT NOT NULL,
    config     TEXT NOT NULL               -- canonical JSON of every configuration value
);
CREATE TABLE IF NOT EXISTS runs (
    run_key      TEXT PRIMARY KEY,
    config_key   TEXT NOT NULL,
    workload     TEXT NOT NULL,            -- as the sweep named it (bfs:small, a path, a trace's name)
    workload_id  TEXT NOT NULL,            -- canonical identity (name:size, or a content digest)
    seed         INTEGER NOT NULL,
    version      TEXT NOT NULL,            -- gpucachex.sweep.model_version() that produced it
    params       TEXT NOT NULL,            -- JSON: the swept values of the sweep that first ran it
    metrics      TEXT NOT NULL,            -- JSON: Result.metrics
    wall_seconds REAL NOT NULL,
    finished_at  REAL NOT NULL,            -- Unix time of the commit
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    run_key     TEXT PRIMARY KEY,
    config_key  TEXT NOT NULL,
    workload    TEXT NOT NULL,
    workload_id TEXT NOT NULL,
    seed        INTEGER NOT NULL,
    version     TEXT NOT NULL,
    params      TEXT NOT NULL,
    error       TEXT NOT NULL,
    traceback   TEXT NOT NULL,
    failed_at   REAL NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL
);
"""

_RUN_INFO = ("run_key", "config_key", "workload", "workload_id", "seed", "version", "params")


# Seeds are unsigned 64-bit (the core's), SQLite's integers signed: a seed from 2**63 up is kept as its
# two's-complement value (the same 64 bits) and turned back when read. Smaller seeds are kept as they are.
def _seed_to_sql(seed: int) -> int:
    return int(seed) - 2**64 if int(seed) >= 2**63 else int(seed)


def _seed_from_sql(value: int) -> int:
    return int(value) % 2**64


def utf8_text(text: str) -> str:
    """`text` with what has no UTF-8 form escaped. Linux file names are bytes, and Python holds those that
    are not UTF-8 as lone surrogates ("caf\\udce9" for a Latin-1 "café"), which SQLite's text
    and a DataFrame's text column refuse: such a byte is shown as "\\xe9". Other text is returned as it is."""
    try:
        raw = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:   # a lone surrogate that stands for no byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def _info_values(info: Mapping[str, Any]) -> list[Any]:
    """The _RUN_INFO columns of a run, as the tables hold them."""
    return [_dumps(info[k]) if k == "params" else _seed_to_sql(info[k]) if k == "seed" else
            utf8_text(info[k]) if isinstance(info[k], str) else info[k] for k in _RUN_INFO]


def write_parquet(frame, path: str | os.PathLike) -> None:
    """Write a results frame to Parquet. A Parquet column holds one type, and a column of several
    (labels 3 and "x" from two sweeps) is written as text, as CSV writes it; missing values stay
    missing."""
    def missing(v: Any) -> bool:
        return v is None or (isinstance(v, float) and v != v)

    out = frame.copy()
    for col in out.columns[out.dtypes == object]:
        if len({type(v) for v in out[col] if not missing(v)}) > 1:
            out[col] = [None if missing(v) else str(v) for v in out[col]]
    out.to_parquet(path, index=False)


def clean_value(value: Any) -> Any:
    """A metric as a plain JSON value (numpy scalars become Python numbers), so a row read back from the
    store equals the row computed."""
    if isinstance(value, (bool, str)) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    item = getattr(value, "item", None)  # numpy scalars
    if item is not None:
        return clean_value(item())
    raise TypeError(f"metric value {value!r} of type {type(value).__name__} cannot be stored")


def _loads_metrics(text: str) -> dict[str, Any]:
    """Metrics as `put` wrote them. json writes NaN (a rate over nothing) as the token NaN and reads it
    back as its own NaN object; Result.metrics holds the one object math.nan, and dict equality takes
    a NaN as equal only to itself: read as math.nan, so that a run read back equals the run computed."""
    return json.loads(text, parse_constant=lambda token: math.nan if token == "NaN" else float(token))


def _dumps(obj: Any) -> str:
    # Canonical (sorted) for configurations and parameters; metrics keep their order (see put).
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class StoreError(Exception):
    """The store file cannot be used (another format, not a gpucachex store, unreadable, read-only), or
    reading or writing it failed."""


_READ_ONLY = "the file is read-only; sweeps commit every finished run to their store: give a store file " \
             "this process may write"


_READ_ONLY_FOLDER = "its folder is read-only; sweeps commit every finished run to their store: give a store " \
                    "file in a folder this process may write"


def _is_read_only(exc: sqlite3.Error) -> bool:
    # SQLite says "attempt to write a readonly database" for a file it opened read-only: permissions,
    # a read-only mount, or a read-only URI.
    return "readonly database" in str(exc)


def _why(exc: sqlite3.Error) -> str:
    return f"{_READ_ONLY} ({exc})" if _is_read_only(exc) else str(exc)


class ResultsStore:
    """A results store in one SQLite file (created with its folder when missing).

    `sweep(..., store=path_or_store)` reads finished runs from it and commits every new one as soon as it
    finishes. Use it directly to look at or export what it holds: `results()`, `failures()`, `export()`.
    One object may be used from several threads; several processes may open the same file.
    """

    def __init__(self, path: str | os.PathLike, *, timeout: float = 120.0):
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory; give the store's file name (e.g. {self.path / 'store.sqlite'})")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder {self.path.parent} ({exc.strerror})") from None
        self._lock = threading.RLock()
        self._db = None
        new = not self.path.is_file() or self.path.stat().st_size == 0   # no store yet: this makes one
        try:
            # Autocommit mode: transactions are opened explicitly (BEGIN IMMEDIATE) around each write.
            self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            frozen = self._reopen_in_read_only_folder(timeout)
            self._refuse_foreign()
            if not frozen:
                mode = self._enable_wal(timeout)
                if mode.lower() != "wal":
                    raise StoreError(f"{self.path}: SQLite refused WAL mode (got {mode}); keep the store on a "
                                     f"local disk")
                # FULL: a committed run survives a power cut too, not only a killed process.
                self._db.execute("PRAGMA synchronous = FULL")
            with self._transaction():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                row = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
                if row is None:
                    self._db.execute("INSERT INTO meta VALUES ('format', ?)", (str(STORE_FORMAT),))
                elif row[0] != str(STORE_FORMAT):
                    raise StoreError(f"{self.path}: results store format {row[0]}, this gpucachex reads format "
                                     f"{STORE_FORMAT}; use a new store file")
            self.read_only = not self._can_write()
            self._read_only_why = _READ_ONLY_FOLDER if frozen else _READ_ONLY
        except sqlite3.DatabaseError as exc:
            if self._db is not None:
                self._db.close()
            if _is_read_only(exc):
                raise StoreError(f"{self.path}: {_why(exc)}") from None
            if new and "unable to open" in str(exc):
                # SQLite could not create the file, or beside an empty one its journal: the folder refuses
                # new files (read-only, another user's). There is no store to call unusable.
                raise StoreError(f"{self.path}: cannot create a results store in {self.path.parent} ({exc}); give "
                                 f"a store file in a folder this process may write") from None
            raise StoreError(f"{self.path}: not a usable results store ({exc})") from None

    # ---- plumbing -------------------------------------------------------------------------------
    def _refuse_foreign(self) -> None:
        """Refuse an SQLite file that holds tables but no store format: another program's database,
        which must not get our tables or a changed journal mode. A store is made in one transaction,
        so a gpucachex store always has its format row."""
        tables = [name for (name,) in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()]
        if not tables:
            return
        fmt = None
        if "meta" in tables:
            try:
                fmt = self._db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            except sqlite3.OperationalError:
                # A "meta" table of other columns. Not DatabaseError: a damaged page of a store
                # ("malformed") goes on to the caller, which reports the store unusable, not foreign.
                fmt = None
        if fmt is None:
            shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
            self._db.close()
            raise StoreError(f"{self.path}: an SQLite database of another program (tables {shown}), not a "
                             f"gpucachex results store; give a new file name")

    def _reopen_in_read_only_folder(self, timeout: float) -> bool:
        """Reopen the store as an immutable file when it lies in a folder this process may not write (an
        archive, a read-only mount, another user's folder), and say whether it did. SQLite reads a
        WAL-mode file only through the -shm and -wal files beside it, which it cannot create there: every
        read would fail as "unable to open database file". Without a -wal file holding runs (a store
        closed cleanly has none) the file itself holds every run, and reads as it is."""
        try:
            self._db.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            return False
        except sqlite3.OperationalError as exc:
            if "unable to open" not in str(exc) or not self.path.is_file():
                raise
        wal = self.path.with_name(self.path.name + "-wal")
        if wal.is_file() and wal.stat().st_size > 0:   # reading the file alone would miss committed runs
            self._db.close()
            raise StoreError(f"{wal}: runs committed to the store are still in its write-ahead log, which SQLite "
                             f"cannot read in a read-only folder ({self.path.parent}); open the store once "
                             f"where it may be written, or copy the folder somewhere writable")
        self._db.close()
        self._db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, timeout=timeout,
                                   isolation_level=None, check_same_thread=False)
        return True

    def _can_write(self) -> bool:
        """Whether this process may write the store. SQLite opens a read-only file, reads it, and even
        runs the schema transaction above (which changes nothing in an existing store); only the
        first real write fails, and in a sweep that comes after a run was simulated, losing it. So
        write a row now and roll it back. A read-only store can still be read and exported."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute("INSERT OR REPLACE INTO meta VALUES ('write_check', '')")
            except sqlite3.OperationalError as exc:
                if not _is_read_only(exc):
                    raise
                return False
            finally:
                self._db.execute("ROLLBACK")
        return True

    def require_writable(self, doing: str) -> None:
        """Raise StoreError naming the file and `doing` if this process may not write the store."""
        if self.read_only:
            raise StoreError(f"{self.path}: {doing} failed: {self._read_only_why}")

    def _enable_wal(self, timeout: float) -> str:
        """Switch the file to WAL mode, the journal mode it answers. The switch needs the file to
        itself, and while another connection is writing it (another process creating the same
        store) SQLite answers "locked" at once instead of waiting: wait here, up to `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self._db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)

    class _Tx:
        def __init__(self, store):
            self.store = store

        def __enter__(self):
            self.store._lock.acquire()
            try:
                self.store._db.execute("BEGIN IMMEDIATE")
            except BaseException:
                # A Ctrl-C that came while BEGIN waited for another writer is raised once BEGIN has
                # returned, with the transaction open: left so, it would keep every other writer out and
                # make this connection's next BEGIN fail, for as long as the store stays open (a notebook's).
                try:
                    if self.store._db.in_transaction:
                        self.store._db.execute("ROLLBACK")
                except sqlite3.Error:   # a closed connection, which the error being raised names
                    pass
                finally:
                    self.store._lock.release()
                raise

        def __exit__(self, exc_type, exc, tb):
            try:
                self.store._db.execute("COMMIT" if exc_type is None else "ROLLBACK")
            finally:
                self.store._lock.release()

    def _transaction(self):
        return ResultsStore._Tx(self)

    @contextlib.contextmanager
    def _errors(self, doing: str):
        """SQLite's errors name neither the file nor what was being done with it: say both."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: {doing} failed: {_why(exc)}") from exc

    def _query(self, sql: str, args: Iterable[Any] = ()) -> list[tuple]:
        with self._errors("reading the store"), self._lock:
            return self._db.execute(sql, tuple(args)).fetchall()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "ResultsStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.path)!r})"

    # ---- reading --------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._query("SELECT COUNT(*) FROM runs")[0][0]

    def __contains__(self, run_key: str) -> bool:
        return bool(self._query("SELECT 1 FROM runs WHERE run_key = ?", (run_key,)))

    def get_many(self, run_keys: Iterable[str]) -> dict[str, tuple[dict[str, Any], float]]:
        """{run key: (metrics, wall_seconds)} of the given runs that the store holds."""
        keys = list(dict.fromkeys(run_keys))
        out = {}
        for i in range(0, len(keys), 500):  # SQLite limits the number of bound parameters
            chunk = keys[i:i + 500]
            rows = self._query(f"SELECT run_key, metrics, wall_seconds FROM runs WHERE run_key IN "
                               f"({','.join('?' * len(chunk))})", chunk)
            for key, metrics, wall in rows:
                out[key] = (_loads_metrics(metrics), wall)
        return out

    def get(self, run_key: str) -> tuple[dict[str, Any], float] | None:
        return self.get_many([run_key]).get(run_key)

    def finished_at(self) -> dict[str, float]:
        """{run key: Unix time of its commit} for every stored run."""
        return dict(self._query("SELECT run_key, finished_at FROM runs"))

    def results(self):
        """Every stored run as a DataFrame: the swept values it was first run with, workload, seed,
        preset, every metric, wall_seconds, and run_key, config_key, workload_id, version, finished_at."""
        import pandas as pd

        rows = []
        for (run_key, config_key, workload, workload_id, seed, version, params, metrics, wall, finished,
             preset) in self._query(
                "SELECT r.run_key, r.config_key, r.workload, r.workload_id, r.seed, r.version, r.params, r.metrics, "
                "r.wall_seconds, r.finished_at, c.preset FROM runs r JOIN configs c USING (config_key) "
                "ORDER BY r.finished_at, r.run_key"):
            row = json.loads(params)
            row.update(workload=workload, seed=_seed_from_sql(seed), config_key=config_key, run_key=run_key,
                       preset=preset)
            row.update(_loads_metrics(metrics))
            row.update(wall_seconds=wall, workload_id=workload_id, version=version, finished_at=finished)
            rows.append(row)
        return pd.DataFrame(rows)

    def failures(self):
        """Runs whose last attempt failed (and that have no result since), with their error."""
        import pandas as pd

        cols = ["run_key", "config_key", "workload", "workload_id", "seed", "version", "params", "error",
                "traceback", "failed_at", "host", "pid"]
        query = f"SELECT {', '.join(cols)} FROM failures ORDER BY failed_at"
        rows = [dict(zip(cols, row)) for row in self._query(query)]
        for row in rows:
            row["seed"] = _seed_from_sql(row["seed"])
        return pd.DataFrame(rows, columns=cols)

    def config(self, config_key: str):
        """The Config a stored run used."""
        from gpucachex.config import Config

        rows = self._query("SELECT preset, config FROM configs WHERE config_key = ?", (config_key,))
        if not rows:
            raise KeyError(f"no configuration {config_key!r} in {self.path}")
        preset, values = rows[0]
        return Config(json.loads(values), name=preset)

    def export(self, path: str | os.PathLike, format: str | None = None) -> Path:
        """Write `results()` to Parquet or CSV (chosen by `format` or the file's suffix)."""
        path = Path(path)
        fmt = (format or path.suffix.lstrip(".")).lower()
        if fmt not in ("parquet", "csv"):
            raise ValueError(f"cannot export to {path}: format {fmt!r} is neither 'parquet' nor 'csv'")
        frame = self.results()
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            write_parquet(frame, path)
        else:
            frame.to_csv(path, index=False)
        return path

    # ---- writing --------------------------------------------------------------------------------
    def put(self, info: Mapping[str, Any], config, metrics: Mapping[str, Any], wall_seconds: float) -> bool:
        """Commit one finished run (`info`: run_key, config_key, workload, workload_id, seed, version,
        params). Returns False when the store already held it (another sweep finished it first)."""
        values = _info_values(info)
        clean = {k: clean_value(v) for k, v in metrics.items()}
        self.require_writable(f"storing run {info['run_key']}")
        with self._errors(f"storing run {info['run_key']}"), self._transaction():
            self._db.execute("INSERT OR IGNORE INTO configs VALUES (?, ?, ?)",
                             (info["config_key"], utf8_text(config.name), _dumps(config.to_dict())))
            cur = self._db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                   (*values, json.dumps(clean, separators=(",", ":")), float(wall_seconds),
                                    time.time(), socket.gethostname(), os.getpid()))
            self._db.execute("DELETE FROM failures WHERE run_key = ?", (info["run_key"],))
            return cur.rowcount == 1

    def put_failure(self, info: Mapping[str, Any], error: str, traceback: str = "") -> None:
        """Record that a run failed (replacing an earlier failure of the same run)."""
        values = _info_values(info)
        self.require_writable(f"recording the failure of run {info['run_key']}")
        with self._errors(f"recording the failure of run {info['run_key']}"), self._transaction():
            if self._db.execute("SELECT 1 FROM runs WHERE run_key = ?", (info["run_key"],)).fetchone():
                return  # another sweep stored a result for it: a result wins over a failure
            self._db.execute("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (*values, utf8_text(error), utf8_text(traceback), time.time(), socket.gethostname(),
                              os.getpid()))

    def check(self) -> None:
        """Raise StoreError unless SQLite's integrity check passes."""
        result = self._query("PRAGMA integrity_check")
        if result != [("ok",)]:
            raise StoreError(f"{self.path}: integrity check failed: {result}")


def open_store(store: ResultsStore | str | os.PathLike | None) -> tuple[ResultsStore | None, bool]:
    """(store, opened here): a ResultsStore from a store or a path; None stays None."""
    if store is None or isinstance(store, ResultsStore):
        return store, False
    if isinstance(store, (str, os.PathLike)):
        return ResultsStore(store), True
    raise TypeError(f"store must be a ResultsStore, a path or None, got {type(store).__name__}")
