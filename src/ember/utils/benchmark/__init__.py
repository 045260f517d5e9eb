"""``ember.utils.benchmark``: time Python statements and compare the results, as
``torch.utils.benchmark`` (:class:`Timer`, :class:`Measurement`, :class:`Compare`).

Example:
    >>> from ember.utils import benchmark
    >>> t = benchmark.Timer("a + b", globals={"a": ember.ones(4), "b": ember.ones(4)})
    >>> m = t.blocked_autorange(min_run_time=0.01)
    >>> m.median > 0 and len(m.times) >= 1
    True
"""

from ember.utils.benchmark.compare import Compare
from ember.utils.benchmark.measurement import Measurement, TaskSpec, select_unit
from ember.utils.benchmark.timer import Language, Timer

__all__ = ["Compare", "Language", "Measurement", "TaskSpec", "Timer", "select_unit"]
