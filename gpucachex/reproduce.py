"""`gpucachex reproduce`: run the papers' experiments (gpucachex.experiments.EXPERIMENTS), each into its
own folder, and write an index page (Markdown and HTML) showing every figure with its caption and
linking every CSV.

>>> report = reproduce("reproduce-out", quick=True, only=["loscache"])
"""
from __future__ import annotations

import html
import os
import re
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence


@dataclass
class ExperimentRun:
    """What one experiment produced (or how it failed)."""
    name: str
    title: str
    folder: Path
    outputs: list = field(default_factory=list)   # gpucachex.experiments.Output
    page: Path | None = None                       # the paper's page (experiments/<name>.md), copied
    seconds: float = 0.0
    error: str | None = None
    traceback: str | None = None


@dataclass
class Report:
    out_dir: Path
    quick: bool
    runs: list[ExperimentRun]
    seconds: float
    index: list[Path]

    @property
    def failed(self) -> list[ExperimentRun]:
        return [r for r in self.runs if r.error is not None]


def select(only: Sequence[str] | None) -> list[str]:
    """The experiments to run, in registry order: all of them, or the names in `only` (names, each of
    which may be "a,b"; one string is one such item); an unknown name raises KeyError listing the known ones."""
    from gpucachex.experiments import EXPERIMENTS

    if not EXPERIMENTS:
        raise KeyError("no experiments are registered (gpucachex.experiments.EXPERIMENTS is empty)")
    if not only:
        return list(EXPERIMENTS)
    if isinstance(only, str):   # only="loscache": one item, not the letters l, o, s, ... as unknown names
        only = [only]
    wanted = [n.strip() for item in only for n in item.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in EXPERIMENTS]
    if unknown:
        raise KeyError(f"unknown experiment{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
                       f"(known: {', '.join(EXPERIMENTS)})")
    if not wanted:
        raise KeyError(f"--only names no experiment (known: {', '.join(EXPERIMENTS)})")
    return [n for n in EXPERIMENTS if n in wanted]


def reproduce(out_dir: str | os.PathLike, *, quick: bool = False, only: Sequence[str] | None = None,
              jobs: int | None = None, sweep_options: dict[str, Any] | None = None, log=None) -> Report:
    """Run the selected experiments into <out_dir>/<name>/ and write <out_dir>/index.md and index.html.
    An experiment that fails is reported (on the index page too) and the others still run.
    `sweep_options` go to every sweep (store, executor, address, progress)."""
    from gpucachex.experiments import Context, get

    log = log or sys.stderr
    names = select(only)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs = []
    for i, name in enumerate(names, 1):
        module = get(name)
        run = ExperimentRun(name, getattr(module, "TITLE", name), out / name)
        print(f"[{i}/{len(names)}] {name}: {run.title}", file=log, flush=True)
        ctx = Context(out_dir=run.folder, quick=quick, jobs=jobs, sweep_options=dict(sweep_options or {}))
        start = time.perf_counter()
        try:
            module.run(ctx)
            written = {Path(path).resolve() for o in ctx.outputs for path in o.paths}
            run.page = _copy_page(name, run.folder, written)   # its folder may be unusable too: this experiment's failure
        except Exception as exc:  # one broken experiment must not cost the others' figures
            run.error = f"{type(exc).__name__}: {exc}"
            run.traceback = traceback.format_exc()
            print(f"[{i}/{len(names)}] {name}: FAILED: {run.error}", file=log, flush=True)
        run.seconds = time.perf_counter() - start
        run.outputs = list(ctx.outputs)
        if run.error is None:
            figures = sum(o.kind == "figure" for o in run.outputs)
            tables = len(run.outputs) - figures
            print(f"[{i}/{len(names)}] {name}: {figures} figure{'s' * (figures != 1)}, {tables} "
                  f"table{'s' * (tables != 1)} in {run.seconds:.0f} s", file=log, flush=True)
        runs.append(run)
    report = Report(out, quick, runs, time.perf_counter() - t0, [])
    report.index = [write_markdown(report), write_html(report)]
    return report


def _copy_page(name: str, folder: Path, written: set[Path] = frozenset()) -> Path | None:
    """Copy experiments/<name>.md (how the numbers compare with the paper's) next to the figures, so the
    output folder stands on its own, with the files it links (see _copy_page_files); `written`: the
    experiment's own outputs, never replaced."""
    from gpucachex.experiments import experiments_dir

    try:
        source = experiments_dir() / f"{name}.md"
    except FileNotFoundError:
        return None
    if not source.is_file():
        return None
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    text = source.read_bytes()
    target.write_bytes(text)
    _copy_page_files(text.decode("utf-8", errors="replace"), source.parent, folder, written)
    return target


# A Markdown link or image: [text](target) or ![alt](target "title").
_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _copy_page_files(text: str, source_dir: Path, folder: Path, written: set[Path]) -> None:
    """Copy the files a page links by relative path (experiments/ata.md shows the full run's figures from
    experiments/ata/) to the same relative path beside the copy, where its links look for them. A target
    outside the specs' folder, or one that would land outside the experiment's folder or on a file the
    experiment just wrote, is left alone."""
    root, dest_root = source_dir.resolve(), folder.resolve()
    for link in dict.fromkeys(_LINK.findall(text)):
        path = link.split("#", 1)[0]
        if not path or re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:", path) or path.startswith("/"):
            continue  # an anchor, a URL or an absolute path: nothing to copy
        src = (source_dir / path).resolve()
        dest = (folder / path).resolve()
        if not src.is_file() or root not in src.parents or dest_root not in dest.parents or dest in written:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)


