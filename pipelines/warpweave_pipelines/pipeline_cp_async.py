"""PipelineCpAsync: a PipelineAsync whose producers fill stages with cp.async copies."""
from __future__ import annotations

from .pipeline_async import PipelineAsync


class PipelineCpAsync(PipelineAsync):
    """producer_commit arrives on the stage's `full` barrier when this thread's cp.async copies have landed (not
    when they were issued), so consumers never see a partly copied stage. Every producer thread commits."""

    def producer_commit(self, state):
        self.full.arrive_cp_async(state.index)
