//! The sandbox's limits, against real guests: each limit in a pair, `_obeyed` and `_violated`,
//! and the server keeps serving while a runaway guest runs.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{
    ServerOptions, TestServer, complete_graph, matrix, sandbox_processes, start_with_limits,
    wait_for_sandbox_process,
};

/// The only execution of an ended job.
fn only_execution(view: &Value) -> Value {
    let executions = view["executions"].as_object().unwrap();
    assert_eq!(executions.len(), 1, "{view}");
    executions.values().next().unwrap().clone()
}

/// The guest's runs in a sandbox process, killed at the deadline.
const IN_A_PROCESS: &str = "[runaway]\nsandbox = \"process\"\n";
/// The guest's runs in the server's own process, with epoch checks.
const IN_THE_SERVER: &str = "[runaway]\nsandbox = \"server\"\n";

/// Checks that the server ran its runaway guest where `place` says: a run that silently fell
/// back to the server's process would pass every limit's test.
async fn assert_ran_in(server: &TestServer, place: &str) {
    if place == IN_A_PROCESS {
        wait_for_sandbox_process(server).await;
    } else {
        assert!(
            sandbox_processes(server.pid()).is_empty(),
            "no sandbox process"
        );
    }
}

#[tokio::test]
async fn time_limit_violated_fails_with_timeout_while_another_job_completes() {
    spin_past_the_time_limit(IN_A_PROCESS).await;
}

#[tokio::test]
async fn time_limit_violated_in_the_servers_process() {
    spin_past_the_time_limit(IN_THE_SERVER).await;
}

async fn spin_past_the_time_limit(place: &str) {
    let (server, _limits) = start_with_limits(place, &["--workers", "2"]);
    let token = server.admin_token().await;
    let spinning = server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "spin", "options": {"time_limit_s": 4}}),
        )
        .await;

    // While the spinning guest holds one worker, max-cut jobs run on the other.
    server.wait_until_running(&token, &spinning).await;
    assert_ran_in(&server, place).await;
    let job = server
        .launch(
            &token,
            "maxcut",
            &json!({"num_nodes": 4, "adj_matrix": complete_graph(4)}),
        )
        .await;
    assert_eq!(
        server.wait_until_ended(&token, &job).await["status"],
        "COMPLETED"
    );
    assert_eq!(server.job(&token, &spinning).await["status"], "RUNNING");

    let view = server.wait_until_ended(&token, &spinning).await;
    assert_eq!(view["status"], "FAILED");
    let execution = only_execution(&view);
    assert_eq!(execution["status"], "TIMED_OUT");
    assert_eq!(execution["error"]["code"], "timeout");
    assert_eq!(execution["plugin"]["name"], "runaway");
    let log = execution["logs"]["tail"].as_str().unwrap();
    assert!(log.contains("running away: Spin"), "{execution}");
    // Stopped after its limit plus the 1 s grace: not before, and not at the 10 s default.
    let duration = execution["duration_ms"].as_i64().unwrap();
    assert!((4_000..9_000).contains(&duration), "{execution}");
}

/// A sandbox process that dies (here killed, as the kernel's OOM killer would, or a crash in
/// wasmtime) fails only the run it held; the next long run gets a new process.
#[tokio::test]
async fn a_sandbox_process_that_dies_fails_only_its_run() {
    let (server, _limits) = start_with_limits(IN_A_PROCESS, &["--workers", "1"]);
    let token = server.admin_token().await;
    // A first run leaves the process idle with the component loaded, so that the next run
    // has begun in it once the job reads RUNNING.
    grow_a_little(&server, &token).await;
    let sandboxes = sandbox_processes(server.pid());
    assert_eq!(sandboxes.len(), 1, "one sandbox process ran the job");
    let spinning = server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "spin", "options": {"time_limit_s": 30}}),
        )
        .await;
    server.wait_until_running(&token, &spinning).await;
    assert_eq!(
        sandbox_processes(server.pid()),
        sandboxes,
        "the same process runs it"
    );
    // Killed before it took the run, the process would leave it to another one.
    wait_until_busy(sandboxes[0]).await;
    kill(sandboxes[0]).await;

    let view = server.wait_until_ended(&token, &spinning).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let execution = only_execution(&view);
    assert_eq!(execution["error"]["code"], "trap", "{execution}");
    let message = execution["error"]["message"].as_str().unwrap();
    assert!(message.contains("sandbox process"), "{message}");
    let duration = execution["duration_ms"].as_i64().unwrap();
    assert!(duration < 20_000, "{execution}");

    grow_a_little(&server, &token).await;
    let now = sandbox_processes(server.pid());
    assert!(
        now.len() == 1 && now != sandboxes,
        "a new process ran it: {now:?}"
    );

    // Killed while idle, it is not handed the next run: a new one takes it.
    kill(now[0]).await;
    grow_a_little(&server, &token).await;
    let last = sandbox_processes(server.pid());
    assert!(last.len() == 1 && last != now, "{last:?}");
}

