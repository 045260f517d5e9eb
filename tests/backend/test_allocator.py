"""Host memory reuse: a freed large array's pages serve the next one without page faults."""

import os
import subprocess
import sys

import pytest

import ember

_FAULTS = """
import resource, numpy as np
import ember
def step():
    for _ in range(4):
        a = np.ones(8 << 20, np.float32)  # 32 MiB, glibc would map it on its own
        a += 1
        del a
step()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
step()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""

glibc = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")


def _faults(cache: str) -> int:
    env = dict(os.environ, EMBER_CACHE_HOST_MEMORY=cache)
    out = subprocess.run([sys.executable, "-c", _FAULTS], env=env, capture_output=True,
                         text=True, check=True)
    return int(out.stdout)


@glibc
def test_freed_arrays_are_reused_without_page_faults():
    # with the C library's defaults each array is a new mapping, faulted in again: at least
    # 16 faults per array even in 2 MiB huge pages (NumPy asks for them on large arrays)
    assert _faults("0") >= 4 * 16
    assert _faults("1") < 16


@glibc
def test_cache_host_memory_can_be_turned_off_and_on():
    try:
        assert ember.backend.cache_host_memory(False)
    finally:
        assert ember.backend.cache_host_memory(True)
