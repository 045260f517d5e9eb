"""Vision Transformers B/16, B/32, L/16, L/32 and H/14 (Dosovitskiy et al. 2020) as
torchvision builds them: a strided-convolution patch embedding (or a convolutional stem), a
class token, learned position embeddings, pre-norm encoder blocks and a linear head.

Example:
    >>> vit = VisionTransformer(image_size=32, patch_size=16, num_layers=1, num_heads=2,
    ...                         hidden_dim=8, mlp_dim=16, num_classes=3)
    >>> vit(ember.randn(2, 3, 32, 32)).shape
    ember.Size([2, 3])
"""

from __future__ import annotations

import math
import re
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.nn import init
from ember.vision.models._api import make_builder
from ember.vision.models._utils import LegacyKeys
from ember.vision.ops import MLP, Conv2dNormActivation

__all__ = ["ConvStemConfig", "VisionTransformer", "vit_b_16", "vit_b_32", "vit_h_14",
           "vit_l_16", "vit_l_32"]

Norm = Callable[..., nn.Module]
LAYER_NORM = partial(nn.LayerNorm, eps=1e-6)  # torchvision's default norm_layer


class ConvStemConfig(NamedTuple):
    """One convolution of a convolutional stem (Xiao et al. 2021) replacing the patchify."""

    out_channels: int
    kernel_size: int
    stride: int
    norm_layer: Norm = nn.BatchNorm2d
    activation_layer: Callable[..., nn.Module] = nn.ReLU


