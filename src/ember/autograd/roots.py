"""Where a backward pass starts: the outputs and their gradients, checked, with the gradient
of a scalar output implied (``backward`` and ``grad`` of :mod:`ember.autograd.engine`)."""

from __future__ import annotations

from typing import Any

from ember.autograd.grad_mode import inference_mode
from ember.autograd.gradient_edge import EdgeTarget, GradientEdge, edge_target
from ember.errors import ArgumentTypeError, GradError, ShapeError
from ember.ops.primitive import DISPATCH, refresh_view
from ember.tensor import Tensor, _wrap


def as_list(x: Any) -> list:
    """One tensor (or edge), or several, as a list."""
    return [x] if isinstance(x, (Tensor, GradientEdge)) else list(x)


def root_grads(tensors: Any, grads: Any, who: str) -> list:
    """``(tensor, gradient)`` pairs a backward pass starts from, checked: one gradient per
    output (implied only for a real scalar), of the output's shape; ``who`` names the caller
    in the errors."""
    if type(tensors) is Tensor and tensors._view is not None:
        refresh_stale(tensors)
    if grads is None and type(tensors) is Tensor and tensors.requires_grad and \
            tensors.numel() == 1 and not tensors.dtype.is_complex:
        return [(tensors, _seed(tensors))]  # (``loss.backward()``: none of the loop's checks)
    tensors = as_list(tensors)
    grads = [None] * len(tensors) if grads is None else as_list(grads)
    if len(grads) < len(tensors):  # (extra gradients are ignored, unchecked, as PyTorch's)
        raise GradError(f"{who}: got {len(tensors)} tensors but {len(grads)} gradients")
    roots = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        t = edge_target(t)  # (a GradientEdge as an output, as PyTorch's: its gradient given)
        if type(t) is EdgeTarget:
            if g is None:
                raise GradError(f"{who}: output {i} is a GradientEdge ({t!r}), whose shape is "
                                "not known: pass its gradient")
            out = t.spec()
            if out is not None and hasattr(g, "shape") and tuple(g.shape) != tuple(out.shape):
                raise ShapeError(f"{who}: gradient of shape {tuple(g.shape)} given for output {i}, "
                                 f"a GradientEdge ({t!r}) of shape {tuple(out.shape)}")
            roots.append((t, g if out is None else _in_dtype(who, g, out.dtype)))
            continue
        if t._view is not None:
            refresh_stale(t)
        if not t.requires_grad:
            raise GradError(f"{who}: element {i} of the tensors does not require grad and has "
                            "no grad_fn. Hint: did you create it under no_grad, or forget "
                            "requires_grad=True on the inputs?")
        if g is None:
            if t.dtype.is_complex:
                raise GradError(f"{who}: the gradient can be implied only for a real scalar "
                                f"output, this one is {t.dtype.name}. Hint: take .abs(), .real "
                                "or .imag of it first, or pass gradient=…")
            if t.numel() != 1:
                raise GradError(f"{who}: the gradient can be implied only for a scalar output, "
                                f"this one has shape {tuple(t.shape)}; pass gradient=…")
            g = _seed(t)
        elif not isinstance(g, Tensor):
            raise ArgumentTypeError(f"{who}: gradients can be either Tensors or None, got "
                                    f"{type(g).__name__} for output {i}")
        elif tuple(g.shape) != tuple(t.shape):
            raise ShapeError(f"{who}: gradient of shape {tuple(g.shape)} given for a tensor of "
                             f"shape {tuple(t.shape)}")
        else:
            g = _in_dtype(who, g, t.dtype)
        roots.append((t, g))
    return roots


def _in_dtype(who: str, g: Any, dtype: Any) -> Any:
    """A given gradient cast to its output's ``dtype``, as PyTorch's (else the whole pass would
    run in the gradient's dtype); one complex where the output is real, or the reverse,
    refused as PyTorch refuses it."""
    if not isinstance(g, Tensor) or g.dtype is dtype:
        return g
    if g.dtype.is_complex != dtype.is_complex:
        raise GradError(f"{who}: a {g.dtype.name} gradient given for a {dtype.name} output: "
                        "for complex tensors both must be complex, as PyTorch's. Hint: pass "
                        "gradient.to(output.dtype)")
    return g.to(dtype)


def refresh_stale(t: Tensor) -> None:
    """Gives the view ``t``, if its base was written in place since its history was made,
    the history of the base's new state, as an op using it does (``refresh_view``; raises
    for a custom Function's view output and a view made under no_grad, as PyTorch)."""
    info = t._view
    if info.version == t._vc.value:
        return
    if not t._requires_grad and not info.base.requires_grad and info.custom is None:
        info.version = t._vc.value  # (no history then or now: no replay for the profiler)
        return
    with inference_mode(False):  # (replayed with history also under no_grad/inference_mode)
        refresh_view(t)


def _seed(t: Tensor) -> Tensor:
    """The implied gradient of a scalar output: ``ones_like(t)``, made directly for a plain
    0-d tensor in plain eager mode (a fifth of a one-node backward's time went to the
    factory's checks; a 0-d array has no layout to preserve)."""
    dev = t._device
    if type(t) is Tensor and DISPATCH.handler is None and not t._data.ndim and not dev.is_meta:
        return _wrap(dev.xp.array(1, t._data.dtype), dev)  # (not ones(): ~0.5 µs less)
    from ember.ops.creation import ones_like

    return ones_like(t)


def batched_seeds(outputs: Any, grad_outputs: Any) -> tuple[list, int]:
    """``grad(..., is_grads_batched=True)``'s ``grad_outputs`` checked (a batch dimension
    first, then each output's shape) as a list, and the batch size."""
    seeds = [] if grad_outputs is None else as_list(grad_outputs)
    if not seeds or any(g is None for g in seeds):
        raise GradError("grad: is_grads_batched=True needs a grad_outputs tensor for every "
                        "output, each with the batch as its first dimension")
    sizes = {g.shape[0] if g.ndim else None for g in seeds}
    if len(sizes) != 1 or None in sizes or 0 in sizes:
        raise ShapeError(f"grad: is_grads_batched=True needs grad_outputs with one non-empty "
                         f"batch dimension first, got shapes {[tuple(g.shape) for g in seeds]}")
    for i, (out, seed) in enumerate(zip(as_list(outputs), seeds)):
        if isinstance(out, Tensor) and tuple(seed.shape[1:]) != tuple(out.shape):
            raise ShapeError(f"grad: with is_grads_batched=True the first dimension of each "
                             f"grad_outputs tensor is the batch and the rest must be its "
                             f"output's shape: grad_outputs[{i}] has shape {tuple(seed.shape)}, "
                             f"output {i} {tuple(out.shape)}. Hint: add the batch dimension "
                             f"(.unsqueeze(0).expand(n, ...)) to unbatched ones")
    return seeds, sizes.pop()
