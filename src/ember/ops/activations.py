"""Activation functions: relu, gelu, silu, softplus, elu, leaky_relu, hardtanh, sigmoid, tanh."""

from __future__ import annotations

__all__: list[str] = []
