"""Running a check in a child made by ``fork``, as a DataLoader worker is made."""

import os
import time

import pytest


def in_forked_child(check, seconds=60):
    """Runs ``check()`` in a forked child; fails unless it returns True within ``seconds``
    (a child blocked on threads its parent started is killed)."""
    pid = os.fork()
    if pid == 0:  # the child: exit status 0 once the check passed
        ok = False
        try:
            ok = bool(check())
        finally:
            os._exit(0 if ok else 1)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0, "the check failed in the child"
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    pytest.fail("the forked child is still blocked")
