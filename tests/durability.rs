//! No acknowledged job is lost: not when the server is killed, not when it stops, not when a
//! client retries, and not when one of several replicas sharing PostgreSQL dies.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use caseload::store::scratch::ScratchDatabase;
use futures_util::{StreamExt, stream};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::Row;

use crate::support::expect_problem;
use crate::support::{
    ADMIN_PASSWORD, PATIENCE, ServerOptions, TestServer, metric_sample, timed_job,
};

/// Launches `count` copies of `body`, round-robin over `servers`, 16 at a time.
async fn launch_many(
    servers: &[&TestServer],
    token: &str,
    count: usize,
    body: &Value,
) -> Vec<String> {
    stream::iter(0..count)
        .map(|index| servers[index % servers.len()].launch(token, "maxcut", body))
        .buffered(16)
        .collect()
        .await
}

/// Waits until every job ended, and checks that each completed exactly once. Returns how many
/// executions were abandoned on the way.
async fn expect_all_completed_once(server: &TestServer, token: &str, jobs: &[String]) -> usize {
    let mut abandoned = 0;
    for job in jobs {
        let view = server.wait_until_ended(token, job).await;
        assert_eq!(view["status"], "COMPLETED", "job {job}: {view}");
        let executions = view["executions"].as_object().unwrap();
        let count = |status: &str| {
            executions
                .values()
                .filter(|execution| execution["status"] == status)
                .count()
        };
        assert_eq!(count("COMPLETED"), 1, "job {job} completed once: {view}");
        assert_eq!(count("ABANDONED") + 1, executions.len(), "{view}");
        for execution in executions.values() {
            if execution["status"] == "ABANDONED" {
                assert_eq!(execution["error"]["code"], "worker_lost", "{view}");
            }
        }
        abandoned += count("ABANDONED");
    }
    abandoned
}

#[tokio::test]
async fn a_killed_server_loses_no_acknowledged_job() {
    let args = ["--workers", "2"];
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        ..Default::default()
    });
    let token = server.admin_token().await;
    let jobs = launch_many(&[&server], &token, 300, &timed_job(0.05)).await;
    // Jobs run oldest first: once the 20th ended, the workers are busy with later ones. The
    // kill comes the moment a job is seen running, so that one is surely interrupted (a
    // kill right after the 20th ended could fall between two claims).
    server.wait_until_ended(&token, &jobs[19]).await;
    let deadline = Instant::now() + PATIENCE;
    loop {
        let running: Value = server
            .get(&token, "/jobs?status=RUNNING&limit=1")
            .await
            .json()
            .await
            .unwrap();
        if running["jobs"]
            .as_array()
            .is_some_and(|jobs| !jobs.is_empty())
        {
            break;
        }
        assert!(Instant::now() < deadline, "no job was seen running");
    }
    let data_dir = server.kill();

    let server = TestServer::start_in(data_dir, &args);
    let abandoned = expect_all_completed_once(&server, &token, &jobs).await;
    assert!(abandoned >= 1, "the kill interrupted no running job");
    for job in jobs.iter().step_by(50) {
        assert_eq!(server.output(&token, job).await["cut_value"], 225.0);
    }

    // Straight from the database file: one output per job, no more.
    let database = server.database(true).await;
    let outputs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM job_outputs")
        .fetch_one(&database)
        .await
        .unwrap();
    assert_eq!(outputs, 300);
}

