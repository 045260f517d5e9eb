"""The layout key of compiled functions' arguments and of ``Tensor.data =`` (mend48jd)."""

from __future__ import annotations

import numpy as np

import ember
from ember import nn
from ember.version_counter import STRUCTURE


def test_data_set_to_another_row_major_array_keeps_compiled_functions_key():
    # both row-major: only the strides of the size-1 dimension differ, which NumPy's flag and
    # the compiled functions' key ignore; a bump made each compiled call look again (~10x)
    b = nn.Parameter(ember.zeros(1, 4))
    for value in (ember.ones(4, 1).t(), ember.from_numpy(np.ones(4, np.float32)[None])):
        before = STRUCTURE.value
        b.data = value
        assert STRUCTURE.value == before
    b.data = ember.ones(4, 1)  # (a new shape still moves it)
    assert STRUCTURE.value == before + 1


def test_data_set_to_a_transposed_array_moves_the_key():
    w = nn.Parameter(ember.zeros(3, 3))
    before = STRUCTURE.value
    w.data = ember.ones(3, 3).t()
    assert STRUCTURE.value == before + 1


def test_the_key_is_the_byte_strides_of_a_non_row_major_array():
    from ember.layouts import strides_key

    a = np.ones((3, 2), np.float32).T
    assert strides_key(np.ones((2, 3))) is None and strides_key(np.ones((4, 1)).T) is None
    assert strides_key(a) == a.strides


def test_explain_gives_strides_in_elements_for_a_new_layout_with_a_size_one_dimension():
    fast = ember.jit.compile(lambda x: x * 2)
    fast(ember.randn(1, 2, 3).permute(0, 2, 1))
    fast(ember.randn(1, 3, 2))
    assert fast.traces == 2
    assert ember.jit.explain()[-1].endswith("argument x: layout strides (6, 1, 3) -> row-major")


def test_a_stride_read_inside_follows_a_size_one_dimension_of_a_non_row_major_argument():
    # (review48h: 46c8befd keyed size-1 strides as 0, so a graph traced on strides (1, 7, 4)
    # served (1, 12, 4) and x.stride()[1] read 7 there)
    base = ember.arange(12.0)
    a = base.reshape(3, 4).t().unsqueeze(1)  # (4, 1, 3), strides (1, 12, 4)
    b = ember.as_strided(base, (4, 1, 3), (1, 7, 4))
    g = ember.jit.compile(lambda x: x * x.stride()[1])
    np.testing.assert_array_equal(g(b).numpy(), (b * 7).numpy())
    np.testing.assert_array_equal(g(a).numpy(), (a * 12).numpy())
