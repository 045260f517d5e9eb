"""Comparisons, logical ops and floating-point tests (no gradient), and nan_to_num."""

from __future__ import annotations

__all__: list[str] = []
