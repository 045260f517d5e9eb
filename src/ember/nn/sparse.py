"""``Embedding``: a lookup table of vectors, with ``padding_idx`` and ``from_pretrained``;
``EmbeddingBag``: sums, means or maxima of bags of its rows."""

from __future__ import annotations

from typing import Any

import ember
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn import init
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]


class Embedding(Module):
    """Maps integer indices to rows of ``weight`` ``(num_embeddings, embedding_dim)``,
    initialised from N(0, 1) with the ``padding_idx`` row zero (its gradient stays zero).

    ``sparse=True`` makes ``weight.grad`` a sparse COO tensor (one entry per looked-up index,
    uncoalesced, as PyTorch's) for ``optim.SGD``, ``Adagrad`` or ``SparseAdam``; see
    docs/sparse.md.

    Example:
        >>> emb = nn.Embedding(10, 3, padding_idx=0)
        >>> emb(ember.tensor([[0, 2], [4, 9]])).shape
        ember.Size([2, 2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0,
                 scale_grad_by_freq: bool = False, sparse: bool = False,
                 _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ArgumentError("Padding_idx must be within num_embeddings")
            padding_idx = padding_idx % num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(ember.empty(num_embeddings, embedding_dim, dtype=dtype,
                                                device=device), requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ArgumentError("Shape of weight does not match num_embeddings and "
                                    "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        row = None if self.padding_idx is None else init.local_row(self.weight, self.padding_idx)
        if row is not None:  # (a fully_shard piece: the rank holding the row)
            with ember.no_grad():
                self.weight[row] = 0

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        s += _norm_repr(self)
        if self.sparse:
            s += ", sparse=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        padding_idx: int | None = None, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An ``Embedding`` whose weight is ``embeddings`` (2-D), frozen by default.

        Example:
            >>> emb = nn.Embedding.from_pretrained(ember.eye(3))
            >>> emb(ember.tensor([1])), emb.weight.requires_grad
            (tensor([[0., 1., 0.]]), False)
        """
        if embeddings.ndim != 2:
            raise ArgumentError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)


class EmbeddingBag(Embedding):
    """Reduces bags of embeddings (``mode`` ``"sum"``, ``"mean"`` or ``"max"``) without
    materialising them: a 2-D input holds one bag per row, a 1-D one with ``offsets`` the
    bags starting at each offset (see ``F.embedding_bag``). ``sparse=True`` gives a sparse
    ``weight.grad`` as :class:`Embedding`'s (not with mode ``"max"``, as in PyTorch).

    Example:
        >>> bag = nn.EmbeddingBag(10, 3, mode="sum")
        >>> bag(ember.tensor([1, 2, 4, 5, 4]), ember.tensor([0, 2])).shape
        ember.Size([2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight: Tensor | None = None,
                 include_last_offset: bool = False, padding_idx: int | None = None,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                               self.scale_grad_by_freq, self.mode, self.sparse,
                               per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}{_norm_repr(self)}, mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True,
                        max_norm: float | None = None, norm_type: float = 2.0,
                        scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:
        """An ``EmbeddingBag`` whose weight is ``embeddings`` (2-D), frozen by default.

        Example:
            >>> bag = nn.EmbeddingBag.from_pretrained(ember.eye(3), mode="sum")
            >>> bag(ember.tensor([[0, 2]]))
            tensor([[1., 0., 1.]])
        """
        if embeddings.ndim != 2:
            raise ArgumentError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


def _norm_repr(table: Module) -> str:
    """The renormalisation settings an embedding table shows when not the defaults."""
    s = f", max_norm={table.max_norm}" if table.max_norm is not None else ""
    if table.norm_type != 2:
        s += f", norm_type={table.norm_type}"
    return s + (", scale_grad_by_freq=True" if table.scale_grad_by_freq else "")
