"""Side-by-side benchmarks: Ember and PyTorch on the same work, in one run, as ratios.

Both frameworks alternate in one process, so neither may keep a core busy between its own
steps: PyTorch's OpenMP threads spin-wait after each parallel region by default, taking a core
from the Ember step that follows (measured on `resnet18`: Ember 0.94–0.98 s with passive
waiting, 0.98–1.20 s without; PyTorch's own step unchanged). Hence passive waiting, set
before PyTorch loads its OpenMP runtime; an explicit ``OMP_WAIT_POLICY`` is kept.
"""

import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
