"""The ```python blocks of README.md and docs/*.md run, so the guides cannot rot.

A guide's blocks run in order in one namespace, in a fresh working directory. Guides written
as fragments ("``model(x)``" for the reader's own model) get a ``setup`` that makes those names;
a block that cannot run here (several MPI processes, a network, minutes of training, a file
the reader has) is skipped with the reason in the table. Blocks in ``>>>`` form are doctests:
their shown output is compared. Every guide must have a row, so a new one is run too.
"""

from __future__ import annotations

import doctest
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import ember

ROOT = Path(__file__).resolve().parents[1]

MPI = "needs several MPI processes (run by hand with mpiexec -n 4 --oversubscribe)"
FRAGMENT = "a fragment of a larger program (its names are the reader's)"

MODELS = """
import ember
import ember.nn as nn
import ember.nn.functional as F
import numpy as np

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.fc = nn.Conv2d(1, 4, 3), nn.Linear(4, 2)
        self.fc1, self.fc2 = nn.Linear(4, 4), nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(self.fc1(self.conv(x).mean((2, 3))).relu())

model, x = Net(), ember.randn(2, 1, 6, 6)
"""


@dataclass(frozen=True)
class Guide:
    """How to run one guide's blocks: ``setup`` makes the names its fragments take as given."""

    setup: str = ""
    skip: dict[int, str] = field(default_factory=dict)    # block number (from 1) -> why
    files: dict[int, str] = field(default_factory=dict)   # block number -> the file it shows
    raises: dict[int, tuple[type, str]] = field(default_factory=dict)  # -> (error, message)


GUIDES: dict[str, Guide | str] = {
    "README.md": Guide(skip={1: "trains the CNN for an epoch on Fashion-MNIST (minutes)"}),
    "docs/adding_a_primitive.md": Guide(  # block 1 registers `logaddexp` again, as it warns
        raises={1: (ValueError, "a primitive named 'logaddexp' is already registered")},
        skip={2: "a row of a test table (tests/ops/test_special.py runs it)"}),
    "docs/complex_and_fft.md": Guide(),
    "docs/custom_ops.md": Guide(),
    "docs/distributed.md": Guide(skip=dict.fromkeys(range(1, 9), MPI)),
    "docs/distributions.md": "run by tests/distributions/test_docs.py",
    "docs/dtensor.md": Guide(skip=dict.fromkeys(range(1, 4), MPI)),
    "docs/errors.md": "no python blocks",
    "docs/export.md": Guide(setup="import ember\nx = ember.randn(8, 1, 28, 28)",
                            skip={3: "`model` stands for a model of three inputs"}),
    "docs/fsdp.md": Guide(skip=dict.fromkeys(range(1, 7), MPI)),
    "docs/fx.md": Guide(setup=MODELS),
    "docs/hub.md": Guide(
        setup="import os, ember\nos.mkdir('my_models')\nopen('my_models/blocks.py', 'w').write("
              "'import ember\\ndef mlp(i, h, o):\\n    return ember.nn.Sequential("
              "ember.nn.Linear(i, h), ember.nn.ReLU(), ember.nn.Linear(h, o))\\n')",
        files={1: "my_models/hubconf.py"}, skip={3: "downloads from a URL"}),
    "docs/jit.md": Guide(skip={
        3: "shows generated code, not a program",
        4: "the output of the recompilations the text describes",
        5: "a fragment: `model` and the step around it are the reader's"},
        setup="import ember\nloader = [(ember.randn(32, 784), ember.randint(0, 10, (32,)))] * 2"
              "\nexample = x = ember.randn(4, 784)"),
    "docs/masked.md": Guide(),  # its >>> blocks share names, as a reader's session does
    "docs/memory.md": Guide(setup=MODELS + """
block = nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6))
T = 8
q = k = v = ember.randn(1, 2, T, 4)
from ember.nn.attention.flex_attention import AuxRequest
"""),
    "docs/meta.md": Guide(skip={2: "loads the reader's `gpt.pt`"}),
    "docs/mixed_precision.md": Guide(setup="""
import ember
import ember.nn.functional as F
V = 64
model = ember.models.gpt(n_layer=1, d_model=16, n_head=2, block_size=8, vocab_size=V)
x, y = ember.randint(0, V, (2, 8)), ember.randint(0, V, (2, 8))
loader, opt = [(x, y)], ember.optim.SGD(model.parameters(), lr=0.1)
"""),
    "docs/model_parallel.md": Guide(skip=dict.fromkeys(range(1, 4), MPI)),
    "docs/nested.md": Guide(),
    "docs/onnx.md": Guide(setup="import ember\nimages = ember.randn(3, 1, 28, 28)"
                                "\ntokens = ember.randint(0, 256, (3, 20))"),
    "docs/performance.md": "no python blocks",
    "docs/profiler.md": Guide(setup="import ember\nloader = []\ntrain_step = None"),
    "docs/pruning.md": Guide(setup=MODELS + "train_one_epoch = lambda model: None"),
    "docs/quantization.md": Guide(
        setup="import ember\ncalibration_batches = [ember.randn(4, 1, 28, 28)]",
        skip={2: "`model.head` is the reader's"}),
    "docs/sparse.md": Guide(),
    "docs/tensors_and_autograd.md": Guide(setup=MODELS + """
np_array, torch_tensor = np.arange(4.0), np.arange(3.0)
param, opt_step = nn.Parameter(ember.randn(3)), lambda p: None
MyMethod = nn.utils.prune.BasePruningMethod

class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 1)

    def forward(self, x):
        return self.fc(x).sum()

model = Tiny()
loss_fn = lambda w: (w ** 2).sum()
""", raises={11: (ember.GradError, "backward of div returned NaN in its gradient for input 1")}),
    "docs/tools.md": Guide(setup=MODELS, skip={
        3: "a fragment of a training loop (tests/tools/test_tensorboard.py covers the writer)"}),
    "docs/transforms.md": Guide(setup="""
import ember
x2, y2 = ember.randn(2, 3), ember.randn(3, 4)
v = ember.randn(16, 4)
xs, ys = ember.randn(5, 4), ember.zeros(5, dtype=ember.int64)
make_model, minibatch = lambda: ember.nn.Linear(4, 2), ember.randn(3, 4)
"""),
    "docs/vision.md": Guide(setup="""
import ember
import ember.nn.functional as F
import numpy as np
from ember.vision import models
array_hwc = np.random.default_rng(0).integers(0, 256, (60, 80, 3), dtype=np.uint8)
xyxy, labels = [[10.0, 10.0, 40.0, 50.0], [5.0, 5.0, 30.0, 30.0]], ember.tensor([1, 2])
images, masks = ember.randn(2, 3, 32, 32), ember.randint(0, 3, (2, 32, 32))
boxes = pred_boxes = ember.tensor([[0.0, 0.0, 10.0, 10.0], [1.0, 1.0, 11.0, 11.0]])
target_boxes, scores = ember.tensor([[0.0, 0.0, 9.0, 9.0]] * 2), ember.tensor([0.9, 0.8])
generator = ember.nn.Sequential(ember.nn.Linear(100, 28 * 28), ember.nn.Unflatten(1, (1, 28, 28)))
import os
from ember.vision.utils import save_image
for folder, file in (("daisy", "1.png"), ("rose", "7.png")):
    os.makedirs(f"flowers/{folder}")
    save_image(ember.rand(3, 8, 8), f"flowers/{folder}/{file}")
""", skip={
        4: "loads the reader's checkpoint",
        5: "a ResNet-50 segmentation model's training step (10 s)",
        6: "trains a detector for three steps (20 s)"}),
    "docs/zero.md": Guide(skip=dict.fromkeys(range(1, 4), MPI)),
}


