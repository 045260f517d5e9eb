"""Elementwise math: exp, log, powers, trigonometry, rounding, erf…"""

from __future__ import annotations

__all__: list[str] = []
