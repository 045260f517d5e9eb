"""Vision datasets, transforms, models, detection ops and image utilities (torchvision's
``datasets``, ``transforms``, ``models``, ``ops`` and ``utils``; port a script by changing
``torchvision`` to ``ember.vision``)."""

from ember.vision import datasets, models, ops, transforms, utils
