"""The server under test is started by the caller (tests/python_client.rs in the repository
starts the real binary); it says where with CASELOAD_URL, CASELOAD_USERNAME and
CASELOAD_PASSWORD (an administrator), and CASELOAD_TEST_GUESTS_DIR names the directory of
the repository's test guests (`caseload_guest_versioned_v1.wasm`...) for the publishing
tests."""

import os
import uuid
from pathlib import Path

import httpx
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


@pytest.fixture
def admin_http():
    """The server's API as its administrator, with no client of this package in between:
    for what a test sets up (users, projects, quotas)."""
    url = os.environ.get("CASELOAD_URL")
    if not url:
        pytest.skip("CASELOAD_URL names no server")
    with httpx.Client(base_url=url) as http:
        token = http.post("/login", json={"username": os.environ["CASELOAD_USERNAME"],
                                          "password": os.environ["CASELOAD_PASSWORD"]}).json()
        http.headers["Authorization"] = f"Bearer {token['access_token']}"
        yield http


@pytest.fixture
def make_user(admin_http):
    """Makes a user with a fresh name (a member, unless `role` says otherwise) and gives its
    name and password."""

    def make(role="member", **change):
        name = f"u{uuid.uuid4().hex[:12]}"
        password = f"{name}-password"
        made = admin_http.post("/admin/users", json={"username": name, "password": password,
                                                     "role": role})
        assert made.status_code == 201, made.text
        if change:
            changed = admin_http.patch(f"/admin/users/{name}", json=change)
            assert changed.status_code == 200, changed.text
        return name, password

    return make
