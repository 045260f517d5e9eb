"""The sublist form of ``einsum``: ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` names subscripts
by ints in ``[0, 52)`` (and ``...``), as ``torch.einsum`` does; it is read here as the
equation string form (``"ab,bc->ac"``) that :func:`ember.ops.linalg.einsum` computes."""

from __future__ import annotations

import operator
from typing import Any

from ember.errors import ArgumentError
from ember.ops.int_args import as_int
from ember.tensor import Tensor


def sublist_equation(args: tuple) -> tuple[str, tuple]:
    """``(a, [0, 1], b, [1, 2], [0, 2])`` as ``("ab,bc->ac", (a, b))``."""
    def letters(sublist: Any) -> str:
        out = []
        for s in sublist:
            if s is Ellipsis:
                out.append("...")
                continue
            try:
                k = operator.index(s)  # (NumPy ints too, as PyTorch)
            except TypeError:
                k = as_int(s, "einsum", "a subscript in a sublist")  # (raises, as PyTorch)
            if not 0 <= k < 52:
                raise ArgumentError(f"einsum: subscripts in a sublist must be ints in [0, 52) "
                                    f"or ..., got {s!r}")
            # (0-25 as A-Z and 26-51 as a-z: letter order is number order, so an implied
            # output lists its subscripts by number, as PyTorch's)
            out.append(chr(ord("A") + k) if k < 26 else chr(ord("a") + k - 26))
        return "".join(out)

    operands, terms = args[0::2], args[1::2]
    out = None
    if len(args) % 2:  # (an odd count ends with the output's sublist)
        operands, out = operands[:-1], operands[-1]
    if (not operands or not all(isinstance(t, Tensor) for t in operands)
            or any(isinstance(t, Tensor) for t in (*terms, out))):
        raise ArgumentError("einsum: the sublist form takes each operand followed by its sublist "
                            "(operand, sublist, operand, sublist, ...), and optionally the "
                            "output's sublist last")
    equation = ",".join(letters(t) for t in terms)
    return (equation if out is None else equation + "->" + letters(out)), operands
