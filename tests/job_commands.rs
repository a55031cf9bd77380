//! `caseload job ...` from a shell: with an API key and the server's URL, submit a job, wait
//! for it, read it, its output and the list, cancel one; a refusal is the server's message
//! and exit 1.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::TestServer;

/// Runs `caseload job ARGS` against the server with `key`, `stdin` piped in; whether it
/// succeeded, and its standard output and error.
fn job(
    server: &TestServer,
    key: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .arg("job")
        .args(args)
        .env("CASELOAD_URL", &server.base_url)
        .env("CASELOAD_API_KEY", key)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("caseload job starts");
    let mut input = child.stdin.take().unwrap();
    if let Some(stdin) = stdin {
        input.write_all(stdin.as_bytes()).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn jobs_are_submitted_followed_and_read_from_a_shell() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = server
        .post_json(
            &admin,
            "/api_keys",
            &json!({"name": "ci", "scopes": ["launch"]}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let triangle = r#"{"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1], [0, 2, 1]]}"#;
    let (server_for, key_for) = (&server, key.as_str());
    let run = move |args: &[&str], stdin: Option<&str>| job(server_for, key_for, args, stdin);

    let (ok, id, report) = run(&["submit", "maxcut"], Some(triangle));
    assert!(ok, "{report}");
    let id = id.trim().to_owned();
    let (ok, status, report) = run(&["wait", &id], None);
    assert!(ok && status.trim() == "COMPLETED", "{status} {report}");
    let (ok, output, _) = run(&["output", &id], None);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&output).unwrap()["cut_value"],
        2.0
    );
    let (ok, view, _) = run(&["get", &id], None);
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&view).unwrap()["status"],
        "COMPLETED"
    );
    let (ok, listed, _) = run(&["list", "--status", "COMPLETED"], None);
    assert!(
        ok && listed
            .lines()
            .any(|line| line.starts_with(&format!("{id}\tCOMPLETED\tmaxcut"))),
        "{listed}"
    );

    // Submitted and waited for at once, from a file: the output is printed.
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), triangle).unwrap();
    let (ok, output, _) = run(
        &[
            "submit",
            "maxcut",
            "--input",
            file.path().to_str().unwrap(),
            "--wait",
        ],
        None,
    );
    assert!(ok);
    assert_eq!(
        serde_json::from_str::<Value>(&output).unwrap()["cut_value"],
        2.0
    );

    // A long job, cancelled: wait exits 1.
    // Two edges per node, of both signs: nothing reduces it, so it runs its 30 s.
    let edges: Vec<Value> = (0..200)
        .flat_map(|i| {
            [
                json!([i, (i + 1) % 200, 1]),
                json!([i, (i * 7 + 3) % 200, -1]),
            ]
        })
        .collect();
    let long = json!({"num_nodes": 200, "edges": edges, "options": {"time_limit_s": 30}});
    let (ok, long_id, _) = run(&["submit", "maxcut"], Some(&long.to_string()));
    assert!(ok);
    let long_id = long_id.trim().to_owned();
    let (ok, status, report) = run(&["cancel", &long_id], None);
    assert!(
        ok && ["CANCELLED", "RUNNING"].contains(&status.trim()),
        "{status} {report}"
    );
    let (ok, status, _) = run(&["wait", &long_id], None);
    assert!(!ok && status.trim() == "CANCELLED", "{status}");

    // Refusals: the server's own words, exit 1.
    let (ok, _, report) = run(&["submit", "no-such-problem"], Some(triangle));
    assert!(!ok && report.contains("404"), "{report}");
    let (ok, _, report) = run(&["submit", "maxcut"], Some("{\"num_nodes\": -1}"));
    assert!(!ok && report.contains("422"), "{report}");
    let (ok, _, report) = job(&server, "cl_aaaaaaaaaaaa_wrong", &["list"], None);
    assert!(!ok && report.contains("401"), "{report}");
}

/// Runs `caseload ARGS` with exactly the environment variables given (beside PATH), `stdin`
/// piped in; whether it succeeded, its standard output and error, and how long it took.
fn caseload(
    env: &[(&str, &str)],
    args: &[&str],
    stdin: Option<&str>,
) -> (bool, String, String, std::time::Duration) {
    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("caseload starts");
    let mut input = child.stdin.take().unwrap();
    if let Some(stdin) = stdin {
        input.write_all(stdin.as_bytes()).unwrap();
    }
    drop(input);
    let output = child.wait_with_output().unwrap();
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
        started.elapsed(),
    )
}

