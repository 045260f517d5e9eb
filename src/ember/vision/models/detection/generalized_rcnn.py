"""``GeneralizedRCNN``: transform → backbone → region proposals → RoI heads → back to the
input sizes, the skeleton the R-CNN detectors share."""

from __future__ import annotations

import re
from collections import OrderedDict

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models._utils import LegacyKeys

__all__ = ["GeneralizedRCNN"]


def _mask_fcn(match: re.Match) -> str:
    return f"roi_heads.mask_head.{int(match[1]) - 1}.0.{match[2]}"


def check_targets(targets: list[dict[str, Tensor]] | None) -> None:
    """Training targets as torchvision's detectors require them: given, with ``(N, 4)`` boxes."""
    if targets is None:
        raise ArgumentError("In training mode, targets should be passed")
    for target in targets:
        if "labels" not in target:
            raise ArgumentError("Every element of targets should have a labels key (int64 "
                                f"class indices); got the keys {sorted(target)}")
        boxes = target.get("boxes")
        if not isinstance(boxes, Tensor):
            raise TypeError(f"Expected target boxes to be of type Tensor, got "
                            f"{type(boxes).__name__}.")
        if boxes.ndim != 2 or boxes.shape[-1] != 4:
            raise ArgumentError(f"Expected target boxes to be a tensor of shape [N, 4], got "
                                f"{tuple(boxes.shape)}.")


def check_degenerate(targets: list[dict[str, Tensor]]) -> None:
    """Refuses boxes without positive width and height (after the transform)."""
    for index, target in enumerate(targets):
        boxes = target["boxes"]
        bad = (boxes[:, 2:] <= boxes[:, :2]).any(1)
        if bool(bad.any()):
            first = int(ember.where(bad)[0][0])
            raise ArgumentError("All bounding boxes should have positive height and width. "
                                f"Found invalid box {boxes[first].tolist()} for target at "
                                f"index {index}.")


def image_sizes(model: str, images: list[Tensor]) -> list[tuple[int, int]]:
    """The ``(height, width)`` of each ``(C, H, W)`` input image."""
    sizes = []
    for image in images:
        if image.ndim != 3:
            raise ArgumentError(f"{model}: each image must be (C, H, W), got "
                                f"{tuple(image.shape)}")
        sizes.append((int(image.shape[-2]), int(image.shape[-1])))
    return sizes


def backbone_features(model: nn.Module, images: list[Tensor],
                      targets: list[dict[str, Tensor]] | None) -> tuple:
    """What every detector does first: check the targets (in training), run
    ``model.transform`` and ``model.backbone``. Returns the :class:`ImageList`, the transformed
    targets, the original image sizes and the features (an ordered dict of maps)."""
    if model.training:
        check_targets(targets)
    if targets is not None and len(targets) != len(images):
        raise ArgumentError(f"{type(model).__name__}: {len(images)} images but {len(targets)} "
                            "targets; give one target dict per image")
    original_sizes = image_sizes(type(model).__name__, images)
    images, targets = model.transform(images, targets)
    if targets is not None:
        check_degenerate(targets)
    features = model.backbone(images.tensors)
    if isinstance(features, Tensor):
        features = OrderedDict([("0", features)])
    return images, targets, original_sizes, features


def one_stage_outputs(model: nn.Module, images: list[Tensor],
                      targets: list[dict[str, Tensor]] | None) -> tuple:
    """:func:`backbone_features`, then ``model.head`` and ``model.anchor_generator`` on the
    feature maps. Returns the :class:`ImageList`, the transformed targets, the original image
    sizes, the maps (a list), the head outputs and the per-image anchors."""
    images, targets, original_sizes, features = backbone_features(model, images, targets)
    features = list(features.values())
    return (images, targets, original_sizes, features, model.head(features),
            model.anchor_generator(images, features))


# checkpoints saved before torchvision 0.13 (its published COCO weights among them) name the
# convolutions wrapped in Conv2dNormActivation since then without the wrapper
FPN_LEGACY_KEYS = (
    (re.compile(r"^(backbone\.fpn\.(?:inner|layer)_blocks\.\d+)\.(weight|bias)$"), r"\1.0.\2"),)


class GeneralizedRCNN(LegacyKeys, nn.Module):
    """In training, ``model(images, targets)`` returns a dict of losses; in eval,
    ``model(images)`` returns one dict per image with ``"boxes"`` (``(N, 4)``, ``x1, y1, x2,
    y2`` in the input's pixels), ``"labels"`` and ``"scores"`` (and ``"masks"`` for Mask
    R-CNN). ``images`` is a list of ``(C, H, W)`` float tensors (any sizes); each target has
    ``"boxes"`` (float ``(N, 4)``) and ``"labels"`` (int64 ``(N,)``)."""

    LEGACY_KEYS = (
        *FPN_LEGACY_KEYS,
        (re.compile(r"^(rpn\.head\.conv)\.(weight|bias)$"), r"\1.0.0.\2"),
        (re.compile(r"^roi_heads\.mask_head\.mask_fcn(\d+)\.(weight|bias)$"), _mask_fcn),
    )

    def __init__(self, backbone: nn.Module, rpn: nn.Module, roi_heads: nn.Module,
                 transform: nn.Module) -> None:
        super().__init__()
        self.transform, self.backbone = transform, backbone
        self.rpn, self.roi_heads = rpn, roi_heads

    def forward(self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
                ) -> dict[str, Tensor] | list[dict[str, Tensor]]:
        images, targets, original_sizes, features = backbone_features(self, images, targets)
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes,
                                                     targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_sizes)
        if self.training:
            return {**detector_losses, **proposal_losses}
        return detections
