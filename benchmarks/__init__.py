"""Side-by-side benchmarks: Ember and PyTorch on the same work, in one run, as ratios."""

import os

# Ember's OpenBLAS setting (see ember/__init__.py), which only applies before NumPy loads
# OpenBLAS; the benchmarks import NumPy before Ember, so they make it first.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "16")