/// A key of the administrator's with these scopes.
async fn admin_key(server: &TestServer, admin: &str, scopes: &[&str]) -> String {
    let created = server
        .post_json(
            admin,
            "/api_keys",
            &json!({"name": "cli", "scopes": scopes}),
        )
        .await;
    assert_eq!(created.status(), reqwest::StatusCode::CREATED);
    created.json::<Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A job that runs for `seconds` unless stopped: nothing reduces its graph.
fn long_job(seconds: u32) -> Value {
    let edges: Vec<Value> = (0..200)
        .flat_map(|i| {
            [
                json!([i, (i + 1) % 200, 1]),
                json!([i, (i * 7 + 3) % 200, -1]),
            ]
        })
        .collect();
    json!({"num_nodes": 200, "edges": edges, "options": {"time_limit_s": seconds}})
}

#[tokio::test]
async fn a_wait_s_timeout_is_kept_to_the_millisecond() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = admin_key(&server, &admin, &["launch"]).await;
    let job = server.launch(&admin, "maxcut", &long_job(30)).await;
    let env = [
        ("CASELOAD_URL", server.base_url.as_str()),
        ("CASELOAD_API_KEY", &key),
    ];
    for (timeout, at_least) in [("1s", 1000), ("1500ms", 1500), ("0.3s", 300)] {
        let (ok, _, report, took) =
            caseload(&env, &["job", "wait", &job, "--timeout", timeout], None);
        assert!(
            !ok && report.contains("did not end within"),
            "{timeout}: {report}"
        );
        let took = took.as_millis();
        assert!(
            (at_least..at_least + 2000).contains(&took),
            "--timeout {timeout} returned after {took} ms"
        );
    }
    server.delete(&admin, &format!("/job/{job}")).await;
}

#[tokio::test]
async fn a_refusal_prints_every_violation_with_its_pointer() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = admin_key(&server, &admin, &["launch"]).await;
    let env = [
        ("CASELOAD_URL", server.base_url.as_str()),
        ("CASELOAD_API_KEY", &key),
    ];
    let invalid = r#"{"num_nodes": -1, "edges": [[0, 1, "heavy"]]}"#;
    let (ok, _, report, _) = caseload(&env, &["job", "submit", "maxcut"], Some(invalid));
    assert!(!ok, "{report}");
    assert!(report.contains("422 Unprocessable Entity: "), "{report}");
    assert!(
        report.lines().any(|line| line.starts_with("  /num_nodes")),
        "no pointer in {report}"
    );
    assert!(
        report.lines().any(|line| line.starts_with("  /edges/0/2")),
        "no pointer in {report}"
    );
}

#[tokio::test]
async fn credentials_and_addresses_are_taken_as_a_shell_gives_them() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = admin_key(&server, &admin, &["launch"]).await;
    let url = server.base_url.as_str();
    let bare = server.address();
    /// How `job list` is run, and whether it works so.
    struct Case<'a> {
        what: &'a str,
        env: Vec<(&'a str, &'a str)>,
        args: Vec<&'a str>,
        works: bool,
    }
    let case = |what, env, args, works| Case {
        what,
        env,
        args,
        works,
    };
    let cases = [
        case(
            "a key",
            vec![("CASELOAD_URL", url), ("CASELOAD_API_KEY", &key)],
            vec![],
            true,
        ),
        case(
            "a token",
            vec![("CASELOAD_URL", url), ("CASELOAD_TOKEN", &admin)],
            vec![],
            true,
        ),
        case(
            "a key before a token",
            vec![
                ("CASELOAD_URL", url),
                ("CASELOAD_API_KEY", &key),
                ("CASELOAD_TOKEN", "wrong"),
            ],
            vec![],
            true,
        ),
        case(
            "--token",
            vec![("CASELOAD_URL", url)],
            vec!["--token", &admin],
            true,
        ),
        case(
            "host:port",
            vec![("CASELOAD_API_KEY", &key)],
            vec!["--url", &bare],
            true,
        ),
        case("no credentials", vec![("CASELOAD_URL", url)], vec![], false),
        case(
            "another scheme",
            vec![("CASELOAD_API_KEY", &key)],
            vec!["--url", "ftp://127.0.0.1:1"],
            false,
        ),
    ];
    for Case {
        what,
        env,
        args,
        works,
    } in cases
    {
        let args: Vec<&str> = ["job", "list"].into_iter().chain(args).collect();
        let (ok, _, report, _) = caseload(&env, &args, None);
        assert_eq!(ok, works, "{what}: {report}");
        if !works {
            assert!(report.starts_with("error: "), "{what}: {report}");
        }
    }
    // Publishing takes a key as the job commands do (one with the publish scope).
    let publisher = admin_key(&server, &admin, &["publish"]).await;
    let wasm = crate::support::guest_wasm("caseload_guest_versioned_v1");
    let (ok, published, report, _) = caseload(
        &[("CASELOAD_API_KEY", &publisher)],
        &["plugin", "publish", wasm.to_str().unwrap(), "--url", &bare],
        None,
    );
    assert!(
        ok && published.contains("published: versioned 1.0.0"),
        "{published}{report}"
    );
}

