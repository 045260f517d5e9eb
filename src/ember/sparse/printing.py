"""``repr`` of a sparse tensor, laid out as PyTorch's: each part's dense repr indented under
its name, then the device (off the CPU), size, nnz and layout, within the print options' line
width (80 columns by default, as PyTorch's and Ember's dense tensors)."""

from __future__ import annotations

from ember.layouts import sparse_coo
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor
from ember.tensor_repr import OPTIONS, add_suffixes, has_default_dtype, tensor_repr

__all__ = ["sparse_repr"]

_PARTS = {"sparse_coo": ("indices",), "sparse_csr": ("crow_indices", "col_indices"),
          "sparse_csc": ("ccol_indices", "row_indices"),
          "sparse_bsr": ("crow_indices", "col_indices"),
          "sparse_bsc": ("ccol_indices", "row_indices")}


def _part(prefix: str, t: Tensor) -> str:
    """``prefix`` then ``t``'s repr as a part, its later lines indented under the first (blank
    lines stay blank). As PyTorch's, its rows wrap at the line width less the prefix."""
    lines = tensor_repr(t.detach(), part=True,
                        width=OPTIONS["linewidth"] - len(prefix)).split("\n")
    return prefix + "\n".join([lines[0]] + [" " * len(prefix) + line if line else line
                                            for line in lines[1:]])


def sparse_repr(s: SparseTensor) -> str:
    pad = " " * len("tensor(")
    lines = [_part(("tensor(" if i == 0 else pad) + f"{name}=", index)
             for i, (name, index) in enumerate(zip(_PARTS[s.layout.name], s._index))]
    lines.append(_part(pad + "values=", s._vals))
    tail = [f"device='{s.device}'"] if s.device.type != "cpu" else []
    tail.append(f"size={tuple(s.shape)}")
    if not s.device.is_meta:  # (PyTorch leaves nnz out on meta)
        tail.append(f"nnz={s._nnz()}")
    if not has_default_dtype(s.dtype):
        tail.append(f"dtype=ember.{s.dtype.name}")
    tail.append(f"layout={s.layout!r}")
    if s.requires_grad and s.is_leaf:
        tail.append("requires_grad=True")
    elif s._vals._node is not None:
        tail.append(f"grad_fn=<{s._vals._node.name()}>")
    # (the suffixes of a COO tensor start on a line of their own)
    return add_suffixes(",\n".join(lines), tail, len(pad), newline=s.layout is sparse_coo)
