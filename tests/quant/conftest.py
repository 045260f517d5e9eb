"""Fixtures of the quantization tests."""

import pytest

import ember


@pytest.fixture(autouse=True)
def _engine_kept():  # (quantize_model sets the global engine, as torchvision's; tests set it)
    engine = ember.backends.quantized.engine
    yield
    ember.backends.quantized.engine = engine
