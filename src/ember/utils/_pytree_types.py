"""Which values :mod:`ember.utils._pytree` takes for named tuples and struct sequences,
with ``torch.utils._pytree``'s tests (``is_namedtuple``, ``is_structseq`` and their
``_class``/``_instance`` forms).

Example:
    >>> import collections
    >>> is_namedtuple(collections.namedtuple("P", "x")(1)), is_namedtuple((1,))
    (True, False)
"""

from __future__ import annotations

from typing import Any


def is_namedtuple_class(cls: Any) -> bool:
    """Whether ``cls`` is a named tuple class (PyTorch's test: a tuple subclass with string
    ``_fields``, ``_make`` and ``_asdict``).

    Example:
        >>> from collections import namedtuple
        >>> is_namedtuple_class(namedtuple("P", "x")), is_namedtuple_class(tuple)
        (True, False)
    """
    return (isinstance(cls, type) and issubclass(cls, tuple)
            and isinstance(getattr(cls, "_fields", None), tuple)
            and all(type(field) is str for field in cls._fields)
            and callable(getattr(cls, "_make", None)) and callable(getattr(cls, "_asdict", None)))


def is_namedtuple_instance(obj: Any) -> bool:
    """Whether ``obj`` is a named tuple. Example: ``is_namedtuple_instance((1,))`` is False."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj: Any) -> bool:
    """Whether ``obj`` is a named tuple or a named tuple class.

    Example:
        >>> is_namedtuple(ember.return_types.max((1, 2)))
        True
    """
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_structseq_class(cls: Any) -> bool:
    """Whether ``cls`` is a C struct sequence class (``os.stat_result``; PyTorch's
    ``torch.return_types``). Example: ``is_structseq_class(os.stat_result)`` is True."""
    return (isinstance(cls, type) and cls.__bases__ == (tuple,)
            and all(isinstance(getattr(cls, name, None), int)
                    for name in ("n_fields", "n_sequence_fields", "n_unnamed_fields"))
            and not cls.__flags__ & (1 << 10))  # (Py_TPFLAGS_BASETYPE: no subclassing)


def is_structseq_instance(obj: Any) -> bool:
    """Whether ``obj`` is a struct sequence. Example: ``is_structseq_instance(())`` is False."""
    return is_structseq_class(type(obj))


def is_structseq(obj: Any) -> bool:
    """Whether ``obj`` is a struct sequence or its class.

    Example:
        >>> import time
        >>> is_structseq(time.gmtime(0)), is_structseq(time.struct_time)
        (True, True)
    """
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))
