"""``torch.utils.data._utils.collate``'s path: ``collate`` with a ``collate_fn_map``, the
``default_collate_fn_map`` that :func:`default_collate` consults, and its per-type functions."""

from ember.data.collate import (
    collate,
    collate_float_fn,
    collate_int_fn,
    collate_numpy_array_fn,
    collate_numpy_scalar_fn,
    collate_str_fn,
    collate_tensor_fn,
    default_collate,
    default_collate_fn_map,
    default_convert,
)

__all__ = ["collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn",
           "collate_numpy_scalar_fn", "collate_str_fn", "collate_tensor_fn", "default_collate",
           "default_collate_fn_map", "default_convert"]
