"""The server under test is started by the caller (tests/python_client.rs in the repository
starts the real binary); it says where with CASELOAD_URL, CASELOAD_USERNAME and
CASELOAD_PASSWORD (an administrator), and CASELOAD_TEST_GUESTS_DIR names the directory of
the repository's test guests (`caseload_guest_versioned_v1.wasm`...) for the publishing
tests.

Every test that takes `client` or `connect` runs twice: with `Client`, and with
`AsyncClient` driven through `Blocking`, so that each call is tested in both."""

import asyncio
import inspect
import os
import threading
import uuid
from pathlib import Path

import httpx
import pytest

from caseload import AsyncClient, Client


class Blocking:
    """An `AsyncClient` driven from a test's synchronous code: its coroutines run on an
    event loop of its own, on a thread, and its async iterators are iterated from here. It
    answers what `Client` answers, so a test of `Client` tests `AsyncClient` too."""

    def __init__(self, *args, **kwargs):
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

        async def make():
            return AsyncClient(*args, **kwargs)

        self._client = self._run(make())

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _iterate(self, iterator):
        try:
            while True:
                try:
                    yield self._run(iterator.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            self._run(iterator.aclose())

    def __getattr__(self, name):
        attribute = getattr(self._client, name)
        if inspect.isasyncgenfunction(attribute):
            return lambda *args, **kwargs: self._iterate(attribute(*args, **kwargs))
        if inspect.iscoroutinefunction(attribute):
            return lambda *args, **kwargs: self._run(attribute(*args, **kwargs))
        return attribute

    def close(self):
        if self._loop.is_closed():
            return
        self._run(self._client.aclose())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def server_url():
    url = os.environ.get("CASELOAD_URL")
    if not url:
        pytest.skip("CASELOAD_URL names no server")
    return url


@pytest.fixture(params=["Client", "AsyncClient"])
def connect(request):
    """Opens a client of the kind under test on the server: `connect(username, password)`,
    `connect(api_key=...)`, `connect()` (the environment's key)...; each closed after the
    test."""
    url = server_url()
    opened = []

    def connect(*args, **kwargs):
        made = Client(url, *args, **kwargs) if request.param == "Client" else Blocking(url, *args, **kwargs)
        opened.append(made)
        return made

    yield connect
    for made in opened:
        made.close()


@pytest.fixture
def client(connect):
    """A client of the kind under test, as the administrator."""
    return connect(os.environ["CASELOAD_USERNAME"], os.environ["CASELOAD_PASSWORD"])


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
    with httpx.Client(base_url=server_url()) as http:
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


@pytest.fixture
def make_project(admin_http):
    """Makes a project with a fresh name and the given members (`{name: role}`); its id."""

    def make(members):
        made = admin_http.post("/admin/projects", json={"name": f"p{uuid.uuid4().hex[:8]}"})
        assert made.status_code == 201, made.text
        project = made.json()["id"]
        for name, role in members.items():
            added = admin_http.put(f"/admin/projects/{project}/members/{name}", json={"role": role})
            assert added.status_code == 200, added.text
        return project

    return make


@pytest.fixture
def kind(request):
    """The kind of client under test: `Client` or `AsyncClient`."""
    return request.node.callspec.params["connect"]
