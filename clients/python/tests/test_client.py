"""The clients against a real server: each test that takes `client` or `connect` runs with
`Client` and with `AsyncClient` (see conftest.py)."""

import inspect
import io
import os
import time
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from caseload import ApiError, AsyncClient, Client

TRIANGLE = {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1], [0, 2, 1]]}


def complete_graph(n):
    return {"num_nodes": n, "adj_matrix": [[0 if i == j else 1 for j in range(n)] for i in range(n)]}


def test_a_job_is_launched_waited_for_and_read(client):
    job = client.submit("maxcut", TRIANGLE, options={"seed": 1})
    status = client.wait(job, timeout=60)
    assert status.status == "COMPLETED"
    assert status.ended
    assert client.output(job)["cut_value"] == 2


def test_a_solution_is_evaluated_inline_and_from_a_data_file(client):
    from caseload import Invalid

    scored = client.evaluate("maxcut", {"partition": [0, 1, 0]}, TRIANGLE)
    assert scored["objective"] == 2
    assert scored["sense"] == "maximize"
    assert scored["feasible"] is True
    stored = client.upload(io.BytesIO(b"3 2\n1 2 1\n2 3 5\n"), media_type="text/plain")
    scored = client.evaluate("maxcut", {"partition": [1, 0, 1]},
                             data_file=stored["data_file_identifier"])
    assert scored["objective"] == 6
    with pytest.raises(Invalid) as raised:
        client.evaluate("maxcut", {"partition": [0, 1]}, TRIANGLE)
    assert "/solution/partition" in str(raised.value)


def test_times_are_aware_datetimes_at_the_spec_s_instants(client):
    before = datetime.now(timezone.utc) - timedelta(seconds=5)
    job = client.submit("maxcut", TRIANGLE)
    status = client.wait(job, timeout=60)
    assert status.created_at.tzinfo is not None and status.created_at.utcoffset() == timedelta(0)
    assert before <= status.created_at <= status.ended_at <= datetime.now(timezone.utc)
    spec = "%m/%d/%Y, %H:%M:%S"
    assert status.created_at.strftime(spec) == status.started_at
    assert status.ended_at.strftime(spec) == status.end_at
    (summary,) = client.jobs(ids=[job])
    assert (summary.created_at, summary.ended_at) == (status.created_at, status.ended_at)
    # The filters take datetimes too: the job's own creation time finds it, a millisecond later not.
    assert [entry.id for entry in client.jobs(ids=[job], since=status.created_at)] == [job]
    assert list(client.jobs(ids=[job], since=status.created_at + timedelta(milliseconds=1))) == []


def test_a_repeated_launch_with_its_key_is_the_same_job(client):
    key = str(uuid.uuid4())
    first = client.submit("maxcut", TRIANGLE, idempotency_key=key)
    again = client.submit("maxcut", TRIANGLE, idempotency_key=key)
    assert first == again


def test_an_invalid_input_says_where(client):
    with pytest.raises(ApiError) as raised:
        client.submit("maxcut", {"num_nodes": 2, "edges": [[0, 5, 1]]})
    assert raised.value.status == 422
    assert raised.value.type == "urn:caseload:problem:invalid-input"
    assert any(error["pointer"].startswith("/edges") for error in raised.value.errors)


def test_an_uploaded_dataset_is_launched_with_a_progress_bar(client, capsys):
    gset = b"3 3\n1 2 1\n2 3 1\n1 3 1\n"
    stored = client.upload(io.BytesIO(gset), media_type="text/plain", filename="triangle.txt",
                           progress=True)
    assert stored["size"] == len(gset)
    assert "100.0%" in capsys.readouterr().err
    job = client.submit("maxcut", data_file=stored["data_file_identifier"])
    assert client.wait(job, timeout=60).status == "COMPLETED"
    assert client.output(job)["cut_value"] == 2


def test_a_batch_is_found_by_its_label_page_by_page(client):
    sweep = f"sweep-{uuid.uuid4().hex[:8]}"
    bodies = [{**TRIANGLE, "options": {"seed": seed}, "labels": {"sweep": sweep}} for seed in range(3)]
    jobs = client.submit_batch("maxcut", bodies)
    assert len(jobs) == 3
    for job in jobs:
        client.wait(job, timeout=60)
    found = [summary.id for summary in client.jobs(labels={"sweep": sweep}, page_size=1)]
    assert found == list(reversed(jobs))
    completed = list(client.jobs(labels={"sweep": sweep}, status=["COMPLETED", "FAILED"]))
    assert {summary.status for summary in completed} == {"COMPLETED"}


def test_a_job_s_events_end_with_its_end(client):
    job = client.submit("maxcut", complete_graph(20), options={"time_limit_s": 1})
    events = list(client.events(job))
    names = [event.event for event in events]
    assert names[0] == "status"
    assert names[-1] == "end"
    assert "log" in names
    assert events[-1].data["job"][job]["status"] == "COMPLETED"


