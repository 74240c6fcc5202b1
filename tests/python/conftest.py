import os
import random

import pytest


@pytest.fixture
def rng():
    """A seeded random generator; WARPWEAVE_TEST_SEED reproduces a run."""
    seed = int(os.environ.get("WARPWEAVE_TEST_SEED", random.randrange(1 << 30)))
    print(f"WARPWEAVE_TEST_SEED={seed}")
    return random.Random(seed)
