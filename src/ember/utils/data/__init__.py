"""``ember.utils.data``: PyTorch's ``torch.utils.data`` paths to :mod:`ember.data` (the
package and its ``sampler``, ``dataset``, ``dataloader`` and ``distributed`` modules), so
``from torch.utils.data.distributed import DistributedSampler`` ports by changing ``torch``
to ``ember``."""

from ember.data import *  # noqa: F403
from ember.data import __all__  # noqa: F401
from ember.utils.data import (  # noqa: F401 (attributes, as torch's)
    _utils,
    dataloader,
    dataset,
    distributed,
    sampler,
)
