"""Datasets for ``ember train``: Fashion-MNIST, normalised once into tensors and served in
shuffled batches whose order comes from a seeded generator."""

from __future__ import annotations

from typing import Any

import ember
from ember.train.config import TrainConfig
from ember.utils import data

# Mean and standard deviation of the Fashion-MNIST training pixels (scaled to [0, 1]).
FASHION_MNIST_STATS = (0.2860, 0.3530)
EVAL_BATCH = 1000


def _as_tensors(dataset: Any, limit: int | None) -> data.TensorDataset:
    mean, std = FASHION_MNIST_STATS
    images, labels = dataset.data, dataset.targets
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    x = ((images.float() / 255.0 - mean) / std).unsqueeze(1)
    return data.TensorDataset(x, labels.long())


def _batches(dataset: Any, batch_size: int, sampler: Any, num_workers: int) -> Any:
    # A BatchSampler as the sampler, batch_size=None: each fetch indexes the tensors once with
    # a whole batch of indices instead of stacking single images.
    batches = data.BatchSampler(sampler, batch_size, drop_last=False)
    return data.DataLoader(dataset, sampler=batches, batch_size=None, num_workers=num_workers)


def build_loaders(cfg: TrainConfig) -> tuple[Any, Any, ember.Generator]:
    """Training and test loaders for ``cfg.dataset``, and the generator that orders the
    training batches (reseed it each epoch)."""
    from ember.vision.datasets import FashionMNIST
    train = _as_tensors(FashionMNIST(cfg.data_dir, train=True), cfg.train_size)
    test = _as_tensors(FashionMNIST(cfg.data_dir, train=False), cfg.test_size)
    order = ember.Generator().manual_seed(cfg.seed)
    train_loader = _batches(train, cfg.batch_size, data.RandomSampler(train, generator=order),
                            cfg.num_workers)
    test_loader = _batches(test, EVAL_BATCH, data.SequentialSampler(test), cfg.num_workers)
    return train_loader, test_loader, order
