"""PipelineState: where a producer or consumer is in the ring of stages."""
from __future__ import annotations

import enum

import warpweave as cutlass
from warpweave.ext import select


class PipelineUserType(enum.Enum):
    Producer = "producer"
    Consumer = "consumer"
    # A warp that produces a pipeline's stages and also consumes them (the scheduler warp of PipelineClcFetchAsync):
    # its producer state starts as a producer's.
    ProducerConsumer = "producer_consumer"


class PipelineState:
    """(index, phase, count) of one side of a pipeline. advance() moves to the next stage, flipping the phase at
    the wrap. Its values are run-time integers: a dynamic loop that calls advance() carries them."""

    def __init__(self, stages: int, count, index, phase):
        self.stages = stages
        self._count = cutlass.Int32(count)
        self._index = cutlass.Int32(index)
        self._phase = cutlass.Int32(phase)

    @property
    def index(self):
        return self._index

    @property
    def phase(self):
        return self._phase

    @property
    def count(self):
        return self._count

    def advance(self, *, loc=None, ip=None):
        self._count = self._count + 1
        nxt = self._index + 1
        wrap = nxt == self.stages
        self._index = select(wrap, cutlass.Int32(0), nxt)
        self._phase = select(wrap, self._phase ^ 1, self._phase)

    def reset_count(self, *, loc=None, ip=None):
        """Counts from 0 again (e.g. the k-tiles of each new output tile), keeping the place in the ring."""
        self._count = cutlass.Int32(0)

    def clone(self, *, loc=None, ip=None) -> "PipelineState":
        return PipelineState(self.stages, self._count, self._index, self._phase)

    # Carried through dynamic control flow (see warpweave's control flow: objects changed in place).
    def _ww_carry_get(self):
        return [self._count, self._index, self._phase]

    def _ww_carry_set(self, values):
        self._count, self._index, self._phase = values

    # CuTe DSL's IR-values protocol, in its order (count, index, phase): a library's subclass that gives only
    # __new_from_mlir_values__ (QuACK's PipelineStateWAdvance) is rebuilt from these three.
    def __extract_mlir_values__(self):
        return [self._count.ir_value(), self._index.ir_value(), self._phase.ir_value()]

    def __new_from_mlir_values__(self, values):
        count, index, phase = (cutlass.Int32(v) for v in values)
        return PipelineState(self.stages, count, index, phase)

    def __repr__(self):
        return f"PipelineState(stages={self.stages}, index={self._index}, phase={self._phase})"


def make_pipeline_state(user_type: PipelineUserType, stages: int) -> PipelineState:
    """The start of the ring: a producer starts in phase 1 (its first wait on `empty` passes at once: the buffers
    start empty), a consumer in phase 0."""
    phase = 1 if user_type in (PipelineUserType.Producer, PipelineUserType.ProducerConsumer) else 0
    return PipelineState(stages, 0, 0, phase)