/// Waits until process `pid` has spent a tenth of a second of CPU time more than now: the
/// spinning guest runs in it.
async fn wait_until_busy(pid: u32) {
    // utime and stime, in clock ticks (100 a second), after the name in parentheses.
    let ticks = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        // From the state letter on, utime and stime are the 12th and 13th fields.
        let field = |index: usize| fields.get(index)?.parse::<u64>().ok();
        field(11).zip(field(12)).map(|(user, system)| user + system)
    };
    let before = ticks().expect("the process runs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while ticks().is_some_and(|now| now < before + 10) {
        assert!(Instant::now() < deadline, "{pid} is not running its guest");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A run of the runaway guest that completes at once (it grows its memory by 1 MiB).
async fn grow_a_little(server: &TestServer, token: &str) {
    let grow = json!({"mode": "grow", "grow_mib": 1, "options": {"time_limit_s": 5}});
    complete(server, token, "runaway", &grow).await;
}

/// Launches a job and waits for it to complete.
async fn complete(server: &TestServer, token: &str, problem_id: &str, body: &Value) {
    let job = server.launch(token, problem_id, body).await;
    let view = server.wait_until_ended(token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
}

/// A max-cut graph of 30 nodes, past exhaustive search: the heuristic runs until its time
/// limit.
fn past_exhaustive_search() -> Vec<Vec<f64>> {
    let edges: Vec<(usize, usize, f64)> = (0..30)
        .flat_map(|i| [(i, (i + 1) % 30, 1.0), (i, (i + 7) % 30, -1.0)])
        .collect();
    matrix(30, &edges)
}

/// Kills a process as the kernel's OOM killer would, and waits until it has exited: `kill`
/// returns once the signal is sent, and the process dies when the kernel next schedules it,
/// which on a loaded machine can be after the next run was handed to it.
async fn kill(pid: u32) {
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success(), "kill {pid}");
    let deadline = Instant::now() + Duration::from_secs(10);
    // Exited: a zombie its parent has not reaped yet (state `Z`), or gone.
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    }) {
        assert!(
            Instant::now() < deadline,
            "{pid} did not exit after SIGKILL"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A run asked to finish now that does not return is stopped once its grace is over (a
/// tenth of its time limit, at least 1 s), and the job ends CANCELLED.
#[tokio::test]
async fn a_run_that_ignores_finish_now_is_stopped_after_its_grace() {
    for place in [IN_A_PROCESS, IN_THE_SERVER] {
        let (server, _limits) = start_with_limits(place, &[]);
        let token = server.admin_token().await;
        let spinning = server
            .launch(
                &token,
                "runaway",
                &json!({"mode": "spin", "options": {"time_limit_s": 30}}),
            )
            .await;
        server.wait_until_running(&token, &spinning).await;
        assert_ran_in(&server, place).await;
        let asked = Instant::now();
        let response = server
            .post_json(&token, &format!("/job/{spinning}/finish"), &json!({}))
            .await;
        assert!(response.status().is_success(), "{place}");
        let view = server.wait_until_ended(&token, &spinning).await;
        assert_eq!(view["status"], "CANCELLED", "{place}: {view}");
        let took = asked.elapsed();
        // Its grace is 3 s: stopped after it, long before the 30 s limit.
        assert!(
            (Duration::from_secs(3)..Duration::from_secs(20)).contains(&took),
            "{place}: {took:?}"
        );
    }
}

/// Left to choose, the server runs tiny jobs in its own process, and a component's runs in a
/// sandbox process once one of them was long.
#[tokio::test]
async fn runs_go_to_a_sandbox_process_once_one_was_long() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        ..Default::default()
    });
    let token = server.admin_token().await;
    // The default time limit (10 s) is long enough for a process; the runs are not.
    let tiny = json!({"num_nodes": 4, "adj_matrix": complete_graph(4)});
    for _ in 0..3 {
        complete(&server, &token, "maxcut", &tiny).await;
    }
    assert!(
        sandbox_processes(server.pid()).is_empty(),
        "tiny jobs stay in the server"
    );
    let long = json!({"num_nodes": 30, "adj_matrix": past_exhaustive_search(), "options": {"time_limit_s": 1}});
    complete(&server, &token, "maxcut", &long).await;
    assert!(
        sandbox_processes(server.pid()).is_empty(),
        "the first long run tells"
    );
    complete(&server, &token, "maxcut", &long).await;
    assert_eq!(
        sandbox_processes(server.pid()).len(),
        1,
        "the next runs in a process"
    );
}

/// Epoch interruption cannot stop a guest blocked in a host call; a WASI sleep still ends at
/// the deadline (and a sandbox process is killed at it).
#[tokio::test]
async fn time_limit_violated_by_sleeping_in_wasi() {
    for place in [IN_THE_SERVER, IN_A_PROCESS] {
        sleep_past_the_time_limit(place).await;
    }
}

