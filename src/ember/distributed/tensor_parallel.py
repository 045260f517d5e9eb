"""Tensor (model) parallelism, Megatron-style: layers whose weights are split across the ranks
of a group, and a GPT block built from them.

* :class:`ColumnParallelLinear` splits the output features: each rank computes a slice of the
  outputs (optionally all-gathered back together).
* :class:`RowParallelLinear` splits the input features: each rank multiplies its slice of the
  input, and the partial products are summed with an all-reduce.
* :class:`VocabParallelEmbedding` splits the rows of an embedding table; each rank looks up
  the tokens it owns and an all-reduce combines them.
* :class:`TensorParallelBlock` is :class:`ember.models.gpt.Block` with its attention heads and
  MLP hidden units split across ranks (column → row, one all-reduce each in forward and in
  backward); :func:`parallelize_gpt` converts a whole GPT.

Every layer is made from the unsharded layer (``ColumnParallelLinear.from_linear(fc, group)``)
so that a sharded model computes what the unsharded one computes, with the same gradients;
:func:`unshard` puts shards (of weights or gradients) back together. Replicated parameters
(LayerNorms, the bias of a row-parallel layer) get identical gradients on every rank.
Dropout in split activations draws from each rank's own generator, so exact equivalence with
the unsharded model holds with dropout off.
"""

from __future__ import annotations

import copy
from typing import Any

import ember
import ember.nn.functional as F
from ember import nn
from ember.distributed import collectives
from ember.distributed import functional as dfn
from ember.distributed.process_group import ProcessGroup, resolve
from ember.errors import ArgumentError
from ember.models.gpt import GPT, MLP, Block, CausalSelfAttention
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = [
    "ColumnParallelLinear",
    "RowParallelLinear",
    "TensorParallelBlock",
    "VocabParallelEmbedding",
    "full_gradients",
    "full_parameters",
    "gather_shards",
    "masked_lookup",
    "parallelize_gpt",
    "shard",
    "unshard",
]


def shard(tensor: Tensor, dim: int, rank: int, world_size: int, stride: int = 1) -> Tensor:
    """Rank ``rank``'s slice of ``tensor`` along ``dim`` when split ``world_size`` ways.

    With ``stride`` s the dimension is read as s blocks (e.g. the q, k, v of a fused attention
    projection, s = 3) and each block is split; the shard is the rank's slice of each block, in
    block order.

    Example:
        >>> shard(ember.arange(6), 0, 1, 2, stride=3)
        tensor([1, 3, 5])
    """
    size = tensor.shape[dim]
    if size % (world_size * stride):
        raise ArgumentError(
            f"shard: dimension {dim} of size {size} does not split into "
            f"{world_size} ranks × {stride} blocks; hint: choose sizes divisible "
            f"by {world_size * stride}"
        )
    piece = size // (world_size * stride)
    block = size // stride
    parts = [tensor.narrow(dim, b * block + rank * piece, piece) for b in range(stride)]
    return parts[0] if stride == 1 else ember.cat(parts, dim)


def unshard(shards: list[Tensor], dim: int, stride: int = 1) -> Tensor:
    """The inverse of :func:`shard`: the full tensor from every rank's shard, in rank order.

    Example:
        >>> x = ember.arange(12).view(2, 6)
        >>> bool((unshard([shard(x, 1, r, 2, 3) for r in range(2)], 1, 3) == x).all())
        True
    """
    pieces = [s.chunk(stride, dim) if stride > 1 else (s,) for s in shards]
    return ember.cat([p[b] for b in range(stride) for p in pieces], dim)


def gather_shards(
    tensor: Tensor, dim: int, group: ProcessGroup | None = None, stride: int = 1
) -> Tensor:
    """All-gathers every rank's ``tensor`` (a shard) and returns the full, unsharded tensor on
    every rank; not differentiable (use it on weights and gradients, e.g. for checkpoints).

    Example (2 ranks):
        >>> gather_shards(ember.full((1, 2), float(dist.get_rank())), 0)
        tensor([[0., 0.],
                [1., 1.]])
    """
    group = resolve(group, "gather_shards")
    out = [ember.empty_like(tensor) for _ in range(group.size())]
    collectives.all_gather(out, tensor.detach().contiguous(), group=group)
    return unshard(out, dim, stride)


def _param_shard(param: Tensor | None, dim: int, group: ProcessGroup, stride: int = 1) -> Any:
    if param is None:
        return None
    part = shard(param.detach(), dim, group.rank(), group.size(), stride)
    return Parameter(part.clone(), requires_grad=param.requires_grad)


