//! What an operator deploys with: `caseload migrate` as a step of its own and `serve
//! --no-migrate` refusing an old schema; `/readyz` beside `/healthz`; JSON logs a collector
//! reads; API replicas that run no job beside worker replicas that serve no API; and a
//! replica that waits out its PostgreSQL server going away, then carries on with no job lost.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use caseload::store::cluster::OwnCluster;
use caseload::store::scratch::ScratchDatabase;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{ADMIN_PASSWORD, ServerOptions, TestServer, expect_problem};

/// Runs `caseload ARGS...` to its end: whether it succeeded, and what it printed.
fn caseload(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("caseload runs");
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

fn tiny_graph(seconds: f64) -> Value {
    json!({
        "num_nodes": 4,
        "adj_matrix": [[0, 1, 1, 0], [1, 0, 1, 1], [1, 1, 0, 1], [0, 1, 1, 0]],
        "options": {"time_limit_s": seconds},
    })
}

#[tokio::test]
async fn migrations_are_a_step_of_their_own_and_logs_can_be_json() {
    let data_dir = tempfile::tempdir().unwrap();
    let dir = data_dir.path().to_str().unwrap().to_owned();

    // A replica that may not migrate refuses an empty database, and says what to run.
    let (ok, said) = caseload(&[
        "serve",
        "--no-migrate",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        &dir,
    ]);
    assert!(!ok, "started on an empty database: {said}");
    assert!(said.contains("caseload migrate"), "{said}");

    let (ok, said) = caseload(&["migrate", "--data-dir", &dir]);
    assert!(ok, "{said}");
    // Twice is nothing more.
    let (ok, again) = caseload(&["migrate", "--data-dir", &dir]);
    assert!(ok, "{again}");
    // One summary line for all of them ("applied 43 database migrations (1 to 43)").
    assert!(said.contains("database migrations (1 to"), "{said}");
    assert!(!again.contains("applied"), "{again}");
    assert!(again.contains("the database has all"), "{again}");

    let server = TestServer::start_in(data_dir, &["--no-migrate", "--log-format", "json"]);
    let ready = server
        .client
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::OK);
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["status"], "ready");
    let (ok, said) = caseload(&["ready", "--url", &server.base_url]);
    assert!(ok, "{said}");

    let token = server.admin_token().await;
    let job = server.launch(&token, "maxcut", &tiny_graph(0.1)).await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );

    // Every line of the log is one JSON object, on standard output (where it listens, the
    // first user) as on standard error; the launch's names its route and its user, and the
    // run's its job.
    let printed = server.printed();
    assert!(
        printed.iter().any(|line| line.contains("listening on")),
        "{printed:?}"
    );
    for line in &printed {
        let object: Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
        assert!(object["timestamp"].is_string() && object["level"].is_string());
    }
    let log = std::fs::read_to_string(server.data_dir().join("server.log")).unwrap();
    let lines: Vec<Value> = log
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}")))
        .collect();
    assert!(
        lines
            .iter()
            .all(|line| line["timestamp"].is_string() && line["level"].is_string())
    );
    let launch = lines
        .iter()
        .find(|line| {
            line["spans"].as_array().is_some_and(|spans| {
                spans
                    .iter()
                    .any(|span| span["route"] == "/problem/{problem_id}" && span["user"] == "admin")
            }) && line["status"].as_u64() == Some(202)
        })
        .unwrap_or_else(|| panic!("no line of the launch in:\n{log}"));
    assert!(
        launch["latency"].is_string() || launch["latency"].is_number(),
        "{launch}"
    );
    assert!(
        lines.iter().any(|line| line["spans"]
            .as_array()
            .is_some_and(|spans| spans.iter().any(|span| span["job"] == job.as_str()))),
        "no line of job {job} in:\n{log}"
    );
}

/// Runs `caseload ARGS...` in `dir` with `stdin` as its input and no `CASELOAD_*`
/// storage variables: whether it succeeded, and what it printed.
fn caseload_in(dir: &std::path::Path, args: &[&str], stdin: &str) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(args)
        .current_dir(dir)
        .env_remove("CASELOAD_DATA_DIR")
        .env_remove("CASELOAD_DATABASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("caseload starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.as_bytes()).unwrap();
    drop(input);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[tokio::test]
