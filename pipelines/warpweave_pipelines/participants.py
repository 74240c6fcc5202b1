"""PipelineProducer and PipelineConsumer: the handle API of a pipeline (CuTe DSL's names), one object per side
that keeps its own PipelineState, so that a kernel writes

    producer, consumer = pipe.make_participants()
    handle = producer.acquire_and_advance()      # waits for a free stage; handle.index, .count, .barrier
    ... fill stage handle.index (TMA: cute.copy(..., tma_bar_ptr=handle.barrier)) ...
    handle.commit()
    producer.tail()                              # before the block exits

    handle = consumer.wait_and_advance()          # waits for a full stage
    ... read stage handle.index ...
    handle.release()

instead of passing states to producer_acquire / consumer_wait. A handle is an immutable snapshot of the state it
was taken at (index, count, phase); commit() / release() act on that stage whatever the participant did since.
try_acquire() / try_wait() return a token (a Boolean: the stage is ready) that acquire / wait then skip the wait
on. reset() starts the count again (per output tile of a persistent kernel), keeping the place in the ring.

They are composed only of the pipeline's own producer_* / consumer_* methods, so they work with every pipeline
here (PipelineAsync, PipelineCpAsync, PipelineTmaAsync) and spell no instruction. A participant is carried
through dynamic loops with its state (it is changed in place by advance()).
"""
from __future__ import annotations

from .state import PipelineState, PipelineUserType, make_pipeline_state


class _Handle:
    """A stage of the ring as a participant took it: index, count (how many stages before it, since the last
    reset), phase."""

    def __init__(self, pipeline, state: PipelineState):
        self._pipeline = pipeline
        self._state = state

    @property
    def index(self):
        return self._state.index

    @property
    def count(self):
        return self._state.count

    @property
    def phase(self):
        return self._state.phase

    # A handle taken again inside a dynamic loop (`handle = producer.acquire_and_advance()` before and in the
    # loop) is carried through it as its stage's values; the handle's state is its own snapshot, so this changes
    # no participant.
    def _ww_carry_get(self):
        return self._state._ww_carry_get()

    def _ww_carry_set(self, values):
        self._state._ww_carry_set(values)

    def __repr__(self):
        return f"{type(self).__qualname__}(index={self.index}, count={self.count}, phase={self.phase})"


class _Participant:
    """What both sides share: the pipeline, this side's own PipelineState (advanced in place, carried through
    dynamic loops), its cooperative group and the handle it took last."""

    _user_type = None      # PipelineUserType of the side's starting state
    _group_attr = None     # the pipeline's attribute naming this side's cooperative group

    def __init__(self, pipeline, state: PipelineState | None = None, group=None):
        self._pipeline = pipeline
        self._state = state if state is not None else make_pipeline_state(self._user_type, pipeline.num_stages)
        self._group = group if group is not None else getattr(pipeline, self._group_attr, None)
        self._last = None

    @property
    def pipeline(self):
        return self._pipeline

    @property
    def state(self) -> PipelineState:
        return self._state

    @property
    def index(self):
        return self._state.index

    @property
    def count(self):
        return self._state.count

    def advance(self):
        self._state.advance()

    def reset(self):
        """Counts from 0 again, keeping the place in the ring."""
        self._state.reset_count()

    def clone(self):
        return type(self)(self._pipeline, self._state.clone(), self._group)

    # Carried through dynamic control flow: the state, and the stage taken last, which release() / commit() without
    # a handle act on after the region (a wait in a loop's last trip, its release after the loop); before any stage
    # is taken the state stands in for it, so that the values are as many whether the region takes one or not.
    def _ww_carry_get(self):
        last = self._last._state if self._last is not None else self._state
        return self._state._ww_carry_get() + last._ww_carry_get()

    def _ww_carry_set(self, values):
        self._state._ww_carry_set(values[:3])
        if self._last is not None:
            self._last = type(self._last)(self._pipeline, PipelineState(self._state.stages, *values[3:]))

    def __repr__(self):
        return f"{type(self).__name__}({type(self._pipeline).__name__}, {self._state})"


