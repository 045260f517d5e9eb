"""``torch.ao.quantization.observer``: the observers of :mod:`ember.quant.observer`,
:mod:`ember.quant.histogram_observer` and :mod:`ember.quant.special_observers`, and the
observer state dicts of :mod:`ember.quant.observer_state`."""

from ember.quant import histogram_observer, observer, observer_state, special_observers
from ember.quant.histogram_observer import *  # noqa: F403
from ember.quant.observer import *  # noqa: F403
from ember.quant.observer_state import *  # noqa: F403
from ember.quant.special_observers import *  # noqa: F403

__all__ = observer.__all__ + histogram_observer.__all__ + observer_state.__all__ + [
    name for name in special_observers.__all__  # (less the fake quantizers)
    if "FakeQuantize" not in name and not name.endswith("fake_quant")]
