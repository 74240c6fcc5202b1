"""PipelineCpAsync: a PipelineAsync whose producers fill stages with cp.async copies."""
from __future__ import annotations

from dataclasses import dataclass

from .pipeline_async import PipelineAsync


@dataclass(frozen=True, eq=False)
class PipelineCpAsync(PipelineAsync):
    """producer_commit arrives on the stage's full barrier when this thread's asynchronous copies have landed (not
    when they were issued), so consumers never see a partly copied stage. Every producer thread commits."""

    def producer_commit(self, state, *, loc=None, ip=None):
        self.sync_object_full.arrive_cp_async(state.index)
