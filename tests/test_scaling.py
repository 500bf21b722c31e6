"""The one robust asinh scaling (:mod:`rdl.scaling`): the same numbers on tensors and arrays,
an inverse that inverts, and the interquartile scale's fallback."""
import math

import numpy as np
import pytest
import torch

from rdl.scaling import iqr_scale, robust_asinh, robust_sinh


def test_asinh_and_its_inverse_on_tensors_and_arrays():
    x = [-1e6, -3.0, 0.0, 2.0, 2.5, 1e9]
    want = [math.asinh((v - 2.0) / 0.5) for v in x]
    t = robust_asinh(torch.tensor(x, dtype=torch.float64), torch.tensor(2.0), torch.tensor(0.5))
    a = robust_asinh(np.array(x), 2.0, 0.5)
    assert isinstance(a, np.ndarray) and a.tolist() == pytest.approx(want, rel=1e-12)
    assert t.dtype == torch.float64 and t.tolist() == pytest.approx(want, rel=1e-12)
    assert robust_sinh(t, 2.0, 0.5).tolist() == pytest.approx(x, rel=1e-9)
    assert robust_sinh(a, 2.0, 0.5).tolist() == pytest.approx(x, rel=1e-9)


def test_iqr_scale_falls_back_where_the_range_is_empty():
    q1, q3 = [0.0, 5.0, 1.0], [1.349, 5.0, 0.5]
    assert iqr_scale(np.array(q1), np.array(q3), np.array([7.0, 8.0, 9.0])).tolist() == [1.0, 8.0, 9.0]
    got = iqr_scale(torch.tensor(q1), torch.tensor(q3), torch.tensor([7.0, 8.0, 9.0]))
    assert got.dtype == torch.float32 and got.tolist() == [1.0, 8.0, 9.0]