def _replicated(module: nn.Module, group: ProcessGroup) -> nn.Module:
    """``module`` with the parameters of the group's first rank, so that ranks seeded
    differently still start from one unsharded layer."""
    with ember.no_grad():
        for p in module.parameters():
            collectives.broadcast(p, src=group.ranks[0], group=group)
    return module


class _Sharded(nn.Module):
    """A layer made of this rank's shard of an unsharded one: subclasses define
    ``_shard_from(full, group, *options)``; ``__init__`` builds ``full`` from sizes (with the
    values of the group's first rank) and the ``from_*`` constructors take an existing one."""

    def _init_from(self, full: nn.Module, group: ProcessGroup | None, *options: Any) -> None:
        super().__init__()
        group = resolve(group, type(self).__name__)
        self._shard_from(_replicated(full, group), group, *options)

    @classmethod
    def _of(cls, full: nn.Module, group: ProcessGroup | None, *options: Any) -> Any:
        self = cls.__new__(cls)
        nn.Module.__init__(self)
        self._shard_from(full, resolve(group, cls.__name__), *options)
        return self


class ColumnParallelLinear(_Sharded):
    """A linear layer ``y = x Wᵀ + b`` whose output features are split across ``group``:
    this rank holds rows ``W[r·k:(r+1)·k]`` and computes that slice of ``y``.

    The input is used whole (its gradient is all-reduced in backward). ``gather_output=True``
    all-gathers the slices into the full ``y``; ``False`` leaves each rank with its slice, ready
    for a :class:`RowParallelLinear` with ``input_is_parallel=True``. ``stride`` splits each of
    that many equal blocks of the outputs separately (3 for a fused q, k, v projection).

    Example (2 ranks):
        >>> fc = ColumnParallelLinear.from_linear(nn.Linear(8, 6), group=None)
        >>> fc.weight.shape, fc(ember.randn(4, 8)).shape
        (ember.Size([3, 8]), ember.Size([4, 6]))
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        gather_output: bool = True,
        group: ProcessGroup | None = None,
        stride: int = 1,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        full = nn.Linear(in_features, out_features, bias, device, dtype)
        self._init_from(full, group, gather_output, stride)

    @classmethod
    def from_linear(
        cls,
        linear: nn.Linear,
        group: ProcessGroup | None = None,
        gather_output: bool = True,
        stride: int = 1,
    ) -> ColumnParallelLinear:
        """This rank's shard of an existing (unsharded) ``linear``."""
        return cls._of(linear, group, gather_output, stride)

    def _shard_from(
        self, linear: nn.Linear, group: ProcessGroup, gather_output: bool, stride: int
    ) -> None:
        if gather_output and stride > 1:
            raise ArgumentError(
                "ColumnParallelLinear: gather_output=True needs stride=1 (the "
                "gathered blocks would come out interleaved)"
            )
        self.group, self.gather_output, self.stride = group, gather_output, stride
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = _param_shard(linear.weight, 0, group, stride)
        bias = _param_shard(linear.bias, 0, group, stride)
        self._shard_dims = {"weight": (0, stride), "bias": (0, stride)}
        if bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = bias

    def forward(self, input: Tensor) -> Tensor:
        y = F.linear(dfn.copy_to_group(input, self.group), self.weight, self.bias)
        return dfn.gather_from_group(y, dim=-1, group=self.group) if self.gather_output else y

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"local_out={self.weight.shape[0]}, gather_output={self.gather_output}"
        )


class RowParallelLinear(_Sharded):
    """A linear layer whose input features are split across ``group``: this rank holds the
    columns ``W[:, r·k:(r+1)·k]``, multiplies its slice of ``x`` and the partial results are
    summed by an all-reduce; the bias (replicated) is added once after it.

    ``input_is_parallel=True`` takes an input already split (a column-parallel layer's
    output); ``False`` takes the full input and uses this rank's slice of it.

    Example (2 ranks):
        >>> fc = RowParallelLinear.from_linear(nn.Linear(8, 6), group=None)
        >>> fc.weight.shape, fc(ember.randn(4, 8)).shape
        (ember.Size([6, 4]), ember.Size([4, 6]))
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        input_is_parallel: bool = False,
        group: ProcessGroup | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        full = nn.Linear(in_features, out_features, bias, device, dtype)
        self._init_from(full, group, input_is_parallel)

    @classmethod
    def from_linear(
        cls, linear: nn.Linear, group: ProcessGroup | None = None, input_is_parallel: bool = False
    ) -> RowParallelLinear:
        """This rank's shard of an existing (unsharded) ``linear``."""
        return cls._of(linear, group, input_is_parallel)

    def _shard_from(self, linear: nn.Linear, group: ProcessGroup, input_is_parallel: bool) -> None:
        self.group, self.input_is_parallel = group, input_is_parallel
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = _param_shard(linear.weight, 1, group)
        self._shard_dims = {"weight": (1, 1)}
        if linear.bias is None:
            self.register_parameter("bias", None)
        else:
            self.bias = Parameter(linear.bias.detach().clone(), linear.bias.requires_grad)

    def forward(self, input: Tensor) -> Tensor:
        if not self.input_is_parallel:
            input = dfn.scatter_to_group(input, dim=-1, group=self.group)
        y = dfn.reduce_from_group(F.linear(input, self.weight), self.group)
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"local_in={self.weight.shape[1]}, input_is_parallel={self.input_is_parallel}"
        )


