"""The server under test is started by the caller (tests/python_client.rs in the repository
starts the real binary); it says where with CASELOAD_URL, CASELOAD_USERNAME and
CASELOAD_PASSWORD."""

import os

import pytest

from caseload import Client


@pytest.fixture
def client():
    url = os.environ.get("CASELOAD_URL")
    if not url:
        pytest.skip("CASELOAD_URL names no server")
    with Client(url, os.environ["CASELOAD_USERNAME"], os.environ["CASELOAD_PASSWORD"]) as client:
        yield client
