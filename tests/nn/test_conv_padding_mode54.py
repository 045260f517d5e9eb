"""A one-element padding tuple with a padding_mode other than zeros (mend54c; review54c #5:
since 95357a6f ``padding=(1,)`` broadcast for zeros, as torch's, but with 'reflect' F.pad got
two values and padded only the last dimension)."""

import pytest
import torch

import ember


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("n", [2, 3])
def test_a_one_element_padding_with_a_padding_mode_is_refused_as_torch(n, mode):
    shape = (1, 1) + (6,) * n
    for lib in (torch, ember):
        conv = getattr(lib.nn, f"Conv{n}d")(1, 1, 3, padding=(1,), padding_mode=mode)
        with pytest.raises(NotImplementedError):
            conv(lib.ones(shape))
    with pytest.raises(NotImplementedError, match=r"padding=\(1,\).*Hint: pass padding="
                                                  rf"\({', '.join(['1'] * n)}\)"):
        getattr(ember.nn, f"Conv{n}d")(1, 1, 3, padding=(1,), padding_mode=mode)(
            ember.ones(shape))


@pytest.mark.parametrize(("n", "mode"), [(1, "reflect"), (2, "zeros")])
def test_a_one_element_padding_still_works_where_torch_takes_it(n, mode):
    shape = (1, 1) + (6,) * n
    out = [tuple(getattr(lib.nn, f"Conv{n}d")(1, 1, 3, padding=(1,), padding_mode=mode)(
        lib.ones(shape)).shape) for lib in (torch, ember)]
    assert out[0] == out[1] == shape
