"""ember.utils.benchmark.Compare against torch.utils.benchmark.Compare: edge cases found by
sweep59f."""

import pytest
import torch.utils.benchmark as tb
from torch.utils.benchmark.utils.common import TaskSpec as TorchSpec

from ember.utils import benchmark as eb
from ember.utils.benchmark.measurement import TaskSpec

# r1/c1 has high variance; column c2 has none
_CELLS = [("r1", "c1", [1e-6, 1.3e-6, 1e-6, 1.2e-6]), ("r1", "c2", [5e-6] * 3),
          ("r2", "c1", [2e-6] * 3), ("r2", "c2", [7e-6] * 3)]


@pytest.mark.parametrize("colorize", [False, True])
def test_only_columns_with_a_warning_make_room_for_it_as_torch(colorize):
    tables = []
    for bench, spec in ((tb, TorchSpec), (eb, TaskSpec)):
        compare = bench.Compare([bench.Measurement(1, times, spec("x", "pass", label="L",
                                                                  sub_label=row,
                                                                  description=col))
                                 for row, col, times in _CELLS])
        compare.highlight_warnings()
        if colorize:
            compare.colorize()
        tables.append(str(compare))
    assert tables[1] == tables[0]


@pytest.mark.parametrize("number", [0, -3, 2.5])
def test_timeit_refuses_a_number_of_runs_that_is_not_positive(number):
    # (torch: a ZeroDivisionError from its statistics, or timeit's TypeError for 2.5)
    with pytest.raises(ValueError, match="number must be a positive int"):
        eb.Timer("pass").timeit(number)
