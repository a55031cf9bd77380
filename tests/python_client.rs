//! The Python client in `clients/python` against the real server: its pytest suite, run with
//! the server's address in its environment, and the test guests' directory for the tests
//! that publish components.

use std::process::Command;

use crate::support::{ADMIN_PASSWORD, TestServer};

#[tokio::test]
#[ignore = "needs a Python with pytest and httpx (PyPI): set CASELOAD_PYTHON; CI runs it"]
async fn the_python_client_s_tests_pass() {
    let python = std::env::var("CASELOAD_PYTHON").expect("set CASELOAD_PYTHON to run this test");
    let server = TestServer::start();
    let client = concat!(env!("CARGO_MANIFEST_DIR"), "/../clients/python");
    let base_url = server.base_url.clone();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
            .current_dir(client)
            .env("PYTHONPATH", format!("{client}/src"))
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("CASELOAD_URL", &base_url)
            .env("CASELOAD_USERNAME", "admin")
            .env("CASELOAD_PASSWORD", ADMIN_PASSWORD)
            .env("CASELOAD_TEST_GUESTS_DIR", caseload::TEST_GUESTS_DIR)
            .output()
            .unwrap_or_else(|error| panic!("cannot start {python}: {error}"))
    })
    .await
    .unwrap();
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{report}");
    // Every test ran: none skipped for want of a server.
    assert!(!report.contains("skipped"), "{report}");
    drop(server);
}