class VocabParallelEmbedding(_Sharded):
    """An embedding table whose rows (the vocabulary) are split across ``group``: this rank
    owns tokens ``[vocab_start, vocab_end)``, looks those up, writes zeros for the others, and
    an all-reduce sums the ranks' partial lookups.

    Example (2 ranks):
        >>> emb = VocabParallelEmbedding.from_embedding(nn.Embedding(10, 4), group=None)
        >>> emb.weight.shape, emb(ember.tensor([[1, 7]])).shape
        (ember.Size([5, 4]), ember.Size([1, 2, 4]))
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        group: ProcessGroup | None = None,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        full = nn.Embedding(num_embeddings, embedding_dim, padding_idx, device=device, dtype=dtype)
        self._init_from(full, group)

    @classmethod
    def from_embedding(
        cls, embedding: nn.Embedding, group: ProcessGroup | None = None
    ) -> VocabParallelEmbedding:
        """This rank's rows of an existing (unsharded) ``embedding``."""
        return cls._of(embedding, group)

    def _shard_from(self, embedding: nn.Embedding, group: ProcessGroup) -> None:
        for option in ("max_norm", "scale_grad_by_freq"):
            if getattr(embedding, option):
                raise ArgumentError(f"VocabParallelEmbedding: {option} is not supported")
        self.group = group
        self.num_embeddings, self.embedding_dim = embedding.num_embeddings, embedding.embedding_dim
        self.weight = _param_shard(embedding.weight, 0, group)
        self._shard_dims = {"weight": (0, 1)}
        rows = self.weight.shape[0]
        self.vocab_start, self.vocab_end = group.rank() * rows, (group.rank() + 1) * rows
        self.padding_idx = embedding.padding_idx

    def forward(self, input: Tensor) -> Tensor:
        rows = masked_lookup(input, self.weight, self.vocab_start, self.vocab_end,
                             self.padding_idx)
        return dfn.reduce_from_group(rows, self.group)

    def extra_repr(self) -> str:
        return (
            f"{self.num_embeddings}, {self.embedding_dim}, "
            f"rows=[{self.vocab_start}, {self.vocab_end})"
        )


def masked_lookup(input: Tensor, rows: Tensor, start: int, end: int,
                  padding_idx: int | None = None) -> Tensor:
    """The embeddings of the tokens in ``[start, end)`` from ``rows`` (those rows of a
    table), zeros for the others: one rank's term of a lookup in a row-sharded table.
    ``padding_idx`` is a row of the whole table (no gradient when it is in ``rows``).

    Example:
        >>> masked_lookup(ember.tensor([0, 3]), ember.ones(2, 2), 2, 4)
        tensor([[0., 0.],
                [1., 1.]])
    """
    if rows.shape[0] == 0:  # an empty piece of an unevenly split table: look up a zero row
        rows = ember.cat([rows, ember.zeros(1, rows.shape[1], dtype=rows.dtype)])  # (in the graph)
    outside = (input < start) | (input >= end)
    local = (input - start).masked_fill(outside, 0)
    pad = padding_idx - start if padding_idx is not None and start <= padding_idx < end \
        else None
    found = F.embedding(local, rows, pad)
    return found.masked_fill(outside.unsqueeze(-1), 0.0)


