"""An explicit ``memory_format=preserve_format`` on a COO ``*_like`` is refused, as torch's
("memory format option is only supported by strided tensors"): Ember's dense ``*_like``
defaulted to ``preserve_format``, so a given one could not be told from none. The default is
now ``None`` (torch's schema: ``MemoryFormat? memory_format=None``), which a dense tensor
reads as ``preserve_format``."""

import pytest
import torch

import ember

CALLS = {"zeros_like": (), "empty_like": (), "ones_like": (), "full_like": (2.0,)}


@pytest.mark.parametrize("op", CALLS)
def test_an_explicit_preserve_format_on_a_coo_like_is_refused_as_torch(op):
    args = CALLS[op]
    for lib, error in ((torch, RuntimeError), (ember, ember.errors.ArgumentError)):
        s = lib.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
        with pytest.raises(error, match="memory format option is only supported by strided"):
            getattr(lib, op)(s, *args, memory_format=lib.preserve_format)
    if op in ("zeros_like", "empty_like"):  # (COO ones_like/full_like: refused anyway)
        assert getattr(ember, op)(s, *args).layout is ember.sparse_coo


def test_a_dense_like_takes_none_as_preserve_format_as_torch():
    for lib in (torch, ember):
        x = lib.zeros(2, 3, 4, 5).to(memory_format=lib.channels_last)
        for op, args in CALLS.items():
            made = getattr(lib, op)(x, *args, memory_format=None)
            assert made.is_contiguous(memory_format=lib.channels_last), (lib.__name__, op)


@pytest.mark.parametrize("layout", ["to_sparse_csr", "to_sparse_csc"])
@pytest.mark.parametrize("op", CALLS)
def test_an_explicit_preserve_format_on_a_compressed_like_as_torch(op, layout):
    # (Ember accepted it for ones_like/empty_like/full_like; torch's zeros_like accepts it)
    args = CALLS[op]
    for lib, error in ((torch, RuntimeError), (ember, ember.errors.ArgumentError)):
        s = getattr(lib.tensor([[0.0, 1.0], [2.0, 0.0]]), layout)()
        call = lambda fmt, s=s, lib=lib: getattr(lib, op)(s, *args, memory_format=fmt)  # noqa
        if op == "zeros_like":
            assert call(lib.preserve_format).layout == s.layout
        else:
            with pytest.raises(error, match="unsupported memory format Preserve"):
                call(lib.preserve_format)
        assert call(lib.contiguous_format).layout == s.layout
        assert call(None).layout == s.layout
