"""The messages docs/errors.md quotes are the ones Ember raises, and its table names every
class of ember.errors."""

import inspect
import re
from pathlib import Path

import pytest

import ember
import ember.nn.functional as F


def _backward_twice():
    a = ember.ones(3, requires_grad=True)
    y = (a * a).sum()
    y.backward()
    y.backward()


def _leaf_in_place():
    ember.ones(3, requires_grad=True).add_(1)


RAISERS = {
    "add": lambda: ember.ones(3, 4) + ember.ones(5),
    "matmul": lambda: ember.ones(32, 784) @ ember.ones(512, 10),
    "backward through MulBackward0": _backward_twice,
    "add_": _leaf_in_place,
    "margin_ranking_loss": lambda: F.margin_ranking_loss(ember.ones(3), ember.ones(4),
                                                         ember.ones(3)),
    "sum()": lambda: ember.ones(2, 3).sum(0, keepdim=ember.tensor([1, 2])),
}


def _quoted_messages() -> list[tuple[str, str]]:
    """(class name, message) for each message in the guide's plain code blocks."""
    text = (Path(__file__).parents[1] / "docs" / "errors.md").read_text()
    messages = []
    for block in re.findall(r"```\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if m := re.match(r"(\w+Error): (.*)", line):
                messages.append([m.group(1), m.group(2)])
            else:
                messages[-1][1] += " " + line.strip()
    return [tuple(m) for m in messages]


@pytest.mark.parametrize("cls, message", _quoted_messages())
def test_quoted_message_is_raised(cls, message):
    if cls == "DeviceError":
        pytest.skip("needs a second device; this build computes on the CPU only")
    raiser = next(f for start, f in RAISERS.items() if message.startswith(start + ":")
                  or message.startswith(start + " "))
    with pytest.raises(getattr(ember.errors, cls)) as info:
        raiser()
    assert " ".join(str(info.value).split()) == message


def test_every_error_class_is_in_the_table():
    text = (Path(__file__).parents[1] / "docs" / "errors.md").read_text()
    classes = [name for name, c in vars(ember.errors).items() if inspect.isclass(c)
               and issubclass(c, ember.EmberError) and c.__module__ == "ember.errors"]
    missing = [n for n in classes
               if f"`ember.errors.{n}`" not in text and f"`ember.{n}`" not in text]
    assert not missing
