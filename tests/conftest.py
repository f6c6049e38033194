import os
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, settings

# CI runs every property test on the same examples (derandomised, no example database, no per-example
# deadline: a loaded runner must not turn a slow example into a failure), so a fresh clone passes or
# fails the same way for any --hypothesis-seed; `tox -e explore` hunts for new bugs with random
# examples and many more of them.
settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True)
settings.register_profile(
    "explore", max_examples=2_000, database=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("SPECCONFORM_HYPOTHESIS", "ci"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
CUDA = torch.cuda.is_available()
if not CUDA:
    # Triton kernels run on CPU tensors only in the interpreter, which must be chosen before any
    # kernel is decorated; impl imports its kernels lazily, so setting it here is early enough.
    os.environ.setdefault("TRITON_INTERPRET", "1")

try:
    import triton  # noqa: F401

    HAS_TRITON = True
except ImportError:
    HAS_TRITON = False


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu") and not CUDA:  # a marker, not a keyword: a folder named gpu is no GPU test
            item.add_marker(skip_gpu)


# (device, backend) pairs the implementation is tested on: both backends on the CPU (Triton in the
# interpreter), both on CUDA when present (marked gpu).
IMPL_TARGETS = [
    pytest.param(("cpu", "torch"), id="cpu-torch"),
    pytest.param(
        ("cpu", "triton"),
        id="cpu-triton",
        marks=pytest.mark.skipif(not HAS_TRITON or CUDA, reason="interpreter runs only without CUDA"),
    ),
    pytest.param(("cuda", "torch"), id="cuda-torch", marks=pytest.mark.gpu),
    pytest.param(("cuda", "triton"), id="cuda-triton", marks=pytest.mark.gpu),
]


@pytest.fixture(params=IMPL_TARGETS)
def target(request):
    return request.param


@pytest.fixture(autouse=os.environ.get("SPECCONFORM_HYPOTHESIS", "ci") == "ci")
def _examples_independent_of_imports():
    """Under ``ci``, Hypothesis draws no constants from the loaded modules' source (as
    ``specconform.harness.cases.draw`` never does), so a derandomised test draws the same examples whichever tests
    were collected beside it; ``explore`` keeps them, for finding bugs."""
    from specconform.harness.cases import without_local_constants

    with without_local_constants():
        yield


REPORTS = Path(__file__).resolve().parents[1] / "reports"


def _report_entries() -> set[Path]:
    """What ``reports/`` holds, and what its folders hold (a run folder under ``reports/runs``)."""
    folders = [folder for folder in REPORTS.glob("*") if folder.is_dir()]
    return set(REPORTS.glob("*")) | {entry for folder in folders for entry in folder.iterdir()}


@pytest.fixture(autouse=True)
def _writes_only_into_temporary_folders():
    """A test writes its runs and reports into temporary folders, never into the working tree's ``reports/``."""
    before = _report_entries()
    yield
    made = sorted(str(path.relative_to(REPORTS.parent)) for path in _report_entries() - before)
    assert not made, f"the test wrote into the working tree: {', '.join(made)}"
