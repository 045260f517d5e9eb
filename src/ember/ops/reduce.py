"""Reductions over dimensions: sum, mean, prod, max/min, var/std, logsumexp, norm, cumsum…"""

from __future__ import annotations

__all__: list[str] = []