# ---- index pages ----------------------------------------------------------------------------------

def _rel(path: str | Path, root: Path) -> str:
    return Path(os.path.relpath(Path(path).resolve(), root.resolve())).as_posix()


def _header(report: Report) -> tuple[str, str]:
    import gpucachex
    from gpucachex.sweep import model_version

    title = "gpucachex: reproduced figures" + (" (quick)" if report.quick else "")
    stamp = (f"gpucachex {gpucachex.__version__} (model {model_version()}), "
             f"{time.strftime('%Y-%m-%d %H:%M', time.localtime())}, {report.seconds:.0f} s, "
             f"{'quick variants (--quick): fewer and smaller workloads than the papers' if report.quick else 'full experiments'}")
    return title, stamp


def write_markdown(report: Report) -> Path:
    root = report.out_dir
    title, stamp = _header(report)
    lines = [f"# {title}", "", stamp, ""]
    for run in report.runs:
        status = "failed" if run.error else f"{run.seconds:.0f} s"
        lines.append(f"- [{run.title}](#{run.name}) (`{run.name}`, {status})")
    for run in report.runs:
        lines += ["", f'<a id="{run.name}"></a>', "", f"## {run.title}", "",
                  f"Experiment `{run.name}`, folder [`{_rel(run.folder, root)}/`]({_rel(run.folder, root)}/), "
                  f"{run.seconds:.0f} s."]
        if run.page is not None:
            lines += ["", f"How these numbers compare with the paper's: [{run.page.name}]({_rel(run.page, root)})."]
        if run.error:
            lines += ["", f"**Failed:** {run.error}", "", "```", (run.traceback or "").rstrip(), "```"]
        for o in run.outputs:
            if o.kind != "figure":
                continue
            png = next((p for p in o.paths if p.endswith(".png")), o.paths[0])
            others = " · ".join(f"[{Path(p).suffix.lstrip('.').upper()}]({_rel(p, root)})" for p in o.paths)
            lines += ["", f"![{o.caption}]({_rel(png, root)})", "", f"*{o.caption}* ({others})"]
        tables = [o for o in run.outputs if o.kind == "table"]
        if tables:
            lines += ["", "Data:", ""]
            lines += [f"- [{Path(p).name}]({_rel(p, root)}): {o.caption}" for o in tables for p in o.paths]
    path = root / "index.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_html(report: Report) -> Path:
    root = report.out_dir
    title, stamp = _header(report)
    e = html.escape
    body = [f"<h1>{e(title)}</h1>", f"<p>{e(stamp)}</p>", "<ul>"]
    for run in report.runs:
        status = "failed" if run.error else f"{run.seconds:.0f} s"
        body.append(f'<li><a href="#{e(run.name)}">{e(run.title)}</a> (<code>{e(run.name)}</code>, {status})</li>')
    body.append("</ul>")
    for run in report.runs:
        folder = _rel(run.folder, root)
        body += [f'<h2 id="{e(run.name)}">{e(run.title)}</h2>',
                 f'<p>Experiment <code>{e(run.name)}</code>, folder <a href="{e(folder)}/">{e(folder)}/</a>, '
                 f"{run.seconds:.0f} s.</p>"]
        if run.page is not None:
            body.append(f'<p>How these numbers compare with the paper\'s: <a href="{e(_rel(run.page, root))}">'
                        f"{e(run.page.name)}</a>.</p>")
        if run.error:
            body += [f'<p class="error"><b>Failed:</b> {e(run.error)}</p>', f"<pre>{e(run.traceback or '')}</pre>"]
        for o in run.outputs:
            if o.kind != "figure":
                continue
            png = next((p for p in o.paths if p.endswith(".png")), o.paths[0])
            links = " · ".join(f'<a href="{e(_rel(p, root))}">{e(Path(p).suffix.lstrip(".").upper())}</a>'
                               for p in o.paths)
            body.append(f'<figure><img src="{e(_rel(png, root))}" alt="{e(o.caption)}">'
                        f"<figcaption>{e(o.caption)} ({links})</figcaption></figure>")
        tables = [o for o in run.outputs if o.kind == "table"]
        if tables:
            body.append("<p>Data:</p><ul>")
            body += [f'<li><a href="{e(_rel(p, root))}">{e(Path(p).name)}</a>: {e(o.caption)}</li>'
                     for o in tables for p in o.paths]
            body.append("</ul>")
    page = ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + e(title) + "</title><style>"
            "body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}"
            "img{max-width:100%}figure{margin:1.5em 0}figcaption{font-style:italic}"
            ".error{color:#a00}pre{background:#f4f4f4;padding:.5em;overflow-x:auto}"
            "</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")
    path = root / "index.html"
    path.write_text(page)
    return path
