"""The FLOP formulas :class:`~ember.utils.flop_counter.FlopCounterMode` counts with:
PyTorch's (``torch.utils.flop_counter``), keyed by Ember primitive name.

Only the heavy products are counted, as PyTorch counts only them: matrix products (``matmul``,
which ``mm``, ``bmm``, ``addmm``, ``baddbmm`` and ``linear`` apply), the pairwise contractions
of ``einsum``, convolutions (``conv``), attention (the blockwise
``scaled_dot_product_attention``; its composite path is matmuls), the fused
``linear_cross_entropy``'s logits and the recurrent products of the whole-sequence LSTM and GRU
primitives (``lstm_scan``, ``gru_scan``). A product counts 2·M·N·K (a multiply and an add per
term). Each has a backward formula, counted once per backward of such an op with the ops its
rule applies not counted again: one product of the forward's size per gradient made, as
PyTorch's ``mm``/``bmm`` backward (so a product PyTorch runs as ``mv`` or ``dot``, uncounted,
costs nothing backward either).

A forward formula is ``formula(*input_shapes, out_shape, **params) -> int``; a backward one
``formula(grad_out_shape, *input_shapes, output_mask, **params) -> int``, ``output_mask``
saying which inputs get a gradient.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from math import prod
from typing import Any

from ember.ops.primitive import Primitive

__all__ = ["BACKWARD_FORMULAS", "FORWARD_FORMULAS", "register_flop_formula"]

Shape = tuple[int, ...]

FORWARD_FORMULAS: dict[str, Callable[..., int]] = {}
BACKWARD_FORMULAS: dict[str, Callable[..., int]] = {}


def op_name(target: Primitive | str) -> str:
    """A registry key: the primitive's name."""
    if isinstance(target, Primitive):
        return target.name
    if isinstance(target, str):
        return target
    raise TypeError(f"register_flop_formula: expected a primitive or a primitive's name, got "
                    f"{type(target).__name__}")


