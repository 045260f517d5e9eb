"""torchvision's RAFT (Teed & Deng, "RAFT: Recurrent All-Pairs Field Transforms for Optical
Flow", 2020): features of both images correlated all-pairs into a pyramid, then a recurrent
update block refining a 1/8-resolution flow from the pyramid's lookups, each estimate
upsampled to full resolution. torchvision's module names, so its state dicts
(``raft_large_C_T_SKHT_V2-ff5fadd5.pth``, …) load.

Example:
    >>> model = raft_small().eval()
    >>> flows = model(ember.randn(1, 3, 128, 128), ember.randn(1, 3, 128, 128),
    ...               num_flow_updates=2)
    >>> len(flows), flows[-1].shape
    (2, ember.Size([1, 2, 128, 128]))
"""

from __future__ import annotations

from functools import partial
from typing import Any

import ember
from ember import Tensor, nn
from ember.errors import ArgumentError, ShapeError
from ember.vision.models._api import make_builder
from ember.vision.models.optical_flow._utils import make_coords_grid, upsample_flow
from ember.vision.models.optical_flow.corr import CorrBlock
from ember.vision.models.optical_flow.encoder import (
    BottleneckBlock,
    FeatureEncoder,
    ResidualBlock,
)
from ember.vision.models.optical_flow.update import (
    FlowHead,
    MaskPredictor,
    MotionEncoder,
    RecurrentBlock,
    UpdateBlock,
)

__all__ = ["RAFT", "raft_large", "raft_small"]


