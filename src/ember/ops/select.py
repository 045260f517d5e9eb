"""Elementwise selection: where, clamp, maximum, minimum."""

from __future__ import annotations

__all__: list[str] = []
