"""Every example in ember.masked's docstrings runs as written."""

import doctest
import importlib
import re
from pathlib import Path

import pytest

import ember

MODULES = ["ember.masked.masks", "ember.masked.reductions", "ember.masked.normalizations",
           "ember.masked.tensor", "ember.masked.op_table"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0, name


def test_guide_examples_run():
    guide = Path(__file__).resolve().parents[2] / "docs" / "masked.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), re.S)
    test = doctest.DocTestParser().get_doctest("\n".join(blocks), {"ember": ember},
                                               "masked.md", str(guide), 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
