"""Datasets for ``ember train``: Fashion-MNIST, normalised once into tensors and served in
shuffled batches whose order comes from a seeded generator."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import ember
from ember.train.config import ConfigError, TrainConfig
from ember.utils import data

# Mean and standard deviation of the Fashion-MNIST training pixels (scaled to [0, 1]).
FASHION_MNIST_STATS = (0.2860, 0.3530)
EVAL_BATCH = 1000


def _as_tensors(dataset: Any, limit: int | None, option: str) -> data.TensorDataset:
    mean, std = FASHION_MNIST_STATS
    images, labels = dataset.data, dataset.targets
    if limit is not None and limit > len(labels):
        # (the key first, as the config's other checks name it: a config file gives the key)
        flag = "--" + option.replace("_", "-")
        raise ConfigError(f"{option} {limit}: the split has only {len(labels)} images; give "
                          f"at most {len(labels)}, or leave {option} ({flag}) out to use them "
                          "all")
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    # In place on one float copy: the same values as ((x / 255 - mean) / std), with one
    # dataset-sized array allocated instead of four (first touches of fresh memory are what
    # this costs, seconds on a VM).
    x = images.to(ember.float32, copy=True)
    x.div_(255.0).sub_(mean).div_(std)
    return data.TensorDataset(x.unsqueeze(1), labels.long())


def _batches(dataset: Any, batch_size: int, sampler: Any, num_workers: int) -> Any:
    # A BatchSampler as the sampler, batch_size=None: each fetch indexes the tensors once with
    # a whole batch of indices instead of stacking single images.
    batches = data.BatchSampler(sampler, batch_size, drop_last=False)
    return data.DataLoader(dataset, sampler=batches, batch_size=None, num_workers=num_workers)


def build_loaders(cfg: TrainConfig) -> tuple[Any, Any, ember.Generator]:
    """Training and test loaders for ``cfg.dataset``, and the generator that orders the
    training batches (reseed it each epoch)."""
    from ember.vision.datasets import FashionMNIST
    splits = FashionMNIST(cfg.data_dir, train=True), FashionMNIST(cfg.data_dir, train=False)
    if cfg.data_dir is not None:
        _check_found_in(cfg.data_dir, splits)
    train = _as_tensors(splits[0], cfg.train_size, "train_size")
    test = _as_tensors(splits[1], cfg.test_size, "test_size")
    order = ember.Generator().manual_seed(cfg.seed)
    train_loader = _batches(train, cfg.batch_size, data.RandomSampler(train, generator=order),
                            cfg.num_workers)
    test_loader = _batches(test, EVAL_BATCH, data.SequentialSampler(test), cfg.num_workers)
    return train_loader, test_loader, order


def _check_found_in(data_dir: str, splits: tuple) -> None:
    """``--data-dir`` names where the files are: files found elsewhere (the dataset also looks
    in ``$EMBER_DATA`` and the system's folder) are refused, not read in their place."""
    root = Path(os.path.abspath(os.path.expanduser(data_dir)))
    elsewhere = [str(p) for split in splits for p in split.files
                 if root not in Path(os.path.abspath(p)).parents]
    if elsewhere:
        raise ConfigError(f"--data-dir {data_dir}: the dataset files are not there (found "
                          f"{', '.join(elsewhere)} instead); put the four idx files in that "
                          "folder (or its FashionMNIST/raw/), or leave --data-dir out")
