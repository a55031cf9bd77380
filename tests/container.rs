//! The container image of `deploy/Dockerfile` as an orchestrator runs it: it declares a
//! non-root user, a health check and SIGTERM; on a read-only root with no capabilities it
//! serves a max-cut job end to end from its `/data` volume; its health command answers for
//! it; and `docker stop` drains it to exit code 0. Runs when `CASELOAD_IMAGE` names an image
//! and `docker` reaches an engine (`.ci/deploy` builds `caseload:ci`); otherwise each test
//! says it skipped and why.

use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use crate::support::{
    ADMIN_PASSWORD, Contract, PATIENCE, assert_contract, brute_force_max_cut, complete_graph,
    cut_of,
};

/// The image to test, or why the tests cannot run here.
fn image_under_test() -> Result<String, String> {
    let image = std::env::var("CASELOAD_IMAGE").unwrap_or_default();
    if image.is_empty() {
        return Err("CASELOAD_IMAGE names no image (.ci/deploy builds one)".into());
    }
    match Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
    {
        Ok(output) if output.status.success() => Ok(image),
        Ok(output) => Err(format!(
            "docker reaches no engine: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("docker cannot be run: {error}")),
    }
}

/// `docker ARGS...` with `stdin` as its input.
fn docker_with_input(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("docker")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("docker starts");
    let mut input = child.stdin.take().expect("piped stdin");
    input
        .write_all(stdin.as_bytes())
        .expect("the input is written");
    drop(input);
    child.wait_with_output().expect("docker ends")
}

/// `docker ARGS...`, which must succeed; what it printed, trimmed.
fn docker(args: &[&str]) -> String {
    let output = docker_with_input(args, "");
    assert!(
        output.status.success(),
        "docker {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// What the container wrote on both of its outputs.
fn logs(container: &str) -> String {
    let output = docker_with_input(&["logs", container], "");
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A data volume and the containers started on it, all removed when the test ends, passed or
/// failed; a failed test shows the server's log first.
struct Deployment {
    image: String,
    volume: String,
    server: Option<String>,
}

impl Deployment {
    fn new(image: String) -> Deployment {
        let volume = docker(&["volume", "create"]);
        Deployment {
            image,
            volume,
            server: None,
        }
    }

    fn data_mount(&self) -> String {
        format!("{}:/data", self.volume)
    }

    /// `caseload migrate`, then `caseload user add NAME --role admin`, each in a container of
    /// its own on the data volume, before the server starts (only `serve` and `migrate` make
    /// the database): the password goes in on standard input.
    fn add_admin(&self, name: &str, password: &str) {
        let mount = self.data_mount();
        docker(&[
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            &mount,
            &self.image,
            "migrate",
        ]);
        let output = docker_with_input(
            &[
                "run",
                "-i",
                "--rm",
                "--network",
                "none",
                "-v",
                &mount,
                &self.image,
                "user",
                "add",
                name,
                "--password-stdin",
                "--role",
                "admin",
            ],
            &format!("{password}\n"),
        );
        assert!(
            output.status.success(),
            "user add failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    /// Starts `caseload serve` the way the manifests in deploy/kubernetes run it (read-only
    /// root, a writable /tmp, no capabilities, no privilege escalation) on the host's network
    /// and a port of its choosing, and returns the address it says it listens on. The test runs
    /// the health check's command itself.
    fn start_server(&mut self) -> String {
        let mount = self.data_mount();
        let container = docker(&[
            "run",
            "-d",
            "--network",
            "host",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--no-healthcheck",
            "-e",
            "CASELOAD_LISTEN=127.0.0.1:0",
            "-e",
            "RUST_LOG=info",
            "-v",
            &mount,
            &self.image,
            "serve",
        ]);
        self.server = Some(container.clone());
        let deadline = Instant::now() + PATIENCE;
        loop {
            let log = logs(&container);
            if let Some(address) = log
                .lines()
                .find_map(|line| line.strip_prefix("listening on "))
            {
                return address.trim().to_owned();
            }
            let running = docker(&["inspect", "--format", "{{.State.Running}}", &container]);
            assert!(running == "true", "the server exited before it listened");
            assert!(
                Instant::now() < deadline,
                "the server did not say where it listens"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn server(&self) -> &str {
        self.server.as_deref().expect("the server was started")
    }
}

impl Drop for Deployment {
    fn drop(&mut self) {
        if let Some(container) = &self.server {
            if std::thread::panicking() {
                eprintln!("--- container log ---\n{}", logs(container));
            }
            let _ = docker_with_input(&["rm", "-f", "-v", container], "");
        }
        let _ = docker_with_input(&["volume", "rm", "-f", &self.volume], "");
    }
}

#[test]
fn the_image_runs_as_a_non_root_user_with_a_health_check_and_sigterm() {
    let image = match image_under_test() {
        Ok(image) => image,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let config: Value = serde_json::from_str(&docker(&[
        "image",
        "inspect",
        "--format",
        "{{json .Config}}",
        &image,
    ]))
    .unwrap();

    let user = config["User"].as_str().unwrap_or_default();
    let uid: u32 = user
        .split(':')
        .next()
        .and_then(|uid| uid.parse().ok())
        .unwrap_or_else(|| panic!("the image's user is not a numeric uid: {user:?}"));
    assert_ne!(uid, 0, "the image runs as root");

    assert_eq!(
        config["Healthcheck"]["Test"],
        json!(["CMD", "/caseload", "ready"]),
        "{config}"
    );
    assert_eq!(config["StopSignal"], "SIGTERM");
    assert_eq!(config["Entrypoint"], json!(["/caseload"]));
    assert_eq!(config["Cmd"], json!(["serve"]));
    assert!(config["Volumes"].get("/data").is_some(), "{config}");
    let environment: Vec<&str> = config["Env"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(environment.contains(&"CASELOAD_DATA_DIR=/data"), "{config}");
    assert!(
        environment.contains(&"CASELOAD_LISTEN=0.0.0.0:8080"),
        "{config}"
    );
}

#[tokio::test]
async fn the_image_serves_a_job_from_its_volume_and_drains_on_docker_stop() {
    let image = match image_under_test() {
        Ok(image) => image,
        Err(reason) => {
            eprintln!("skipped: {reason}");
            return;
        }
    };
    let mut deployment = Deployment::new(image);
    deployment.add_admin("admin", ADMIN_PASSWORD);
    let base_url = deployment.start_server();
    let client = Client::new();

    // Ready once it answers /readyz with 200, as an orchestrator's probe sees it.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let ready = client.get(format!("{base_url}/readyz")).send().await;
        if ready.is_ok_and(|response| response.status() == StatusCode::OK) {
            break;
        }
        assert!(Instant::now() < deadline, "/readyz never answered 200");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The process inside runs as the image's user, not as root.
    let processes = docker(&["top", deployment.server(), "-o", "pid,uid"]);
    let uids: Vec<&str> = processes
        .lines()
        .skip(1)
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    assert!(
        !uids.is_empty() && uids.iter().all(|uid| *uid != "0" && *uid != "root"),
        "{processes}"
    );

    // The health check's command, from inside the image: 0 for a ready server, 1 for none.
    let ready = docker_with_input(
        &[
            "exec",
            deployment.server(),
            "/caseload",
            "ready",
            "--url",
            &base_url,
        ],
        "",
    );
    assert_eq!(ready.status.code(), Some(0), "{ready:?}");
    let unreachable = docker_with_input(
        &[
            "exec",
            deployment.server(),
            "/caseload",
            "ready",
            "--url",
            "http://127.0.0.1:1",
        ],
        "",
    );
    assert_eq!(unreachable.status.code(), Some(1), "{unreachable:?}");
    assert!(
        !unreachable.stdout.is_empty() || !unreachable.stderr.is_empty(),
        "caseload ready said nothing about why it failed"
    );

    let login = client
        .post(format!("{base_url}/login"))
        .json(&json!({ "username": "admin", "password": ADMIN_PASSWORD }))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), StatusCode::OK);
    let login: Value = login.json().await.unwrap();
    assert_contract(Contract::Token, &login);
    let token = login["access_token"].as_str().unwrap().to_owned();

    let k4 = complete_graph(4);
    let launched = client
        .post(format!("{base_url}/problem/maxcut"))
        .bearer_auth(&token)
        .json(&json!({ "num_nodes": 4, "adj_matrix": k4 }))
        .send()
        .await
        .unwrap();
    assert_eq!(launched.status(), StatusCode::ACCEPTED);
    let launched: Value = launched.json().await.unwrap();
    assert_contract(Contract::RunJob, &launched);
    let job = launched["job"].as_str().unwrap().to_owned();

    let deadline = Instant::now() + PATIENCE;
    let view = loop {
        let response = client
            .get(format!("{base_url}/job/{job}?wait=5"))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.unwrap();
        assert_contract(Contract::JobStatus, &body);
        let view = body["job"][&job].clone();
        if !matches!(view["status"].as_str(), Some("PENDING" | "RUNNING")) {
            break view;
        }
        assert!(Instant::now() < deadline, "job {job} did not end: {view}");
    };
    assert_eq!(view["status"], "COMPLETED", "{view}");

    let output = client
        .get(format!("{base_url}/job/{job}/output"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(output.status(), StatusCode::OK);
    let output: Value = output.json().await.unwrap();
    let expected = brute_force_max_cut(&k4);
    assert_eq!(output["cut_value"].as_f64(), Some(expected), "{output}");
    let partition: Vec<u64> = output["partition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|side| side.as_u64().unwrap())
        .collect();
    assert_eq!(cut_of(&k4, &partition), expected);

    // SIGTERM, then SIGKILL after 40 s, as `docker stop -t 40` does: an idle server drains
    // well within that and exits 0 (137 would mean it was killed).
    docker(&["stop", "-t", "40", deployment.server()]);
    let exit_code = docker(&[
        "inspect",
        "--format",
        "{{.State.ExitCode}}",
        deployment.server(),
    ]);
    let log = logs(deployment.server());
    assert_eq!(exit_code, "0", "{log}");
    assert!(log.contains("stopped accepting requests"), "{log}");
}
