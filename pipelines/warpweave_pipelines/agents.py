"""Who takes part in a pipeline (Agent, CooperativeGroup) and what each side does to complete a stage
(PipelineOp): the vocabulary a pipeline's sync objects are made from."""
from __future__ import annotations

import enum


class Agent(enum.Enum):
    """Who takes part in a pipeline or a sync: threads, warps, the CTA, or the whole cluster."""
    Thread = "thread"
    Warp = "warp"
    ThreadBlock = "threadblock"
    ThreadBlockCluster = "threadblockcluster"


class PipelineOp(enum.Enum):
    """What a pipeline side does to complete a stage (CuTe DSL's kinds): its barrier arrivals follow from it.

    AsyncThread, AsyncLoad, Composite: threads arrive (dst: a CTA rank);
    TmaLoad, ClcLoad: one elected lane arrives expecting the stage's bytes, which the loads then bring (dst: a mask of
    CTAs, each of which gets the arrival);
    TCGen05Mma: the MMAs' commit arrives once they complete (dst: a mask of CTAs);
    TmaStore: bulk async groups, no barrier."""
    AsyncThread = 1
    TCGen05Mma = 2
    TmaLoad = 3
    ClcLoad = 4
    TmaStore = 5
    Composite = 6
    AsyncLoad = 7


class CooperativeGroup:
    """The threads of one side of a pipeline: `size` threads (or warps) each arrive once per stage."""

    def __init__(self, agent: Agent, size: int = 1, alignment: int = 1):
        if not isinstance(agent, Agent):
            raise TypeError(f"a cooperative group is made of a pipeline Agent (Agent.Thread, ...), got {agent!r}")
        if isinstance(size, float) and size.is_integer():
            size = int(size)    # a count computed with / (CuTe DSL's FMHA divides threads by 32 so)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
            raise ValueError(f"a cooperative group has a whole number of members, at least one, got {size!r}")
        self.agent = agent
        self.size = size
        self.alignment = alignment

    @property
    def arrivals(self) -> int:
        return self.size

    def __repr__(self):
        return f"CooperativeGroup({self.agent}, {self.size})"
