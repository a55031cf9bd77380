//! Hot reload and the compile cache, against the real binary and real files: a new version
//! dropped while the old one runs a job, broken files refused while the old version serves,
//! removal, and restarts with a warm, then a corrupted, compile cache.
//!
//! The guest is `tests/guests/versioned`, built by `build.rs` in five variants: v1, v2, one
//! whose `describe` panics, one whose `describe` loops and one whose input schema does not
//! compile.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{PATIENCE, ServerOptions, TestServer, guest_wasm, problem, wait_for_problem};

const V1: &[(&str, &str)] = &[("caseload_guest_versioned_v1", "versioned.wasm")];

/// A short debounce keeps the tests quick; the default (250 ms) is what the bench measures.
const FAST_RELOAD: &[&str] = &["--plugins-debounce", "100ms"];

fn plugins_dir(server: &TestServer) -> PathBuf {
    server.data_dir().join("plugins")
}

fn guest_bytes(artifact: &str) -> Vec<u8> {
    std::fs::read(guest_wasm(artifact)).expect("the test guest was built by build.rs")
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Publishes a plugin the safe way: written under a hidden name, then renamed into place.
fn publish(dir: &Path, file_name: &str, bytes: &[u8]) {
    let staging = dir.join(format!(".{file_name}.tmp"));
    std::fs::write(&staging, bytes).unwrap();
    std::fs::rename(&staging, dir.join(file_name)).unwrap();
}

fn server_log(server: &TestServer) -> String {
    std::fs::read_to_string(server.data_dir().join("server.log")).unwrap_or_default()
}

/// Waits until the server's log has `count` lines containing every one of `needles`.
async fn wait_for_log_lines(server: &TestServer, needles: &[&str], count: usize) -> Vec<String> {
    // Three times the usual patience: a debug server compiling every built-in cold (HiGHS
    // among them) beside the other tests.
    let deadline = Instant::now() + PATIENCE * 3;
    loop {
        let lines: Vec<String> = server_log(server)
            .lines()
            .filter(|line| needles.iter().all(|needle| line.contains(needle)))
            .map(str::to_owned)
            .collect();
        if lines.len() >= count {
            return lines;
        }
        assert!(
            Instant::now() < deadline,
            "no {count} log lines with {needles:?}:\n{}",
            server_log(server)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn only_execution(view: &Value) -> Value {
    let executions = view["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 1, "{view}");
    executions.values().next().unwrap().clone()
}

/// Runs a quick `versioned` job and returns the version that answered.
async fn version_serving_jobs(server: &TestServer, token: &str) -> String {
    let job = server.launch(token, "versioned", &json!({})).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(token, &job).await;
    output["version"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_new_version_serves_new_jobs_while_a_job_of_the_old_one_finishes() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "2", "--plugins-debounce", "100ms"],
        plugins: V1,
    });
    let token = server.admin_token().await;
    let v1 = guest_bytes("caseload_guest_versioned_v1");
    let v2 = guest_bytes("caseload_guest_versioned_v2");

    let before = problem(&server, &token, "versioned").await.unwrap();
    assert_eq!(before["version"], "1.0.0");
    assert_eq!(before["digest"], sha256(&v1));
    assert_eq!(before["source"], "directory");
    assert_eq!(before["file"], "versioned.wasm");
    assert_eq!(before["aliases"], json!(["urn:caseload:test:versioned"]));

    let long = server
        .launch(&token, "versioned", &json!({"sleep_ms": 3000}))
        .await;
    let deadline = Instant::now() + PATIENCE;
    while server.job(&token, &long).await["status"] != "RUNNING" {
        assert!(Instant::now() < deadline, "the long job never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    publish(&plugins_dir(&server), "versioned.wasm", &v2);
    let after = wait_for_problem(&server, &token, "versioned", |answer| {
        answer.is_some_and(|problem| problem["version"] == "2.0.0")
    })
    .await
    .unwrap();
    assert_eq!(after["digest"], sha256(&v2));
    assert_eq!(after["source"], "directory");
    assert_eq!(after["file"], "versioned.wasm");
    // The old version's job is still at it: the swap did not wait for it, nor stop it.
    assert_eq!(server.job(&token, &long).await["status"], "RUNNING");

    let short = server.launch(&token, "versioned", &json!({})).await;
    for (job, version, bytes) in [(&short, "2.0.0", &v2), (&long, "1.0.0", &v1)] {
        let view = server.wait_until_ended(&token, job).await;
        assert_eq!(view["status"], "COMPLETED", "{view}");
        let execution = only_execution(&view);
        assert_eq!(execution["plugin"]["version"], version, "{execution}");
        assert_eq!(execution["plugin"]["digest"], sha256(bytes), "{execution}");
        assert_eq!(server.output(&token, job).await["version"], version);
    }
}

#[tokio::test]
async fn broken_files_are_rejected_and_the_old_version_keeps_serving() {
    let server = TestServer::start_with(ServerOptions {
        args: FAST_RELOAD,
        plugins: V1,
    });
    let token = server.admin_token().await;
    let dir = plugins_dir(&server);
    let v1_digest = sha256(&guest_bytes("caseload_guest_versioned_v1"));
    let v2 = guest_bytes("caseload_guest_versioned_v2");

    // (what the file is, its bytes, what the log line must say)
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "truncated",
            v2[..v2.len() / 2].to_vec(),
            "not a valid WebAssembly component",
        ),
        (
            "not WebAssembly",
            b"#!/bin/sh\necho hello\n".to_vec(),
            "not a WebAssembly file",
        ),
        (
            // An empty component: valid, but it exports no caseload:plugin world.
            "wrong world",
            b"\0asm\x0d\x00\x01\x00".to_vec(),
            "does not implement the caseload:plugin@0.2.2 world",
        ),
        (
            "describe panics",
            guest_bytes("caseload_guest_versioned_describe_panics"),
            "its describe call failed: the plugin trapped",
        ),
        (
            "bad schema",
            guest_bytes("caseload_guest_versioned_bad_schema"),
            "invalid input schema",
        ),
    ];
    for (number, (what, bytes, reason)) in cases.iter().enumerate() {
        publish(&dir, "versioned.wasm", bytes);
        let lines = wait_for_log_lines(&server, &["plugin file rejected"], number + 1).await;
        let line = &lines[number];
        assert!(
            line.contains(reason) && line.contains("versioned.wasm"),
            "{what}: {line}"
        );
        let serving = problem(&server, &token, "versioned").await.unwrap();
        assert_eq!(serving["digest"], v1_digest, "{what}");
    }
    assert_eq!(version_serving_jobs(&server, &token).await, "1.0.0");

    // A copy in place that stalls halfway: the half is refused, the whole then loads.
    let mut file = std::fs::File::create(dir.join("versioned.wasm")).unwrap();
    file.write_all(&v2[..v2.len() / 2]).unwrap();
    file.flush().unwrap();
    wait_for_log_lines(&server, &["plugin file rejected"], cases.len() + 1).await;
    assert_eq!(
        problem(&server, &token, "versioned").await.unwrap()["digest"],
        v1_digest
    );
    file.write_all(&v2[v2.len() / 2..]).unwrap();
    drop(file);
    wait_for_problem(&server, &token, "versioned", |answer| {
        answer.is_some_and(|problem| problem["version"] == "2.0.0")
    })
    .await;
    assert_eq!(version_serving_jobs(&server, &token).await, "2.0.0");
}

#[tokio::test]
async fn a_removed_file_unregisters_its_use_case_and_a_built_in_comes_back() {
    let server = TestServer::start_with(ServerOptions {
        args: FAST_RELOAD,
        plugins: &[
            ("caseload_guest_versioned_v1", "versioned.wasm"),
            // max-cut as a file: it overrides the built-in of the same name.
            ("caseload_maxcut", "my-maxcut.wasm"),
        ],
    });
    let token = server.admin_token().await;
    let dir = plugins_dir(&server);
    assert_eq!(
        problem(&server, &token, "maxcut").await.unwrap()["file"],
        "my-maxcut.wasm"
    );

    // The OpenAPI document has a typed launch for each use case served, and follows reloads.
    let launches = || async {
        let document: Value = server
            .client
            .get(server.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        document["paths"]["/problem/versioned"]["post"]["operationId"].clone()
    };
    assert_eq!(launches().await, "launch_versioned");

    std::fs::remove_file(dir.join("versioned.wasm")).unwrap();
    std::fs::remove_file(dir.join("my-maxcut.wasm")).unwrap();
    wait_for_problem(&server, &token, "versioned", |answer| answer.is_none()).await;
    assert!(launches().await.is_null());
    // By alias too, and for launches.
    assert!(
        problem(&server, &token, "urn:caseload:test:versioned")
            .await
            .is_none()
    );
    let response = server
        .post_json(&token, "/problem/versioned", &json!({}))
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    wait_for_problem(&server, &token, "maxcut", |answer| {
        answer.is_some_and(|problem| problem["source"] == "built-in")
    })
    .await;

    // A file that appears adds its use case.
    publish(
        &dir,
        "versioned.wasm",
        &guest_bytes("caseload_guest_versioned_v2"),
    );
    wait_for_problem(&server, &token, "versioned", |answer| answer.is_some()).await;
    assert_eq!(version_serving_jobs(&server, &token).await, "2.0.0");
}

#[tokio::test]
async fn a_restart_loads_compiled_code_from_the_cache_and_never_trusts_a_corrupt_entry() {
    // Jobs run in the server's process: a sandbox process's engine keeps entries of its
    // own in the same directory. A cache of its own, empty at the first start.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().to_owned();
    let args = &[
        "--sandbox-processes-from",
        "off",
        "--compile-cache-dir",
        cache_dir.to_str().unwrap(),
    ];
    let server = TestServer::start_with(ServerOptions { args, plugins: V1 });
    let token = server.admin_token().await;
    assert_eq!(version_serving_jobs(&server, &token).await, "1.0.0");
    // The built-ins (max-cut, QUBO, vrp, and lp where it is built in) and the versioned file,
    // each compiled once and cached.
    let components = if caseload::plugins::LP_BUILT_IN { 5 } else { 4 };
    wait_for_log_lines(&server, &["plugin loaded", "code=compiled"], components).await;

    let server = TestServer::start_in(server.kill(), args);
    wait_for_log_lines(
        &server,
        &["plugin loaded", "code=compile-cache"],
        components,
    )
    .await;
    assert!(!server_log(&server).contains("code=compiled"));
    let token = server.admin_token().await;
    assert_eq!(version_serving_jobs(&server, &token).await, "1.0.0");

    // Damage every entry: one cut short, a byte flipped in the middle of each other one.
    let data_dir = server.kill();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&cache_dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "cwasm")
        })
        .collect();
    entries.sort();
    assert_eq!(entries.len(), components, "{entries:?}");
    for entry in std::iter::once(&entries[0]).chain(&entries[2..]) {
        let mut flipped = std::fs::read(entry).unwrap();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x40;
        std::fs::write(entry, flipped).unwrap();
    }
    let cut = std::fs::read(&entries[1]).unwrap();
    std::fs::write(&entries[1], &cut[..cut.len() / 3]).unwrap();

    let server = TestServer::start_in(data_dir, args);
    wait_for_log_lines(
        &server,
        &["compile cache entry rejected", "truncated or corrupted"],
        components,
    )
    .await;
    wait_for_log_lines(&server, &["plugin loaded", "code=compiled"], components).await;
    let token = server.admin_token().await;
    assert_eq!(version_serving_jobs(&server, &token).await, "1.0.0");
    let job = server
        .launch(
            &token,
            "maxcut",
            &json!({"num_nodes": 3, "adj_matrix": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );

    // The recompiled code replaced the bad entries.
    let server = TestServer::start_in(server.kill(), args);
    wait_for_log_lines(&server, &["plugin loaded", "code=compile-cache"], 4).await;
}

/// The kinds and files of the plugin events so far, oldest first, once `done` holds of them.
async fn plugin_events_until(
    server: &TestServer,
    token: &str,
    done: impl Fn(&[(String, String)]) -> bool,
) -> Vec<(String, String)> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let events: Value = server
            .get(token, "/plugin_events")
            .await
            .json()
            .await
            .unwrap();
        let events: Vec<(String, String)> = events
            .as_array()
            .unwrap()
            .iter()
            .map(|event| {
                (
                    event["kind"].as_str().unwrap_or_default().to_owned(),
                    event["file"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect();
        if done(&events) {
            return events;
        }
        assert!(Instant::now() < deadline, "{events:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Where `kind` of `file` stands among `events`.
fn position(events: &[(String, String)], kind: &str, file: &str) -> Option<usize> {
    events
        .iter()
        .position(|(seen_kind, seen_file)| seen_kind == kind && seen_file == file)
}

/// A file whose `describe` never returns holds a loader until its 5 s deadline; the files
/// beside it load meanwhile, at start (where it sorts first) and on reload alike.
#[tokio::test]
async fn a_plugin_whose_describe_loops_does_not_hold_back_the_others() {
    let server = TestServer::start_with(ServerOptions {
        args: FAST_RELOAD,
        plugins: &[
            ("caseload_guest_versioned_describe_loops", "a-loops.wasm"),
            ("caseload_guest_versioned_v1", "b-versioned.wasm"),
        ],
    });
    let token = server.admin_token().await;
    let events = plugin_events_until(&server, &token, |events| {
        position(events, "refused", "a-loops.wasm").is_some()
    })
    .await;
    let loaded = position(&events, "loaded", "b-versioned.wasm").expect("b loaded");
    assert!(
        loaded < position(&events, "refused", "a-loops.wasm").unwrap(),
        "{events:?}"
    );

    let dir = plugins_dir(&server);
    publish(
        &dir,
        "c-loops.wasm",
        &guest_bytes("caseload_guest_versioned_describe_loops"),
    );
    publish(
        &dir,
        "b-versioned.wasm",
        &guest_bytes("caseload_guest_versioned_v2"),
    );
    let events = plugin_events_until(&server, &token, |events| {
        position(events, "refused", "c-loops.wasm").is_some()
    })
    .await;
    let replaced = position(&events, "replaced", "b-versioned.wasm").expect("b replaced");
    assert!(
        replaced < position(&events, "refused", "c-loops.wasm").unwrap(),
        "{events:?}"
    );
    assert_eq!(version_serving_jobs(&server, &token).await, "2.0.0");
}

#[tokio::test]
async fn a_directory_file_that_shadows_the_registry_s_current_version_is_said_so() {
    let server = TestServer::start_with(ServerOptions {
        args: FAST_RELOAD,
        ..Default::default()
    });
    let token = server.admin_token().await;
    let dir = plugins_dir(&server);
    std::fs::create_dir_all(&dir).unwrap();
    publish(
        &dir,
        "versioned.wasm",
        &guest_bytes("caseload_guest_versioned_v1"),
    );
    wait_for_problem(&server, &token, "versioned", |problem| {
        problem.is_some_and(|problem| problem["version"] == "1.0.0")
    })
    .await;
    // 2.0.0 is published and made current in the registry; here the file still serves.
    let published = server
        .publish_raw(&token, "", &guest_bytes("caseload_guest_versioned_v2"))
        .await;
    assert_eq!(published.status(), StatusCode::CREATED);
    let published: Value = published.json().await.unwrap();
    assert_eq!(published["current"], false, "{published}");
    assert_eq!(published["registry_current"], true, "{published}");
    assert_eq!(published["shadowed_by"], "versioned.wasm", "{published}");
    let versions: Value = server
        .get(&token, "/problem/versioned/versions")
        .await
        .json()
        .await
        .unwrap();
    let stored = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|version| version["source"] == "store")
        .unwrap_or_else(|| panic!("{versions}"));
    assert_eq!(stored["shadowed_by"], "versioned.wasm", "{versions}");
    // The file gone, the registry's version serves, and nothing shadows it.
    std::fs::remove_file(dir.join("versioned.wasm")).unwrap();
    wait_for_problem(&server, &token, "versioned", |problem| {
        problem.is_some_and(|problem| problem["version"] == "2.0.0")
    })
    .await;
    let versions: Value = server
        .get(&token, "/problem/versioned/versions")
        .await
        .json()
        .await
        .unwrap();
    let stored = &versions["versions"][0];
    assert_eq!(stored["current"], true, "{versions}");
    assert!(stored.get("shadowed_by").is_none(), "{versions}");
}
