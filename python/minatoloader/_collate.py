"""Collation in the main process, as torch's workers would collate."""

from __future__ import annotations

from typing import Any

import numpy as np


def background_collate(collate_fn: Any, pool: Any) -> Any:
    """The collate function for the collator thread. torch's default_collate
    stacks tensors with torch.stack, whose intra-op threads would compete
    with the training thread's; the same result is built with one numpy
    copy per sample instead (C-contiguous CPU tensors of one shape and a
    numpy dtype; anything else goes to torch's own function). Other
    collate functions run as they are."""
    from torch.utils.data import _utils

    if collate_fn is not _utils.collate.default_collate:
        return collate_fn
    import torch
    from torch.utils.data._utils.collate import collate, collate_tensor_fn, default_collate_fn_map

    def stack(batch: Any, *, collate_fn_map: Any = None) -> Any:
        elem = batch[0]
        if elem.is_nested:  # torch's own error for a batch of nested tensors
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        shape, dtype = elem.shape, elem.dtype
        if dtype in (torch.bfloat16,) or dtype.is_complex or not all(
            type(t) is torch.Tensor and t.layout == torch.strided and t.device.type == "cpu" and t.shape == shape
            and t.dtype == dtype and not t.requires_grad for t in batch
        ):
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        try:
            full = (len(batch), *shape)
            out = pool.empty(full, dtype) if pool is not None else None
            if out is None:
                out = torch.empty(full, dtype=dtype)
            np.stack([t.numpy() for t in batch], out=out.numpy())
        except (TypeError, RuntimeError, ValueError):
            return collate_tensor_fn(batch, collate_fn_map=collate_fn_map)
        return out

    fn_map = dict(default_collate_fn_map)
    fn_map[torch.Tensor] = stack

    def default_collate_numpy(batch: Any) -> Any:
        return collate(batch, collate_fn_map=fn_map)

    return default_collate_numpy


class one_thread:
    """Runs the main process's collation with one torch intra-op thread.
    The worker processes keep every core busy; torch's default pool of
    intra-op threads then stalls in each parallel region (torch.stack of a
    19 MB batch: 200 ms with 2 threads against 9 ms with 1 on a loaded
    2-core machine). torch's own DataLoader collates in single-threaded
    workers. The previous count is restored after each batch (0.2 µs)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch
        self.n = 1

    def __enter__(self) -> None:
        self.n = self.torch.get_num_threads()
        if self.n != 1:
            self.torch.set_num_threads(1)

    def __exit__(self, *exc: Any) -> None:
        if self.n != 1:
            self.torch.set_num_threads(self.n)


def pin(data: Any) -> Any:
    """torch's pin_memory of a batch (any nesting), when CUDA is there."""
    from torch.utils.data._utils.pin_memory import pin_memory

    return pin_memory(data)
