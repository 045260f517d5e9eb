"""Full backward hooks of modules: ``hook(module, grad_input, grad_output)``.

The module's tensor inputs and outputs pass through identity autograd functions: the one on
the outputs records ``grad_output``; the one on the inputs, which runs once the gradients with
respect to the inputs are known, calls the hooks (a returned tuple replaces ``grad_input``).
"""

from __future__ import annotations

from typing import Any

from ember.autograd.function import Function
from ember.tensor import Tensor


class BackwardHookState:
    """The gradients of one module call, shared by its input and output identities."""

    def __init__(self, module: Any, hooks: list) -> None:
        self.module, self.hooks = module, list(hooks)
        self.grad_output: tuple = ()
        self.n_inputs = 0
        self.input_positions: tuple = ()

    def wrap_inputs(self, args: tuple) -> tuple:
        positions = tuple(i for i, a in enumerate(args) if isinstance(a, Tensor))
        self.n_inputs = len(positions)
        grad_pos = tuple(i for i in positions if args[i].requires_grad)
        self.input_positions = tuple(positions.index(i) for i in grad_pos)
        if not grad_pos:
            return args
        out = _InputIdentity.apply(self, *(args[i] for i in grad_pos))
        out = out if isinstance(out, tuple) else (out,)
        args = list(args)
        for i, t in zip(grad_pos, out, strict=True):
            args[i] = t
        return tuple(args)

    def wrap_outputs(self, output: Any) -> Any:
        single = isinstance(output, Tensor)
        outs = (output,) if single else output
        if not isinstance(outs, tuple):
            return output
        grad_pos = tuple(i for i, o in enumerate(outs)
                         if isinstance(o, Tensor) and o.requires_grad)
        if not grad_pos:
            return output
        self.n_outputs = len(outs)
        self.output_positions = grad_pos
        wrapped = _OutputIdentity.apply(self, *(outs[i] for i in grad_pos))
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        outs = list(outs)
        for i, t in zip(grad_pos, wrapped, strict=True):
            outs[i] = t
        return outs[0] if single else tuple(outs)

    def got_grad_output(self, grads: tuple) -> None:
        full = [None] * self.n_outputs
        for i, g in zip(self.output_positions, grads, strict=True):
            full[i] = g
        self.grad_output = tuple(full)
        if not self.input_positions:  # no input needs a gradient: PyTorch calls hooks now
            self.call_hooks((None,) * self.n_inputs)

    def call_hooks(self, grad_input: tuple) -> tuple:
        for hook in self.hooks:
            result = hook.fn(self.module, grad_input, self.grad_output)
            if result is not None:
                result = tuple(result) if isinstance(result, (tuple, list)) else (result,)
                if len(result) != len(grad_input):
                    raise RuntimeError(f"backward hook returned {len(result)} gradients, "
                                       f"expected {len(grad_input)}")
                grad_input = result
        return grad_input


class _OutputIdentity(Function):
    @staticmethod
    def forward(ctx: Any, state: BackwardHookState, *outs: Tensor) -> Any:
        ctx.state = state
        return outs if len(outs) > 1 else outs[0]

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        ctx.state.got_grad_output(grads)
        return (None, *grads)


class _InputIdentity(Function):
    @staticmethod
    def forward(ctx: Any, state: BackwardHookState, *ins: Tensor) -> Any:
        ctx.state = state
        return ins if len(ins) > 1 else ins[0]

    @staticmethod
    def backward(ctx: Any, *grads: Tensor) -> tuple:
        state = ctx.state
        full: list = [None] * state.n_inputs
        for i, g in zip(state.input_positions, grads, strict=True):
            full[i] = g
        full = state.call_hooks(tuple(full))
        return (None, *(full[i] for i in state.input_positions))
