//! The test harness: the real `caseload` binary on a real socket, with its own data directory.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use reqwest::{Client, Response, StatusCode};
use serde_json::{Value, json};

pub const ADMIN_PASSWORD: &str = "correct horse battery staple";

/// How long a test waits for anything before it fails.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The compile cache every test server shares unless its arguments name one: the built-in
/// components are compiled once for the whole run instead of at every start. Entries are
/// keyed by the component's hash and the engine's settings and checked before use
/// (runtime/src/runtime/cache.rs), so sharing them changes no behaviour; the tests of the
/// cache itself give their servers one of their own.
pub const SHARED_COMPILE_CACHE: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/compile-cache");

/// Whether a server of this test process has started on the shared compile cache.
static CACHE_WARMED: AtomicBool = AtomicBool::new(false);

/// Until a server of this process has started on the shared compile cache, starts take turns
/// under a lock on a file in it, across test processes too: while the cache is cold (a fresh
/// build directory), every start compiles every built-in (lp's HiGHS takes tens of seconds
/// in a debug build), and a dozen at once on two cores outlast their patience. The first
/// start fills the cache; the next ones read it.
fn first_start_lock() -> Option<std::fs::File> {
    if CACHE_WARMED.load(Ordering::Relaxed) {
        return None;
    }
    std::fs::create_dir_all(SHARED_COMPILE_CACHE).expect("the shared compile cache");
    let lock = std::fs::File::create(Path::new(SHARED_COMPILE_CACHE).join(".first-start"))
        .expect("the first start's lock file");
    lock.lock().expect("the first start's lock");
    Some(lock)
}

/// The API's bodies as `schemas/api/` describes them: every response the tests read is checked
/// against its schema, so the schemas and the server cannot drift apart.
pub enum Contract {
    Token,
    RunJob,
    JobStatus,
    Problem,
    DataFile,
    Cancel,
    Evaluation,
}