def python_blocks(text: str) -> list[tuple[int, str]]:
    """Each ```python block of a Markdown text, with the line its code starts on."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1))
            for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)]


def run_block(block: str, line: int, name: str, namespace: dict) -> None:
    """Run one block in ``namespace``; a ``>>>`` block as a doctest of its shown output."""
    if block.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(block, namespace, name, name, line - 1)
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE
                                       | doctest.ELLIPSIS)
        runner.run(test, clear_globs=False)
        assert not runner.failures, f"{name}:{line}: the shown output differs (see above)"
        namespace.update(test.globs)  # a DocTest runs in a copy: later blocks see its names
        return
    exec(compile("\n" * (line - 1) + block, name, "exec"), namespace)  # noqa: S102


def test_every_guide_has_a_row():
    guides = {"README.md"} | {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert guides == set(GUIDES), "add the new guide (or drop the old one) in GUIDES"
    for name, guide in GUIDES.items():
        count = len(python_blocks((ROOT / name).read_text()))
        if isinstance(guide, str):
            continue
        listed = set(guide.skip) | set(guide.files) | set(guide.raises)
        assert listed <= set(range(1, count + 1)), f"{name} has {count} python blocks"


@pytest.mark.parametrize("name", [n for n, g in GUIDES.items() if isinstance(g, Guide)])
def test_guide_blocks_run(name, tmp_path, monkeypatch):
    guide = GUIDES[name]
    monkeypatch.chdir(tmp_path)
    # (quantize_model sets the global quantized engine, as torchvision's: put it back after)
    monkeypatch.setattr(ember.backends.quantized, "engine", ember.backends.quantized.engine)
    namespace: dict = {"__name__": "__docs__"}
    exec(guide.setup, namespace)  # noqa: S102
    for number, (line, block) in enumerate(python_blocks((ROOT / name).read_text()), 1):
        if number in guide.files:
            path = tmp_path / guide.files[number]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block)
        elif number in guide.raises:
            error, message = guide.raises[number]
            with pytest.raises(error, match=message):
                run_block(block, line, str(ROOT / name), namespace)
        elif number not in guide.skip:
            run_block(block, line, str(ROOT / name), namespace)