async fn sleep_past_the_time_limit(place: &str) {
    let (server, _limits) = start_with_limits(place, &[]);
    let token = server.admin_token().await;
    let sleeping = server
        .launch(
            &token,
            "runaway",
            &json!({"mode": "sleep", "options": {"time_limit_s": 1}}),
        )
        .await;
    server.wait_until_running(&token, &sleeping).await;
    assert_ran_in(&server, place).await;
    let execution = only_execution(&server.wait_until_ended(&token, &sleeping).await);
    assert_eq!(execution["error"]["code"], "timeout", "{execution}");
    let duration = execution["duration_ms"].as_i64().unwrap();
    assert!((1_000..9_000).contains(&duration), "{execution}");
}

#[tokio::test]
async fn time_limit_obeyed_completes_within_it() {
    for place in [
        "[maxcut]\nsandbox = \"process\"\n",
        "[maxcut]\nsandbox = \"server\"\n",
    ] {
        run_within_the_time_limit(place).await;
    }
}

async fn run_within_the_time_limit(place: &str) {
    let (server, _limits) = start_with_limits(place, &[]);
    let token = server.admin_token().await;
    let body = json!({"num_nodes": 30, "adj_matrix": past_exhaustive_search(), "options": {"time_limit_s": 0.5, "seed": 7}});
    let job = server.launch(&token, "maxcut", &body).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
    let output = server.output(&token, &job).await;
    assert_eq!(output["optimal"], false);
    assert_eq!(output["solver"]["seed"], 7);
    // It used the 0.5 s it was given (not the 10 s default) and returned within it.
    let elapsed = output["solver"]["elapsed_s"].as_f64().unwrap();
    assert!((0.45..1.5).contains(&elapsed), "{place}: {output}");
    let processes = sandbox_processes(server.pid());
    assert_eq!(processes.is_empty(), place.contains("server"), "{place}");
}

#[tokio::test]
async fn memory_limit_obeyed() {
    for place in [IN_A_PROCESS, IN_THE_SERVER] {
        let (server, _limits) = start_with_limits(place, &["--memory-limit-mib", "64"]);
        let token = server.admin_token().await;
        let job = server
            .launch(&token, "runaway", &json!({"mode": "grow", "grow_mib": 16}))
            .await;
        assert_eq!(
            server.wait_until_ended(&token, &job).await["status"],
            "COMPLETED"
        );
        assert_eq!(
            server.output(&token, &job).await,
            json!({"allocated_mib": 16})
        );
        assert_ran_in(&server, place).await;
    }
}

#[tokio::test]
async fn memory_limit_violated() {
    grow_past_the_memory_limit(IN_A_PROCESS).await;
}

#[tokio::test]
async fn memory_limit_violated_in_the_servers_process() {
    grow_past_the_memory_limit(IN_THE_SERVER).await;
}

async fn grow_past_the_memory_limit(place: &str) {
    let (server, _limits) = start_with_limits(place, &["--memory-limit-mib", "64"]);
    let token = server.admin_token().await;
    let job = server
        .launch(&token, "runaway", &json!({"mode": "grow"}))
        .await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "FAILED");
    let execution = only_execution(&view);
    assert_eq!(execution["status"], "FAILED");
    assert_eq!(execution["error"]["code"], "memory_limit", "{execution}");
    assert!(
        execution["error"]["message"]
            .as_str()
            .unwrap()
            .contains("67108864")
    );
    // A process that ran out of the guest's memory takes the next run.
    assert_ran_in(&server, place).await;
}

/// Clients that hang up while their submission's `validate` runs cannot pile up sandbox
/// instances: each call keeps its submission permit until it returns, so no more run at once
/// than the instance pool was sized for, and jobs still find an instance to run in.
#[tokio::test]
async fn hung_up_submissions_cannot_exhaust_the_instance_pool() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "1"],
        plugins: &[("caseload_guest_versioned_v1", "versioned.wasm")],
    });
    let token = server.admin_token().await;
    // The pool holds an instance for the worker, one per CPU for submissions, and five more.
    // One submission more than that is sent, each given up after 20 ms; the guest's
    // `validate` holds each for 2 s, far longer than sending them all takes on any machine,
    // so without the permit held to the end every one of them would hold an instance at once.
    let cpus = std::thread::available_parallelism().map_or(2, |count| count.get());
    let submissions = cpus + 7;
    let validate_ms = 2_000;
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(20))
        .build()
        .expect("a client");
    for _ in 0..submissions {
        let sent = impatient
            .post(server.url("/problem/versioned"))
            .bearer_auth(&token)
            .json(&json!({"validate_sleep_ms": validate_ms}))
            .send()
            .await;
        if let Ok(response) = sent {
            let status = response.status();
            let body = response.text().await.unwrap_or_default();
            panic!("a submission answered within 20 ms, {status}: {body}");
        }
    }
    let job = server.launch(&token, "versioned", &json!({})).await;
    let view = server.wait_until_ended(&token, &job).await;
    assert_eq!(view["status"], "COMPLETED", "{view}");
}