class TensorParallelAttention(nn.Module):
    """Causal self-attention with the heads split across ``group``: the fused q, k, v
    projection is column-parallel (stride 3), the output projection row-parallel."""

    def __init__(self, attn: CausalSelfAttention, group: ProcessGroup | None = None) -> None:
        super().__init__()
        group = resolve(group, "TensorParallelAttention")
        if attn.n_head % group.size():
            raise ArgumentError(
                f"TensorParallelAttention: {attn.n_head} heads do not split "
                f"across {group.size()} ranks"
            )
        self.n_head, self.dropout = attn.n_head // group.size(), attn.dropout
        self.c_attn = ColumnParallelLinear.from_linear(attn.c_attn, group, False, stride=3)
        self.c_proj = RowParallelLinear.from_linear(attn.c_proj, group, input_is_parallel=True)
        self.resid_drop = copy.deepcopy(attn.resid_drop)

    def forward(self, x: Tensor) -> Tensor:
        B, T, _ = x.shape
        width = self.c_attn.weight.shape[0] // 3
        q, k, v = (
            t.view(B, T, self.n_head, width // self.n_head).transpose(1, 2)
            for t in self.c_attn(x).split(width, dim=2)
        )
        y = F.scaled_dot_product_attention(
            q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True
        )
        return self.resid_drop(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, width)))


class TensorParallelMLP(MLP):
    """:class:`ember.models.gpt.MLP` with ``c_fc`` column-parallel and ``c_proj``
    row-parallel: the 4·d hidden units are split and one all-reduce ends the block."""

    def __init__(self, mlp: MLP, group: ProcessGroup | None = None) -> None:
        nn.Module.__init__(self)
        group = resolve(group, "TensorParallelMLP")
        self.c_fc = ColumnParallelLinear.from_linear(mlp.c_fc, group, gather_output=False)
        self.gelu = copy.deepcopy(mlp.gelu)
        self.c_proj = RowParallelLinear.from_linear(mlp.c_proj, group, input_is_parallel=True)
        self.dropout = copy.deepcopy(mlp.dropout)


class TensorParallelBlock(Block):
    """A GPT :class:`~ember.models.gpt.Block` split across ``group``: LayerNorms replicated,
    attention heads and MLP hidden units sharded. Same outputs and gradients as ``block``.

    Example (2 ranks):
        >>> from ember.models.gpt import Block
        >>> block = Block(d_model=16, n_head=4)
        >>> tp = TensorParallelBlock(block, group=None)
        >>> tp(ember.randn(2, 5, 16)).shape
        ember.Size([2, 5, 16])
    """

    def __init__(self, block: Block, group: ProcessGroup | None = None) -> None:
        nn.Module.__init__(self)
        self.ln_1 = copy.deepcopy(block.ln_1)
        self.attn = TensorParallelAttention(block.attn, group)
        self.ln_2 = copy.deepcopy(block.ln_2)
        self.mlp = TensorParallelMLP(block.mlp, group)


def parallelize_gpt(model: GPT, group: ProcessGroup | None = None) -> GPT:
    """Splits ``model`` across ``group`` in place and returns it: the token embedding becomes
    vocabulary-parallel, every block a :class:`TensorParallelBlock`, and the head a
    column-parallel layer gathering its logits; position embedding and final LayerNorm stay
    replicated.

    Example:
        >>> model = parallelize_gpt(ember.models.gpt(n_layer=2, d_model=64), group=None)
    """
    group = resolve(group, "parallelize_gpt")
    model.tok_emb = VocabParallelEmbedding.from_embedding(model.tok_emb, group)
    model.blocks = nn.ModuleList(TensorParallelBlock(b, group) for b in model.blocks)
    model.head = ColumnParallelLinear.from_linear(model.head, group, gather_output=True)
    return model


def _gather_full(model: nn.Module, grads: bool) -> dict[str, Tensor]:
    out = {}
    for prefix, module in model.named_modules():
        dims = getattr(module, "_shard_dims", {})
        for name, p in module.named_parameters(recurse=False):
            value = p.grad if grads else p.detach()
            if value is None:
                continue
            if name in dims:
                dim, stride = dims[name]
                value = gather_shards(value, dim, module.group, stride)
            out[f"{prefix}.{name}" if prefix else name] = value
    return out


def full_parameters(model: nn.Module) -> dict[str, Tensor]:
    """The unsharded parameters of a tensor-parallel ``model``, by the names the unsharded
    model uses (shards are all-gathered; every rank of the group must call it).

    Example:
        >>> full = full_parameters(parallelize_gpt(ember.models.gpt(n_layer=1, d_model=32)))
        >>> full["blocks.0.attn.c_attn.weight"].shape
        ember.Size([96, 32])
    """
    return _gather_full(model, grads=False)


def full_gradients(model: nn.Module) -> dict[str, Tensor]:
    """Like :func:`full_parameters` for the ``.grad`` of each parameter (those without one
    are left out)."""
    return _gather_full(model, grads=True)