def test_a_cancelled_job_has_no_output(client):
    job = client.submit("maxcut", complete_graph(30), options={"time_limit_s": 20})
    answer = client.cancel(job)
    assert answer["job"] == job
    assert client.wait(job, timeout=60).status == "CANCELLED"
    with pytest.raises(ApiError) as raised:
        client.output(job)
    assert raised.value.status == 409


def test_a_finished_job_keeps_the_best_it_had(client):
    job = client.submit("maxcut", complete_graph(60), options={"time_limit_s": 60})
    while client.job(job).status != "RUNNING":
        time.sleep(0.02)
    time.sleep(0.3)
    answer = client.finish(job)
    assert (answer["job"], answer["status"]) == (job, "COMPLETED")
    status = client.job(job)
    assert status.stopped_early
    assert (status.objective, status.objective_sense) == (client.output(job)["cut_value"], "maximize")
    # What it reported on the way: cuts of this graph, none better than the answer.
    incumbents = client.incumbents(job)
    assert incumbents, "max-cut reports incumbents"
    for incumbent in incumbents:
        assert len(incumbent.solution["partition"]) == 60
        assert incumbent.objective == incumbent.solution["cut_value"] <= status.objective
        assert incumbent.found_at is not None


def versioned_as(guest_wasm, version):
    """The bench build of the `versioned` guest declaring `version` (9 characters, as its
    marker `9.0.0-r00` is), so that each run of a test publishes versions of its own."""
    marker = b"9.0.0-r00"
    assert len(version) == len(marker)
    bytes_ = guest_wasm("versioned_bench").read_bytes()
    assert marker in bytes_
    return bytes_.replace(marker, version.encode())


def test_versions_are_published_pinned_rolled_back_rerun_and_retired(client, kind, guest_wasm,
                                                                     tmp_path):
    v1, v2 = (f"{major}.0.0-{kind[:3].lower()}" for major in (1, 2))
    path = tmp_path / "v1.wasm"
    path.write_bytes(versioned_as(guest_wasm, v1))
    first = client.publish(path)
    assert (first["name"], first["version"], first["created"]) == ("versioned", v1, True)
    assert first["report"][0].startswith(f"versioned {v1}")
    second = client.publish(io.BytesIO(versioned_as(guest_wasm, v2)))
    assert (second["version"], second["current"]) == (v2, True)
    # The same bytes again are the version already stored.
    again = client.publish(versioned_as(guest_wasm, v1), current=False)
    assert (again["digest"], again["created"]) == (first["digest"], False)

    listed = {entry.version: entry for entry in client.versions("versioned")}
    assert {v1, v2} <= set(listed)
    assert listed[v2].current and not listed[v1].current
    assert listed[v1].source == "store" and listed[v1].published_by == "admin"
    assert listed[v1].published_at.utcoffset() == timedelta(0)

    # A rollback: unpinned launches get v1 again; a pinned one still gets v2.
    rolled_back = client.set_current("versioned", v1)
    assert [entry.version for entry in rolled_back if entry.current] == [v1]
    unpinned = client.submit("versioned", {})
    assert client.output(unpinned, wait=60)["version"] == v1
    pinned = client.submit("versioned", {}, version=v2)
    assert client.output(pinned, wait=60)["version"] == v2
    status = client.job(pinned)
    assert (status.plugin["version"], status.plugin["requested"]) == (v2, v2)
    assert status.plugin["digest"] == second["digest"] and status.rerun_of is None
    assert client.job(unpinned).plugin["requested"] is None
    batch = client.submit_batch("versioned", [{}, {}], version=second["digest"])
    assert [client.output(job, wait=60)["version"] for job in batch] == [v2] * 2

    # A rerun keeps the version its job was bound to, unless it names another.
    rerun = client.rerun(pinned)
    assert rerun != pinned
    assert client.output(rerun, wait=60) == client.output(pinned)
    assert client.job(rerun).rerun_of == pinned
    on_first = client.rerun(pinned, version=v1, options={"time_limit_s": 5})
    assert client.output(on_first, wait=60)["version"] == v1

    # Retired, v2 takes no new job; the current version cannot be retired.
    retired = {entry.version: entry for entry in client.retire("versioned", v2)}
    assert retired[v2].retired and retired[v2].jobs >= 4
    # Its bytes are still the store's, by version or digest.
    assert client.download("versioned", v2) == versioned_as(guest_wasm, v2)
    assert client.download("versioned", second["digest"]) == versioned_as(guest_wasm, v2)
    with pytest.raises(ApiError) as raised:
        client.submit("versioned", {}, version=v2)
    assert raised.value.status == 404
    with pytest.raises(ApiError) as raised:
        client.retire("versioned", v1)
    assert raised.value.status == 409


