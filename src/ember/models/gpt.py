"""A small decoder-only transformer (GPT-2 layout): token and learned position embeddings,
pre-norm blocks of causal self-attention and a 4× GELU MLP, a final LayerNorm and a linear
head. Module names follow the common minimal PyTorch GPT (``tok_emb``, ``pos_emb``,
``blocks.0.ln_1``, ``blocks.0.attn.c_attn``, ``blocks.0.mlp.c_fc``, ``ln_f``, ``head``)."""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
from ember import Tensor, nn
from ember.errors import ArgumentError


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position t sees positions ≤ t.

    Written with matmul and softmax by default; ``flash=True`` calls
    ``F.scaled_dot_product_attention(..., is_causal=True)`` instead (same result).
    """

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0,
                 flash: bool = False) -> None:
        super().__init__()
        if n_head < 1 or d_model % n_head:
            raise ArgumentError(f"d_model ({d_model}) must be divisible by n_head ({n_head}), "
                                "a positive number of heads")
        self.n_head, self.dropout, self.flash = n_head, dropout, flash
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
                   for t in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=self.dropout if self.training else 0.0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
            mask = ember.ones(T, T, dtype=ember.bool, device=x.device).triu(1)
            att = self.attn_drop(F.softmax(att.masked_fill(mask, float("-inf")), dim=-1))
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_drop(self.c_proj(y))


class MLP(nn.Module):
    """Linear d→4d, GELU, Linear 4d→d, dropout."""

    def __init__(self, d_model: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, d_model: int, n_head: int, dropout: float = 0.0,
                 flash: bool = False) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_head, dropout, flash)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, dropout)

    def forward(self, x: Tensor) -> Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """Decoder-only transformer language model; ``forward(idx)`` gives logits
    ``(B, T, vocab_size)`` for token indices ``idx`` of shape ``(B, T)``, T ≤ block_size.

    Weights start as in GPT-2: normal(0, 0.02) for linear and embedding weights, zero biases.
    """

    def __init__(self, vocab_size: int = 256, block_size: int = 128, n_layer: int = 4,
                 n_head: int = 4, d_model: int = 256, dropout: float = 0.0,
                 flash: bool = False) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(d_model, n_head, dropout, flash)
                                    for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear):
                nn.init.zeros_(module.bias)

    def forward(self, idx: Tensor) -> Tensor:
        if idx.ndim != 2:
            raise ArgumentError(f"GPT: idx must be token indices of shape (batch, time), got "
                                f"shape {tuple(idx.shape)}. Hint: idx.unsqueeze(0) for one "
                                "sequence")
        T = idx.shape[1]
        if T > self.block_size:
            raise ArgumentError(f"GPT: sequence length {T} exceeds block_size {self.block_size}")
        x = self.drop(self.tok_emb(idx) + self.pos_emb(ember.arange(T)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))

    @ember.no_grad()
    def generate(self, idx: Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None, generator: ember.Generator | None = None) -> Tensor:
        """Extends ``idx`` (B, T) by sampling ``max_new_tokens`` tokens one at a time, from
        the softmax of the logits divided by ``temperature`` (> 0), kept to the ``top_k``
        likeliest tokens if given (``top_k=1``: greedy decoding)."""
        if not temperature > 0:
            raise ArgumentError(f"GPT.generate: temperature must be positive, got "
                                f"{temperature}. Hint: top_k=1 decodes greedily")
        if top_k is not None and top_k < 1:
            raise ArgumentError(f"GPT.generate: top_k must be at least 1 (or None for all "
                                f"tokens), got {top_k}")
        if idx.ndim != 2 or idx.shape[1] == 0:
            raise ArgumentError(f"GPT.generate: idx must be token indices of shape (batch, "
                                f"time) with at least one token, got shape {tuple(idx.shape)}")
        for _ in range(max_new_tokens):
            logits = self(idx[:, -self.block_size:])[:, -1, :] / temperature
            if top_k is not None:
                kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1)[0][:, -1:]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = ember.multinomial(F.softmax(logits, dim=-1), 1, generator=generator)
            idx = ember.cat([idx, nxt], dim=1)
        return idx


def gpt(vocab_size: int = 256, block_size: int = 128, n_layer: int = 4, n_head: int = 4,
        d_model: int = 256, dropout: float = 0.0, flash: bool = False) -> GPT:
    """A :class:`GPT` (default: 4 layers, 4 heads, width 256, byte vocabulary, 128 context).

    Example:
        >>> model = ember.models.gpt(n_layer=2, d_model=64)
        >>> model(ember.randint(0, 256, (2, 16))).shape
        ember.Size([2, 16, 256])
    """
    return GPT(vocab_size, block_size, n_layer, n_head, d_model, dropout, flash)