async fn host_commands_refuse_a_database_that_does_not_exist() {
    let elsewhere = tempfile::tempdir().unwrap();
    let default_database = elsewhere.path().join("data").join("caseload.db");
    let wrong_dir = elsewhere.path().join("typo");
    let wrong = wrong_dir.to_str().unwrap();
    let wrong_database = wrong_dir.join("caseload.db");
    let cases: [(&[&str], &std::path::Path); 5] = [
        // From another directory, without --data-dir: ./data is looked at, and not made.
        (&["key", "list"], &default_database),
        (&["user", "list"], &default_database),
        (
            &["user", "add", "bob", "--password-stdin"],
            &default_database,
        ),
        (&["key", "list", "--data-dir", wrong], &wrong_database),
        (
            &[
                "user",
                "add",
                "bob",
                "--password-stdin",
                "--data-dir",
                wrong,
            ],
            &wrong_database,
        ),
    ];
    for (args, looked_at) in cases {
        let (ok, said) = caseload_in(elsewhere.path(), args, "a long passphrase\n");
        assert!(!ok, "caseload {args:?} succeeded: {said}");
        assert!(
            said.contains(&looked_at.display().to_string()),
            "caseload {args:?} does not name {}: {said}",
            looked_at.display()
        );
        assert!(
            !looked_at.exists() && !wrong_dir.exists(),
            "caseload {args:?} made a database"
        );
    }
    assert!(!elsewhere.path().join("data").exists());

    // Once `caseload migrate` made it, the same commands work on it.
    let (ok, said) = caseload_in(elsewhere.path(), &["migrate"], "");
    assert!(ok, "{said}");
    let (ok, said) = caseload_in(
        elsewhere.path(),
        &["user", "add", "bob", "--password-stdin"],
        "a long passphrase\n",
    );
    assert!(ok, "{said}");
    let (ok, said) = caseload_in(elsewhere.path(), &["user", "list"], "");
    assert!(ok && said.contains("bob"), "{said}");
}

/// `caseload migrate ARGS...` run by `count` processes at once: each one's outcome.
fn migrate_together(count: usize, url: &str) -> Vec<(bool, String)> {
    let children: Vec<_> = (0..count)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_caseload"))
                .args(["migrate", "--database-url", url])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("caseload migrate starts")
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            (
                output.status.success(),
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        })
        .collect()
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn api_replicas_and_worker_pools_split_the_work() {
    let database = ScratchDatabase::create().await;
    // Replicas starting at once on an empty database take turns at migrating.
    for (ok, said) in migrate_together(3, &database.url) {
        assert!(ok, "{said}");
    }
    let shared = tempfile::tempdir().unwrap();
    let key_file = shared.path().join("jwt-ed25519.pem");
    let key_file = key_file.to_str().unwrap();
    // QUBO jobs run in the bigmem pool only; every replica reads the same file.
    let limits = shared.path().join("limits.toml");
    std::fs::write(&limits, "[qubo]\npools = [\"bigmem\"]\n").unwrap();
    let limits = limits.to_str().unwrap();
    let common = [
        "--database-url",
        &database.url,
        "--jwt-key-file",
        key_file,
        "--plugin-limits",
        limits,
        "--no-migrate",
    ];
    let with = |more: &[&'static str]| -> Vec<&str> {
        common.iter().copied().chain(more.iter().copied()).collect()
    };
    let api_args = with(&["--workers", "0"]);
    let api = TestServer::start_with(ServerOptions {
        args: &api_args,
        ..Default::default()
    });
    let default_args = with(&["--no-api"]);
    let default_pool = TestServer::start_with(ServerOptions {
        args: &default_args,
        ..Default::default()
    });

    // A worker replica answers its orchestrator and its autoscaler, and nothing else.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let answer = default_pool
            .client
            .get(default_pool.url(path))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{path}");
    }
    let login = default_pool
        .client
        .post(default_pool.url("/login"))
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send()
        .await
        .unwrap();
    expect_problem(login, StatusCode::NOT_FOUND).await;

    // Jobs launched on the API replica run on the worker replica.
    let token = api.token("admin", ADMIN_PASSWORD).await;
    let graph = tiny_graph(0.1);
    let mut jobs = Vec::new();
    for _ in 0..4 {
        jobs.push(api.launch(&token, "maxcut", &graph).await);
    }
    for job in &jobs {
        assert_eq!(
            api.wait_until_ended(&token, job).await["status"],
            "COMPLETED"
        );
    }

    // A QUBO job waits while no replica runs the bigmem pool, and the service says why.
    let qubo = json!({"Q": [[1, -2], [-2, 3]], "sense": "maximize"});
    let waiting = api.launch(&token, "qubo", &qubo).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(api.job(&token, &waiting).await["status"], "PENDING");
    let service: Value = api.get(&token, "/service").await.json().await.unwrap();
    let queued = service["queue"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["problem"] == "qubo")
        .unwrap_or_else(|| panic!("no qubo in {service}"));
    assert_eq!(queued["pools"], json!(["bigmem"]), "{service}");
    assert!(
        queued["waiting"].as_str().unwrap().contains("bigmem"),
        "{service}"
    );
    let metrics = api.client.get(api.url("/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains("caseload_pool_pending{pool=\"bigmem\",problem=\"qubo\"} 1"),
        "{metrics}"
    );

    let bigmem_args = with(&["--no-api", "--pool", "bigmem"]);
    let _bigmem = TestServer::start_with(ServerOptions {
        args: &bigmem_args,
        ..Default::default()
    });
    let ended = api.wait_until_ended(&token, &waiting).await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    let service: Value = api.get(&token, "/service").await.json().await.unwrap();
    let mut pools: Vec<(String, u64)> = service["replicas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|replica| {
            (
                replica["pool"].as_str().unwrap().to_owned(),
                replica["workers"].as_u64().unwrap(),
            )
        })
        .collect();
    pools.sort();
    assert_eq!(pools.len(), 3, "{service}");
    assert_eq!(pools[0].0, "bigmem", "{service}");
    assert!(
        pools
            .iter()
            .any(|(pool, workers)| pool == "default" && *workers == 0)
    );
}

