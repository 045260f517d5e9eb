"""Ember's ops: the primitive registry and the functional API over it, one file per family.

Importing this package registers every primitive and binds every Tensor method.
"""

from ember.ops import (
    arithmetic,
    broadcast,
    convert,
    creation,
)
from ember.ops.arithmetic import *  # noqa: F403
from ember.ops.broadcast import *  # noqa: F403
from ember.ops.convert import *  # noqa: F403
from ember.ops.creation import *  # noqa: F403
from ember.ops.primitive import PRIMITIVES, Primitive, TensorSpec, apply, primitive

__all__ = [*arithmetic.__all__, *broadcast.__all__, *convert.__all__, *creation.__all__,
           "PRIMITIVES", "Primitive", "TensorSpec", "apply", "primitive"]
