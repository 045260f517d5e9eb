"""``torch.utils.data.dataloader``'s path: the loader, its collate functions and the
worker information."""

from ember.data.collate import default_collate, default_convert
from ember.data.dataloader import DataLoader
from ember.data.worker import get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]
