"""Python datasets shared by the tests of the Python-dataset path. They live
in a module (not in the test files) so that spawn and forkserver workers
can unpickle them."""

from __future__ import annotations

import math
import os
import random
import signal
import time
from collections import namedtuple
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset, IterableDataset, get_worker_info

Pair = namedtuple("Pair", ["a", "b"])


class Indexed(Dataset):
    """Sample i is (i, a tensor of i); optional slow and failing indices."""

    def __init__(self, n: int, slow: tuple[int, ...] = (), slow_s: float = 0.05, fail: tuple[int, ...] = ()) -> None:
        self.n, self.slow, self.slow_s, self.fail = n, set(slow), slow_s, set(fail)

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        if i in self.fail:
            raise ValueError(f"sample {i} is broken on purpose")
        if i in self.slow:
            time.sleep(self.slow_s)
        return i, torch.full((2,), float(i))


class Nested(Dataset):
    """Samples of every kind default_collate handles."""

    def __len__(self) -> int:
        return 23

    def __getitem__(self, i: int) -> Any:
        return {
            "img": torch.arange(6, dtype=torch.float32).reshape(2, 3) + i,
            "arr": np.full((2,), i, dtype=np.int16),
            "meta": {"name": f"s{i}", "w": i * 0.5, "tags": [i, i + 1]},
            "pair": Pair(torch.tensor(i), np.float64(i) / 3),
            "bf": torch.full((2,), i, dtype=torch.bfloat16),
            "flag": i % 2 == 0,
        }


class WorkerInfoDS(Dataset):
    """Reports the worker it ran in."""

    def __len__(self) -> int:
        return 16

    def __getitem__(self, i: int) -> Any:
        info = get_worker_info()
        assert info is not None
        return i, info.id, info.num_workers, info.seed, info.seed - info.id


class RandomAug(Dataset):
    """A random augmentation through torch, random and numpy."""

    def __len__(self) -> int:
        return 40

    def __getitem__(self, i: int) -> Any:
        return i, torch.rand(2), random.random(), float(np.random.rand())


class Sharded(IterableDataset):
    """range(start, end) split across workers, torch's documented example."""

    def __init__(self, start: int, end: int) -> None:
        self.start, self.end = start, end

    def __len__(self) -> int:
        return self.end - self.start

    def __iter__(self) -> Any:
        info = get_worker_info()
        if info is None:
            lo, hi = self.start, self.end
        else:
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            lo = self.start + info.id * per
            hi = min(lo + per, self.end)
        for i in range(lo, hi):
            yield i, torch.tensor([i, -i])


class Dies(Dataset):
    """Sample `at` kills its worker: with SIGKILL, os._exit or a segfault."""

    def __init__(self, n: int, at: int, how: str) -> None:
        self.n, self.at, self.how = n, at, how

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        if i == self.at:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif self.how == "exit":
                os._exit(3)
            else:
                import ctypes

                ctypes.string_at(0)
        return torch.tensor(i)


class Sleepy(Dataset):
    """Every sample sleeps (for timeout tests)."""

    def __init__(self, s: float, n: int = 8) -> None:
        self.s, self.n = s, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> Any:
        time.sleep(self.s)
        return torch.tensor(i)


def bad_init(worker_id: int) -> None:
    raise RuntimeError(f"init of worker {worker_id} failed on purpose")


def collate_list(batch: list[Any]) -> Any:
    return [b[0] for b in batch]


def failing_collate(batch: list[Any]) -> Any:
    raise KeyError("collate fails on purpose")
