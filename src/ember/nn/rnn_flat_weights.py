"""``RNNBase._flat_weights``: PyTorch's flat list of a recurrent layer's weights, here a view
of the module's attributes, so that what is written into it takes effect (or is refused)."""

from __future__ import annotations

from typing import Any, NoReturn


class FlatWeights(list):
    """The weights in ``_flat_weights_names`` order; ``flat[i] = w`` assigns
    ``setattr(module, names[i], w)``, which the forward reads (a plain tensor needs the name
    out of ``module._parameters`` first, as weight-drop wrappers do). Changing the length
    raises.

    Example:
        >>> lstm = nn.LSTM(3, 4)
        >>> lstm._flat_weights[0] = nn.Parameter(ember.zeros(16, 3))
        >>> float(lstm.weight_ih_l0.abs().sum())
        0.0
    """

    def __init__(self, module: Any) -> None:
        super().__init__(getattr(module, n, None) for n in module._flat_weights_names)
        self._module = module

    def __setitem__(self, index: Any, value: Any) -> None:
        names = self._module._flat_weights_names
        if isinstance(index, slice):
            picked, value = names[index], list(value)
            if len(value) != len(picked):
                _refuse(f"slice assignment of {len(value)} weights into {len(picked)} slots")
            pairs = list(zip(picked, value))
        else:
            pairs = [(names[index], value)]
        for name, weight in pairs:
            assign(self._module, name, weight)
        super().__setitem__(index, value)

    def _refuse_resize(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("adding or removing weights")

    __delitem__ = append = extend = insert = pop = remove = clear = _refuse_resize
    __iadd__ = __imul__ = _refuse_resize


def assign(module: Any, name: str, weight: Any) -> None:
    """``setattr(module, name, weight)``, the refusal of a plain tensor in a parameter's
    place naming ``_flat_weights`` and the way out."""
    try:
        setattr(module, name, weight)
    except TypeError as e:
        raise TypeError(f"{e}: _flat_weights sets the module's attribute {name!r}, which "
                        f"the forward reads. Hint: wrap it in nn.Parameter, or first "
                        f"`del module._parameters[{name!r}]` (as weight-drop wrappers do) to "
                        "use a computed tensor") from e


def _refuse(what: str) -> NoReturn:
    raise TypeError(f"_flat_weights: {what} is not supported; the list has one entry per "
                    "name in _flat_weights_names (assign entries or the whole list)")
