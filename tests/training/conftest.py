"""Fixtures of the training tests."""
from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters


@pytest.fixture
def fresh_dynamo():
    """Dynamo's caches and counters empty before and after the test (graph counts start
    at 0; no compiled graph outlives it)."""
    torch._dynamo.reset()
    counters.clear()
    yield
    torch._dynamo.reset()
