"""Ember's ops: the primitive registry and the functional API over it, one file per family.

Importing this package registers every primitive and binds every Tensor method.
"""

from ember.ops import (
    activations,
    arithmetic,
    broadcast,
    compare,
    convert,
    creation,
    indexing,
    linalg,
    random,
    reduce,
    select,
    shape,
    sort,
    unary,
)
from ember.ops.activations import *  # noqa: F403
from ember.ops.arithmetic import *  # noqa: F403
from ember.ops.broadcast import *  # noqa: F403
from ember.ops.compare import *  # noqa: F403
from ember.ops.convert import *  # noqa: F403
from ember.ops.creation import *  # noqa: F403
from ember.ops.indexing import *  # noqa: F403
from ember.ops.linalg import *  # noqa: F403
from ember.ops.primitive import PRIMITIVES, Primitive, TensorSpec, apply, primitive
from ember.ops.random import *  # noqa: F403
from ember.ops.reduce import *  # noqa: F403
from ember.ops.select import *  # noqa: F403
from ember.ops.shape import *  # noqa: F403
from ember.ops.sort import *  # noqa: F403
from ember.ops.unary import *  # noqa: F403

_FAMILIES = (activations, arithmetic, broadcast, compare, convert, creation, indexing, linalg,
             random, reduce, select, shape, sort, unary)
__all__ = [name for family in _FAMILIES for name in family.__all__]
__all__ += ["PRIMITIVES", "Primitive", "TensorSpec", "apply", "primitive"]
