"""Clean stop with a Python Dataset: break, an exception in the training
loop, del of the loader, KeyboardInterrupt. Afterwards no worker process,
thread or shared memory segment of the loader remains."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from typing import Any, Callable

import psutil
import pytest
import torch
from pydatasets import Indexed, Sleepy

import minatoloader


def memfds() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "minatoloader" in os.readlink(f"/proc/self/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


def shm_files() -> set[str]:
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()


def helper_processes(p: psutil.Process) -> bool:
    """multiprocessing's own long-lived helpers (forkserver, resource tracker)."""
    try:
        cmd = " ".join(p.cmdline())
    except psutil.Error:
        return True
    return "forkserver" in cmd or "resource_tracker" in cmd


def workers_of(dl: Any) -> list[int]:
    cur = dl._session.current
    pool = getattr(cur, "pool", None) or dl._session.pool
    return [p.pid for p in pool.procs] if pool is not None else []


def _running(pid: int) -> bool:
    """pid exists and is not a zombie (it may exit between the two looks)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def check_clean(pids: list[int], threads_before: int, shm_before: set[str]) -> None:
    deadline = time.monotonic() + 10
    while True:
        gc.collect()
        alive = [pid for pid in pids if _running(pid)]
        kids = [p for p in psutil.Process().children(recursive=True) if not helper_processes(p)]
        if not alive and not kids and memfds() == 0 and threading.active_count() <= threads_before:
            break
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: workers {alive}, children {kids}, memfds {memfds()}, "
                                 f"threads {threading.enumerate()}")
        time.sleep(0.05)
    assert shm_files() <= shm_before


@pytest.fixture
def baseline() -> tuple[int, set[str]]:
    gc.collect()
    return threading.active_count(), shm_files()


SCENARIOS: dict[str, Callable[[minatoloader.DataLoader, list[int]], None]] = {}


def scenario(f: Callable[[minatoloader.DataLoader, list[int]], None]) -> Callable[..., None]:
    SCENARIOS[f.__name__] = f
    return f


@scenario
def brk(dl: minatoloader.DataLoader, pids: list[int]) -> None:
    for k, _ in enumerate(dl):
        pids += workers_of(dl)
        if k == 2:
            break


@scenario
def exception_in_loop(dl: minatoloader.DataLoader, pids: list[int]) -> None:
    def train() -> None:
        for _ in dl:
            pids.extend(workers_of(dl))
            raise ValueError("training step failed")

    try:
        train()
    except ValueError:
        pass


@scenario
def keyboard_interrupt(dl: minatoloader.DataLoader, pids: list[int]) -> None:
    """Ctrl-C while the main process waits for a batch: SIGINT goes to the
    main process and (as from a terminal, to the process group) to every
    worker."""
    it = iter(dl)
    next(it)
    pids += workers_of(dl)

    def ctrl_c() -> None:
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.2, ctrl_c)
    timer.start()
    try:
        for _ in it:
            pass
        raise AssertionError("no KeyboardInterrupt")
    except KeyboardInterrupt:
        pass
    finally:
        timer.join()
        del it


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("persistent", [False, True])
def test_clean_stop(name: str, context: str, persistent: bool, baseline: tuple[int, set[str]]) -> None:
    ds = Sleepy(0.05, n=400) if name == "keyboard_interrupt" else Indexed(200, slow=(7,), slow_s=0.2)
    dl = minatoloader.DataLoader(ds, batch_size=2, num_workers=2, multiprocessing_context=context,
                                 persistent_workers=persistent)
    pids: list[int] = []
    SCENARIOS[name](dl, pids)
    assert pids
    if persistent:  # workers stay for the next epoch until the loader goes
        assert all(psutil.pid_exists(p) for p in pids)
    del dl  # the loader itself goes: nothing may remain
    check_clean(pids, *baseline)


def test_del_loader_mid_epoch(baseline: tuple[int, set[str]]) -> None:
    dl = minatoloader.DataLoader(Indexed(100), batch_size=2, num_workers=2, persistent_workers=True)
    it = iter(dl)
    next(it)
    pids = workers_of(dl)
    del it, dl
    check_clean(pids, *baseline)


def test_close_is_idempotent_and_final() -> None:
    dl = minatoloader.DataLoader(Indexed(10), batch_size=2, num_workers=1)
    next(iter(dl))
    dl.close()
    dl.close()
    assert dl.closed
    with pytest.raises(minatoloader.ClosedError):
        iter(dl)
    assert torch.equal(next(iter(minatoloader.DataLoader(Indexed(4), batch_size=4)))[0], torch.arange(4))
