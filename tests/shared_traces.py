"""Where the tests find the real Accel-Sim/NVBit traces: $GPUCACHEX_SHARED_TRACES, else ../shared/traces
beside the repository (read in place, never copied into the project)."""
import os
from pathlib import Path

SHARED_TRACES = Path(os.environ.get("GPUCACHEX_SHARED_TRACES",
                                    Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
