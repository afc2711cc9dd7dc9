"""The user docs (README.md, docs/, the experiment pages) against the code: what they tell a user to
type must be accepted as written."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def _calls(text: str, name: str) -> list[str]:
    """Every `name(...)` call in `text` (arguments with one level of nested parentheses)."""
    return re.findall(re.escape(name) + r"\((?:[^()]|\([^()]*\))*\)", text)


def test_readme_energy_params_build():
    from gpucachex import energy

    calls = _calls(README.read_text(), "energy.EnergyParams")
    assert calls, "README names no energy.EnergyParams(...)"
    for call in calls:
        try:
            eval(call, {"energy": energy})
        except (TypeError, ValueError, KeyError) as exc:
            pytest.fail(f"README's {call} raises {type(exc).__name__}: {exc}")


def _doc_texts() -> dict[str, str]:
    """The user docs by name: README, docs/, the experiment pages, and the notebooks' markdown cells."""
    import json

    texts = {"README.md": README.read_text()}
    for path in [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "experiments").glob("*.md"))]:
        texts[str(path.relative_to(ROOT))] = path.read_text()
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        texts[str(path.relative_to(ROOT))] = "\n\n".join("".join(c["source"]) for c in cells
                                                         if c["cell_type"] == "markdown")
    return texts


def _documented_commands() -> list[tuple[str, str]]:
    """(doc, command line) of every `gpucachex ...` command the docs show: lines of code blocks
    (with their continuation lines of [options]) and inline spans that give arguments (a bare
    `gpucachex reproduce` names the command)."""
    found = []
    for name, text in _doc_texts().items():
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if not line.startswith("    "):
                continue
            for command in line.split(" #")[0].split("&&"):
                command = command.strip()
                if not command.startswith("gpucachex "):
                    continue
                for more in lines[i + 1:]:
                    if not more.strip().startswith("["):
                        break
                    command += " " + more.strip()
                found.append((name, command))
        for span in re.findall(r"`(gpucachex [^`]+)`", text):
            span = " ".join(span.split())
            if len(span.split()) > 2:
                found.append((name, span))
    return found


def _variants(command: str) -> list[str]:
    """The command without its [optional] groups, then with each alternative of each group that gives
    options ([--json], [--store PATH | --no-store], [--executor local|processes|dask])."""
    groups = re.findall(r"\[([^\]]*)\]", command)
    base = re.sub(r"\s*\[[^\]]*\]", "", command)
    out = [base]
    for group in groups:
        for alternative in group.split(" | "):
            words = alternative.split()
            if not words or not words[0].startswith("-"):
                continue   # [PATTERN], [NAME], [same options]: a placeholder, not an option
            choices = words[1].split("|") if len(words) == 2 else [None]
            for choice in choices:
                out.append(" ".join([base, words[0]] + ([choice] if choice else words[1:])))
    return out


def test_documented_commands_parse():
    import contextlib
    import io
    import shlex

    from gpucachex.cli import build_parser

    commands = _documented_commands()
    assert any(c.startswith("gpucachex reproduce") for _, c in commands), "found no documented command"
    bad = []
    for doc, command in commands:
        for variant in _variants(command):
            err = io.StringIO()
            try:
                with contextlib.redirect_stderr(err):
                    # placeholders stand for what the user types: N for a number (PATH, DIR parse as given)
                    build_parser().parse_args(["2" if w == "N" else w for w in shlex.split(variant)[1:]])
            except SystemExit:
                bad.append(f"{doc}: {variant!r}: {err.getvalue().strip().splitlines()[-1]}")
    assert not bad, "documented commands the CLI refuses:\n" + "\n".join(bad)


def test_python_floor_is_the_one_the_code_needs():
    import tomllib

    need = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    floor = tuple(int(x) for x in re.fullmatch(r">=\s*(\d+)\.(\d+)", need).groups())
    # tomllib, which reads every sweep spec (and so `gpucachex reproduce`), is in the standard library from 3.11
    if any("import tomllib" in p.read_text() for p in (ROOT / "gpucachex").rglob("*.py")):
        assert floor >= (3, 11), f"requires-python {need!r}, but gpucachex imports tomllib (Python 3.11+)"
    stated = re.search(r"need Python (\d+)\.(\d+)\+", README.read_text())
    assert stated and tuple(map(int, stated.groups())) == floor, "README's Python version is not pyproject's"


_SECTIONS = ("core", "l1i", "l1d", "l2", "icnt", "cluster", "dram", "sim", "drowsy", "decay", "admL1D", "loscache")


def test_documented_config_keys_exist():
    """Every configuration key the docs name in backticks (`l1d.ways`, `admL1D.warmup_cycles`, with a
    value as in `l2.power = "loscache"`) is one the core declares, and the value is one it takes."""
    from gpucachex.config import resolve_key, schema

    keys = schema()
    bad, seen = [], 0
    for doc, text in _doc_texts().items():
        for span in re.findall(r"`([^`\n]+)`", text):
            m = re.fullmatch(r"([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+)(?:\s*=\s*(.+))?", span.strip())
            if (not m or m.group(1).split(".")[0] not in _SECTIONS
                    or m.group(1).rsplit(".", 1)[1] in ("c", "h", "py", "md", "toml")):
                continue   # not a key: a file (`l1d.c`), a call (`gpucachex.sweep`)
            seen += 1
            try:
                spec = keys[resolve_key(m.group(1))]
            except KeyError as exc:
                bad.append(f"{doc}: `{span}`: {exc.args[0]}")
                continue
            value = (m.group(2) or "").strip().strip('"')
            if not value or value.isupper():   # no value, or a placeholder (`dram.latency_jitter = N`)
                continue
            try:
                spec.coerce({"true": True, "false": False}[value] if spec.type == "bool"
                            else int(value) if spec.type == "int" else float(value) if spec.type == "float"
                            else value)
            except (KeyError, TypeError, ValueError) as exc:
                bad.append(f"{doc}: `{span}`: {exc}")
    assert seen > 50, f"found only {seen} configuration keys in the docs"
    assert not bad, "the docs name keys or values the core does not take:\n" + "\n".join(bad)


def test_readme_defaults_are_the_cores():
    """The defaults the README gives a key ("`drowsy.window` (0)", "`l1d.admL1D.b_threshold` (default 3)",
    "`l2.loscache.max_threshold` = 3") are the ones `gpucachex keys` lists."""
    from gpucachex.config import resolve_key, schema

    text = " ".join(README.read_text().split())
    stated = re.findall(r"`([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+)`(?: [A-Za-z0-9]+){0,2} "
                        r"(?:\((?:default )?([0-9][0-9,.]*|true|false)\)|= ([0-9][0-9.]*|true|false)\b)", text)
    assert len(stated) >= 10, f"found only {len(stated)} stated defaults"
    wrong = []
    for key, in_parens, after_equals in stated:
        value = (in_parens or after_equals).replace(",", "")
        default = schema()[resolve_key(key)].default
        given = {"true": True, "false": False}.get(value) if isinstance(default, bool) else float(value)
        if given != default:
            wrong.append(f"{key}: README says {value}, the core's default is {default}")
    assert not wrong, "\n".join(wrong)
