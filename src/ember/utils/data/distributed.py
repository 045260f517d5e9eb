"""``torch.utils.data.distributed``'s path: :class:`~ember.data.DistributedSampler`."""

from ember.data.distributed_sampler import DistributedSampler

__all__ = ["DistributedSampler"]
