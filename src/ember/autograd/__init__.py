"""Reverse-mode automatic differentiation: the tape, the engine and the tools around it."""

from ember.autograd.anomaly import detect_anomaly
from ember.autograd.engine import backward, grad
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.graph import Node

__all__ = ["Node", "backward", "detect_anomaly", "enable_grad", "grad", "inference_mode",
           "is_grad_enabled", "no_grad", "set_grad_enabled"]