def test_a_component_that_is_not_one_is_refused_with_the_check_s_message(client):
    with pytest.raises(ApiError) as raised:
        client.publish(b"not a component")
    assert raised.value.status == 422
    assert raised.value.type == "urn:caseload:problem:plugin-refused"
    assert raised.value.detail


def test_experiments_races_and_warm_starts(client):
    # A race of two seeds keeps the better and names it.
    race = client.submit("maxcut", complete_graph(30), options={"seed": 3, "race": {"seeds": 2},
                                                                "max_iterations": 2000})
    status = client.wait(race, timeout=60)
    assert status.status == "COMPLETED" and len(status.race["entrants"]) == 2
    output = client.output(race)
    assert output["winner"]["seed"] in (3, 4)
    assert output["cut_value"] == max(e["objective"] for e in status.race["entrants"])

    # A warm start from it never ends below it.
    warm = client.submit("maxcut", complete_graph(30), options={"warm_start": race, "max_iterations": 1})
    assert client.wait(warm, timeout=60).warm_start == race
    assert client.output(warm)["cut_value"] >= output["cut_value"]

    # An experiment of the current version on two inputs, two seeds each.
    experiment = client.experiment("maxcut", [TRIANGLE, race], seeds=[1, 2])
    done = client.wait_experiment(experiment, timeout=60)
    assert done["progress"]["completed"] == 4
    assert [cell["objective"] for row in done["results"] for cell in row["versions"]] == \
        [2, output["cut_value"]]
    assert experiment in [entry["id"] for entry in client.experiments()]
    assert client.cancel_experiment(experiment)["cancelled"] == 0



def test_an_api_key_stands_in_for_a_password_until_it_is_revoked(client, connect, monkeypatch):
    created = client.create_api_key("ci", ["read", "launch"])
    assert created["key"].startswith("cl_") and created["scopes"] == ["read", "launch"]
    monkeypatch.setenv("CASELOAD_API_KEY", created["key"])
    with connect() as keyed:
        job = keyed.submit("maxcut", complete_graph(4))
        assert keyed.wait(job, timeout=60).status == "COMPLETED"
    assert created["id"] in [key["id"] for key in client.api_keys()]
    client.revoke_api_key(created["prefix"])
    with connect(api_key=created["key"]) as revoked:
        deadline = time.monotonic() + 10
        while True:
            try:
                revoked.api_keys()
            except ApiError as error:
                assert error.status == 401
                break
            assert time.monotonic() < deadline, "the revoked key still works"
            time.sleep(0.1)


def test_errors_are_typed_and_an_invalid_input_names_its_pointers(client):
    from caseload import Conflict, Invalid, NotFound

    with pytest.raises(NotFound):
        client.job("no-such-job")
    with pytest.raises(Invalid) as raised:
        client.submit("maxcut", {"num_nodes": -1})
    assert "/num_nodes" in str(raised.value)
    job = client.submit("maxcut", complete_graph(60), options={"time_limit_s": 60})
    client.cancel(job)
    client.wait(job, timeout=60)
    with pytest.raises(Conflict):
        client.output(job)


def test_many_jobs_are_waited_for_on_one_stream_and_read_as_types(client):
    from dataclasses import dataclass

    @dataclass
    class Cut:
        cut_value: float
        partition: list

    quick = [client.submit("maxcut", TRIANGLE, options={"seed": seed}) for seed in range(3)]
    slower = client.submit("maxcut", complete_graph(30), options={"time_limit_s": 1})
    order = [job.id for job in client.as_completed(quick + [slower])]
    assert sorted(order) == sorted(quick + [slower])
    ended = client.wait_all(quick)
    assert {job.status for job in ended.values()} == {"COMPLETED"}
    cut = client.output(quick[0], as_type=Cut)
    assert cut.cut_value == 2.0 and len(cut.partition) == 3


def test_the_async_client_launches_waits_and_reads_with_a_key(client):
    import asyncio

    from caseload import AsyncClient, NotFound

    key = client.create_api_key("async", ["launch"])["key"]

    async def scenario():
        async with AsyncClient(os.environ["CASELOAD_URL"], api_key=key) as session:
            jobs = await asyncio.gather(*(session.submit("maxcut", TRIANGLE, options={"seed": seed})
                                          for seed in range(4)))
            ended = await session.wait_all(jobs)
            assert {job.status for job in ended.values()} == {"COMPLETED"}
            assert (await session.wait(jobs[0])).status == "COMPLETED"
            assert (await session.output(jobs[0]))["cut_value"] == 2.0
            try:
                await session.job("no-such-job")
            except NotFound:
                pass
            else:
                raise AssertionError("an unknown job is a NotFound")

    asyncio.run(scenario())


