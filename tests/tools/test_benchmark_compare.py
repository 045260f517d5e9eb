"""Compare keeps measurements of different envs apart (each row shows its env) and colours
cells, both as torch.utils.benchmark.Compare prints them."""

import pytest
import torch.utils.benchmark as tb
from torch.utils.benchmark.utils.common import TaskSpec as TorchSpec

from ember.utils import benchmark as eb
from ember.utils.benchmark.measurement import TaskSpec

CASES = [("envA", 1e-6, "d", 1), ("envB", 2e-6, "d", 1), ("envA", 1.05e-6, "e", 1),
         ("envB", 7e-6, "e", 1), ("envA", 3e-6, "d", 2), ("envB", 1.5e-6, "d", 2)]


def _tables(bench, task_spec, setups, colorize=None):
    results = [bench.Measurement(1, [t, t * 1.001, t * 0.999, t], task_spec(
        "f(x)", "pass", label="add", sub_label=sub, description=desc, env=env,
        num_threads=threads)) for env, t, desc, threads, sub in setups]
    compare = bench.Compare(results)
    if colorize is not None:
        compare.colorize(rowwise=colorize)
    return str(compare)


@pytest.mark.parametrize("colorize", [None, False, True])
@pytest.mark.parametrize("envs", [("envA", "envB"), ("only", "only")])
def test_compare_envs_and_colours_match_torch(colorize, envs):
    setups = [(envs[i % 2], t, d, n, "x" if i % 3 else "y")
              for i, (_, t, d, n) in enumerate(CASES)]
    ours = _tables(eb, eb.TaskSpec, setups, colorize)
    theirs = _tables(tb, tb.utils.common.TaskSpec, setups, colorize)
    assert ours == theirs
    if envs[0] != envs[1]:
        assert "(envA)" in ours and "(envB)" in ours


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
