"""PipelineTmaStore: a ring of num_stages shared-memory buffers that TMA stores copy out, tracked with bulk async
groups instead of mbarriers.

The producer (the warp that issues the stores) writes buffer i, stores it and commits the store's group
(producer_commit); before it rewrites a buffer, producer_acquire waits until at most num_stages - 1 groups still
read their shared memory, so the oldest buffer is free; producer_tail waits until every store has read its
buffer (before the kernel exits or reuses the memory). Built from the backends' arch.cp_async_bulk_commit_group
and arch.cp_async_bulk_wait_group_read; no instruction is spelled here. A frozen dataclass like the other
pipelines (fields num_stages, producer_group).
"""
from __future__ import annotations

from dataclasses import dataclass

import warpweave.cute as cute


@dataclass(frozen=True, eq=False)
class PipelineTmaStore:
    num_stages: int
    producer_group: object = None

    @classmethod
    def create(cls, *, num_stages: int, producer_group=None, loc=None, ip=None):
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"a TMA store pipeline needs at least one stage, got {num_stages!r}")
        return cls(num_stages, producer_group)

    def producer_commit(self, state=None, *, loc=None, ip=None):
        cute.arch.cp_async_bulk_commit_group()

    def producer_acquire(self, state=None, *, loc=None, ip=None):
        cute.arch.cp_async_bulk_wait_group_read(self.num_stages - 1)

    def producer_tail(self, state=None, *, loc=None, ip=None):
        cute.arch.cp_async_bulk_wait_group_read(0)
