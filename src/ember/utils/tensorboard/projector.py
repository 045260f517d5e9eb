"""The embedding projector's files: each embedding's vectors (``tensors.tsv``), labels
(``metadata.tsv``) and thumbnails (``sprite.png``) in a folder of its own, and
``projector_config.pbtxt``, which lists them, in the run's directory."""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo, ProjectorConfig

from ember.errors import ArgumentError
from ember.utils.tensorboard.summaries import grid, to_numpy


def folder_name(tag: str) -> str:
    """``tag`` as one folder name: ``%``, ``/`` and ``\\`` escaped as ``%25``, ``%2f``, ``%5c``."""
    return tag.replace("%", "%25").replace("/", "%2f").replace("\\", "%5c")


def write_embedding(config: ProjectorConfig, log_dir: str, mat: Any, metadata: Any,
                    label_img: Any, global_step: int, tag: str,
                    metadata_header: Sequence[str] | None) -> None:
    """Writes one embedding's files under ``<log_dir>/<step>/<tag>``, adds it to ``config``
    and rewrites the run's ``projector_config.pbtxt``."""
    from google.protobuf import text_format

    vectors = to_numpy(mat)
    if vectors.ndim != 2:
        raise ArgumentError(f"add_embedding: mat holds one vector a row (2 dimensions), got shape "
                            f"{vectors.shape}")
    count = vectors.shape[0]
    images = None if label_img is None else to_numpy(label_img)
    if images is not None and (images.ndim != 4 or images.shape[1] not in (1, 3)):
        raise ArgumentError(f"add_embedding: label_img holds (N, C, H, W) thumbnails with 1 or "
                            f"3 channels, got shape {images.shape}")
    for name, size in (("metadata", None if metadata is None else len(metadata)),
                       ("label_img", None if images is None else images.shape[0])):
        if size is not None and size != count:
            raise ArgumentError(f"add_embedding: {name} has {size} entries for {count} vectors")
    subdir = f"{global_step:05d}/{folder_name(tag)}"
    folder = os.path.join(log_dir, subdir)
    os.makedirs(folder, exist_ok=True)
    info = EmbeddingInfo(tensor_name=f"{tag}:{global_step:05d}",
                         tensor_path=f"{subdir}/tensors.tsv")
    rows = ("\t".join(str(v.item()) for v in row) for row in vectors)
    _write(folder, "tensors.tsv", "".join(r + "\n" for r in rows).encode())
    if metadata is not None:
        info.metadata_path = f"{subdir}/metadata.tsv"
        _write(folder, "metadata.tsv", _labels(metadata, metadata_header))
    if images is not None:
        info.sprite.image_path = f"{subdir}/sprite.png"
        info.sprite.single_image_dim.extend([images.shape[3], images.shape[2]])
        _write(folder, "sprite.png", _sprite(images))
    config.embeddings.append(info)
    _write(log_dir, "projector_config.pbtxt", text_format.MessageToString(config).encode())


def _write(folder: str, name: str, data: bytes) -> None:
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def _labels(metadata: Sequence[Any], header: Sequence[str] | None) -> bytes:
    """One label a line, or with ``header`` a table of tab-separated columns under it."""
    if not header:
        lines = [str(label) for label in metadata]
    else:
        if any(len(row) != len(header) for row in metadata):
            raise ArgumentError(f"add_embedding: metadata_header has {len(header)} columns; each "
                                f"metadata row needs as many")
        lines = ["\t".join(str(cell) for cell in row) for row in [header, *metadata]]
    return ("\n".join(lines) + "\n").encode()


def _sprite(images: np.ndarray) -> bytes:
    """The (N, C, H, W) thumbnails (values in [0, 1]) on a square sheet, ⌈√N⌉ a row."""
    from PIL import Image

    sheet = grid(images, math.ceil(math.sqrt(images.shape[0]))).transpose(1, 2, 0)
    square = np.zeros((sheet.shape[1], sheet.shape[1], 3))
    square[:sheet.shape[0]] = sheet
    png = io.BytesIO()
    Image.fromarray((square * 255).clip(0, 255).astype(np.uint8)).save(png, format="PNG")
    return png.getvalue()
