"""RAFT's update step: the motion encoder (correlation features and current flow), the
convolutional GRU(s), the flow head giving the flow's increment, and the mask predictor for
the convex upsampling (paper §3.3, appendix A), with torchvision's module names.

Example:
    >>> block = UpdateBlock(motion_encoder=MotionEncoder(in_channels_corr=18),
    ...                     recurrent_block=RecurrentBlock(input_size=128 + 8, hidden_size=16),
    ...                     flow_head=FlowHead(in_channels=16, hidden_size=8))
    >>> h, delta = block(ember.zeros(1, 16, 4, 4), ember.zeros(1, 8, 4, 4),
    ...                  ember.zeros(1, 18, 4, 4), ember.zeros(1, 2, 4, 4))
    >>> h.shape, delta.shape
    (ember.Size([1, 16, 4, 4]), ember.Size([1, 2, 4, 4]))
"""

from __future__ import annotations

from collections.abc import Sequence

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError
from ember.vision.ops import Conv2dNormActivation

__all__ = ["ConvGRU", "FlowHead", "MaskPredictor", "MotionEncoder", "RecurrentBlock",
           "UpdateBlock"]


def _conv_relu(in_channels: int, out_channels: int, kernel_size: int) -> nn.Module:
    return Conv2dNormActivation(in_channels, out_channels, kernel_size=kernel_size,
                                norm_layer=None)


class MotionEncoder(nn.Module):
    """Correlation features through 1×1 (and 3×3) conv-ReLUs (``corr_layers``), the flow
    through 7×7 and 3×3 ones (``flow_layers``), both joined by a 3×3 conv-ReLU to
    ``out_channels - 2``, then the flow itself appended: ``out_channels`` in all."""

    def __init__(self, *, in_channels_corr: int, corr_layers: Sequence[int] = (256, 192),
                 flow_layers: Sequence[int] = (128, 64), out_channels: int = 128) -> None:
        super().__init__()
        if len(flow_layers) != 2:
            raise ArgumentError(f"MotionEncoder: flow_layers needs 2 widths, got "
                                f"{len(flow_layers)}")
        if len(corr_layers) not in (1, 2):
            raise ArgumentError(f"MotionEncoder: corr_layers needs 1 or 2 widths, got "
                                f"{len(corr_layers)}")
        self.convcorr1 = _conv_relu(in_channels_corr, corr_layers[0], 1)
        self.convcorr2 = (_conv_relu(corr_layers[0], corr_layers[1], 3)
                          if len(corr_layers) == 2 else nn.Identity())
        self.convflow1 = _conv_relu(2, flow_layers[0], 7)
        self.convflow2 = _conv_relu(flow_layers[0], flow_layers[1], 3)
        self.conv = _conv_relu(corr_layers[-1] + flow_layers[-1], out_channels - 2, 3)
        self.out_channels = out_channels

    def forward(self, flow: Tensor, corr_features: Tensor) -> Tensor:
        corr = self.convcorr2(self.convcorr1(corr_features))
        motion = self.convflow2(self.convflow1(flow))
        return ember.cat([self.conv(ember.cat([corr, motion], dim=1)), flow], dim=1)


class ConvGRU(nn.Module):
    """A GRU whose gates are convolutions of the (hidden, input) concatenation:
    ``z, r = σ(convz), σ(convr)``, ``q = tanh(convq([r·h, x]))``, ``h ← (1-z)·h + z·q``."""

    def __init__(self, *, input_size: int, hidden_size: int,
                 kernel_size: int | tuple[int, int], padding: int | tuple[int, int]) -> None:
        super().__init__()
        width = hidden_size + input_size
        self.convz = nn.Conv2d(width, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convr = nn.Conv2d(width, hidden_size, kernel_size=kernel_size, padding=padding)
        self.convq = nn.Conv2d(width, hidden_size, kernel_size=kernel_size, padding=padding)

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        hx = ember.cat([h, x], dim=1)
        z = self.convz(hx).sigmoid()
        r = self.convr(hx).sigmoid()
        q = self.convq(ember.cat([r * h, x], dim=1)).tanh()
        return (1 - z) * h + z * q


class RecurrentBlock(nn.Module):
    """One or two :class:`ConvGRU` in sequence, one per ``kernel_size``/``padding`` (RAFT's
    default: a 1×5 then a 5×1 GRU)."""

    def __init__(self, *, input_size: int, hidden_size: int,
                 kernel_size: Sequence[int | tuple[int, int]] = ((1, 5), (5, 1)),
                 padding: Sequence[int | tuple[int, int]] = ((0, 2), (2, 0))) -> None:
        super().__init__()
        if len(kernel_size) != len(padding):
            raise ArgumentError(f"RecurrentBlock: kernel_size and padding differ in length, "
                                f"{len(kernel_size)} and {len(padding)}")
        if len(kernel_size) not in (1, 2):
            raise ArgumentError(f"RecurrentBlock: kernel_size needs 1 or 2 entries, got "
                                f"{len(kernel_size)}")
        grus = [ConvGRU(input_size=input_size, hidden_size=hidden_size, kernel_size=k, padding=p)
                for k, p in zip(kernel_size, padding, strict=True)]
        self.convgru1 = grus[0]
        if len(grus) == 2:
            self.convgru2 = grus[1]
        self.hidden_size = hidden_size

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        h = self.convgru1(h, x)
        return self.convgru2(h, x) if hasattr(self, "convgru2") else h


class FlowHead(nn.Module):
    """3×3 conv → ReLU → 3×3 conv to the 2 channels of the flow's increment."""

    def __init__(self, *, in_channels: int, hidden_size: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, hidden_size, 3, padding=1)
        self.conv2 = nn.Conv2d(hidden_size, 2, 3, padding=1)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x: Tensor) -> Tensor:
        return self.conv2(self.relu(self.conv1(x)))


class UpdateBlock(nn.Module):
    """One refinement: ``(hidden, context, corr_features, flow)`` → the new hidden state and
    the flow's increment. Exposes ``hidden_state_size`` (the recurrent block's)."""

    def __init__(self, *, motion_encoder: nn.Module, recurrent_block: nn.Module,
                 flow_head: nn.Module) -> None:
        super().__init__()
        self.motion_encoder = motion_encoder
        self.recurrent_block = recurrent_block
        self.flow_head = flow_head
        self.hidden_state_size = recurrent_block.hidden_size

    def forward(self, hidden_state: Tensor, context: Tensor, corr_features: Tensor,
                flow: Tensor) -> tuple[Tensor, Tensor]:
        motion = self.motion_encoder(flow, corr_features)
        hidden_state = self.recurrent_block(hidden_state, ember.cat([context, motion], dim=1))
        return hidden_state, self.flow_head(hidden_state)


class MaskPredictor(nn.Module):
    """The convex-upsampling weights from the hidden state: a 3×3 conv-ReLU and a 1×1 conv to
    8·8·9 channels, scaled by ``multiplier`` (RAFT's 0.25 damps that branch's gradients).
    RAFT-small has none (it upsamples bilinearly)."""

    def __init__(self, *, in_channels: int, hidden_size: int, multiplier: float = 0.25) -> None:
        super().__init__()
        self.convrelu = _conv_relu(in_channels, hidden_size, 3)
        self.conv = nn.Conv2d(hidden_size, 8 * 8 * 9, 1, padding=0)
        self.multiplier = multiplier

    def forward(self, x: Tensor) -> Tensor:
        return self.multiplier * self.conv(self.convrelu(x))
