"""RNN, LSTM and GRU forward go through their public ``check_forward_args`` and
``permute_hidden``, as torch's do, so a subclass that overrides them changes forward
(mend54c; review54c #7: forward used private copies of them)."""

import numpy as np
import pytest
import torch

import ember

MODES = ["RNN", "LSTM", "GRU"]


def _recording(lib, mode):
    class Recording(getattr(lib.nn, mode)):
        def check_forward_args(self, input, hidden, batch_sizes):
            h = hidden[0] if mode == "LSTM" else hidden
            self.calls.append(("check", tuple(input.shape), tuple(h.shape)))
            if input.shape[0] == 4:  # (a rule of the subclass's own)
                raise TypeError("no batches of 4 here")
            super().check_forward_args(input, hidden, batch_sizes)

        def permute_hidden(self, hx, permutation):
            self.calls.append(("permute", None if permutation is None else permutation.tolist()))
            hx = super().permute_hidden(hx, permutation)
            return None if hx is None else tuple(2 * h for h in hx) if mode == "LSTM" else 2 * hx

    return Recording(3, 4, batch_first=True).double()


def _run(lib, mode, m):
    m.calls = []
    x = lib.tensor(np.random.default_rng(0).standard_normal((2, 5, 3)))
    h = lib.tensor(np.random.default_rng(1).standard_normal((1, 2, 4)))
    state = (h, -h) if mode == "LSTM" else h
    packed = lib.nn.utils.rnn.pack_padded_sequence(x, lib.tensor([3, 5]), batch_first=True,
                                                   enforce_sorted=False)
    outs = [m(x), m(x, state), m(x[0]), m(packed), m(packed, state)]
    values = []
    for out, hn in outs:
        values.append(out.data if isinstance(out, lib.nn.utils.rnn.PackedSequence) else out)
        values.extend(hn if mode == "LSTM" else (hn,))
    with pytest.raises(TypeError, match="no batches of 4"):
        m(lib.zeros(4, 5, 3, dtype=lib.float64))
    return [v.detach().numpy() for v in values], m.calls


@pytest.mark.parametrize("mode", MODES)
def test_forward_calls_the_overridden_public_checks_and_permute_hidden_as_torch(mode):
    t, e = _recording(torch, mode), _recording(ember, mode)
    e.load_state_dict({k: v.detach().numpy() for k, v in t.state_dict().items()})
    want, t_calls = _run(torch, mode, t)
    got, e_calls = _run(ember, mode, e)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    # (the same permutations; the checks of every padded input, as torch's LSTM leaves out
    # those of a packed one, which its RNN and GRU make and ember's all make)
    assert [c for c in e_calls if c[0] == "permute"] == [c for c in t_calls if c[0] == "permute"]
    padded = [c for c in t_calls if c[0] == "check" and len(c[1]) == 3]
    assert [c for c in e_calls if c[0] == "check" and len(c[1]) == 3] == padded
