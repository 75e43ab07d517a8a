"""Shared fixtures: the devices to run on (the CPU, plus cuda:0 / rocm:0 when present) and
helpers. The library comes from WICK_LIBRARY (ctest sets it to the build's libwick.so)."""
import numpy as np
import pytest

import wick

GPU_SPECS = [s for s in wick.devices() if s != "cpu"][:1]


def pytest_report_header(config):
    gpus = GPU_SPECS or ["none (GPU cases skipped)"]
    return f"wick {wick.version()} from {wick.lib().path}; GPU: {', '.join(gpus)}"


@pytest.fixture(params=["cpu"] + GPU_SPECS)
def dev(request):
    """Each op-family test runs on the CPU and on the first GPU present."""
    return wick.device(request.param)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def up(a, dev, dtype=None):
    return wick.from_numpy(np.asarray(a), dev, dtype)


def close(got, want, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               rtol=rtol, atol=atol)
