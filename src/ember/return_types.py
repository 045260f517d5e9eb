"""The tuples that ops returning several tensors give back: one type per op, named after it
as in ``torch.return_types`` (``x.max(dim=1)`` is an ``ember.return_types.max``).

Each is a named tuple: it unpacks (``values, indices = x.max(1)``), indexes, reads by field
name (``.values``), pickles, and flows through ``jit``, ``vmap`` and ONNX export like any
tuple. It prints one field per line, as PyTorch's do. It is built from its fields
(``max(values, indices)``) or, as PyTorch's are, from one sequence of them
(``max((values, indices))``).

Example:
    >>> ember.tensor([[1, 5], [7, 2]]).max(dim=1)
    ember.return_types.max(
    values=tensor([5, 7]),
    indices=tensor([1, 0]))
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

# (what is a plain ``max``/``min`` in every other module is a type here, as in PyTorch)
__all__ = [
    "aminmax", "cummax", "cummin", "frexp", "geqrf", "histogram", "histogramdd", "kthvalue",
    "linalg_cholesky_ex", "linalg_eig", "linalg_eigh", "linalg_inv_ex", "linalg_ldl_factor",
    "linalg_ldl_factor_ex", "linalg_lstsq", "linalg_lu", "linalg_lu_factor",
    "linalg_lu_factor_ex", "linalg_qr", "linalg_slogdet", "linalg_solve_ex", "linalg_svd",
    "lu_unpack", "max", "median", "min", "mode", "nanmedian", "qr", "slogdet", "sort", "svd",
    "topk", "triangular_solve",
]


def _repr(self: tuple) -> str:
    fields = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
    return f"{__name__}.{type(self).__name__}(\n{fields})"


def _define(name: str, fields: str) -> type:
    """The named tuple type ``name`` with ``fields``, living in this module."""
    base = namedtuple(name, fields)

    size = len(base._fields)  # (two or more)

    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:  # noqa: N807
        if len(args) == size and not kwargs:  # (the ops' form: each field, quickly)
            return tuple.__new__(cls, args)
        if len(args) == 1 and not kwargs:  # PyTorch's form: one sequence of the fields
            return cls._make(args[0])
        return base.__new__(cls, *args, **kwargs)

    return type(name, (base,), {
        "__slots__": (), "__new__": __new__, "__repr__": _repr, "__module__": __name__,
        "__qualname__": name,
        # PyTorch's structseq counts (every field is named and in the sequence)
        "n_fields": size, "n_sequence_fields": size, "n_unnamed_fields": 0,
        "__doc__": f"``({', '.join(base._fields)})``, what ``{name}`` returns."})


aminmax = _define("aminmax", "min max")
cummax = _define("cummax", "values indices")
cummin = _define("cummin", "values indices")
frexp = _define("frexp", "mantissa exponent")
geqrf = _define("geqrf", "a tau")
histogram = _define("histogram", "hist bin_edges")
histogramdd = _define("histogramdd", "hist bin_edges")
kthvalue = _define("kthvalue", "values indices")
linalg_cholesky_ex = _define("linalg_cholesky_ex", "L info")
linalg_eig = _define("linalg_eig", "eigenvalues eigenvectors")
linalg_eigh = _define("linalg_eigh", "eigenvalues eigenvectors")
linalg_inv_ex = _define("linalg_inv_ex", "inverse info")
linalg_ldl_factor = _define("linalg_ldl_factor", "LD pivots")
linalg_ldl_factor_ex = _define("linalg_ldl_factor_ex", "LD pivots info")
linalg_lstsq = _define("linalg_lstsq", "solution residuals rank singular_values")
linalg_lu = _define("linalg_lu", "P L U")
linalg_lu_factor = _define("linalg_lu_factor", "LU pivots")
linalg_lu_factor_ex = _define("linalg_lu_factor_ex", "LU pivots info")
linalg_qr = _define("linalg_qr", "Q R")
linalg_slogdet = _define("linalg_slogdet", "sign logabsdet")
linalg_solve_ex = _define("linalg_solve_ex", "result info")
linalg_svd = _define("linalg_svd", "U S Vh")
lu_unpack = _define("lu_unpack", "P L U")
max = _define("max", "values indices")  # noqa: A001
median = _define("median", "values indices")
min = _define("min", "values indices")  # noqa: A001
mode = _define("mode", "values indices")
nanmedian = _define("nanmedian", "values indices")
qr = _define("qr", "Q R")
slogdet = _define("slogdet", "sign logabsdet")
sort = _define("sort", "values indices")
svd = _define("svd", "U S V")
topk = _define("topk", "values indices")
triangular_solve = _define("triangular_solve", "solution cloned_coefficient")
_lu_with_info = _define("_lu_with_info", "LU pivots info")

# what an op given out= returns, as PyTorch's: ``max_out`` for ``max(x, 0, out=(v, i))``
# (every type above but histogramdd's, which takes no out=)
for _name in [name for name in __all__ if name != "histogramdd"]:
    globals()[f"{_name}_out"] = _define(f"{_name}_out", " ".join(globals()[_name]._fields))
    __all__.append(f"{_name}_out")
del _name
