"""``repr`` of a sparse tensor, laid out as PyTorch's: each part's dense repr indented under
its name, then the size, nnz and layout."""

from __future__ import annotations

from ember.layouts import sparse_coo
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["sparse_repr"]

_PARTS = {"sparse_coo": ("indices",), "sparse_csr": ("crow_indices", "col_indices"),
          "sparse_csc": ("ccol_indices", "row_indices")}


def _part(prefix: str, t: Tensor) -> str:
    """``prefix`` then ``t``'s repr, its later lines indented under the first."""
    text = repr(t.detach()).replace("\n", "\n" + " " * len(prefix))
    return prefix + text


def sparse_repr(s: SparseTensor) -> str:
    pad = " " * len("tensor(")
    lines = [_part(("tensor(" if i == 0 else pad) + f"{name}=", index)
             for i, (name, index) in enumerate(zip(_PARTS[s.layout.name], s._index))]
    lines.append(_part(pad + "values=", s._vals))
    tail = [f"size={tuple(s.shape)}", f"nnz={s._nnz()}"]
    tail.append(f"layout={s.layout!r}")
    if s.requires_grad and s.is_leaf:
        tail.append("requires_grad=True")
    elif s._vals._node is not None:
        tail.append(f"grad_fn=<{s._vals._node.name()}>")
    if s.layout is sparse_coo:
        return ",\n".join(lines) + ",\n" + pad + ", ".join(tail) + ")"
    # compressed layouts: size and nnz follow the values, the rest on the next line
    return ",\n".join(lines) + ", " + ", ".join(tail[:2]) + ",\n" + pad + \
        ", ".join(tail[2:]) + ")"