class MLPBlock(MLP):
    """The encoder's feed-forward part: Linear, GELU, dropout, Linear, dropout; Xavier-uniform
    weights and N(0, 1e-6²) biases."""

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float) -> None:
        super().__init__(in_dim, [mlp_dim, in_dim], activation_layer=nn.GELU, inplace=None,
                         dropout=dropout)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Pre-norm transformer block: ``x + dropout(attention(ln_1(x)))``, then
    ``+ mlp(ln_2(·))``."""

    def __init__(self, num_heads: int, hidden_dim: int, mlp_dim: int, dropout: float,
                 attention_dropout: float, norm_layer: Norm = LAYER_NORM) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads,
                                                    dropout=attention_dropout, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 3:
            raise ArgumentError("EncoderBlock: expected (batch_size, seq_length, hidden_dim) got "
                                f"shape {tuple(input.shape)}")
        x = self.ln_1(input)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + input
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    """Position embedding (N(0, 0.02²)), dropout, ``num_layers`` encoder blocks, LayerNorm."""

    def __init__(self, seq_length: int, num_layers: int, num_heads: int, hidden_dim: int,
                 mlp_dim: int, dropout: float, attention_dropout: float,
                 norm_layer: Norm = LAYER_NORM) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(ember.empty(1, seq_length, hidden_dim))
        init.normal_(self.pos_embedding, std=0.02)
        self.dropout = nn.Dropout(dropout)
        self.layers = nn.Sequential(OrderedDict(
            (f"encoder_layer_{i}", EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout,
                                                attention_dropout, norm_layer))
            for i in range(num_layers)))
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim != 3:
            raise ArgumentError("Encoder: expected (batch_size, seq_length, hidden_dim) got "
                                f"shape {tuple(input.shape)}")
        return self.ln(self.layers(self.dropout(input + self.pos_embedding)))


class VisionTransformer(LegacyKeys, nn.Module):
    """torchvision's ``VisionTransformer(image_size, patch_size, num_layers, num_heads,
    hidden_dim, mlp_dim, dropout=0.0, attention_dropout=0.0, num_classes=1000,
    representation_size=None, norm_layer=partial(nn.LayerNorm, eps=1e-6),
    conv_stem_configs=None)``; inputs must be ``image_size`` square. The head starts at zero.
    ``load_state_dict`` also takes torchvision's published checkpoint files, whose MLP keys
    are ``mlp.linear_1``/``mlp.linear_2`` for ``mlp.0``/``mlp.3``."""

    LEGACY_KEYS = ((re.compile(r"(\.mlp\.)linear_1\."), r"\g<1>0."),
                   (re.compile(r"(\.mlp\.)linear_2\."), r"\g<1>3."))

    def __init__(self, image_size: int, patch_size: int, num_layers: int, num_heads: int,
                 hidden_dim: int, mlp_dim: int, dropout: float = 0.0,
                 attention_dropout: float = 0.0, num_classes: int = 1000,
                 representation_size: int | None = None,
                 norm_layer: Norm = LAYER_NORM,
                 conv_stem_configs: list[ConvStemConfig] | None = None) -> None:
        super().__init__()
        if image_size % patch_size != 0:
            raise ArgumentError(f"VisionTransformer: Input shape indivisible by patch size! "
                                f"(image_size {image_size}, patch_size {patch_size})")
        self.image_size, self.patch_size = image_size, patch_size
        self.hidden_dim, self.mlp_dim = hidden_dim, mlp_dim
        self.attention_dropout, self.dropout = attention_dropout, dropout
        self.num_classes, self.representation_size = num_classes, representation_size
        self.norm_layer = norm_layer
        if conv_stem_configs is not None:
            stem = nn.Sequential()
            channels = 3
            for i, cfg in enumerate(conv_stem_configs):
                stem.add_module(f"conv_bn_relu_{i}", Conv2dNormActivation(
                    channels, cfg.out_channels, kernel_size=cfg.kernel_size, stride=cfg.stride,
                    norm_layer=cfg.norm_layer, activation_layer=cfg.activation_layer))
                channels = cfg.out_channels
            stem.add_module("conv_last", nn.Conv2d(channels, hidden_dim, kernel_size=1))
            self.conv_proj: nn.Module = stem
        else:
            self.conv_proj = nn.Conv2d(3, hidden_dim, kernel_size=patch_size, stride=patch_size)
        self.class_token = nn.Parameter(ember.zeros(1, 1, hidden_dim))
        self.seq_length = (image_size // patch_size) ** 2 + 1
        self.encoder = Encoder(self.seq_length, num_layers, num_heads, hidden_dim, mlp_dim,
                               dropout, attention_dropout, norm_layer)
        heads: list[tuple[str, nn.Module]] = []
        if representation_size is None:
            heads.append(("head", nn.Linear(hidden_dim, num_classes)))
        else:
            heads += [("pre_logits", nn.Linear(hidden_dim, representation_size)),
                      ("act", nn.Tanh()),
                      ("head", nn.Linear(representation_size, num_classes))]
        self.heads = nn.Sequential(OrderedDict(heads))
        self._init_weights()

    def _init_weights(self) -> None:
        if isinstance(self.conv_proj, nn.Conv2d):
            w = self.conv_proj.weight
            init.trunc_normal_(w, std=math.sqrt(1 / (w.shape[1] * w.shape[2] * w.shape[3])))
            init.zeros_(self.conv_proj.bias)
        else:
            last = self.conv_proj.conv_last
            init.normal_(last.weight, mean=0.0, std=math.sqrt(2.0 / last.out_channels))
            init.zeros_(last.bias)
        if hasattr(self.heads, "pre_logits"):
            pre = self.heads.pre_logits
            init.trunc_normal_(pre.weight, std=math.sqrt(1 / pre.in_features))
            init.zeros_(pre.bias)
        init.zeros_(self.heads.head.weight)
        init.zeros_(self.heads.head.bias)

    def _process_input(self, x: Tensor) -> Tensor:
        n, _, h, w = x.shape
        if h != self.image_size or w != self.image_size:
            raise ArgumentError(f"VisionTransformer: Wrong image size! Expected "
                                f"{self.image_size}x{self.image_size} but got {h}x{w}. Hint: "
                                "build it with image_size=... for other input sizes")
        p = self.patch_size
        x = self.conv_proj(x)  # (n, hidden_dim, h / p, w / p) -> (n, patches, hidden_dim)
        return x.reshape(n, self.hidden_dim, (h // p) * (w // p)).permute(0, 2, 1)

    def forward(self, x: Tensor) -> Tensor:
        x = self._process_input(x)
        x = ember.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


def _vit(patch_size: int, num_layers: int, num_heads: int, hidden_dim: int, mlp_dim: int,
         image_size: int = 224, **kwargs: Any) -> VisionTransformer:
    return VisionTransformer(image_size, patch_size, num_layers, num_heads, hidden_dim, mlp_dim,
                             **kwargs)


def _builder(name: str, doc: str, *arch: int):
    return make_builder(name, partial(_vit, *arch), doc, __name__)


vit_b_16 = _builder("vit_b_16", "ViT-Base/16", 16, 12, 12, 768, 3072)
vit_b_32 = _builder("vit_b_32", "ViT-Base/32", 32, 12, 12, 768, 3072)
vit_l_16 = _builder("vit_l_16", "ViT-Large/16", 16, 24, 16, 1024, 4096)
vit_l_32 = _builder("vit_l_32", "ViT-Large/32", 32, 24, 16, 1024, 4096)
vit_h_14 = _builder("vit_h_14", "ViT-Huge/14", 14, 32, 16, 1280, 5120)
