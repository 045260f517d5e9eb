"""Activation sweep (session 63) against PyTorch 2.13: dtypes torch refuses."""

import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - the usual spelling

import ember


@pytest.mark.parametrize("name", ["int64", "int32", "uint8", "int8", "bool"])
def test_glu_refuses_integer_and_bool_inputs_as_torch(name: str) -> None:
    # (sigmoid's promotion let an int64 input through as float64, uint8 as float16)
    with pytest.raises(NotImplementedError):
        F.glu(torch.ones(4, dtype=getattr(torch, name)))
    with pytest.raises(ember.DTypeError, match="glu: needs a floating tensor"):
        ember.nn.functional.glu(ember.ones(4, dtype=getattr(ember, name)))
    with pytest.raises(ember.DTypeError, match="glu"):
        ember.nn.GLU()(ember.ones(2, 4, dtype=getattr(ember, name)))
