"""Batching rules of order statistics and NaN-aware reductions (ember/ops/statistics.py,
ember/ops/logcumsumexp.py).

Only the running-extremum indices (``cummax``/``cummin``) and ``logcumsumexp`` are
primitives; they work along one dim, so their rule is reduce.py's: shift the dim by one.
"""

from __future__ import annotations

from ember.func.batching import rule
from ember.func.batching.reduce import _dim_rule

for _name in ("cummax", "cummin", "logcumsumexp"):
    rule(_name)(_dim_rule(_name))
