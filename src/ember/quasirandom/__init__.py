"""``ember.quasirandom``: PyTorch's ``torch.quasirandom``, low-discrepancy sequences.

Example:
    >>> ember.quasirandom.SobolEngine(2).draw(2)
    tensor([[0.0000, 0.0000],
            [0.5000, 0.5000]])
"""

from ember.quasirandom.sobol_engine import SobolEngine

__all__ = ["SobolEngine"]