pub fn assert_contract(contract: Contract, body: &Value) {
    let (name, text) = match contract {
        Contract::Token => ("token", include_str!("../../schemas/api/token.schema.json")),
        Contract::RunJob => (
            "run-job",
            include_str!("../../schemas/api/run-job.schema.json"),
        ),
        Contract::JobStatus => (
            "job-status",
            include_str!("../../schemas/api/job-status.schema.json"),
        ),
        Contract::Problem => (
            "problem",
            include_str!("../../schemas/api/problem.schema.json"),
        ),
        Contract::DataFile => (
            "data-file",
            include_str!("../../schemas/api/data-file.schema.json"),
        ),
        Contract::Cancel => (
            "cancel",
            include_str!("../../schemas/api/cancel.schema.json"),
        ),
        Contract::Evaluation => (
            "evaluation",
            include_str!("../../schemas/api/evaluation.schema.json"),
        ),
    };
    let schema: Value = serde_json::from_str(text).expect("the schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|error| format!("{}: {error}", error.instance_path().as_str()))
        .collect();
    assert!(
        errors.is_empty(),
        "{body} breaks the {name} contract: {errors:?}"
    );
}

/// `body` checked against the schema `/openapi.json` names `component` (under
/// `#/components/schemas`), its references resolved within that document: the contract of the
/// responses whose schemas live only there.
pub fn assert_openapi_contract(document: &Value, component: &str, body: &Value) {
    let schema = json!({
        "$ref": format!("#/components/schemas/{component}"),
        "components": document["components"],
    });
    let validator = jsonschema::validator_for(&schema).expect("the document's schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|error| format!("{}: {error}", error.instance_path().as_str()))
        .collect();
    assert!(
        errors.is_empty(),
        "{body} breaks the {component} contract: {errors:?}"
    );
}

/// A compiled test guest, by crate name (`caseload-guest-runaway` is `caseload_guest_runaway`).
pub fn guest_wasm(artifact: &str) -> PathBuf {
    Path::new(caseload::TEST_GUESTS_DIR).join(format!("{artifact}.wasm"))
}

/// A build of the test guest `versioned`, by its variant (`v1`, `v2`, `other_bytes`...).
pub fn versioned(variant: &str) -> Vec<u8> {
    std::fs::read(guest_wasm(&format!("caseload_guest_versioned_{variant}")))
        .expect("the test guest was built by build.rs")
}

/// The runaway guest, as a plugin file: it spins, sleeps or grows its memory on request.
pub const RUNAWAY: &[(&str, &str)] = &[("caseload_guest_runaway", "runaway.wasm")];

/// A server with the runaway guest and these `--plugin-limits`, and more arguments; the
/// limits file lives as long as the server.
pub fn start_with_limits(limits: &str, args: &[&str]) -> (TestServer, tempfile::NamedTempFile) {
    let file = tempfile::NamedTempFile::new().expect("a temporary file");
    std::fs::write(file.path(), limits).expect("the limits are written");
    let path = file.path().to_str().expect("a UTF-8 path");
    let args: Vec<&str> = ["--plugin-limits", path]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    let server = TestServer::start_with(ServerOptions {
        args: &args,
        plugins: RUNAWAY,
    });
    (server, file)
}

/// A child process killed when the test ends, passed or failed.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A running server; killed when dropped.
pub struct TestServer {
    child: Child,
    pub base_url: String,
    pub client: Client,
    data_dir: tempfile::TempDir,
    printed: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// How to start a server.
#[derive(Default)]
pub struct ServerOptions<'a> {
    pub args: &'a [&'a str],
    /// Guests to drop into the plugins directory before start: (artifact, file name).
    pub plugins: &'a [(&'a str, &'a str)],
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(ServerOptions::default())
    }

    pub fn start_with(options: ServerOptions<'_>) -> TestServer {
        let data_dir = tempfile::tempdir().expect("a temporary directory");
        let plugins_dir = data_dir.path().join("plugins");
        std::fs::create_dir_all(&plugins_dir).expect("the plugins directory");
        for (artifact, file_name) in options.plugins {
            std::fs::copy(guest_wasm(artifact), plugins_dir.join(file_name))
                .expect("the test guest was built by build.rs");
        }
        TestServer::start_in(data_dir, options.args)
    }

    /// Starts a server on an existing data directory (for restarts).
    pub fn start_in(data_dir: tempfile::TempDir, args: &[&str]) -> TestServer {
        let stderr = std::fs::File::create(data_dir.path().join("server.log")).expect("a log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_caseload"));
        let shared_cache = !args.contains(&"--compile-cache-dir");
        if shared_cache {
            command.env("CASELOAD_COMPILE_CACHE_DIR", SHARED_COMPILE_CACHE);
        }
        let first_start = shared_cache.then(first_start_lock).flatten();
        let mut child = command
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir.path())
            .args(args)
            .env("CASELOAD_ADMIN_PASSWORD", ADMIN_PASSWORD)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("the caseload binary starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let (sender, receiver) = mpsc::channel();
        let printed = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = printed.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                kept.lock().expect("the lines' lock").push(line.clone());
                // `--log-format json` prints the line as an object's message.
                let message = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|object| object["message"].as_str().map(str::to_owned))
                    .unwrap_or(line);
                if let Some(address) = message.strip_prefix("listening on ") {
                    let _ = sender.send(address.to_owned());
                }
            }
        });
        // A server with a compile cache of its own compiles every built-in cold at start.
        let patience = if shared_cache { PATIENCE } else { PATIENCE * 5 };
        let base_url = match receiver.recv_timeout(patience) {
            Ok(address) => {
                if first_start.is_some() {
                    CACHE_WARMED.store(true, Ordering::Relaxed);
                }
                address
            }
            Err(_) => {
                let _ = child.kill();
                let log =
                    std::fs::read_to_string(data_dir.path().join("server.log")).unwrap_or_default();
                panic!("the server did not say where it listens; its log:\n{log}");
            }
        };
        TestServer {
            child,
            base_url,
            // Idle connections are dropped before the server's 30 s header timeout closes
            // them: a request sent on one the server is closing fails with IncompleteMessage
            // (a test that waits on a slow build between two requests hit it).
            client: Client::builder()
                .pool_idle_timeout(Duration::from_secs(20))
                .build()
                .expect("a client"),
            data_dir,
            printed,
        }
    }

    /// The lines the server printed on its standard output so far.
    pub fn printed(&self) -> Vec<String> {
        self.printed.lock().expect("the lines' lock").clone()
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server's SQLite database, opened beside it: read-only to check what was written,
    /// writable to damage it on purpose.
    pub async fn database(&self, read_only: bool) -> sqlx::SqlitePool {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(self.data_dir().join("caseload.db"))
            .read_only(read_only);
        sqlx::SqlitePool::connect_with(options)
            .await
            .expect("the database file opens")
    }

    /// Kills the server (SIGKILL) and hands back its data directory.
    pub fn kill(mut self) -> tempfile::TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let placeholder = tempfile::tempdir().expect("a temporary directory");
        std::mem::replace(&mut self.data_dir, placeholder)
    }

    /// Asks the server to stop (SIGTERM), waits for it to exit, and hands back its data
    /// directory.
    pub fn terminate(mut self) -> tempfile::TempDir {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -TERM {pid} failed");
        let deadline = Instant::now() + PATIENCE;
        while self.child.try_wait().expect("the child's status").is_none() {
            assert!(
                Instant::now() < deadline,
                "the server did not stop on SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let placeholder = tempfile::tempdir().expect("a temporary directory");
        std::mem::replace(&mut self.data_dir, placeholder)
    }

    /// `host:port`, for a raw TCP connection.
    pub fn address(&self) -> String {
        self.base_url.trim_start_matches("http://").to_owned()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// Creates a user with the real `caseload user add`, beside the running server.
    pub fn add_user(&self, name: &str, password: &str) {
        let (ok, output) = self.user_command(&["add", name, "--password-stdin"], Some(password));
        assert!(ok, "user add failed: {output}");
    }

    /// Runs `caseload user ARGS...` on the server's data directory, with `stdin` as its input;
    /// whether it succeeded, and what it printed on both outputs.
    pub fn user_command(&self, args: &[&str], stdin: Option<&str>) -> (bool, String) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_caseload"))
            .arg("user")
            .args(args)
            .arg("--data-dir")
            .arg(self.data_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("caseload user starts");
        let mut input = child.stdin.take().expect("piped stdin");
        if let Some(stdin) = stdin {
            writeln!(input, "{stdin}").expect("the input is written");
        }
        drop(input);
        let output = child.wait_with_output().expect("caseload user ends");
        (
            output.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )
    }

    pub async fn login(&self, username: &str, password: &str) -> Response {
        self.client
            .post(self.url("/login"))
            .json(&json!({ "username": username, "password": password }))
            .send()
            .await
            .expect("the server answers")
    }

    /// Logs in and returns the access token.
    pub async fn token(&self, username: &str, password: &str) -> String {
        let response = self.login(username, password).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("a JSON body");
        assert_contract(Contract::Token, &body);
        body["access_token"]
            .as_str()
            .expect("an access token")
            .to_owned()
    }

    pub async fn admin_token(&self) -> String {
        self.token("admin", ADMIN_PASSWORD).await
    }

    pub async fn get(&self, token: &str, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("the server answers")
    }

    pub async fn delete(&self, token: &str, path: &str) -> Response {
        self.client
            .delete(self.url(path))
            .bearer_auth(token)
            .send()
            .await
            .expect("the server answers")
    }

    pub async fn post_json(&self, token: &str, path: &str, body: &Value) -> Response {
        self.client
            .post(self.url(path))
            .bearer_auth(token)
            .json(body)
            .send()
            .await
            .expect("the server answers")
    }

    /// Launches a job and returns its id, asserting the 202 and its Location.
    /// `POST /plugins<query>` with a component's bytes.
    pub async fn publish_raw(&self, token: &str, query: &str, wasm: &[u8]) -> Response {
        self.client
            .post(self.url(&format!("/plugins{query}")))
            .bearer_auth(token)
            .header("content-type", "application/wasm")
            .body(wasm.to_vec())
            .send()
            .await
            .expect("the server answers")
    }

    /// Publishes a variant of the test guest `versioned` and expects it stored.
    pub async fn publish_versioned(&self, token: &str, query: &str, variant: &str) {
        let response = self.publish_raw(token, query, &versioned(variant)).await;
        assert_eq!(response.status(), StatusCode::CREATED);
    }

    pub async fn launch(&self, token: &str, problem_id: &str, body: &Value) -> String {
        self.launch_at(token, &format!("/problem/{problem_id}"), body)
            .await
    }

    /// Makes a project as the administrator `admin`; its id.
    pub async fn make_project(&self, admin: &str, name: &str) -> String {
        let made = self
            .post_json(admin, "/admin/projects", &json!({"name": name}))
            .await;
        assert_eq!(made.status(), StatusCode::CREATED, "project {name}");
        let made: Value = made.json().await.expect("a project");
        made["id"].as_str().expect("its id").to_owned()
    }

    /// Puts `user` in `project` as `role` (`member`, `viewer`), as the administrator
    /// `admin`; the answer, to check.
    pub async fn set_member(&self, admin: &str, project: &str, user: &str, role: &str) -> Response {
        self.client
            .put(self.url(&format!("/admin/projects/{project}/members/{user}")))
            .bearer_auth(admin)
            .json(&json!({"role": role}))
            .send()
            .await
            .expect("the server answers")
    }

    /// Launches a job in a project.
    pub async fn launch_in(
        &self,
        token: &str,
        problem_id: &str,
        project: &str,
        body: &Value,
    ) -> String {
        self.launch_at(
            token,
            &format!("/problem/{problem_id}?project={project}"),
            body,
        )
        .await
    }

    async fn launch_at(&self, token: &str, path: &str, body: &Value) -> String {
        let response = self.post_json(token, path, body).await;
        assert_eq!(
            response.status(),
            StatusCode::ACCEPTED,
            "{}",
            response.text().await.unwrap_or_default()
        );
        let location = response.headers()["location"]
            .to_str()
            .expect("ASCII")
            .to_owned();
        let body: Value = response.json().await.expect("a JSON body");
        assert_contract(Contract::RunJob, &body);
        let job = body["job"].as_str().expect("a job id").to_owned();
        assert_eq!(location, format!("/job/{job}"));
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|detail| !detail.is_empty())
        );
        job
    }

    /// The job object under `job.<id>` of `GET /job/<id>`.
    pub async fn job(&self, token: &str, job: &str) -> Value {
        self.job_with(token, job, "").await
    }

    /// The job object under `job.<id>` of `GET /job/<id>?<query>`.
    pub async fn job_with(&self, token: &str, job: &str, query: &str) -> Value {
        let response = self.get(token, &format!("/job/{job}?{query}")).await;
        assert_eq!(response.status(), StatusCode::OK);
        let body: Value = response.json().await.expect("a JSON body");
        assert_contract(Contract::JobStatus, &body);
        let jobs = body["job"].as_object().expect("a job object");
        assert_eq!(jobs.len(), 1);
        jobs[job].clone()
    }

    /// Polls until the job is `RUNNING`, its execution started (an attempt's start is written
    /// up to 20 ms into its run).
    pub async fn wait_until_running(&self, token: &str, job: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let view = self.job(token, job).await;
            let started = view["executions"]
                .as_object()
                .is_some_and(|executions| !executions.is_empty());
            if view["status"] == "RUNNING" && started {
                return;
            }
            assert!(Instant::now() < deadline, "job {job} never ran: {view}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits (long-polls) until the job has ended, and returns it.
    pub async fn wait_until_ended(&self, token: &str, job: &str) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let view = self.job_with(token, job, "wait=5").await;
            if !matches!(view["status"].as_str(), Some("PENDING" | "RUNNING")) {
                return view;
            }
            assert!(Instant::now() < deadline, "job {job} did not end: {view}");
        }
    }

    pub async fn output(&self, token: &str, job: &str) -> Value {
        let response = self.get(token, &format!("/job/{job}/output")).await;
        assert_eq!(response.status(), StatusCode::OK);
        response.json().await.expect("a JSON body")
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            let log = std::fs::read_to_string(self.data_dir.path().join("server.log"))
                .unwrap_or_default();
            eprintln!("--- server log ---\n{log}");
        }
    }
}

