"""The examples in docs/distributions.md run."""

import pathlib
import re

DOC = pathlib.Path(__file__).parents[2] / "docs" / "distributions.md"


def test_doc_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 2
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102
