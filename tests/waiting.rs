//! Clients that wait: `?wait=` on a job's status and output, answered when the job changes,
//! on the replica that ran it or another.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ADMIN_PASSWORD, ServerOptions, TestServer, expect_problem, timed_job};
use caseload::store::scratch::ScratchDatabase;

#[tokio::test]
async fn a_held_status_answers_when_the_job_ends_or_the_wait_passes() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(1.0)).await;

    // Held for at most 0.2 s: the job is still pending or running then.
    let early = server.job_with(&token, &job, "wait=0.2").await;
    assert!(
        matches!(early["status"].as_str(), Some("PENDING" | "RUNNING")),
        "{early}"
    );
    // Held until the job ends, well within 30 s: one request sees it completed.
    let ended = server.job_with(&token, &job, "wait=30").await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    // Its output, held the same way, is there at once now.
    let output = server
        .get(&token, &format!("/job/{job}/output?wait=30"))
        .await;
    assert_eq!(output.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_held_status_answers_when_the_status_differs_from_the_one_given() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let first = server.launch(&token, "maxcut", &timed_job(1.0)).await;
    let second = server.launch(&token, "maxcut", &timed_job(1.0)).await;
    // The second waits for the one worker: held until it leaves PENDING, it is RUNNING
    // (not yet ended, since it runs for a second once started).
    let started = server
        .job_with(&token, &second, "wait=30&status=PENDING")
        .await;
    assert_eq!(started["status"], "RUNNING", "{started}");
    let first = server.job(&token, &first).await;
    assert_eq!(first["status"], "COMPLETED", "{first}");
}

#[tokio::test]
async fn a_held_output_of_a_job_that_failed_is_a_conflict() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    // Long enough that the cancel, however late a loaded machine sends it, comes first.
    let job = server.launch(&token, "maxcut", &timed_job(30.0)).await;
    let cancelled = server.delete(&token, &format!("/job/{job}")).await;
    assert!(cancelled.status().is_success());
    let output = server
        .get(&token, &format!("/job/{job}/output?wait=30"))
        .await;
    let body = expect_problem(output, StatusCode::CONFLICT).await;
    assert!(
        body["detail"].as_str().unwrap().contains("CANCELLED"),
        "{body}"
    );
}

#[tokio::test]
async fn bad_waits_and_unknown_parameters_are_400s_that_say_why() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(0.1)).await;
    for (query, says) in [
        ("wait=61", "from 0 to 60"),
        ("wait=-1", "from 0 to 60"),
        ("wait=soon", "wait"),
        ("wait=1&status=DONE", "not a job status"),
        ("wiat=1", "wiat"),
    ] {
        let response = server.get(&token, &format!("/job/{job}?{query}")).await;
        let body = expect_problem(response, StatusCode::BAD_REQUEST).await;
        assert!(
            body["detail"].as_str().unwrap().contains(says),
            "{query}: {body}"
        );
    }
    let response = server
        .get(&token, &format!("/job/{job}/output?wait=1&status=PENDING"))
        .await;
    expect_problem(response, StatusCode::BAD_REQUEST).await;
    // Another user's job is not waited for: 404 at once.
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    let response = server.get(&other, &format!("/job/{job}?wait=30")).await;
    expect_problem(response, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_held_status_wakes_on_a_replica_that_does_not_run_the_job() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    let common = ["--database-url", &database.url, "--jwt-key-file", key_file];
    // The front replica runs no job: the other one does, and its end reaches the front
    // through PostgreSQL's notifications.
    let front_args = [&common[..], &["--workers", "0"]].concat();
    let front = TestServer::start_with(ServerOptions {
        args: &front_args,
        ..Default::default()
    });
    let runner = TestServer::start_with(ServerOptions {
        args: &common,
        ..Default::default()
    });
    let token = front.token("admin", ADMIN_PASSWORD).await;
    let job = front.launch(&token, "maxcut", &timed_job(1.0)).await;
    let ended = front.job_with(&token, &job, "wait=30").await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    drop(runner);
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub(crate) struct SseEvent {
    pub(crate) event: String,
    pub(crate) data: Value,
    pub(crate) id: Option<String>,
}

/// Reads events from an open stream until it ends, `stop` says so, or 30 s pass.
pub(crate) async fn read_events(
    response: reqwest::Response,
    mut stop: impl FnMut(&SseEvent) -> bool,
) -> Vec<SseEvent> {
    use futures_util::StreamExt;

    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"],
        "text/event-stream",
        "{:?}",
        response.headers()
    );
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let (mut event, mut data, mut id) = (String::new(), String::new(), None);
            for line in block.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    event = value.to_owned();
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push_str(value);
                } else if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_owned());
                }
            }
            if event.is_empty() {
                continue; // a keep-alive comment
            }
            let event = SseEvent {
                event,
                data: serde_json::from_str(&data).unwrap(),
                id,
            };
            let done = stop(&event);
            events.push(event);
            if done {
                return events;
            }
        }
        match tokio::time::timeout_at(deadline, body.next()).await {
            Ok(Some(chunk)) => buffer.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap()),
            Ok(None) => return events,
            Err(_) => panic!("the stream did not end in 30 s: {events:?}"),
        }
    }
}

pub(crate) fn events_url(server: &TestServer, path: &str) -> reqwest::RequestBuilder {
    server.client.get(server.url(path))
}

