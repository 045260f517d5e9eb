"""Vision datasets, transforms, detection ops and image utilities (torchvision's
``datasets``, ``transforms``, ``ops`` and ``utils``; port a script by changing ``torchvision``
to ``ember.vision``)."""

from ember.vision import datasets, ops, transforms, utils