#[tokio::test]
async fn a_server_that_cannot_reach_its_database_says_where_and_why() {
    let vacant = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = vacant.local_addr().unwrap().port();
    drop(vacant);
    let data_dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://caseload:hunter2@127.0.0.1:{port}/caseload");
    let (ok, said) = caseload(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        data_dir.path().to_str().unwrap(),
        "--database-url",
        &url,
    ]);
    assert!(!ok, "started without a database: {said}");
    assert!(
        said.contains(&format!("postgres://caseload@127.0.0.1:{port}/caseload")),
        "the address is not named: {said}"
    );
    assert!(said.to_lowercase().contains("refused"), "no cause: {said}");
    assert!(!said.contains("hunter2"), "the password is shown: {said}");
    assert!(!said.contains("pool timed out"), "{said}");
}

async fn status_of(server: &TestServer, path: &str) -> Option<StatusCode> {
    let answer = server
        .client
        .get(server.url(path))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    answer.ok().map(|answer| answer.status())
}

async fn until_status(server: &TestServer, path: &str, wanted: StatusCode, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let status = status_of(server, path).await;
        if status == Some(wanted) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} still {status:?}, not {wanted}, after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `statement` on the PostgreSQL server the tests use, as its administrator.
async fn as_postgres_admin(statement: &str) {
    use sqlx::Connection;
    let admin_url = std::env::var(caseload::store::scratch::ADMIN_URL_VARIABLE).unwrap();
    let mut admin = sqlx::PgConnection::connect(&admin_url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(statement.to_owned()))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|error| panic!("{statement}: {error}"));
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set CASELOAD_TEST_DATABASE_URL and pass --include-ignored"]
async fn a_database_that_refuses_connections_answers_503_at_once_until_it_is_back() {
    // The login refused, then too many clients: new connections fail, the old ones are cut.
    for (refuse, admit) in [
        ("NOLOGIN", "LOGIN"),
        ("CONNECTION LIMIT 0", "CONNECTION LIMIT -1"),
    ] {
        let database = ScratchDatabase::create().await;
        let role = format!("caseload_role_{}", uuid::Uuid::new_v4().simple());
        let (server_part, name) = database.url.rsplit_once('/').unwrap();
        let host = server_part.rsplit_once('@').map_or_else(
            || server_part.split_once("://").unwrap().1,
            |(_, host)| host,
        );
        as_postgres_admin(&format!("CREATE ROLE {role} LOGIN PASSWORD 'secret'")).await;
        as_postgres_admin(&format!("ALTER DATABASE {name} OWNER TO {role}")).await;
        let url = format!("postgres://{role}:secret@{host}/{name}");
        let server = TestServer::start_with(ServerOptions {
            args: &["--database-url", &url, "--workers", "1"],
            ..Default::default()
        });
        let token = server.admin_token().await;
        let jobs = |token: &str| {
            server
                .client
                .get(server.url("/jobs"))
                .bearer_auth(token)
                .timeout(Duration::from_secs(30))
                .send()
        };
        assert_eq!(jobs(&token).await.unwrap().status(), StatusCode::OK);

        as_postgres_admin(&format!("ALTER ROLE {role} {refuse}")).await;
        as_postgres_admin(&format!(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
        ))
        .await;
        // Every answer is the documented 503; once one found the database away, the
        // others are answered at once, without waiting for a connection.
        let mut details = Vec::new();
        for _ in 0..8 {
            let answer = jobs(&token).await.unwrap();
            assert!(answer.headers().contains_key("retry-after"), "{refuse}");
            let problem = expect_problem(answer, StatusCode::SERVICE_UNAVAILABLE).await;
            details.push(problem["detail"].as_str().unwrap().to_owned());
        }
        assert!(
            details[1..]
                .iter()
                .all(|detail| detail.contains("has not answered for")),
            "{refuse}: {details:?}"
        );
        // The orchestrator hears it too, and the process is alive.
        assert_eq!(
            status_of(&server, "/readyz").await,
            Some(StatusCode::SERVICE_UNAVAILABLE)
        );
        assert_eq!(status_of(&server, "/healthz").await, Some(StatusCode::OK));

        as_postgres_admin(&format!("ALTER ROLE {role} {admit}")).await;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let status = jobs(&token).await.map(|answer| answer.status()).ok();
            if status == Some(StatusCode::OK) {
                break;
            }
            assert!(Instant::now() < deadline, "{refuse}: still {status:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        drop(server);
        drop(database);
        as_postgres_admin(&format!("DROP ROLE {role}")).await;
    }
}

#[tokio::test]
#[ignore = "needs PostgreSQL's initdb and pg_ctl (Debian's postgresql); pass --include-ignored"]
async fn a_replica_waits_out_its_database_and_loses_no_job() {
    let cluster = match OwnCluster::start() {
        Ok(cluster) => cluster,
        Err(why) => {
            if std::env::var_os("CI").is_some() {
                panic!("CI must run this test: {why}");
            }
            eprintln!("skipped: {why}");
            return;
        }
    };
    let url = cluster.url();
    let server = TestServer::start_with(ServerOptions {
        args: &["--database-url", &url, "--workers", "2", "--lease", "3s"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    let before = server.launch(&token, "maxcut", &tiny_graph(0.1)).await;
    assert_eq!(
        server.wait_until_ended(&token, &before).await["status"],
        "COMPLETED"
    );
    // Running while the database goes away: its end is written once it is back.
    let running = server.launch(&token, "maxcut", &tiny_graph(2.0)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;

    cluster.stop().unwrap();
    until_status(
        &server,
        "/readyz",
        StatusCode::SERVICE_UNAVAILABLE,
        Duration::from_secs(15),
    )
    .await;
    let unready = server
        .client
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap();
    let problem = expect_problem(unready, StatusCode::SERVICE_UNAVAILABLE).await;
    assert!(
        problem["detail"].as_str().unwrap().contains("database"),
        "{problem}"
    );
    // Alive all the same, and a request that needs the database is told to come back.
    assert_eq!(status_of(&server, "/healthz").await, Some(StatusCode::OK));
    let login = server
        .client
        .post(server.url("/login"))
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(login.headers().contains_key("retry-after"));
    tokio::time::sleep(Duration::from_secs(3)).await;

    cluster.resume().unwrap();
    until_status(&server, "/readyz", StatusCode::OK, Duration::from_secs(30)).await;
    let ended = server.wait_until_ended(&token, &running).await;
    assert_eq!(ended["status"], "COMPLETED", "{ended}");
    let after = server.launch(&token, "maxcut", &tiny_graph(0.1)).await;
    assert_eq!(
        server.wait_until_ended(&token, &after).await["status"],
        "COMPLETED"
    );
    let listed: Value = server.get(&token, "/jobs").await.json().await.unwrap();
    assert_eq!(listed["jobs"].as_array().unwrap().len(), 3, "{listed}");
}

/// Runs `caseload ready ARGS...` with `CASELOAD_LISTEN` set to `listen` (or unset) and no
/// `CASELOAD_URL`: whether it said ready, and what it printed.
fn ready_with(listen: Option<&str>, args: &[&str]) -> (bool, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_caseload"));
    command
        .arg("ready")
        .args(args)
        .env_remove("CASELOAD_URL")
        .env_remove("CASELOAD_LISTEN");
    if let Some(listen) = listen {
        command.env("CASELOAD_LISTEN", listen);
    }
    let output = command.stdin(Stdio::null()).output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn ready_asks_where_the_server_listens() {
    let server = TestServer::start();
    let address: std::net::SocketAddr = server.address().parse().unwrap();
    let port = address.port();

    // As a container's health check runs it: the server's own CASELOAD_LISTEN, its
    // unspecified host reached on the loopback.
    for listen in [format!("0.0.0.0:{port}"), format!("127.0.0.1:{port}")] {
        let (ok, said) = ready_with(Some(&listen), &[]);
        assert!(ok, "CASELOAD_LISTEN={listen}: {said}");
    }
    let (ok, said) = ready_with(None, &["--listen", &address.to_string()]);
    assert!(ok, "--listen {address}: {said}");
    // --url still wins.
    let (ok, said) = ready_with(Some("127.0.0.1:1"), &["--url", &server.base_url]);
    assert!(ok, "{said}");

    // Where nothing listens, it says not ready, naming where it asked.
    let vacant = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let vacant_port = vacant.local_addr().unwrap().port();
    drop(vacant);
    let (ok, said) = ready_with(Some(&format!("0.0.0.0:{vacant_port}")), &[]);
    assert!(!ok);
    assert!(said.contains(&format!("127.0.0.1:{vacant_port}")), "{said}");
}