#[tokio::test]
async fn a_job_s_events_show_its_status_progress_and_log_then_its_end() {
    // A header timeout shorter than the stream: a stream is not an idle connection.
    let server = TestServer::start_with(ServerOptions {
        args: &["--header-timeout", "1s"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(2.0)).await;
    let response = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let events = read_events(response, |_| false).await;
    let names: Vec<&str> = events.iter().map(|event| event.event.as_str()).collect();
    assert_eq!(names.first(), Some(&"status"), "{names:?}");
    assert_eq!(names.last(), Some(&"end"), "{names:?}");
    assert!(names.contains(&"progress"), "{names:?}");
    assert!(names.contains(&"log"), "{names:?}");
    let statuses: Vec<&str> = events
        .iter()
        .filter(|event| event.event == "status")
        .map(|event| event.data["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.last(), Some(&"COMPLETED"), "{statuses:?}");
    assert!(statuses.contains(&"RUNNING"), "{statuses:?}");
    let end = &events.last().unwrap().data["job"][&job];
    assert_eq!(end["status"], "COMPLETED");
    // The log events, put together, are the log as the job shows it.
    let log: String = events
        .iter()
        .filter(|event| event.event == "log")
        .map(|event| event.data["text"].as_str().unwrap())
        .collect();
    let execution = end["executions"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap();
    assert_eq!(log, execution["logs"]["tail"].as_str().unwrap());

    // Resumed from an event in the middle: only what came after it, nothing twice.
    let (index, resume) = events
        .iter()
        .enumerate()
        .find(|(_, event)| event.data["status"] == "RUNNING" && event.id.is_some())
        .or_else(|| {
            events
                .iter()
                .enumerate()
                .find(|(_, event)| event.event == "log" && event.id.is_some())
        })
        .expect("an event with an id while the job ran");
    let response = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&token)
        .header("last-event-id", resume.id.clone().unwrap())
        .send()
        .await
        .unwrap();
    let resumed = read_events(response, |_| false).await;
    let resumed_log: String = resumed
        .iter()
        .filter(|event| event.event == "log")
        .map(|event| event.data["text"].as_str().unwrap())
        .collect();
    let later_log: String = events[index + 1..]
        .iter()
        .filter(|event| event.event == "log")
        .map(|event| event.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(resumed_log, later_log);
    assert_eq!(resumed.last().unwrap().event, "end");
    assert!(
        !resumed
            .iter()
            .any(|event| event.event == "status" && event.data["status"] == "RUNNING"),
        "{resumed:?}"
    );
}

#[tokio::test]
async fn a_user_s_event_stream_shows_each_of_its_jobs_and_no_one_else_s() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    let response = events_url(&server, "/jobs/events")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    // The stream is open before the jobs are launched.
    let tiny = json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]});
    let others = server.launch(&other, "maxcut", &tiny).await;
    let first = server.launch(&token, "maxcut", &tiny).await;
    let second = server.launch(&token, "maxcut", &tiny).await;
    let mut completed = std::collections::HashSet::new();
    let events = read_events(response, |event| {
        if event.data["status"] == "COMPLETED" {
            completed.insert(event.data["id"].as_str().unwrap().to_owned());
        }
        completed.len() == 2
    })
    .await;
    assert!(completed.contains(&first) && completed.contains(&second));
    assert!(
        events
            .iter()
            .all(|event| event.data["id"] != others.as_str()),
        "{events:?}"
    );
    // Resumed from before the jobs: each one's last status again.
    let response = events_url(&server, "/jobs/events")
        .bearer_auth(&token)
        .header("last-event-id", "0")
        .send()
        .await
        .unwrap();
    let mut seen = std::collections::HashSet::new();
    read_events(response, |event| {
        assert_eq!(event.data["status"], "COMPLETED", "{event:?}");
        seen.insert(event.data["id"].as_str().unwrap().to_owned());
        seen.len() == 2
    })
    .await;
}

#[tokio::test]
async fn an_ended_job_s_events_end_at_once_and_another_user_s_are_404() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let tiny = json!({"num_nodes": 2, "edges": [[0, 1, 1]]});
    let job = server.launch(&token, "maxcut", &tiny).await;
    server.wait_until_ended(&token, &job).await;
    let response = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    let events = read_events(response, |_| false).await;
    assert_eq!(events.last().unwrap().event, "end", "{events:?}");
    server.add_user("other", "other's password");
    let other = server.token("other", "other's password").await;
    let response = events_url(&server, &format!("/job/{job}/events"))
        .bearer_auth(&other)
        .send()
        .await
        .unwrap();
    expect_problem(response, StatusCode::NOT_FOUND).await;
}

#[tokio::test]
async fn held_answers_and_streams_let_the_server_stop() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--shutdown-grace", "1s"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &timed_job(30.0)).await;
    let stream = events_url(&server, "/jobs/events")
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    let poll = tokio::spawn(
        server
            .client
            .get(server.url(&format!("/job/{job}?wait=60")))
            .bearer_auth(&token)
            .send(),
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // An open stream would hold the stop forever: terminate() fails if it takes a minute.
    tokio::task::spawn_blocking(move || server.terminate())
        .await
        .unwrap();
    // The long-poll was answered, not cut off; the stream ended cleanly, telling its client
    // to come back from its last event.
    let answer = poll.await.unwrap().unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let events = read_events(stream, |_| false).await;
    let (last, before) = events.split_last().expect("events");
    assert_eq!(last.event, "reconnect", "{events:?}");
    assert!(
        before.iter().all(|event| event.event == "status"),
        "{events:?}"
    );
}