class PipelineProducer(_Participant):
    """The producer side of `pipeline`, starting at the beginning of the ring (or at `state`)."""

    _user_type = PipelineUserType.Producer
    _group_attr = "producer_group"

    # CuTe DSL keeps a participant's state in a private attribute, which programs reach by its mangled name
    # (producer._PipelineProducer__state.clone(), to wait on a stage with their own transaction count): the
    # same object as `state` here, so that what they do with it is what the participant does.
    @property
    def _PipelineProducer__state(self) -> PipelineState:
        return self._state

    class ImmutableResourceHandle(_Handle):
        @property
        def barrier(self):
            """The stage's full barrier, which the TMA loads that fill it complete (a pipeline without one, such
            as PipelineAsync, has it too: its producers arrive on it in commit())."""
            getter = getattr(self._pipeline, "producer_get_barrier", None)
            if getter is not None:
                return getter(self._state)
            return self._pipeline.full.at(self._state.index)

        def commit(self):
            self._pipeline.producer_commit(self._state)

    def try_acquire(self):
        """Whether the next stage is already free (does not wait): a token for acquire()."""
        return self._pipeline.producer_try_acquire(self._state)

    def acquire(self, try_acquire_token=None) -> "PipelineProducer.ImmutableResourceHandle":
        """Waits until the next stage is free (not when try_acquire_token says it is) and returns it."""
        if try_acquire_token is None:
            self._pipeline.producer_acquire(self._state)
        else:
            self._pipeline.producer_acquire(self._state, try_acquire_token)
        self._last = PipelineProducer.ImmutableResourceHandle(self._pipeline, self._state.clone())
        return self._last

    def acquire_and_advance(self, try_acquire_token=None) -> "PipelineProducer.ImmutableResourceHandle":
        handle = self.acquire(try_acquire_token)
        self.advance()
        return handle

    def commit(self, handle: "PipelineProducer.ImmutableResourceHandle | None" = None):
        """Marks a stage full: `handle`'s, or the one acquired last, or, by a participant that has acquired none
        (a side that signals a peer stage by stage with commit() and advance(), as CuTe DSL's attention programs
        do), the stage it is at."""
        if handle is None:
            if self._last is None:
                self._pipeline.producer_commit(self._state)
                return
            handle = self._last
        handle.commit()

    def tail(self):
        """Waits until the consumers have released every stage (before the block exits while a peer may still
        arrive on this block's barriers)."""
        self._pipeline.producer_tail(self._state.clone())


class PipelineConsumer(_Participant):
    """The consumer side of `pipeline`, starting at the beginning of the ring (or at `state`)."""

    _user_type = PipelineUserType.Consumer
    _group_attr = "consumer_group"

    @property
    def _PipelineConsumer__state(self) -> PipelineState:  # as PipelineProducer's
        return self._state

    class ImmutableResourceHandle(_Handle):
        def release(self):
            self._pipeline.consumer_release(self._state)

    def try_wait(self):
        """Whether the next stage is already full (does not wait): a token for wait()."""
        try_wait = getattr(self._pipeline, "consumer_try_wait", None)
        if try_wait is None:
            raise NotImplementedError(f"{type(self._pipeline).__name__} has no consumer_try_wait")
        return try_wait(self._state)

    def wait(self, try_wait_token=None) -> "PipelineConsumer.ImmutableResourceHandle":
        """Waits until the next stage is full (not when try_wait_token says it is) and returns it."""
        if try_wait_token is None:
            self._pipeline.consumer_wait(self._state)
        else:
            self._pipeline.consumer_wait(self._state, try_wait_token)
        self._last = PipelineConsumer.ImmutableResourceHandle(self._pipeline, self._state.clone())
        return self._last

    def wait_and_advance(self, try_wait_token=None) -> "PipelineConsumer.ImmutableResourceHandle":
        handle = self.wait(try_wait_token)
        self.advance()
        return handle

    def release(self, handle: "PipelineConsumer.ImmutableResourceHandle | None" = None):
        """Marks a stage empty again: `handle`'s, or the one waited for last, or, by a participant that has waited
        for none (a clone() that releases, stage by stage with advance(), what another one waited for), the stage
        it is at."""
        if handle is None:
            if self._last is None:
                self._pipeline.consumer_release(self._state)
                return
            handle = self._last
        handle.release()


def make_participants(pipeline):
    """(producer, consumer) of `pipeline`, both at the beginning of the ring."""
    return PipelineProducer(pipeline), PipelineConsumer(pipeline)