#[tokio::test]
async fn a_stopping_server_gives_its_running_job_back() {
    let plugins = [("caseload_guest_runaway", "runaway.wasm")];
    let args = ["--shutdown-grace", "200ms", "--workers", "1"];
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        plugins: &plugins,
    });
    let token = server.admin_token().await;
    let job = server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "spin", "options": {"time_limit_s": 30}}),
        )
        .await;
    let deadline = Instant::now() + PATIENCE;
    while server.job(&token, &job).await["status"] != "RUNNING" {
        assert!(Instant::now() < deadline, "the job never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The spinning job outlives the grace: it is interrupted and goes back to the queue.
    let data_dir = server.terminate();

    let server = TestServer::start_in(data_dir, &args);
    let deadline = Instant::now() + PATIENCE;
    let view = loop {
        let view = server.job(&token, &job).await;
        if view["executions"].as_object().unwrap().len() == 2 {
            break view;
        }
        assert!(
            Instant::now() < deadline,
            "the job did not run again: {view}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let mut executions: Vec<&Value> = view["executions"].as_object().unwrap().values().collect();
    executions.sort_by_key(|execution| execution["attempt"].as_u64());
    assert_eq!(executions[0]["status"], "ABANDONED", "{view}");
    assert_eq!(executions[0]["error"]["code"], "worker_lost");
    let message = executions[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("shut down"), "{message}");
    assert_eq!(executions[1]["attempt"], 2);
}

#[tokio::test]
async fn an_idempotency_key_launches_one_job() {
    let server = TestServer::start();
    let token = server.admin_token().await;
    let triangle = json!({"num_nodes": 3, "adj_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]});
    let send = |key: &str, body: &Value| {
        server
            .client
            .post(server.url("/problem/maxcut"))
            .bearer_auth(&token)
            .header("idempotency-key", key)
            .json(body)
            .send()
    };
    let job_of = |body: &Value| body["job"].as_str().unwrap().to_owned();

    let first = send("order-1", &triangle).await.unwrap();
    assert_eq!(first.status(), StatusCode::ACCEPTED);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let job = job_of(&first.json().await.unwrap());

    let again = send("order-1", &triangle).await.unwrap();
    assert_eq!(again.status(), StatusCode::ACCEPTED);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["location"], format!("/job/{job}").as_str());
    assert_eq!(job_of(&again.json().await.unwrap()), job);

    let mut different = triangle.clone();
    different["options"] = json!({"seed": 7});
    let reused = expect_problem(
        send("order-1", &different).await.unwrap(),
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        reused["type"],
        "urn:caseload:problem:idempotency-key-reused"
    );

    for bad in ["", &"k".repeat(256), "with space"] {
        expect_problem(send(bad, &triangle).await.unwrap(), StatusCode::BAD_REQUEST).await;
    }

    // Eight retries racing each other still make one job.
    let racing: Vec<Value> = stream::iter(0..8)
        .map(|_| async {
            let response = send("order-2", &triangle).await.unwrap();
            assert_eq!(response.status(), StatusCode::ACCEPTED);
            response.json::<Value>().await.unwrap()
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let raced = job_of(&racing[0]);
    assert!(racing.iter().all(|body| job_of(body) == raced));

    // Keys are per user: another user's "order-1" is another job.
    server.add_user("bob", "bob's password");
    let bob = server.token("bob", "bob's password").await;
    let bobs = server
        .client
        .post(server.url("/problem/maxcut"))
        .bearer_auth(&bob)
        .header("idempotency-key", "order-1")
        .json(&triangle)
        .send()
        .await
        .unwrap();
    assert_eq!(bobs.status(), StatusCode::ACCEPTED);
    assert_ne!(job_of(&bobs.json().await.unwrap()), job);

    let listed: Value = server.get(&token, "/jobs").await.json().await.unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 2, "{listed}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn replicas_on_postgres_lose_no_job_when_one_dies() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    let (lease_ms, reaper_ms) = (2000, 500);
    let args = [
        "--database-url",
        &database.url,
        "--jwt-key-file",
        key_file,
        "--workers",
        "2",
        "--lease",
        "2s",
        "--reaper-interval",
        "500ms",
    ];
    let options = || ServerOptions {
        args: &args,
        ..Default::default()
    };
    let doomed = TestServer::start_with(options());
    let survivor = TestServer::start_with(options());
    // A token from one replica is good on the other.
    let token = doomed.token("admin", ADMIN_PASSWORD).await;
    // 30 ms jobs, then eight of 2 s, which run last (oldest first) and outlast a launch
    // slowed by a loaded machine: the kill, once the doomed replica runs a job, lands
    // mid-run.
    let mut jobs = launch_many(&[&doomed, &survivor], &token, 1000, &timed_job(0.03)).await;
    jobs.extend(launch_many(&[&doomed, &survivor], &token, 8, &timed_job(2.0)).await);
    wait_until_running(&doomed, &token).await;
    let killed_at = chrono::Utc::now().timestamp_millis();
    drop(doomed.kill());

    let abandoned = expect_all_completed_once(&survivor, &token, &jobs).await;
    assert!(abandoned >= 1, "the kill interrupted no running job");

    let pool = sqlx::PgPool::connect(&database.url).await.unwrap();
    let count = |sql: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(sql)
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    assert_eq!(
        count("SELECT COUNT(*) FROM jobs WHERE status = 'COMPLETED'").await,
        1008
    );
    assert_eq!(count("SELECT COUNT(*) FROM job_outputs").await, 1008);
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM (SELECT job_id FROM executions WHERE status = 'COMPLETED'
                                   GROUP BY job_id HAVING COUNT(*) > 1) AS twice"
        )
        .await,
        0
    );
    // Each claim bumped the token; the completing execution is the job's last claim.
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM jobs JOIN executions ON executions.job_id = jobs.id
             WHERE executions.status = 'COMPLETED'
               AND (executions.attempt <> jobs.attempts OR jobs.lease_token < jobs.attempts)"
        )
        .await,
        0
    );

    // The dead replica's jobs were taken over within a lease plus a reaper interval (and
    // some slack for a loaded machine).
    let takeovers = sqlx::query(
        "SELECT lost.job_id, next.started_at FROM executions AS lost
         JOIN executions AS next ON next.job_id = lost.job_id AND next.attempt = lost.attempt + 1
         WHERE lost.status = 'ABANDONED'",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    assert!(!takeovers.is_empty());
    let delays: HashMap<String, i64> = takeovers
        .iter()
        .map(|row| {
            (
                row.get("job_id"),
                row.get::<i64, _>("started_at") - killed_at,
            )
        })
        .collect();
    let slowest = delays.values().copied().max().unwrap();
    eprintln!(
        "the survivor took over {} jobs, the last {slowest} ms after the kill",
        delays.len()
    );
    assert!(
        slowest <= lease_ms + reaper_ms + 5000,
        "took over {slowest} ms after the kill: {delays:?}"
    );
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn short_jobs_claimed_behind_a_long_run_go_to_an_idle_replica() {
    let database = ScratchDatabase::create().await;
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    let args = [
        "--database-url",
        &database.url,
        "--jwt-key-file",
        key_file,
        "--workers",
        "1",
    ];
    let options = || ServerOptions {
        args: &args,
        ..Default::default()
    };
    let busy = TestServer::start_with(options());
    let token = busy.token("admin", ADMIN_PASSWORD).await;
    // Short runs make the replica claim many jobs at a time; one slow run (a loaded
    // machine) sets the claim back to one job, so the replica runs them until its claim
    // takes at least the batch below.
    let tiny = json!({"num_nodes": 3, "adj_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]});
    let batch_size = 6_usize;
    let mut runs = 0;
    while claim_size(&busy, &token).await < batch_size as f64 {
        assert!(
            runs < 100,
            "100 short runs never grew the claim to {batch_size} jobs"
        );
        let job = busy.launch(&token, "maxcut", &tiny).await;
        busy.wait_until_ended(&token, &job).await;
        runs += 1;
    }
    // One claim takes them all, the long one first (its priority puts it ahead); the one
    // worker starts it, and the short ones wait behind it. The long run outlasts a slow
    // start of the second replica.
    let mut long = timed_job(60.0);
    long["options"]["priority"] = json!(9);
    let mut batch = vec![long];
    batch.extend(std::iter::repeat_n(tiny, batch_size - 1));
    let response = busy
        .post_json(&token, "/problem/maxcut/batch", &json!({"jobs": batch}))
        .await;
    assert_eq!(response.status(), StatusCode::ACCEPTED);
    let launched: Value = response.json().await.unwrap();
    let jobs: Vec<&str> = launched["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|job| job.as_str().unwrap())
        .collect();
    let idle = TestServer::start_with(options());
    for short in &jobs[1..] {
        let view = idle.wait_until_ended(&token, short).await;
        assert_eq!(view["status"], "COMPLETED", "{view}");
    }
    // All of them ended while the long run goes on: none waited for it.
    assert_eq!(busy.job(&token, jobs[0]).await["status"], "RUNNING");
    let log = std::fs::read_to_string(busy.data_dir().join("server.log")).unwrap();
    assert!(
        log.contains("claimed jobs waited for a busy worker"),
        "the short jobs were not claimed behind the long one: {log}"
    );
}

/// Waits until the server's workers run a job, as its `/metrics` say.
async fn wait_until_running(server: &TestServer, token: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let metrics = server.get(token, "/metrics").await.text().await.unwrap();
        if metric_sample(&metrics, "caseload_executions_running")
            .is_some_and(|running| running >= 1.0)
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the server ran no job within {PATIENCE:?}: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// What `caseload_claim_size` on the server's `/metrics` reads.
async fn claim_size(server: &TestServer, token: &str) -> f64 {
    let metrics = server.get(token, "/metrics").await.text().await.unwrap();
    metric_sample(&metrics, "caseload_claim_size")
        .unwrap_or_else(|| panic!("no caseload_claim_size in {metrics}"))
}
