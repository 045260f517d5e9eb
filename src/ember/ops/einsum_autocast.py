"""``einsum`` under CPU autocast where it is not one lowered contraction: PyTorch's einsum
combines the operands left to right, lowering the bmm of each pairwise contraction and
promoting at each ``mul`` step, so the result's dtype depends on the steps (review54a)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.errors import DTypeError, describe
from ember.ops.convert import cast
from ember.ops.primitive import not_casting
from ember.tensor import Tensor

__all__ = ["autocast_einsum"]


def _steps(terms: list[str], out: str, shapes: Sequence[tuple[int, ...]]
           ) -> tuple[int, list[str]]:
    """PyTorch's einsum combines operands left to right; under CPU autocast it lowers only the
    bmm of a pairwise contraction (a subscript summed at that step, of size other than 1 in
    both operands; a subscript is summed after the last operand where its size is not 1); a
    step without one is a ``mul``, which promotes. Returns how many operands are combined at
    the last contraction (0: none) and the subscripts the intermediate keeps after each step
    (index: operands combined)."""
    sized = [dict(zip(t, s, strict=True)) for t, s in zip(terms, shapes, strict=True)]
    last, current, kept = 0, sized[0], ["", terms[0]]
    for k, term in enumerate(sized[1:], 2):
        later = set(out).union(*({c for c, n in t.items() if n != 1} for t in sized[k:]))
        if any(current[c] != 1 and term[c] != 1 for c in (current.keys() & term) - later):
            last = k
        current = {c: max(current.get(c, 1), term.get(c, 1)) for c in current | term
                   if c in later}
        kept.append("".join(current))
    return last, kept


def autocast_einsum(terms: list[str], out: str, operands: tuple, product: Any,
                    expanded: tuple) -> Tensor | None:
    """PyTorch's einsum under CPU autocast, where it is not one lowered contraction (None):
    the operands up to the last contraction as an einsum of their own (lowered), then the
    ``mul`` steps, each promoting by dtype (a 0-d operand as any other: PyTorch unsqueezes
    them), in the final dtype without casting (``expanded``: the operands at full size)."""
    if not any(t.dtype.is_floating_point for t in operands):
        return None
    last, kept = _steps(terms, out, [t.shape for t in operands])
    floats = {t.dtype for t in operands if t.dtype.is_floating_point}
    if last == len(terms) and len(floats) == len({t.dtype for t in operands}) and \
            (dtypes.float64 not in floats or len(floats) == 1 or len(terms) == 2):
        return None  # (one lowered product; its policy refuses float64 with a lowered dtype)
    if last == 2 == len(terms):
        shown = " and ".join(describe(t.shape, t.dtype) for t in operands)
        raise DTypeError(f"einsum under autocast: {','.join(terms)}->{out} contracts {shown}; "
                         "PyTorch's bmm refuses an integer operand with a lowered one. "
                         "Hint: convert the integer operand with .float() first")
    if last == len(terms):  # (an integer or float64 operand: the steps before it first)
        last -= 1
    from ember.ops.linalg import einsum  # (which calls this)

    if last:
        head = einsum(",".join(terms[:last]) + "->" + kept[last], *operands[:last])
        return einsum(",".join([kept[last], *terms[last:]]) + "->" + out, head,
                      *operands[last:])
    dtype = operands[0].dtype
    for t in operands[1:]:
        dtype = dtypes.promote_types(dtype, t.dtype)
    return not_casting(product, tuple(cast(t, dtype) for t in expanded))