def register_flop_formula(targets: Primitive | str | Iterable[Primitive | str], *,
                          backward: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: counts the FLOPs of the primitives ``targets`` (primitives or their names)
    with ``formula``, as ``torch.utils.flop_counter.register_flop_formula`` (whose formulas
    also take shapes). ``backward=True`` registers the formula of their backward instead.

    Example:
        >>> from ember.utils.flop_counter import FlopCounterMode, register_flop_formula
        >>> @register_flop_formula("exp")
        ... def exp_flops(x_shape, *, out_shape, **params):
        ...     return prod(x_shape)
        >>> with FlopCounterMode(display=False) as counter:
        ...     _ = ember.ones(2, 3).exp()
        >>> counter.get_total_flops()
        6
        >>> del FORWARD_FORMULAS["exp"]
    """
    if isinstance(targets, (Primitive, str)) or not isinstance(targets, Iterable):
        targets = [targets]
    names = [op_name(t) for t in targets]
    registry = BACKWARD_FORMULAS if backward else FORWARD_FORMULAS

    def register(formula: Callable[..., int]) -> Callable[..., int]:
        for name in names:
            registry[name] = formula
        return formula
    return register


@register_flop_formula("matmul")
def matmul_flop(a: Shape, b: Shape, *, out_shape: Shape, **_: Any) -> int:
    """2·(elements of the result)·K, as PyTorch's ``mm``/``bmm`` (a vector times a matrix
    too: PyTorch runs it as ``mm``). A product with a vector on the right counts 0: PyTorch
    runs those as ``mv``/``dot``, which it does not count."""
    if len(b) == 1:
        return 0
    return 2 * prod(out_shape) * a[-1]


@register_flop_formula("matmul", backward=True)
def matmul_backward_flop(grad_out: Shape, a: Shape, b: Shape, *,
                         output_mask: tuple[bool, ...], **_: Any) -> int:
    """One product of the forward's size per gradient made, as PyTorch's ``mm`` backward."""
    return sum(output_mask[:2]) * matmul_flop(a, b, out_shape=grad_out)


def einsum_steps(shapes: tuple[Shape, ...], equation: str) -> list[int]:
    """The FLOPs of each pairwise contraction PyTorch's ``einsum`` runs, left to right: the
    running result with operand 1, then 2, …. Indices no later operand nor the output needs
    are summed out first; a pair that shares an index to sum is a batched matrix product,
    2·(product of the pair's index sizes); one that shares none is a (free) elementwise
    product. (Ember's equations come here with ``...`` spelled out.)"""
    inputs, output = equation.split("->")
    terms = [set(t) for t in inputs.split(",")]
    sizes: dict[str, int] = {}
    for term, shape in zip(inputs.split(","), shapes, strict=True):
        for index, size in zip(term, shape, strict=True):
            sizes[index] = max(size, sizes.get(index, 1))
    steps, left = [], terms[0]
    for i, term in enumerate(terms[1:], 2):
        later = set(output).union(*terms[i:])
        left = left & (later | term)
        right = term & (later | left)
        summed = (left & right) - later
        steps.append(2 * prod(sizes[k] for k in left | right) if summed else 0)
        left = (left | right) & later
    return steps


@register_flop_formula("einsum")
def einsum_flop(*shapes: Shape, out_shape: Shape, equation: str, **_: Any) -> int:
    """The sum of :func:`einsum_steps` (0 for one operand: a sum or a permutation)."""
    return sum(einsum_steps(shapes, equation))


@register_flop_formula("einsum", backward=True)
def einsum_backward_flop(grad_out: Shape, *shapes: Shape, output_mask: tuple[bool, ...],
                         equation: str, **_: Any) -> int:
    """Each contraction's products once per gradient it makes (of the running result when an
    operand before it needs one, and of its operand), as PyTorch's ``bmm`` backward."""
    return sum(flops * (any(output_mask[:i]) + output_mask[i])
               for i, flops in enumerate(einsum_steps(shapes, equation), 1))


def conv_flop_count(x_shape: Shape, w_shape: Shape, out_shape: Shape,
                    transposed: bool = False) -> int:
    """2·batch·(output positions; input positions if transposed)·(weight elements)."""
    positions = (x_shape if transposed else out_shape)[2:]
    return 2 * x_shape[0] * prod(positions) * prod(w_shape)


@register_flop_formula("conv")
def conv_flop(x: Shape, w: Shape, *bias: Shape, out_shape: Shape, **_: Any) -> int:
    """The products only (a bias's adds count nothing, as in PyTorch's formula)."""
    return conv_flop_count(x, w, out_shape)


@register_flop_formula("conv", backward=True)
def conv_backward_flop(grad_out: Shape, x: Shape, w: Shape, *bias: Shape,
                       output_mask: tuple[bool, ...], **_: Any) -> int:
    """The input gradient (a transposed convolution of the output gradient) and the weight
    gradient each cost what the forward did, as in PyTorch's ``convolution_backward`` (the
    bias's column sum counts nothing)."""
    return sum(output_mask[:2]) * conv_flop_count(x, w, grad_out)


def sdpa_flop_count(q: Shape, k: Shape, v: Shape) -> int:
    """Q·Kᵀ and (scores)·V: 2·batch·L·S·(E + Ev)."""
    batch, L, E, S, Ev = prod(q[:-2]), q[-2], q[-1], k[-2], v[-1]
    return 2 * batch * L * S * (E + Ev)


@register_flop_formula("scaled_dot_product_attention")
def sdpa_flop(q: Shape, k: Shape, v: Shape, *mask: Shape, out_shape: Shape, **_: Any) -> int:
    return sdpa_flop_count(q, k, v)


@register_flop_formula("scaled_dot_product_attention", backward=True)
def sdpa_backward_flop(grad_out: Shape, q: Shape, k: Shape, v: Shape, *mask: Shape,
                       output_mask: tuple[bool, ...], **_: Any) -> int:
    """Four products (the gradients of V and of the scores, then of Q and of K): twice the
    forward, as PyTorch counts it."""
    return 2 * sdpa_flop_count(q, k, v)


@register_flop_formula("linear_cross_entropy_rows")
def linear_cross_entropy_flop(x: Shape, w: Shape, *rest: Shape, out_shape: Shape,
                              **_: Any) -> int:
    """The fused ``linear_cross_entropy``'s logits: 2·rows·(weight elements), the product
    PyTorch runs as ``mm``."""
    return 2 * x[0] * prod(w)


@register_flop_formula("linear_cross_entropy_rows", backward=True)
def linear_cross_entropy_backward_flop(grad_out: Shape, x: Shape, w: Shape, *rest: Shape,
                                       output_mask: tuple[bool, ...], **_: Any) -> int:
    """One product of the forward's size per gradient made (input, weight), as PyTorch's
    backward counts; the logits the rule recomputes are not counted."""
    return sum(output_mask[:2]) * 2 * x[0] * prod(w)


@register_flop_formula(["lstm_scan", "gru_scan"])
def rnn_scan_flop(px: Shape, h0: Shape, *rest: Shape, out_shape: Shape, **_: Any) -> int:
    """Each step's ``h W_hhᵀ``: 2·steps·batch·(gates·hidden)·hidden, the products PyTorch
    runs as ``mm``/``addmm`` per step (the input projection is a ``linear`` of its own)."""
    return 2 * prod(px) * h0[-1]


def _rnn_scan_backward(px: Shape, h0: Shape, h0_grad: bool, w_hh_grad: bool) -> int:
    """The recurrent products' gradients as PyTorch's ``mm`` backward counts them per step:
    ``W_hh``'s (every step) when it needs one, and the previous state's at every step but the
    first, whose is made only when ``h0`` needs one."""
    step = 2 * prod(px[1:]) * h0[-1]
    return step * (px[0] * w_hh_grad + max(px[0] - 1, 0) + h0_grad)


@register_flop_formula("lstm_scan", backward=True)
def lstm_scan_backward_flop(grad_out: Shape, px: Shape, h0: Shape, *rest: Shape,
                            output_mask: tuple[bool, ...], **_: Any) -> int:
    """Inputs ``px, h0, c0, w_hh[, b_hh]``: see :func:`_rnn_scan_backward`."""
    return _rnn_scan_backward(px, h0, output_mask[1], output_mask[3])


@register_flop_formula("gru_scan", backward=True)
def gru_scan_backward_flop(grad_out: Shape, px: Shape, h0: Shape, *rest: Shape,
                           output_mask: tuple[bool, ...], **_: Any) -> int:
    """Inputs ``px, h0, w_hh[, b_hh]``: see :func:`_rnn_scan_backward`."""
    return _rnn_scan_backward(px, h0, output_mask[1], output_mask[2])
