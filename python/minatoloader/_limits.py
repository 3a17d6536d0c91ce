"""Upper bounds of the sizes that reach an allocation in the Go core.

They mirror core/config/config.go (MaxBatchSize, MaxInflightLimit,
MaxPrefetchBatches): Go cannot recover from a failed allocation, so the core
refuses larger values, and the Python shell derives its options under them
(docs/failure-modes.md).
"""

from __future__ import annotations

MAX_BATCH_SIZE = 1 << 22
MAX_INFLIGHT = 1 << 22
MAX_PREFETCH_BATCHES = 1 << 16
# Requests kept in flight per worker for an IterableDataset (torch keeps
# prefetch_factor of them; more than this only fills the pipes).
MAX_ITERABLE_PREFETCH = 64