#[tokio::test]
async fn a_dataset_is_uploaded_from_a_shell_and_launched_on() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = admin_key(&server, &admin, &["launch"]).await;
    let env = [
        ("CASELOAD_URL", server.base_url.as_str()),
        ("CASELOAD_API_KEY", &key),
    ];
    let directory = tempfile::tempdir().unwrap();
    let file = directory.path().join("triangle.txt");
    std::fs::write(&file, "3 3\n1 2 1\n2 3 1\n1 3 1\n").unwrap();
    let file = file.to_str().unwrap();
    let project = server.make_project(&admin, "routing").await;
    server.set_member(&admin, &project, "admin", "member").await;
    // Each: extra arguments, and what the data file's metadata then says.
    let cases: [(Vec<&str>, &str, &str); 3] = [
        (vec![], "text/plain", "triangle.txt"),
        (
            vec!["--media-type", "text/plain", "--filename", "g.txt"],
            "text/plain",
            "g.txt",
        ),
        (vec!["--project", &project], "text/plain", "triangle.txt"),
    ];
    for (extra, media_type, filename) in cases {
        let mut args = vec!["data", "upload", file];
        args.extend(extra.iter().copied());
        let (ok, id, report, _) = caseload(&env, &args, None);
        assert!(ok, "{extra:?}: {report}");
        let id = id.trim();
        let stored: Value = server
            .get(&admin, &format!("/data_file/{id}"))
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(
            (stored["media_type"].as_str(), stored["filename"].as_str()),
            (Some(media_type), Some(filename)),
            "{extra:?}: {stored}"
        );
        let body = json!({"data_file_identifier": id}).to_string();
        let mut submit = vec!["job", "submit", "maxcut", "--wait"];
        if extra.contains(&"--project") {
            submit.extend(["--project", &project]);
        }
        let (ok, output, report, _) = caseload(&env, &submit, Some(&body));
        assert!(ok, "{extra:?}: {report}");
        assert_eq!(
            serde_json::from_str::<Value>(&output).unwrap()["cut_value"],
            2.0
        );
    }
    let (ok, answer, _, _) = caseload(&env, &["data", "upload", file, "--output", "json"], None);
    assert!(ok);
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["size"], 22);
}

#[tokio::test]
async fn jobs_are_rerun_finished_followed_and_listed_as_json_from_a_shell() {
    let server = TestServer::start();
    let admin = server.admin_token().await;
    let key = admin_key(&server, &admin, &["launch"]).await;
    let env = [
        ("CASELOAD_URL", server.base_url.as_str()),
        ("CASELOAD_API_KEY", &key),
    ];
    let run = |args: &[&str], stdin: Option<&str>| {
        let mut all = vec!["job"];
        all.extend_from_slice(args);
        let (ok, out, report, _) = caseload(&env, &all, stdin);
        assert!(ok, "{args:?}: {out}{report}");
        out
    };
    let triangle =
        r#"{"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1], [0, 2, 1]], "options": {"seed": 4}}"#;
    let first = run(&["submit", "maxcut", "--wait"], Some(triangle));
    // A rerun: the same output, and the new job names the first.
    let listed: Value = serde_json::from_str(&run(&["list", "--output", "json"], None)).unwrap();
    let original = listed["jobs"][0]["id"].as_str().unwrap().to_owned();
    assert_eq!(listed["jobs"][0]["status"], "COMPLETED", "{listed}");
    assert!(listed.get("next").is_some(), "{listed}");
    let rerun_output = run(&["rerun", &original, "--wait"], None);
    let cut = |output: &str| serde_json::from_str::<Value>(output).unwrap()["cut_value"].clone();
    assert_eq!(cut(&rerun_output), cut(&first));
    let rerun =
        serde_json::from_str::<Value>(&run(&["list", "--output", "json", "--limit", "1"], None))
            .unwrap()["jobs"][0]["id"]
            .as_str()
            .unwrap()
            .to_owned();
    let view: Value = serde_json::from_str(&run(&["get", &rerun], None)).unwrap();
    assert_eq!(view["rerun_of"], original.as_str());
    let changed = run(
        &["rerun", &original, "--options", r#"{"time_limit_s": 2}"#],
        None,
    );
    assert_ne!(changed.trim(), original);

    // Its log, once ended; and followed while it runs, until it ends.
    let log = run(&["logs", &original], None);
    assert!(log.contains("[INFO]"), "{log}");
    let long = run(&["submit", "maxcut"], Some(&long_job(1).to_string()));
    let followed = run(&["logs", "--follow", long.trim()], None);
    assert!(followed.contains("[INFO]"), "{followed}");

    // Finished early: it keeps the best it had.
    let long = run(&["submit", "maxcut"], Some(&long_job(30).to_string()));
    server.wait_until_running(&admin, long.trim()).await;
    assert_eq!(run(&["finish", long.trim()], None).trim(), "COMPLETED");
    let view: Value = serde_json::from_str(&run(&["get", long.trim()], None)).unwrap();
    assert_eq!(view["stopped_early"], true, "{view}");
}
