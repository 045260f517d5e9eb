"""torch.library's impl_abstract (register_fake's name before PyTorch 2.4, deprecated there)
in ember.library, against torch (AttributeError before)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("lib", [torch, ember], ids=["torch", "ember"])
def test_impl_abstract_registers_the_fake_rule_with_a_future_warning(lib):
    T = lib.Tensor
    name = f"sweep66_{lib.__name__}::row_sums"

    @lib.library.custom_op(name, mutates_args=())
    def row_sums(x: T) -> T:
        return lib.from_numpy(x.numpy().sum(1))

    with pytest.warns(FutureWarning, match="register_fake"):
        lib.library.impl_abstract(name)(lambda x: x.new_empty(x.shape[:1]))
    with pytest.warns(FutureWarning, match="register_fake"):
        lib.library.impl_abstract(name, lambda x: x.new_empty(x.shape[:1]))
    x = lib.from_numpy(np.arange(6.0).reshape(2, 3))
    lib.library.opcheck(row_sums, (x,))  # checks the fake rule against the kernel
    assert row_sums(x).tolist() == [3.0, 12.0]
