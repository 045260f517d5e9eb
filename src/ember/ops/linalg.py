"""Linear algebra: matmul with batching and broadcasting, bmm, mm, mv, dot, outer, einsum, tensordot, norms."""

from __future__ import annotations

__all__: list[str] = []
