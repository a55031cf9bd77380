"""The server under test is started by the caller (tests/python_client.rs in the repository
starts the real binary); it says where with CASELOAD_URL, CASELOAD_USERNAME and
CASELOAD_PASSWORD (an administrator), and CASELOAD_TEST_GUESTS_DIR names the directory of
the repository's test guests (`caseload_guest_versioned_v1.wasm`...) for the publishing
tests."""

import os
from pathlib import Path

import pytest

from caseload import Client


@pytest.fixture
def client():
    url = os.environ.get("CASELOAD_URL")
    if not url:
        pytest.skip("CASELOAD_URL names no server")
    with Client(url, os.environ["CASELOAD_USERNAME"], os.environ["CASELOAD_PASSWORD"]) as client:
        yield client


@pytest.fixture
def guest_wasm():
    """The path of a test guest's component by its variant (`versioned_v1`)."""
    directory = os.environ.get("CASELOAD_TEST_GUESTS_DIR")
    if not directory:
        pytest.skip("CASELOAD_TEST_GUESTS_DIR names no test guests")
    return lambda variant: Path(directory) / f"caseload_guest_{variant}.wasm"
