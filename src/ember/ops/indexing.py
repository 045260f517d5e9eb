"""Indexing: __getitem__/__setitem__, gather, scatter, index_select, masked ops, one_hot, pad."""

from __future__ import annotations

__all__: list[str] = []
