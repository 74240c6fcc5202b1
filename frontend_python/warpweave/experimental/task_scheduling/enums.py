"""The enumerations of task scheduling: what a work method is (WorkAttr), which threads of a task signal a
pipeline's barrier (SignalingThreads) and how a PipelineGroup shares one pipeline between several resources
(PipelineGroupMode)."""
import enum


class WorkAttr(enum.Flag):
    """NONE: a work that reads or writes the resource's payload, ordered against the pipeline brackets and the
    dependency graph. AUXILIARY: set-up work that touches no payload (an address view hoisted out of a loop); it is
    captured in the schedule but not ordered."""
    NONE = 0
    AUXILIARY = enum.auto()


class SignalingThreads(enum.Enum):
    """Which threads of a cluster's task arrive on a pipeline barrier: those of every CTA (All), or only the
    cluster's leader CTA's (CtaLeader, as a pair of CTAs sharing one matrix multiply signals)."""
    All = "all"
    CtaLeader = "cta_leader"


class PipelineGroupMode(enum.Enum):
    """MERGE: several resources' producers fill one stage of a shared pipeline (one commit per stage for all of
    them). FORK: one producer's stage feeds several resources' consumers, each releasing it."""
    Merge = "merge"
    Fork = "fork"