/// `GET /problem/<id>`: the body, or `None` for a 404.
pub async fn problem(server: &TestServer, token: &str, id: &str) -> Option<Value> {
    let response = server.get(token, &format!("/problem/{id}")).await;
    if response.status() == StatusCode::NOT_FOUND {
        return None;
    }
    assert_eq!(response.status(), StatusCode::OK);
    Some(response.json().await.unwrap())
}

/// Polls `GET /problem/<id>` until `done` holds for its answer, and returns that answer.
pub async fn wait_for_problem(
    server: &TestServer,
    token: &str,
    id: &str,
    done: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    wait_for_problem_within(server, token, id, PATIENCE, done).await
}

/// [`wait_for_problem`], for up to `patience`: an interpreter's component compiled cold by a
/// debug server on a busy machine can take minutes.
pub async fn wait_for_problem_within(
    server: &TestServer,
    token: &str,
    id: &str,
    patience: Duration,
    done: impl Fn(Option<&Value>) -> bool,
) -> Option<Value> {
    let deadline = Instant::now() + patience;
    loop {
        let answer = problem(server, token, id).await;
        if done(answer.as_ref()) {
            return answer;
        }
        assert!(
            Instant::now() < deadline,
            "/problem/{id} never became what was expected; last: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Uploads `text` as a data file of `media_type`, answering its id.
pub async fn upload_dataset(
    server: &TestServer,
    token: &str,
    text: &str,
    media_type: &str,
) -> String {
    let uploaded = server
        .client
        .post(server.url("/data_file"))
        .bearer_auth(token)
        .header("content-type", media_type)
        .body(text.to_owned())
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), StatusCode::CREATED);
    uploaded.json::<Value>().await.unwrap()["data_file_identifier"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Asserts a problem+json answer with this status, and returns its body.
pub async fn expect_problem(response: Response, status: StatusCode) -> Value {
    assert_eq!(response.status(), status);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ASCII")
        .to_owned();
    assert_eq!(content_type, "application/problem+json");
    let body: Value = response.json().await.expect("a JSON body");
    assert_contract(Contract::Problem, &body);
    assert_eq!(body["status"], status.as_u16());
    assert!(body["type"].is_string() && body["title"].is_string() && body["detail"].is_string());
    body
}

/// An n-node adjacency matrix from an edge list.
pub fn matrix(n: usize, edges: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
    let mut matrix = vec![vec![0.0; n]; n];
    for &(i, j, weight) in edges {
        matrix[i][j] = weight;
        matrix[j][i] = weight;
    }
    matrix
}

/// K_n with unit weights; its maximum cut is floor(n/2) * ceil(n/2).
pub fn complete_graph(n: usize) -> Vec<Vec<f64>> {
    (0..n)
        .map(|i| (0..n).map(|j| if i == j { 0.0 } else { 1.0 }).collect())
        .collect()
}

/// A max-cut job that runs for its whole time limit: K30 is past exhaustive search (and
/// reductions: every node has degree 29), so the heuristic goes on until its deadline.
pub fn timed_job(seconds: f64) -> Value {
    json!({
        "num_nodes": 30,
        "adj_matrix": complete_graph(30),
        "options": {"time_limit_s": seconds},
    })
}

/// The value of `series` (a metric's name with its labels) in `/metrics`' text. The whole
/// name is matched, so that `..._total 1` cannot match `..._total 12`.
pub fn metric_sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// The cut of `partition` in `matrix`, each edge counted once.
pub fn cut_of(matrix: &[Vec<f64>], partition: &[u64]) -> f64 {
    let mut cut = 0.0;
    for i in 0..matrix.len() {
        for j in i + 1..matrix.len() {
            if partition[i] != partition[j] {
                cut += matrix[i][j];
            }
        }
    }
    cut
}

/// The maximum cut by trying every partition.
pub fn brute_force_max_cut(matrix: &[Vec<f64>]) -> f64 {
    let n = matrix.len();
    (0..1u64 << n)
        .map(|mask| {
            let partition: Vec<u64> = (0..n).map(|bit| mask >> bit & 1).collect();
            cut_of(matrix, &partition)
        })
        .fold(f64::NEG_INFINITY, f64::max)
}

/// The pids of the `caseload sandbox` processes the server of pid `server` started.
pub fn sandbox_processes(server: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc is readable") {
        let Ok(pid) = entry
            .expect("an entry")
            .file_name()
            .to_string_lossy()
            .parse::<u32>()
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces, so count from the last ')'.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|ppid| ppid.parse::<u32>().ok());
        let command = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let sandbox = command.split(|byte| *byte == 0).nth(1) == Some(b"sandbox".as_slice());
        if parent == Some(server) && sandbox {
            pids.push(pid);
        }
    }
    pids
}

/// The pids of `server`'s sandbox processes, once it has one (a run sent to a process).
pub async fn wait_for_sandbox_process(server: &TestServer) -> Vec<u32> {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let pids = sandbox_processes(server.pid());
        if !pids.is_empty() {
            return pids;
        }
        assert!(Instant::now() < deadline, "no sandbox process started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
