"""Vision datasets and transforms (torchvision's ``datasets`` and ``transforms``; port a
script by changing ``torchvision`` to ``ember.vision``)."""

from ember.vision import datasets, transforms
