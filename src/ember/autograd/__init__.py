"""Reverse-mode automatic differentiation: the tape, the engine and the tools around it."""

from ember.autograd import forward_ad, functional, graph, tensor_hooks  # noqa: F401 (methods)
from ember.autograd.anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from ember.autograd.engine import backward, grad
from ember.autograd.function import Function, FunctionCtx, once_differentiable
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_multithreading_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ember.autograd.graph import Node
from ember.autograd.variable import Variable

__all__ = ["Function", "FunctionCtx", "GradcheckError", "Node", "backward", "detect_anomaly",
           "enable_grad", "forward_ad", "functional", "grad", "gradcheck", "gradgradcheck",
           "inference_mode",
           "is_anomaly_enabled", "is_grad_enabled", "is_multithreading_enabled", "no_grad",
           "once_differentiable", "set_detect_anomaly", "set_grad_enabled",
           "set_multithreading_enabled", "graph", "Variable"]
