"""Transformer layers with PyTorch's submodule names (``self_attn``, ``linear1``, ``norm1``,
…), so state dicts load across: ``TransformerEncoderLayer``, ``TransformerDecoderLayer``,
``TransformerEncoder``, ``TransformerDecoder`` and the whole ``Transformer``."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import ember
from ember.autograd.grad_mode import is_grad_enabled
from ember.backends import mha
from ember.errors import ArgumentError, ShapeError
from ember.nn import functional as F
from ember.nn import init
from ember.nn.containers import ModuleList
from ember.nn.dropout import Dropout
from ember.nn.linear import Linear
from ember.nn.module import Module
from ember.nn.multihead_attention import MultiheadAttention
from ember.nn.normalization import LayerNorm
from ember.ops.multi_head_attention import additive
from ember.tensor import Tensor

__all__ = ["TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
           "TransformerDecoder", "Transformer"]


def _activation(activation: str | Callable) -> Callable:
    if isinstance(activation, str):
        if activation not in ("relu", "gelu"):
            raise ArgumentError(f"activation should be relu/gelu, not {activation}")
        return getattr(F, activation)
    return activation


class _Layer(Module):
    """The submodules, feed-forward block and residual wiring shared by encoder and decoder
    layers."""

    def _build(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float,
               activation: str | Callable, layer_norm_eps: float, batch_first: bool,
               norm_first: bool, bias: bool, device: Any, dtype: Any, cross: bool) -> None:
        """The submodules, in PyTorch's order (so parameters and state dicts line up);
        ``cross`` adds the decoder's cross-attention and its third norm and dropout."""
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        if cross:
            self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout,
                                                     bias=bias, batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        blocks = range(1, 4 if cross else 3)
        for i in blocks:
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        for i in blocks:
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = _activation(activation)

    def _ff_block(self, x: Tensor, dropout: Module) -> Tensor:
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _attend(self, attn: Module, x: Tensor, mem: Tensor, mask: Tensor | None,
                padding: Tensor | None, is_causal: bool, dropout: Module) -> Tensor:
        out = attn(x, mem, mem, attn_mask=mask, key_padding_mask=padding, need_weights=False,
                   is_causal=is_causal)[0]
        return dropout(out)


