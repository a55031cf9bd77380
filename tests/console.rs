//! The web console in a real headless Chromium (Debian's `chromium` and `chromium-driver`),
//! driven by selenium from `tests/console/drive.py` against the real server, one scenario per
//! test. The tour: sign in with the keyboard, see a plugin dropped into the plugins directory
//! appear, read max-cut's versions, launch it from the form and rerun the job from its page,
//! upload G1 and watch its progress and its picture, cancel a long job, read the jobs and
//! service pages, on a desktop and a phone-sized screen. The others each follow one part
//! closely: races, the launch form, the experiment form, projects, roles, readability. Every
//! scenario fails on a console error, a CSP violation or a serious axe-core violation. The
//! browser runs in Tokyo's time zone, so a time read or shown as if it were UTC (or UTC as if
//! it were local) is 9 hours off and fails.

use std::process::Command;

use reqwest::StatusCode;

use crate::support::{
    ADMIN_PASSWORD, RUNAWAY, ServerOptions, TestServer, expect_problem, guest_wasm,
};

#[tokio::test]
async fn the_console_is_served_under_a_strict_content_security_policy() {
    let server = TestServer::start();
    let index = server.client.get(server.url("/")).send().await.unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    let headers = index.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    let policy = headers["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("script-src 'self'") && policy.contains("default-src 'none'"));
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let page = index.text().await.unwrap();
    // No inline script: the one script is a module from this origin.
    assert!(page.contains(r#"<script type="module" src="/console/app.js"></script>"#));
    assert_eq!(page.matches("<script").count(), 1);

    let script = server
        .client
        .get(server.url("/console/app.js"))
        .send()
        .await
        .unwrap();
    assert_eq!(script.status(), StatusCode::OK);
    assert_eq!(
        script.headers()["content-type"],
        "text/javascript; charset=utf-8"
    );
    let etag = script.headers()["etag"].clone();
    let again = server
        .client
        .get(server.url("/console/app.js"))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);

    expect_problem(
        server
            .client
            .get(server.url("/console/nothing.js"))
            .send()
            .await
            .unwrap(),
        StatusCode::NOT_FOUND,
    )
    .await;
}

/// Runs one scenario of `tests/console/drive.py` (Debian's `chromium` and `chromedriver`,
/// selenium from `CASELOAD_PYTHON`, axe-core at `CASELOAD_AXE`) against `server`, signed in
/// as its administrator; fails with the drive's report unless every step passed.
async fn drive(scenario: &str, server: &TestServer) {
    let python = std::env::var("CASELOAD_PYTHON").expect("set CASELOAD_PYTHON to run this test");
    let chromedriver =
        std::env::var("CASELOAD_CHROMEDRIVER").expect("set CASELOAD_CHROMEDRIVER to run this test");
    let axe = std::env::var("CASELOAD_AXE").expect("set CASELOAD_AXE to run this test");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/console/drive.py");
    let g1 = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/G1.txt");
    let mut command = Command::new(&python);
    command
        .arg(script)
        .arg(scenario)
        .env("CASELOAD_URL", &server.base_url)
        .env("CASELOAD_USERNAME", "admin")
        .env("CASELOAD_PASSWORD", ADMIN_PASSWORD)
        .env("CASELOAD_PLUGINS_DIR", server.data_dir().join("plugins"))
        .env(
            "CASELOAD_RUNAWAY_WASM",
            guest_wasm("caseload_guest_runaway"),
        )
        .env("CASELOAD_G1", g1)
        .env("CASELOAD_CHROMEDRIVER", chromedriver)
        .env("CASELOAD_AXE", axe)
        // Chromium takes its time zone from TZ, through chromedriver.
        .env("TZ", "Asia/Tokyo")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for (variable, variant) in [
        ("CASELOAD_VERSIONED_V1", "v1"),
        ("CASELOAD_VERSIONED_V2", "v2"),
        ("CASELOAD_VERSIONED_V3", "v3"),
    ] {
        command.env(
            variable,
            guest_wasm(&format!("caseload_guest_versioned_{variant}")),
        );
    }
    let output = tokio::task::spawn_blocking(move || {
        command
            .output()
            .unwrap_or_else(|error| panic!("cannot start {python}: {error}"))
    })
    .await
    .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(
        report.contains(&format!("console: every step passed ({scenario})")),
        "{report}"
    );
}

/// A server whose jobs are long enough for the progress chart to move, short enough for a
/// quick test, with the runaway guest in its plugins directory when `runaway`.
fn browser_server(runaway: bool) -> TestServer {
    TestServer::start_with(ServerOptions {
        args: &["--default-time-limit", "5s"],
        plugins: if runaway { RUNAWAY } else { &[] },
    })
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_works_in_a_real_browser() {
    drive("tour", &browser_server(false)).await;
}

/// A race launched from the use case's page (its check answering as its launch does), its
/// entrants named by version and seed and its winner marked.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_launches_a_race_and_marks_its_winner() {
    drive("races", &browser_server(false)).await;
}

/// The launch form made from the input schema beside the JSON editor, each following the
/// other; the options as fields; a data file picked from the caller's.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_launch_form_is_made_from_the_schema() {
    drive("launch_form", &browser_server(false)).await;
}

/// The experiment form's versions, jobs and data files, picked from lists of the chosen use
/// case's.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_experiment_form_picks_from_the_use_case_s_lists() {
    drive("experiment_form", &browser_server(false)).await;
}

/// With a project chosen: its counts, a teammate's job showing up, an experiment staying in it.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_follows_the_chosen_project() {
    drive("projects", &browser_server(false)).await;
}

/// Each control shown only to who may use it; keys and projects pages; retire asks first; a
/// plugins directory's file over the registry's current version said so.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_shows_each_control_to_who_may_use_it() {
    drive("roles", &browser_server(false)).await;
}

/// Numbers, input names and durations readable; the jobs list's objective and duration;
/// tables on a phone; charts redrawn on resize; contrast and keyboard-scrollable tables.
#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_console_reads_well_on_a_desktop_and_a_phone() {
    drive("readability", &browser_server(true)).await;
}

#[tokio::test]
#[ignore = "needs chromium and chromedriver (Debian), selenium (PyPI) and axe-core (npm): \
            set CASELOAD_PYTHON, CASELOAD_CHROMEDRIVER and CASELOAD_AXE; CI runs it"]
async fn the_routing_pictures_work_in_a_real_browser() {
    let python = std::env::var("CASELOAD_PYTHON").expect("set CASELOAD_PYTHON to run this test");
    let chromedriver =
        std::env::var("CASELOAD_CHROMEDRIVER").expect("set CASELOAD_CHROMEDRIVER to run this test");
    let axe = std::env::var("CASELOAD_AXE").expect("set CASELOAD_AXE to run this test");
    let server = TestServer::start();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/console/routes.py");
    let c101 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../plugins/vrp/tests/data/C101.txt"
    );
    let mut command = Command::new(&python);
    command
        .arg(script)
        .env("CASELOAD_URL", &server.base_url)
        .env("CASELOAD_USERNAME", "admin")
        .env("CASELOAD_PASSWORD", ADMIN_PASSWORD)
        .env("CASELOAD_C101", c101)
        .env("CASELOAD_CHROMEDRIVER", chromedriver)
        .env("CASELOAD_AXE", axe)
        .env("TZ", "Asia/Tokyo")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let output = tokio::task::spawn_blocking(move || {
        command
            .output()
            .unwrap_or_else(|error| panic!("cannot start {python}: {error}"))
    })
    .await
    .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{report}");
    assert!(report.contains("routes: every step passed"), "{report}");
}
