"""A child forked after the library was used gets ForkedError, never a hang."""

import os
import signal
import time

import pytest

import minatoloader
from minatoloader import ForkedError, NativeLoader, SyntheticDataset

# Child exit codes.
_OK, _NO_ERROR, _WRONG_ERROR = 0, 3, 4


def _run_in_child(loader: NativeLoader) -> int:
    """Forks; the child tries the library in several ways and reports by its
    exit status. The parent waits at most 30 s, then kills the child."""
    pid = os.fork()
    if pid == 0:  # child: never return into pytest
        code = _OK
        try:
            for attempt in (
                lambda: iter(loader),
                lambda: len(loader),
                lambda: minatoloader.counters(),
                lambda: NativeLoader(SyntheticDataset(4), 2),
            ):
                try:
                    attempt()
                    code = _NO_ERROR
                except ForkedError as exc:
                    if "spawn" not in str(exc):
                        code = _WRONG_ERROR
                except BaseException:
                    code = _WRONG_ERROR
            loader.close()  # a no-op in the child: the handle is the parent's
        except BaseException:
            code = _WRONG_ERROR
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung instead of raising ForkedError")
        time.sleep(0.05)


def test_forked_child_gets_forked_error() -> None:
    with NativeLoader(SyntheticDataset(64), 8, workers=2) as loader:
        for _ in loader:
            pass
        assert _run_in_child(loader) == _OK
        # the parent is unaffected
        assert len(list(loader)) == 8


def test_fork_mid_epoch() -> None:
    with NativeLoader(SyntheticDataset(64, light_cost_us=50), 4, workers=2) as loader:
        it = iter(loader)
        next(it)
        assert _run_in_child(loader) == _OK
        assert 1 + sum(1 for _ in it) == 16


def test_forked_error_explains_the_cure() -> None:
    assert issubclass(ForkedError, RuntimeError)
    assert "spawn" in (ForkedError.__doc__ or "")
