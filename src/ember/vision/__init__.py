"""Vision datasets, transforms, typed tensors, models, detection ops and image utilities
(torchvision's ``datasets``, ``transforms``, ``tv_tensors``, ``models``, ``ops`` and ``utils``;
port a script by changing ``torchvision`` to ``ember.vision``)."""

from ember.vision import datasets, models, ops, transforms, tv_tensors, utils
