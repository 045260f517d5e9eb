"""Module backward hooks: ``hook(module, grad_output)`` before the module's backward (pre-hooks)
and ``hook(module, grad_input, grad_output)`` after it (full hooks), as PyTorch's.

The module's tensor inputs and outputs pass through identity autograd functions: the one on
the outputs receives ``grad_output`` and runs the pre-hooks (a returned tuple replaces it);
the one on the inputs, which runs once the gradients with respect to the inputs are known,
calls the full hooks (a returned tuple replaces ``grad_input``). As in PyTorch, both tuples
have one entry per positional argument or output: None for a non-tensor and for an output
that got no gradient, zeros for a tensor input that needs none (keyword arguments are left
out). The legacy hooks of ``register_backward_hook`` are instead hooks on the autograd node of
the output (:func:`attach_legacy_hooks`).
"""

from __future__ import annotations

import warnings
from typing import Any

from ember.autograd.function import Function
from ember.autograd.grad_mode import GRAD
from ember.errors import GradError
from ember.nn.module_hooks import _WrappedHook
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
        if not isinstance(output, (Tensor, tuple)):
            warnings.warn("For backward hooks to be called, module output should be a Tensor "
                          f"or a tuple of Tensors but received {type(output)}", stacklevel=4)
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
            if self.hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients.",
                              stacklevel=2)
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
    new = list(values)
    what = "output" if identity is OutputIdentity else "input"
    for i, t in zip(positions, out, strict=True):
        new[i] = t
        if t._view is not None:  # (a write into it is refused: name the module, not identity)
            t._view.custom = (f"{what} {i} of {type(state.module).__name__}, which has full "
                              "backward hooks,", _HOOKED_VIEW_NOTE)
    # (a namedtuple of outputs stays one, as PyTorch keeps it)
    return tuple(new) if type(values) is tuple else type(values)(*new), positions


_HOOKED_VIEW_NOTE = (
    "A module's full backward hooks (register_full_backward_hook, "
    "register_full_backward_pre_hook) see its inputs and outputs through an identity custom "
    "Function, whose backward a write into them would override (PyTorch refuses it too). "
    "Hint: use inplace=False in the module that writes into it (nn.ReLU(inplace=False)), or "
    "clone() it first")


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


def attach_legacy_hooks(module: Any, hooks: list, args: tuple, output: Any) -> None:
    """Registers the legacy hooks of ``Module.register_backward_hook`` as PyTorch does: on
    the autograd node that made the output's first tensor, to be called ``hook(module,
    grad_input, grad_output)`` with that node's gradients; warns, as PyTorch, when those are
    not the module's."""
    tensors = _tensors_in(output)
    if not tensors:
        raise TypeError(f"backward hook of {type(module).__name__}: its output holds no "
                        f"tensor to hook (got {type(output).__name__}). Hint: use "
                        "register_full_backward_hook")
    node = tensors[0].grad_fn
    if node is None:
        return
    for hook in hooks:
        node.register_hook(_WrappedHook(hook, module))
    problem = _legacy_hook_problem(args, output, node)
    if problem:
        what, missing = problem
        warnings.warn(f"Using {what} is deprecated and will be removed in future versions. "
                      f"This hook will be missing some of the {missing}. Please use "
                      "register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=4)


def _tensors_in(value: Any) -> list:
    """The tensors of ``value`` in the order PyTorch looks for the first one (dict values,
    list and tuple items, depth first)."""
    if isinstance(value, Tensor):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(
        value, (list, tuple)) else ()
    return [t for v in items for t in _tensors_in(v)]


def _legacy_hook_problem(args: tuple, output: Any, node: Any) -> tuple[str, str] | None:
    """Why the legacy hooks on ``node`` miss some of the module's gradients, and which (None
    if they do not), by PyTorch's checks and in its words."""
    outs = output if isinstance(output, tuple) else (output,)
    if not all(isinstance(o, Tensor) for o in outs):
        return ("non-full backward hooks on a Module that does not return a single Tensor or "
                "a tuple of Tensors", "grad_output")
    if not all(isinstance(a, Tensor) for a in args):
        return ("non-full backward hooks on a Module that does not take as input a single "
                "Tensor or a tuple of Tensors", "grad_input")
    out_nodes = {o.grad_fn for o in outs if o.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
        return ("a non-full backward hook when outputs are nested in python data structure",
                "grad_output")
    if len(out_nodes) > 1:
        return ("a non-full backward hook when outputs are generated by different autograd "
                "Nodes", "grad_output")
    if {a.grad_fn for a in args if a.grad_fn is not None} != {n for n, _ in node.next_functions}:
        return ("a non-full backward hook when the forward contains multiple autograd Nodes",
                "grad_input")
    return None
