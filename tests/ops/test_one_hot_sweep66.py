"""one_hot with num_classes=0: PyTorch refuses a non-empty input (no class can hold a value)
and an empty one (nothing to infer a count from); the message says so instead of naming
the range [0, -1]. Compared with torch."""

import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF


@pytest.mark.parametrize("values", [[0, 1], [5], [-1]])
def test_zero_classes_refuse_a_non_empty_input_clearly(values):
    with pytest.raises(RuntimeError, match="smaller than num_classes|non-negative"):
        TF.one_hot(torch.tensor(values), num_classes=0)
    with pytest.raises(RuntimeError, match="num_classes=0 leaves no class") as err:
        EF.one_hot(ember.tensor(values), num_classes=0)
    assert "-1]" not in str(err.value)


def test_zero_classes_refuse_an_empty_input_as_torch():
    with pytest.raises(RuntimeError, match="infer"):
        TF.one_hot(torch.tensor([], dtype=torch.long), num_classes=0)
    with pytest.raises(RuntimeError, match="infer the number of classes"):
        EF.one_hot(ember.tensor([], dtype=ember.long), num_classes=0)
