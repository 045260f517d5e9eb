"""Quantization-aware-training ``Embedding`` and ``EmbeddingBag`` (``torch.ao.nn.qat``): the
float modules with the table passed through a per-row fake quantizer with float scales and
zero points (``default_embedding_qat_qconfig``) in every forward."""

from __future__ import annotations

from typing import Any

from ember import nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.quant.qtypes import per_channel_affine_float_qparams
from ember.tensor import Tensor

__all__ = ["Embedding", "EmbeddingBag"]


class _QATEmbedding:
    """Builds the QAT twin of a float embedding (sharing its table) with ``qconfig``."""

    @classmethod
    def from_float(cls, mod: Module) -> Module:
        qconfig = getattr(mod, "qconfig", None)
        if not qconfig:
            raise ArgumentError(f"qat.{cls.__name__}.from_float: the input module needs a qconfig "
                                "(default_embedding_qat_qconfig)")
        fake_quant = qconfig.weight()
        if fake_quant.qscheme is not per_channel_affine_float_qparams:
            raise ArgumentError(f"{cls.__name__} weights require a qscheme of "
                                "ember.per_channel_affine_float_qparams, got "
                                f"{fake_quant.qscheme!r}")
        qat = cls.__new__(cls)
        Module.__init__(qat)  # (fresh hooks; the float module's settings and table, shared)
        for name, value in vars(mod).items():
            qat.__dict__.setdefault(name, value)
        qat._parameters.update(mod._parameters)
        qat.qconfig = qconfig
        qat.weight_fake_quant = fake_quant
        return qat


class Embedding(_QATEmbedding, nn.Embedding):
    """``nn.Embedding`` with a fake-quantized table.

    Example:
        >>> from ember.ao.quantization import default_embedding_qat_qconfig
        >>> m = nn.Embedding(10, 3)
        >>> m.qconfig = default_embedding_qat_qconfig
        >>> Embedding.from_float(m)(ember.tensor([1, 2])).shape
        ember.Size([2, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.embedding(input, self.weight_fake_quant(self.weight), self.padding_idx,
                           self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse)


class EmbeddingBag(_QATEmbedding, nn.EmbeddingBag):
    """``nn.EmbeddingBag`` with a fake-quantized table."""

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Any:
        return F.embedding_bag(input, self.weight_fake_quant(self.weight), offsets,
                               self.max_norm, self.norm_type, self.scale_grad_by_freq, self.mode,
                               self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)
