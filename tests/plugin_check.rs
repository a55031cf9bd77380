//! `caseload plugin check`: the real binary on real components, a good one and broken ones.

use std::process::Command;

use crate::support::guest_wasm;

fn check(files: &[&std::path::Path]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_caseload"))
        .args(["plugin", "check"])
        .args(files)
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
        verdict(&good).ends_with("loads: versioned 1.0.0"),
        "{report}"
    );
    assert!(
        verdict(&not_wasm).contains("refused: not a valid WebAssembly component"),
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
    std::fs::write(&maxcut, caseload::plugins::MAXCUT_WASM).expect("writable");
    let (status, report) = check(&[&maxcut]);
    assert_eq!(status, Some(0), "{report}");
    assert!(report.contains("replaces the built-in maxcut"), "{report}");
    assert!(!report.contains("already means"), "{report}");
}
