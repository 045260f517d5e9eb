"""ember.library.Library (define, then impl per dispatch key) against torch.library.Library
on the same ops; ember.library.impl with dispatch keys."""

import numpy as np
import pytest
import torch
import torch.library

import ember


def define_sum_plus(lib_module, ns):
    """``ns::sum_plus(x, *, k)``: the sum over dim 0 plus k, with a Meta (fake) kernel."""
    lib = lib_module.Library(ns, "FRAGMENT")
    assert lib.define("sum_plus(Tensor x, *, int k=1) -> Tensor") == "sum_plus"
    lib.impl("sum_plus", lambda x, k=1: x.sum(0) + k, "CompositeExplicitAutograd")
    lib.impl("sum_plus", lambda x, k=1: x.new_empty(x.shape[1:]), "Meta")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl(f"{ns}::twice", lambda x: x * 2, "CPU")
    return lib


# (torch drops a Library's ops when the Library object goes)
LIBRARIES = [define_sum_plus(torch.library, "emlibtest"),
             define_sum_plus(ember.library, "emlibtest")]


def test_library_ops_match_torch():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for k in (1, 5):
        want = torch.ops.emlibtest.sum_plus(torch.tensor(x), k=k)
        got = ember.ops.emlibtest.sum_plus(ember.tensor(x), k=k)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(ember.ops.emlibtest.twice(ember.tensor(x)).numpy(),
                                  torch.ops.emlibtest.twice(torch.tensor(x)).numpy())
    for lib in (torch, ember):  # (the Meta kernel is the fake rule opcheck tests)
        result = lib.library.opcheck(lib.ops.emlibtest.sum_plus, (lib.ones(2, 3),))
        assert set(result.values()) == {"SUCCESS"}


def test_library_errors_like_torch():
    for lib in (torch.library, ember.library):
        with pytest.raises(ValueError, match="Unsupported kind: BAD"):
            lib.Library("emlibtest", "BAD")
        with pytest.raises(RuntimeError, match="IMPL"):
            lib.Library("emlibtest", "IMPL").define("other(Tensor x) -> Tensor")
    with pytest.raises(NotImplementedError, match="dispatch key 'Autograd'.*register_autograd"):
        ember.library.impl("emlibtest::twice", "Autograd", lambda x: x)