def test_both_clients_have_every_call_with_the_same_parameters():
    def calls(kind, left_out):
        return {name: [(parameter.name, parameter.kind, parameter.default)
                       for parameter in inspect.signature(getattr(kind, name)).parameters.values()]
                for name in dir(kind) if not name.startswith("_") and name not in left_out}

    sync, asynchronous = calls(Client, {"close"}), calls(AsyncClient, {"aclose"})
    assert sorted(sync) == sorted(asynchronous)
    for name, parameters in sync.items():
        assert parameters == asynchronous[name], name


def test_a_quota_s_429_is_raised_at_once(connect, make_user):
    from caseload import QuotaExceeded

    name, password = make_user(quotas={"pending_jobs": 0, "dataset_bytes": None,
                                       "output_bytes": None})
    limited = connect(name, password)
    started = time.monotonic()
    with pytest.raises(QuotaExceeded) as raised:
        limited.submit("maxcut", TRIANGLE)
    # No retry: a quota does not free itself while the client backs off.
    assert time.monotonic() - started < 1.0
    assert raised.value.status == 429 and "quota" in raised.value.type


def test_every_error_carries_the_request_id_the_server_answered_under(client):
    from caseload import NotFound

    with pytest.raises(NotFound) as raised:
        client.job("no-such-job")
    request_id = raised.value.request_id
    assert request_id and request_id in str(raised.value)


def test_a_project_s_jobs_and_data_files_are_launched_uploaded_and_listed_there(client, make_project):
    project = make_project({"admin": "member"})
    stored = client.upload(io.BytesIO(b"3 2\n1 2 1\n2 3 1\n"), media_type="text/plain",
                           filename="path.txt", project=project)
    on_file = client.submit("maxcut", data_file=stored["data_file_identifier"], project=project)
    inline = client.submit("maxcut", TRIANGLE, project=project)
    batch = client.submit_batch("maxcut", [TRIANGLE], project=project)
    assert {job.id for job in client.jobs(project=project)} == {on_file, inline, *batch}
    assert {client.job(job).project for job in (on_file, inline, *batch)} == {project}
    experiment = client.experiment("maxcut", [TRIANGLE], seeds=[1], project=project)
    assert [entry["id"] for entry in client.experiments(project=project)] == [experiment]
    bound = client.create_api_key("bound", ["read"], project=project)
    assert bound["project"] == project


def test_an_expired_token_is_replaced_by_a_new_login(connect, make_user, admin_http):
    name, password = make_user()
    session = connect(name, password)
    session.api_keys()
    first = session._token
    revoked = admin_http.patch(f"/admin/users/{name}", json={"revoke_tokens": True})
    assert revoked.status_code == 200, revoked.text
    # Within 2 s every replica refuses the old token; each call until then may still pass.
    deadline = time.monotonic() + 10
    while session._token == first:
        session.api_keys()
        assert time.monotonic() < deadline, "the client never logged in again"
        time.sleep(0.1)


def test_a_teammate_s_jobs_are_waited_for_on_their_project_s_feed(connect, make_user,
                                                                   make_project):
    teammate, teammates_password = make_user()
    me, my_password = make_user()
    project = make_project({teammate: "member", me: "viewer"})
    theirs = connect(teammate, teammates_password)
    mine = connect(me, my_password)
    quick = theirs.submit("maxcut", TRIANGLE, project=project)
    slower = theirs.submit("maxcut", complete_graph(30), options={"time_limit_s": 1},
                           project=project)
    ended = mine.wait_all([quick, slower], timeout=60)
    assert set(ended) == {quick, slower}
    assert {job.status for job in ended.values()} == {"COMPLETED"}

    # A key bound to the project, the pattern of a CI step, waits on the same feed.
    key = mine.create_api_key("ci", ["read"], project=project)["key"]
    bound = connect(api_key=key)
    later = [theirs.submit("maxcut", complete_graph(30), options={"time_limit_s": 1, "seed": seed},
                           project=project) for seed in range(2)]
    assert {job.id for job in bound.as_completed(later, timeout=60)} == set(later)
    # Ended already: found by the key's listing of its project, without a stream.
    assert set(bound.wait_all(later + [quick], timeout=60)) == {*later, quick}


def test_waiting_for_many_jobs_gives_up_at_its_timeout(client):
    from caseload import WaitTimedOut

    quick = client.submit("maxcut", TRIANGLE)
    client.wait(quick, timeout=60)
    long = client.submit("maxcut", complete_graph(60), options={"time_limit_s": 30})
    started = time.monotonic()
    with pytest.raises(WaitTimedOut) as raised:
        client.wait_all([quick, long], timeout=1.5)
    waited = time.monotonic() - started
    assert 1.5 <= waited < 4, waited
    assert raised.value.waiting == [long] and list(raised.value.ended) == [quick]
    assert isinstance(raised.value, TimeoutError)
    client.cancel(long)