class TransformerEncoderLayer(_Layer):
    """Self-attention then a feed-forward block, each with a residual connection and layer
    norm (after it, or before it with ``norm_first=True``). ``is_causal=True`` with a
    ``src_mask`` (and no padding mask) is PyTorch's: the mask where its fused inference kernel
    would run (eval mode, no grad, ``batch_first``, relu/gelu, …), the causal mask elsewhere.
    ``ember.relu`` is ``F.relu`` and counts as relu there; PyTorch's ``torch.relu`` is not its
    ``F.relu``, so ``activation=torch.relu`` keeps PyTorch off that kernel.

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(ember.randn(2, 5, 16)).shape
        ember.Size([2, 5, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, device, dtype, cross=False)
        act = self.activation  # PyTorch's fast-path tag: 1 relu, 2 gelu, 0 another
        self.activation_relu_or_gelu = (1 if act is F.relu or isinstance(act, ember.nn.ReLU)
                                        else 2 if act is F.gelu
                                        or isinstance(act, ember.nn.GELU) else 0)

    def _fused(self, src: Tensor) -> bool:
        """Whether PyTorch would run this call on its fused encoder-layer kernel (which reads
        the masks and not the ``is_causal`` hint): batched, eval mode, nothing to
        differentiate, ``batch_first`` self-attention with packed biased weights and an even
        number of heads, relu or gelu, equal norm eps, no forward hooks, the path not
        switched off (:mod:`ember.backends.mha`)."""
        attn = self.self_attn
        return (mha.get_fastpath_enabled() and src.ndim == 3 and not self.training
                and attn.batch_first
                and attn.in_proj_bias is not None and attn._qkv_same_embed_dim
                and self.activation_relu_or_gelu != 0 and self.norm1.eps == self.norm2.eps
                and attn.num_heads % 2 == 0
                and not any(getattr(m, "_forward_hooks", None)
                            or getattr(m, "_forward_pre_hooks", None) for m in self.modules())
                and not (is_grad_enabled() and (src.requires_grad or any(
                    p.requires_grad for p in self.parameters()))))

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        if is_causal and src_mask is not None and src_key_padding_mask is None:
            # PyTorch's fused layer takes the mask; otherwise its layer hands attention the
            # mask as floats, off attention's own fast path: attention checks it, then the
            # hint alone decides
            if self._fused(src):
                is_causal = False
            else:
                src_mask = additive(src_mask, src.dtype, "src_mask")
        x = src
        if self.norm_first:
            y = self.norm1(x)
            x = x + self._attend(self.self_attn, y, y, src_mask, src_key_padding_mask,
                                 is_causal, self.dropout1)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._attend(self.self_attn, x, x, src_mask, src_key_padding_mask,
                                        is_causal, self.dropout1))
        return self.norm2(x + self._ff_block(x, self.dropout2))


class TransformerDecoderLayer(_Layer):
    """Self-attention, cross-attention over ``memory``, then a feed-forward block.

    Example:
        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(ember.randn(2, 5, 16), ember.randn(2, 7, 16)).shape
        ember.Size([2, 5, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable = "relu",
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self._build(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                    batch_first, norm_first, bias, device, dtype, cross=True)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        if self.norm_first:
            y = self.norm1(x)
            x = x + self._attend(self.self_attn, y, y, tgt_mask, tgt_key_padding_mask,
                                 tgt_is_causal, self.dropout1)
            x = x + self._attend(self.multihead_attn, self.norm2(x), memory, memory_mask,
                                 memory_key_padding_mask, memory_is_causal, self.dropout2)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._attend(self.self_attn, x, x, tgt_mask, tgt_key_padding_mask,
                                        tgt_is_causal, self.dropout1))
        x = self.norm2(x + self._attend(self.multihead_attn, x, memory, memory_mask,
                                        memory_key_padding_mask, memory_is_causal,
                                        self.dropout2))
        return self.norm3(x + self._ff_block(x, self.dropout3))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (``layers.0``, …), then ``norm`` if given.

    Ember has no nested-tensor fast path: ``use_nested_tensor`` is always False (whatever
    ``enable_nested_tensor`` says), and the output is PyTorch's with it False (padded
    positions computed, not zeroed).

    Example:
        >>> enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 4), num_layers=2)
        >>> enc(ember.randn(5, 2, 16)).shape
        ember.Size([5, 2, 16])
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check
        self.use_nested_tensor = False  # (PyTorch's flag for its nested fast path: none here)

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """``num_layers`` copies of ``decoder_layer``, then ``norm`` if given."""

    def __init__(self, decoder_layer: Module, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                      memory_key_padding_mask, bool(tgt_is_causal), memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need": ``num_encoder_layers``
    encoder layers and ``num_decoder_layers`` decoder layers, each stack followed by a layer
    norm (PyTorch's ``encoder``/``decoder`` names; weight matrices Xavier-uniform).

    Example:
        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1,
        ...                        num_decoder_layers=1, dim_feedforward=32, batch_first=True)
        >>> mask = nn.Transformer.generate_square_subsequent_mask(5)
        >>> model(ember.randn(2, 7, 16), ember.randn(2, 5, 16), tgt_mask=mask).shape
        ember.Size([2, 5, 16])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = "relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        layer_args = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                      batch_first, norm_first, bias, device, dtype)
        norm = {"eps": layer_norm_eps, "bias": bias, "device": device, "dtype": dtype}
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*layer_args), num_encoder_layers, LayerNorm(d_model, **norm))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*layer_args), num_decoder_layers, LayerNorm(d_model, **norm))
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        batch = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch] != tgt.shape[batch]:
            raise ShapeError(f"Transformer: the batch sizes of src {tuple(src.shape)} and tgt "
                              f"{tuple(tgt.shape)} differ (batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: src {tuple(src.shape)} and tgt {tuple(tgt.shape)} "
                              f"must both have d_model={self.d_model} features")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None,
                                        dtype: Any = None) -> Tensor:
        """The ``(sz, sz)`` causal mask: ``-inf`` above the diagonal, 0 elsewhere.

        Example:
            >>> nn.Transformer.generate_square_subsequent_mask(2)
            tensor([[0., -inf],
                    [0., 0.]])
        """
        return ember.full((sz, sz), float("-inf"), dtype=dtype, device=device).triu(1)
