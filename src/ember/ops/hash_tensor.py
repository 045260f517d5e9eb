"""``hash_tensor``: a uint64 fingerprint of a tensor's values (over all dims or some), as
PyTorch's: each element widened to its 64-bit float or integer kind, its bits read as uint64,
and the bits xor-reduced. Equal values give equal hashes whatever their layout; the hash is no
checksum against deliberate collisions."""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError
from ember.ops.dims import Dim, check_nonempty, reduce_dims, reduced_shape
from ember.ops.primitive import TensorSpec, apply, primitive
from ember.ops.reduce import Reduction
from ember.tensor import Tensor, method

__all__ = ["hash_tensor"]


@primitive
class HashTensor(Reduction):
    name = "hash_tensor"
    differentiable = False

    def forward(self, xp, a, *, dims, keepdim, wide):
        bits = a.astype(np.dtype(wide)).view(np.uint64)
        return xp.bitwise_xor.reduce(bits, axis=dims, keepdims=keepdim)

    def infer(self, a, *, dims, keepdim, wide):
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), dtypes.uint64)


@method()
def hash_tensor(input: Tensor, dim: Dim = None, *, keepdim: bool = False,
                mode: int = 0) -> Tensor:
    """The xor of the elements' 64-bit patterns (over ``dim``; all dims when None), as uint64:
    floats are widened to float64, signed integers and bools to int64, unsigned ones to
    uint64. ``mode`` 0 (xor) is the only hash, as in PyTorch.

    Example:
        >>> ember.hash_tensor(ember.tensor([[1, 2], [3, 4]]), 1)
        tensor([3, 7], dtype=ember.uint64)
    """
    op = "hash_tensor"
    if mode != 0:
        raise ArgumentError(f"{op}: unknown mode {mode!r}; 0 (xor reduction) is the only one")
    dt = input.dtype
    if dt.is_complex or dt is dtypes.uint64:
        raise DTypeError(f"{op}: {dt.name} input is not supported, as in PyTorch. "
                         "Hint: hash its view as real numbers (ember.view_as_real) or its "
                         "int64 bits (.view(ember.int64))")
    if input.numel() == 0 and dim is None:
        raise ArgumentError(f"{op}: an empty input (shape {tuple(input.shape)}) needs dim, as in "
                            "PyTorch. Hint: pass the dims to reduce")
    dims = reduce_dims(input, dim, op)
    check_nonempty(input, dims, op)
    wide = "float64" if dt.is_floating_point else "uint64" if dt.name.startswith("uint") \
        else "int64"
    return apply(HashTensor, input.detach(), dims=dims, keepdim=bool(keepdim), wide=wide)
