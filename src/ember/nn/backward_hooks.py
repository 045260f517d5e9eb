"""Module backward hooks: ``hook(module, grad_output)`` before the module's backward (pre-hooks)
and ``hook(module, grad_input, grad_output)`` after it (full hooks), as PyTorch's.

The module's tensor inputs and outputs pass through identity autograd functions: the one on
the outputs receives ``grad_output`` and runs the pre-hooks (a returned tuple replaces it);
the one on the inputs, which runs once the gradients with respect to the inputs are known,
calls the full hooks (a returned tuple replaces ``grad_input``). As in PyTorch, both tuples
have one entry per positional argument or output: None for a non-tensor and for an output
that got no gradient, zeros for a tensor input that needs none (keyword arguments are left
out).
"""

from __future__ import annotations

from typing import Any

from ember.autograd.function import Function
from ember.autograd.grad_mode import GRAD
from ember.errors import GradError
from ember.tensor import Tensor


class BackwardHookState:
    """The gradients of one module call, shared by its input and output identities."""

    def __init__(self, module: Any, hooks: list, pre_hooks: list) -> None:
        self.module, self.hooks, self.pre_hooks = module, list(hooks), list(pre_hooks)
        self.grad_output: tuple | None = None
        self.n_inputs = self.n_outputs = 0
        self.input_positions: tuple | None = None   # positions of the tensors, if wrapped
        self.output_positions: tuple = ()

    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        args, self.input_positions = _wrap(_InputIdentity, self, args)
        return args

    def wrap_outputs(self, output: Any) -> Any:
        single = not isinstance(output, tuple)
        outs = (output,) if single else output
        self.n_outputs = len(outs)
        outs, positions = _wrap(OutputIdentity, self, outs)
        self.output_positions = positions or ()
        return outs[0] if single else outs

    def got_grad_output(self, grads: tuple) -> tuple:
        """Runs the pre-hooks (and, if no input needs a gradient, the full hooks: PyTorch
        calls them now); returns the gradients to pass on into the module."""
        grad_output = _spread(self.output_positions, grads, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, grad_output)
            if result is not None:
                grad_output = self._checked(result, grad_output, "backward pre-hook",
                                            "grad_output")
        self.grad_output = grad_output
        if self.input_positions is None:
            grad_input = (None,) * self.n_inputs
            for hook in self.hooks:
                result = hook(self.module, grad_input, grad_output)
                if result is not None and not (isinstance(result, tuple)
                                               and all(r is None for r in result)):
                    raise GradError(f"full backward hook of {type(self.module).__name__}: no "
                                    "input of this call requires grad, so the hook may return "
                                    "only None (or all None)")
            self.grad_output = None
        return tuple(grad_output[i] for i in self.output_positions)

    def got_grad_input(self, grads: tuple) -> tuple:
        """Runs the full hooks; returns the gradients to pass on to the inputs."""
        if self.grad_output is None:  # reached without passing the outputs (double backward)
            return grads
        grad_input = _spread(self.input_positions, grads, self.n_inputs)
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                grad_input = self._checked(result, grad_input, "full backward hook",
                                           "grad_input")
        self.grad_output = None
        return tuple(grad_input[i] for i in self.input_positions)

    def _checked(self, result: Any, like: tuple, what: str, name: str) -> tuple:
        result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        if len(result) != len(like):
            raise GradError(f"{what} of {type(self.module).__name__} returned {len(result)} "
                            f"gradients for a {name} of {len(like)}; return None or a tuple "
                            f"with one entry (None allowed) per {name} entry")
        return result


def _wrap(identity: type[Function], state: BackwardHookState, values: tuple
          ) -> tuple[tuple, tuple | None]:
    """Passes the tensors among ``values`` through ``identity`` (if grad mode is on and one of
    them requires grad); returns the new values and the tensors' positions (None if not)."""
    positions = tuple(i for i, v in enumerate(values) if isinstance(v, Tensor))
    if not (GRAD.enabled and any(values[i].requires_grad for i in positions)):
        return values, None
    out = identity.apply(state, *(values[i] for i in positions))
    out = out if isinstance(out, tuple) else (out,)
    values = list(values)
    for i, t in zip(positions, out, strict=True):
        values[i] = t
    return tuple(values), positions


def _spread(positions: tuple, grads: tuple, n: int) -> tuple:
    full: list = [None] * n
    for i, g in zip(positions, grads, strict=True):
        full[i] = g
    return tuple(full)


def _identity_forward(ctx: Any, state: BackwardHookState, values: tuple) -> Any:
    ctx.state = state
    ctx.mark_non_differentiable(*(v for v in values if not v.requires_grad))
    return values if len(values) > 1 else values[0]


class OutputIdentity(Function):
    @staticmethod
    def forward(ctx: Any, state: BackwardHookState, *outs: Tensor) -> Any:
        ctx.set_materialize_grads(False)  # an output without gradient shows as None
        return _identity_forward(ctx, state, outs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        return (None, *ctx.state.got_grad_output(grads))


class _InputIdentity(Function):
    @staticmethod
    def forward(ctx: Any, state: BackwardHookState, *ins: Tensor) -> Any:
        return _identity_forward(ctx, state, ins)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        return (None, *ctx.state.got_grad_input(grads))
