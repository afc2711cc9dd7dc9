"""Every notebook in notebooks/ executes cleanly, at the `tiny` size (the notebooks read
GPUCACHEX_NOTEBOOK_SIZE), in a scratch folder so whatever they write stays out of the repository."""
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert any(p.name == "quickstart.ipynb" for p in NOTEBOOKS)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path, tmp_path, monkeypatch):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    monkeypatch.setenv("GPUCACHEX_NOTEBOOK_SIZE", "tiny")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(path.parents[1]), os.environ.get("PYTHONPATH", "")]))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()   # raises CellExecutionError naming the cell on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    plots = any("plot." in c.source for c in nb.cells if c.cell_type == "code")
    images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert images > 0 or not plots, "the notebook plots but showed no figure"
    # A cell whose last line is a Figure shows it twice (the inline backend, then the value's repr).
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            pngs = [o["data"]["image/png"] for o in cell.outputs if "image/png" in o.get("data", {})]
            assert len(pngs) == len(set(pngs)), f"cell {i} shows the same figure twice: end it with ';'"
