"""Sorting: sort, argsort, topk."""

from __future__ import annotations

__all__: list[str] = []
