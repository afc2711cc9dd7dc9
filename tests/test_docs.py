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
