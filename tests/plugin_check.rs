//! `caseload plugin check`: the real binary on real components, a good one and broken ones.

use std::process::Command;

use crate::support::{TestServer, guest_wasm, wait_for_problem};

fn check(files: &[&std::path::Path]) -> (Option<i32>, String) {
    // A data directory of its own: the compile cache is written under it, not in the checkout.
    let data_dir = tempfile::tempdir().expect("a temporary directory");
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(["plugin", "check"])
        .args(files)
        .arg("--data-dir")
        .arg(data_dir.path())
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn check_says_what_a_file_serves_or_why_the_server_would_refuse_it() {
    let good = guest_wasm("caseload_guest_versioned_v1");
    let (status, report) = check(&[&good]);
    assert_eq!(status, Some(0), "{report}");
    assert!(report.contains("loads: versioned 1.0.0"), "{report}");
    assert!(
        report.contains("parameters beside a dataset: sleep_ms"),
        "{report}"
    );

    let directory = tempfile::tempdir().expect("a temporary directory");
    let not_wasm = directory.path().join("notes.wasm");
    std::fs::write(&not_wasm, b"not a component").expect("writable");
    let bad_schema = guest_wasm("caseload_guest_versioned_bad_schema");
    let panics = guest_wasm("caseload_guest_versioned_describe_panics");
    let missing = directory.path().join("missing.wasm");
    let (status, report) = check(&[&good, &not_wasm, &bad_schema, &panics, &missing]);
    assert_eq!(status, Some(1), "{report}");
    let verdict = |path: &std::path::Path| {
        report
            .lines()
            .find(|line| line.starts_with(&path.display().to_string()))
            .unwrap_or_else(|| panic!("no line for {}: {report}", path.display()))
            .to_owned()
    };
    assert!(
        verdict(&good).ends_with("loads: versioned 1.0.0 (caseload:plugin@0.2.2)"),
        "{report}"
    );
    assert!(
        verdict(&not_wasm).contains("refused: not a WebAssembly file"),
        "{report}"
    );
    assert!(
        verdict(&bad_schema).contains("refused: invalid input schema"),
        "{report}"
    );
    assert!(
        verdict(&panics).contains("refused: its describe call failed"),
        "{report}"
    );
    assert!(
        verdict(&missing).contains("refused: cannot read it"),
        "{report}"
    );
}

#[test]
fn check_says_when_a_file_would_replace_a_built_in() {
    let directory = tempfile::tempdir().expect("a temporary directory");
    let maxcut = directory.path().join("maxcut.wasm");
    std::fs::write(&maxcut, caseload::plugins::MAXCUT_WASM.as_slice()).expect("writable");
    let (status, report) = check(&[&maxcut]);
    assert_eq!(status, Some(0), "{report}");
    assert!(report.contains("replaces the built-in maxcut"), "{report}");
    assert!(!report.contains("already means"), "{report}");
}

/// `caseload ARGS...` in `dir`; (exit code, stdout, stderr).
fn check_in(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .current_dir(dir)
        .arg("plugin")
        .args(args)
        .output()
        .expect("the binary runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn check_runs_a_given_input_and_fails_on_what_the_server_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let maxcut = dir.path().join("maxcut.wasm");
    std::fs::write(&maxcut, caseload::plugins::MAXCUT_WASM.as_slice()).unwrap();
    let maxcut = maxcut.to_str().unwrap();

    let good = dir.path().join("triangle.json");
    std::fs::write(
        &good,
        r#"{"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1], [0, 2, 1]]}"#,
    )
    .unwrap();
    let (status, stdout, _) = check_in(
        dir.path(),
        &["check", maxcut, "--input", good.to_str().unwrap()],
    );
    assert_eq!(status, Some(0), "{stdout}");
    assert!(stdout.contains("triangle.json: validate"), "{stdout}");
    // The output itself, below the times.
    assert!(
        stdout.contains("    output: {") && stdout.contains("\"cut_value\":2"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("example 1"),
        "the given input replaces the examples: {stdout}"
    );

    // The schema's refusal, as a 422 would list it.
    let off_schema = dir.path().join("off-schema.json");
    std::fs::write(&off_schema, r#"{"num_nodes": 0, "edges": []}"#).unwrap();
    let (status, stdout, _) = check_in(
        dir.path(),
        &["check", maxcut, "--input", off_schema.to_str().unwrap()],
    );
    assert_eq!(status, Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "off-schema.json: the input was refused: it does not match the input schema: \
             /num_nodes"
        ),
        "{stdout}"
    );
    // The input was refused, not the plugin: the server would serve it.
    assert!(
        stdout.starts_with(&format!("{maxcut}: loads: maxcut")),
        "{stdout}"
    );
    assert!(
        !stdout
            .lines()
            .any(|line| line.trim_start().starts_with("refused: ")),
        "{stdout}"
    );

    // The plugin's own `validate`: an edge to a node that does not exist.
    let bad_edge = dir.path().join("bad-edge.json");
    std::fs::write(&bad_edge, r#"{"num_nodes": 2, "edges": [[0, 5, 1]]}"#).unwrap();
    let (status, stdout, _) = check_in(
        dir.path(),
        &["check", maxcut, "--input", bad_edge.to_str().unwrap()],
    );
    assert_eq!(status, Some(1), "{stdout}");
    assert!(
        stdout.contains("bad-edge.json: the input was refused: validate rejected it: /edges/0"),
        "{stdout}"
    );
}

#[test]
fn check_shows_a_guest_panic_s_message_and_location() {
    let dir = tempfile::tempdir().unwrap();
    let runaway = guest_wasm("caseload_guest_runaway");
    let input = dir.path().join("panic.json");
    std::fs::write(&input, r#"{"mode": "panic"}"#).unwrap();
    let (status, stdout, _) = check_in(
        dir.path(),
        &[
            "check",
            runaway.to_str().unwrap(),
            "--input",
            input.to_str().unwrap(),
        ],
    );
    assert_eq!(status, Some(1), "{stdout}");
    let line = stdout
        .lines()
        .find(|line| line.contains("panic.json: "))
        .unwrap_or_else(|| panic!("no line for the input: {stdout}"));
    assert!(
        line.contains("running it: the plugin panicked at ")
            && line.contains("src/lib.rs:")
            && line.ends_with(": the runaway guest panics on purpose"),
        "{stdout}"
    );
}

/// `check` writes the code it compiles to the server's compile cache (under `--data-dir`), so
/// the server loads the file it then gets without compiling it.
#[tokio::test]
async fn the_server_loads_a_checked_file_without_compiling_it() {
    // The server's cache where `check --data-dir` writes by default, not the tests' shared one.
    let data_dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(data_dir.path().join("plugins")).unwrap();
    let cache = data_dir.path().join("compile-cache");
    let server = TestServer::start_in(
        data_dir,
        &[
            "--plugins-debounce",
            "100ms",
            "--compile-cache-dir",
            cache.to_str().unwrap(),
        ],
    );
    let token = server.admin_token().await;
    let v2 = guest_wasm("caseload_guest_versioned_v2");
    let data_dir = server.data_dir().to_owned();
    let (status, stdout, _) = check_in(
        &data_dir,
        &[
            "check",
            "--data-dir",
            data_dir.to_str().unwrap(),
            v2.to_str().unwrap(),
        ],
    );
    assert_eq!(status, Some(0), "{stdout}");

    let staging = data_dir.join("plugins/.versioned.wasm.tmp");
    std::fs::copy(&v2, &staging).unwrap();
    std::fs::rename(&staging, data_dir.join("plugins/versioned.wasm")).unwrap();
    wait_for_problem(&server, &token, "versioned", |answer| answer.is_some()).await;
    let log = std::fs::read_to_string(data_dir.join("server.log")).unwrap();
    let loaded = log
        .lines()
        .find(|line| line.contains("plugin loaded") && line.contains("name=versioned"))
        .unwrap_or_else(|| panic!("no load of versioned in the log:\n{log}"));
    assert!(loaded.contains("code=compile-cache"), "{loaded}");
}
