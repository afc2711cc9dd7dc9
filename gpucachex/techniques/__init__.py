"""The Python side of the techniques whose C hooks live in csrc/techniques/: energy of their own
structures (registered in gpucachex.energy.OVERHEADS) and metrics derived from their counters.
One module per technique; each is imported here so it registers itself."""

from gpucachex.techniques import decay, drowsy  # noqa: E402,F401
from gpucachex.techniques import sharing  # noqa: F401,E402  (l1d.sharing: remote, decoupled, ata)
from gpucachex.techniques import admL1D  # noqa: F401,E402
from gpucachex.techniques import loscache  # noqa: F401,E402