class RAFT(nn.Module):
    """RAFT from its parts (torchvision's signature): ``feature_encoder`` (both images, 8×
    down), ``context_encoder`` (the first image; its channels split into the initial hidden
    state, through tanh, and the context, through ReLU), ``corr_block`` (``build_pyramid``,
    ``index_pyramid``, ``out_channels``), ``update_block`` (with ``hidden_state_size``) and
    an optional ``mask_predictor`` for convex upsampling (bilinear without one).

    ``forward(image1, image2, num_flow_updates=12)`` takes (N, 3, H, W) images with H and W
    multiples of 8 and returns the list of the ``num_flow_updates`` flow estimates, each
    (N, 2, H, W); the last is the best. Gradients flow through each update's increment, not
    through the matches it starts from (as the paper's)."""

    def __init__(self, *, feature_encoder: nn.Module, context_encoder: nn.Module,
                 corr_block: nn.Module, update_block: nn.Module,
                 mask_predictor: nn.Module | None = None) -> None:
        super().__init__()
        self.feature_encoder = feature_encoder
        self.context_encoder = context_encoder
        self.corr_block = corr_block
        self.update_block = update_block
        self.mask_predictor = mask_predictor
        if not hasattr(update_block, "hidden_state_size"):
            raise ArgumentError("RAFT: the update_block needs a 'hidden_state_size' attribute "
                                "(the hidden state's channels)")

    def _encode(self, name: str, encoder: nn.Module, images: Tensor, h: int, w: int) -> Tensor:
        out = encoder(images)
        if tuple(out.shape[-2:]) != (h // 8, w // 8):
            raise ShapeError(f"RAFT: the {name} gave {tuple(out.shape[-2:])} from {(h, w)} "
                             f"images; it must downsample H and W by 8")
        return out

    def forward(self, image1: Tensor, image2: Tensor, num_flow_updates: int = 12) -> list[Tensor]:
        if image1.ndim != 4 or image2.ndim != 4:
            raise ShapeError(f"RAFT: expected (N, 3, H, W) image batches, got "
                             f"{tuple(image1.shape)} and {tuple(image2.shape)} (for one pair: "
                             "image.unsqueeze(0))")
        n, _, h, w = image1.shape
        if image2.shape != image1.shape:
            raise ShapeError(f"RAFT: the images differ in shape, {tuple(image1.shape)} and "
                             f"{tuple(image2.shape)}")
        if h % 8 or w % 8:
            raise ShapeError(f"RAFT: image H and W must be multiples of 8, got {h} and {w}")
        fmaps = self._encode("feature encoder", self.feature_encoder,
                             ember.cat([image1, image2], dim=0), h, w)
        fmap1, fmap2 = fmaps.chunk(2, dim=0)
        self.corr_block.build_pyramid(fmap1, fmap2)
        context = self._encode("context encoder", self.context_encoder, image1, h, w)
        hidden_size = self.update_block.hidden_state_size
        if context.shape[1] <= hidden_size:
            raise ShapeError(f"RAFT: the context encoder gives {context.shape[1]} channels; it "
                             f"needs more than the hidden state's {hidden_size}")
        hidden_state, context = context.split([hidden_size, context.shape[1] - hidden_size],
                                              dim=1)
        hidden_state, context = hidden_state.tanh(), context.relu()
        coords0 = make_coords_grid(n, h // 8, w // 8, dtype=fmap1.dtype, device=fmap1.device)
        coords1 = coords0
        flows = []
        for _ in range(num_flow_updates):
            coords1 = coords1.detach()
            corr_features = self.corr_block.index_pyramid(centroids_coords=coords1)
            hidden_state, delta = self.update_block(hidden_state, context, corr_features,
                                                    coords1 - coords0)
            coords1 = coords1 + delta
            mask = None if self.mask_predictor is None else self.mask_predictor(hidden_state)
            flows.append(upsample_flow(coords1 - coords0, up_mask=mask))
        return flows


def _raft(*, encoder: dict[str, Any], context: dict[str, Any], radius: int,
          motion: dict[str, Any], hidden: int, gru: dict[str, Any], head: int, mask: bool,
          feature_encoder: nn.Module | None = None, context_encoder: nn.Module | None = None,
          corr_block: nn.Module | None = None, update_block: nn.Module | None = None,
          mask_predictor: nn.Module | None = None) -> RAFT:
    """The model of an architecture; any part given replaces the one it would build."""
    feature_encoder = feature_encoder or FeatureEncoder(**encoder)
    context_encoder = context_encoder or FeatureEncoder(**context)
    corr_block = corr_block or CorrBlock(num_levels=4, radius=radius)
    if update_block is None:
        motion_encoder = MotionEncoder(in_channels_corr=corr_block.out_channels, **motion)
        context_size = context["layers"][-1] - hidden
        update_block = UpdateBlock(
            motion_encoder=motion_encoder,
            recurrent_block=RecurrentBlock(input_size=motion_encoder.out_channels + context_size,
                                           hidden_size=hidden, **gru),
            flow_head=FlowHead(in_channels=hidden, hidden_size=head))
    if mask_predictor is None and mask:
        mask_predictor = MaskPredictor(in_channels=hidden, hidden_size=256, multiplier=0.25)
    return RAFT(feature_encoder=feature_encoder, context_encoder=context_encoder,
                corr_block=corr_block, update_block=update_block, mask_predictor=mask_predictor)


_LARGE = (64, 64, 96, 128, 256)
_SMALL = (32, 32, 64, 96)

raft_large = make_builder("raft_large", partial(
    _raft, encoder={"layers": _LARGE, "block": ResidualBlock, "norm_layer": nn.InstanceNorm2d},
    context={"layers": _LARGE, "block": ResidualBlock, "norm_layer": nn.BatchNorm2d}, radius=4,
    motion={"corr_layers": (256, 192), "flow_layers": (128, 64), "out_channels": 128},
    hidden=128, gru={"kernel_size": ((1, 5), (5, 1)), "padding": ((0, 2), (2, 0))}, head=256,
    mask=True), "RAFT (optical flow, 5.3M parameters)", __name__)
raft_small = make_builder("raft_small", partial(
    _raft, encoder={"layers": (*_SMALL, 128), "block": BottleneckBlock,
                    "norm_layer": nn.InstanceNorm2d},
    context={"layers": (*_SMALL, 160), "block": BottleneckBlock, "norm_layer": None},
    radius=3, motion={"corr_layers": (96,), "flow_layers": (64, 32), "out_channels": 82},
    hidden=96, gru={"kernel_size": (3,), "padding": (1,)}, head=128, mask=False),
    "RAFT-small (optical flow, 1.0M parameters; bilinear upsampling)", __name__)
