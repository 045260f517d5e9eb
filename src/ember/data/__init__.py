"""Datasets, samplers and the :class:`DataLoader` (PyTorch's ``torch.utils.data``; also
importable as ``ember.utils.data``)."""

from ember.data.collate import default_collate, default_convert
from ember.data.dataloader import DataLoader
from ember.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from ember.data.distributed_sampler import DistributedSampler
from ember.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from ember.data.worker import WorkerInfo, get_worker_info

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset",
           "Subset", "ConcatDataset", "ChainDataset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "DistributedSampler", "default_collate", "default_convert",
           "get_worker_info", "WorkerInfo"]
