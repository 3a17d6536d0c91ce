"""An exception raised by an IterableDataset's iterator reaches the user as
torch's DataLoader raises it: the user's exception type, with the message."""

from __future__ import annotations

import gc
from typing import Any

import pytest
import torch
from torch.utils.data import IterableDataset

import minatoloader


class Boom(IterableDataset):  # type: ignore[type-arg]
    """Yields a few items, then its iterator raises ValueError("boom")."""

    def __iter__(self) -> Any:
        yield from range(3)
        raise ValueError("boom")


def _outcome(loader: Any) -> tuple[type[BaseException] | None, str, list[Any]]:
    got: list[Any] = []
    try:
        for b in loader:
            got.append(b)
    except Exception as e:  # noqa: BLE001 - compared below
        return type(e), str(e), got
    return None, "", got


@pytest.mark.parametrize("workers", [0, 1, 2])
@pytest.mark.parametrize("batch_size", [None, 2])
def test_iterator_exception_is_reraised_like_torch(workers: int, batch_size: int | None) -> None:
    want_type, want_msg, _ = _outcome(torch.utils.data.DataLoader(Boom(), batch_size=batch_size, num_workers=workers))
    gc.collect()  # torch's iterator must be gone before our workers fork
    assert want_type is ValueError and "boom" in want_msg
    dl = minatoloader.DataLoader(Boom(), batch_size=batch_size, num_workers=workers)
    typ, msg, got = _outcome(dl)
    assert typ is want_type, (typ, msg)
    assert "boom" in msg
    if workers:
        assert "Caught ValueError in DataLoader worker process" in msg and "Traceback" in msg, msg
        assert "__iter__" in msg, msg
    else:
        # In-process the items before the failure are delivered first.
        items = [int(x) for b in got for x in (b if batch_size else [b])]
        assert items == ([0, 1] if batch_size else [0, 1, 2])
    dl.close()


def test_loader_is_usable_after_the_error() -> None:
    """The failed epoch stops its workers; the next epoch fails the same way
    (no leaked or stuck worker from the first)."""
    dl = minatoloader.DataLoader(Boom(), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        with pytest.raises(ValueError, match="boom"):
            list(dl)
    dl.close()
