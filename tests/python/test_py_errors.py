"""Errors in user code and dead workers, with a Python Dataset."""

from __future__ import annotations

import time

import pytest
import torch
from pydatasets import Dies, Indexed, Sharded, Sleepy, bad_init, failing_collate

import minatoloader


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("in_order", [True, False])
def test_getitem_exception_is_reraised_with_traceback_and_index(workers: int, in_order: bool) -> None:
    dl = minatoloader.DataLoader(Indexed(40, fail=(13,)), batch_size=4, num_workers=workers, in_order=in_order)
    with pytest.raises(ValueError) as e:
        for _ in dl:
            pass
    msg = str(e.value)
    assert "sample 13 is broken on purpose" in msg
    if workers:
        assert "while loading sample 13" in msg and "Traceback" in msg and "__getitem__" in msg
        assert e.value.sample_index == 13  # type: ignore[attr-defined]
    dl.close()


def test_worker_init_fn_exception() -> None:
    dl = minatoloader.DataLoader(Indexed(8), batch_size=2, num_workers=2, worker_init_fn=bad_init)
    with pytest.raises(RuntimeError, match="init of worker . failed on purpose"):
        list(dl)
    dl.close()
    dl = minatoloader.DataLoader(Sharded(0, 8), batch_size=2, num_workers=2, worker_init_fn=bad_init)
    with pytest.raises(RuntimeError, match="worker_init_fn"):
        list(dl)
    dl.close()


def test_collate_exception() -> None:
    dl = minatoloader.DataLoader(Indexed(8), batch_size=2, num_workers=2, collate_fn=failing_collate)
    with pytest.raises(KeyError, match="collate fails on purpose"):
        next(iter(dl))
    dl.close()


@pytest.mark.parametrize("how", ["kill", "exit", "segfault"])
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dead_worker_is_reported_not_waited_on(how: str, context: str) -> None:
    dl = minatoloader.DataLoader(Dies(40, at=9, how=how), batch_size=4, num_workers=2, multiprocessing_context=context)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly") as e:
        list(dl)
    assert time.monotonic() - t0 < 30
    if how == "kill":
        assert "signal 9" in str(e.value)
    dl.close()


def test_timeout_like_torch() -> None:
    dl = minatoloader.DataLoader(Sleepy(2.0), batch_size=2, num_workers=1, timeout=0.3)
    it = iter(dl)
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.3 seconds"):
        next(it)
    assert time.monotonic() - t0 < 1.5
    del it
    dl.close()


@pytest.mark.parametrize("in_order", [True, False])
def test_skip_policy_counts_every_skipped_sample(in_order: bool) -> None:
    fail = (0, 7, 8, 30)
    dl = minatoloader.DataLoader(Indexed(33, fail=fail), batch_size=4, num_workers=2, in_order=in_order)
    dl.configure(on_error="skip", max_skipped=4)
    got = [int(i) for b in dl for i in b[0]]
    assert sorted(got) == [i for i in range(33) if i not in fail]
    st = dl.stats()
    assert sorted(st["epoch_skipped"]) == list(fail) and "broken on purpose" in st["last_skip_error"]
    dl.close()


@pytest.mark.parametrize("budget", [3, 0.05])
def test_skip_budget_spent_raises(budget: float) -> None:
    dl = minatoloader.DataLoader(Indexed(40, fail=(1, 2, 3, 4)), batch_size=4, num_workers=2)
    dl.configure(on_error="skip", max_skipped=budget)
    with pytest.raises(ValueError, match="max_skipped"):
        list(dl)
    dl.close()


def test_configure_rejects_bad_values() -> None:
    dl = minatoloader.DataLoader(Indexed(4), batch_size=2)
    for kw in (dict(on_error="ignore"), dict(max_skipped=-1), dict(max_skipped=1.5), dict(spare_workers=-1),
               dict(arena_bytes=10), dict(timeout_ms=0)):
        with pytest.raises((ValueError, TypeError)):
            dl.configure(**kw)


def test_unpicklable_sample_names_the_index() -> None:
    dl = minatoloader.DataLoader(_Lambdas(), batch_size=None, num_workers=1)
    with pytest.raises(Exception, match="sample 0"):
        list(dl)
    dl.close()


class _Lambdas(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return 2

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        return lambda: i
