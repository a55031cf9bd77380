//! A test guest that misbehaves as its input asks, so that each sandbox limit can be tested
//! against a real component. Built by the host's build script for the end-to-end tests; never
//! shipped. The modes, by `{"mode": ...}`:
//!
//! - `spin` loops without calling the host; `sleep` blocks in a WASI sleep for an hour.
//! - `grow` allocates `grow_mib` MiB, or without end.
//! - `recurse` recurses `depth` calls deep, or without end: with `"stack": "linear_memory"`
//!   (the default) each frame keeps an array on the shadow stack in linear memory, which
//!   overflows first; with `"call_stack"` frames hold nothing in memory, so wasmtime's own
//!   limit on the wasm call stack is what stops it.
//! - `flood` writes `flood_bytes` bytes, half to stdout and half to stderr, then returns.
//! - `incumbent_flood` reports incumbents of `flood_bytes` bytes through the host import,
//!   bypassing the SDK's pace, as fast as it can for `seconds`, then returns how many.
//! - `panic` panics (plugins are built with `panic = "abort"`, so it traps).
//! - `bad_output` returns an output its own output schema rejects.
//! - `huge_output` returns an output of exactly `output_bytes` bytes of JSON.
//! - `escape` tries to read, list and write files (`/etc/passwd` and the host directory
//!   `dir`), to read the environment and to reach the network (`port` on 127.0.0.1), and
//!   reports what each attempt got instead of failing, so a test can check every one.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

use caseload_sdk::{Describe, RunContext, RunError, UseCase};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Spin,
    Sleep,
    Grow,
    Recurse,
    Flood,
    IncumbentFlood,
    Panic,
    BadOutput,
    HugeOutput,
    Escape,
}

/// Where `recurse` spends its stack.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stack {
    #[default]
    LinearMemory,
    CallStack,
}

#[derive(Debug, Deserialize, Serialize)]
pub struct Input {
    pub mode: Mode,
    pub grow_mib: Option<usize>,
    pub depth: Option<u64>,
    #[serde(default)]
    pub stack: Stack,
    pub flood_bytes: Option<usize>,
    pub seconds: Option<f64>,
    pub output_bytes: Option<usize>,
    pub dir: Option<String>,
    pub port: Option<u16>,
}

/// What one escape attempt got.
#[derive(Debug, Serialize)]
pub struct Attempt {
    /// True if the sandbox let the attempt through.
    pub succeeded: bool,
    /// The error, or what was obtained.
    pub detail: String,
}

impl Attempt {
    fn from_result<T, E: std::fmt::Display>(
        result: Result<T, E>,
        describe: impl FnOnce(T) -> String,
    ) -> Attempt {
        match result {
            Ok(value) => Attempt {
                succeeded: true,
                detail: describe(value),
            },
            Err(error) => Attempt {
                succeeded: false,
                detail: error.to_string(),
            },
        }
    }
}

/// The output of `huge_output` without its padding: `{"padding":""}`.
const EMPTY_PADDED_OUTPUT: usize = 14;

pub struct Runaway;

impl UseCase for Runaway {
    type Input = Input;
    type Output = Value;

    fn describe() -> Describe {
        Describe {
            name: "runaway",
            version: "0.2.0",
            aliases: &["urn:caseload:test:runaway"],
            description: "Misbehaves on request: spins, sleeps, grows memory, recurses, \
                          floods its log, panics, returns bad or huge outputs, tries to escape \
                          (test guest).",
            input_schema: r#"{
                "type": "object",
                "required": ["mode"],
                "properties": {
                    "mode": {"enum": ["spin", "sleep", "grow", "recurse", "flood",
                                      "incumbent_flood", "panic", "bad_output",
                                      "huge_output", "escape"]},
                    "grow_mib": {"type": "integer", "minimum": 0},
                    "depth": {"type": "integer", "minimum": 0},
                    "stack": {"enum": ["linear_memory", "call_stack"]},
                    "flood_bytes": {"type": "integer", "minimum": 0},
                    "seconds": {"type": "number", "minimum": 0},
                    "output_bytes": {"type": "integer", "minimum": 14},
                    "dir": {"type": "string"},
                    "port": {"type": "integer", "minimum": 1, "maximum": 65535}
                },
                "additionalProperties": false
            }"#,
            // One key per mode that returns; `bad_output` breaks it on purpose.
            output_schema: r#"{
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "properties": {
                    "slept": {"const": true},
                    "allocated_mib": {"type": "integer", "minimum": 0},
                    "depth": {"type": "integer", "minimum": 0},
                    "stack": {"enum": ["linear_memory", "call_stack"]},
                    "flooded_bytes": {"type": "integer", "minimum": 0},
                    "reported": {"type": "integer", "minimum": 0},
                    "padding": {"type": "string"},
                    "attempts": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "required": ["succeeded", "detail"],
                            "properties": {
                                "succeeded": {"type": "boolean"},
                                "detail": {"type": "string"}
                            },
                            "additionalProperties": false
                        }
                    }
                },
                "additionalProperties": false
            }"#,
            media_types: &["application/json"],
        }
    }

    fn run(input: Input, _context: &RunContext) -> Result<Value, RunError> {
        // Lands in the execution's log: stdout is captured, even for a run that is killed.
        println!("running away: {:?}", input.mode);
        match input.mode {
            Mode::Spin => {
                let mut counter = 0u64;
                loop {
                    counter = std::hint::black_box(counter.wrapping_add(1));
                }
            }
            Mode::Sleep => {
                std::thread::sleep(Duration::from_secs(3600));
                Ok(json!({"slept": true}))
            }
            Mode::Grow => {
                let mut kept: Vec<Vec<u8>> = Vec::new();
                while input.grow_mib.is_none_or(|limit| kept.len() < limit) {
                    // Touch every page so the memory is really used.
                    kept.push(vec![1u8; 1 << 20]);
                }
                Ok(json!({"allocated_mib": std::hint::black_box(kept).len()}))
            }
            Mode::Recurse => {
                let depth = match input.stack {
                    Stack::LinearMemory => recurse(0, input.depth),
                    // Called through a pointer the optimizer cannot see through, so that the
                    // calls stay calls and nothing needs memory.
                    Stack::CallStack => {
                        let next = RecurseInLocals(std::hint::black_box(recurse_in_locals));
                        recurse_in_locals(0, input.depth, next)
                    }
                };
                Ok(json!({ "depth": depth }))
            }
            Mode::Flood => {
                let total = input.flood_bytes.unwrap_or(0);
                flood(total).map_err(|error| RunError::Failed(error.to_string()))?;
                Ok(json!({"flooded_bytes": total}))
            }
            Mode::IncumbentFlood => {
                let bytes = input.flood_bytes.unwrap_or(1 << 20).max(2);
                // A JSON string of `bytes` bytes, quotes included.
                let solution = format!("\"{}\"", "x".repeat(bytes - 2));
                let until = std::time::Instant::now()
                    + Duration::from_secs_f64(input.seconds.unwrap_or(1.0));
                let mut reported = 0_u64;
                while std::time::Instant::now() < until {
                    report_incumbent(reported as f64, &solution);
                    reported += 1;
                }
                Ok(json!({ "reported": reported }))
            }
            Mode::Panic => panic!("the runaway guest panics on purpose"),
            // A string where the schema wants an integer, and a key it does not know.
            Mode::BadOutput => Ok(json!({"allocated_mib": "lots", "unexpected": true})),
            Mode::HugeOutput => {
                let size = input.output_bytes.unwrap_or(EMPTY_PADDED_OUTPUT);
                let padding = "x".repeat(size.saturating_sub(EMPTY_PADDED_OUTPUT));
                Ok(json!({ "padding": padding }))
            }
            Mode::Escape => Ok(json!({ "attempts": escape(input.dir.as_deref(), input.port) })),
        }
    }
}

/// Counts the calls down to `limit`, or until the stack runs out. Each frame keeps an array
/// on the stack and adds to the result after the call returns, so the optimizer can neither
/// turn the recursion into a loop nor shrink the frames away.
fn recurse(depth: u64, limit: Option<u64>) -> u64 {
    let frame = std::hint::black_box([depth; 16]);
    if limit.is_some_and(|limit| depth >= limit) {
        return depth;
    }
    let deepest = recurse(depth + 1, limit);
    deepest.max(std::hint::black_box(frame)[15])
}

/// The next call of [`recurse_in_locals`], passed along as a function pointer.
#[derive(Clone, Copy)]
struct RecurseInLocals(fn(u64, Option<u64>, RecurseInLocals) -> u64);

/// Counts the calls down to `limit`, or until wasmtime's limit on the call stack: the frames
/// hold only wasm locals, and the indirect call cannot become a loop.
fn recurse_in_locals(depth: u64, limit: Option<u64>, next: RecurseInLocals) -> u64 {
    if limit.is_some_and(|limit| depth >= limit) {
        return depth;
    }
    (next.0)(depth + 1, limit, next).max(depth)
}

/// Writes `total` bytes of numbered lines, in chunks of about 4 KiB alternating between stdout
/// and stderr, then a last line that says the flood is over, so a test can see that the newest
/// bytes are the ones kept.
fn flood(total: usize) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr().lock();
    let mut written = 0;
    let mut line_number = 0u64;
    let mut to_stdout = true;
    let mut chunk = Vec::with_capacity(4096 + 32);
    while written < total {
        chunk.clear();
        while chunk.len() < 4096 && written + chunk.len() < total {
            writeln!(chunk, "flood line {line_number:>10}")?;
            line_number += 1;
        }
        chunk.truncate(total - written);
        if to_stdout {
            stdout.write_all(&chunk)?;
        } else {
            stderr.write_all(&chunk)?;
        }
        written += chunk.len();
        to_stdout = !to_stdout;
    }
    // Not counted in `flood_bytes`: the marker that the flood is over.
    writeln!(stdout, "flood over")?;
    stdout.flush()
}

/// Tries each way out of the sandbox a guest has in Rust's standard library.
fn escape(dir: Option<&str>, port: Option<u16>) -> BTreeMap<&'static str, Attempt> {
    let dir = std::path::Path::new(dir.unwrap_or("/tmp"));
    let mut attempts = BTreeMap::new();
    attempts.insert(
        "read /etc/passwd",
        Attempt::from_result(std::fs::read("/etc/passwd"), |bytes| {
            format!("read {} bytes", bytes.len())
        }),
    );
    attempts.insert(
        "read a file in dir",
        Attempt::from_result(std::fs::read(dir.join("secret")), |bytes| {
            format!("read {} bytes", bytes.len())
        }),
    );
    attempts.insert(
        "list the current directory",
        Attempt::from_result(std::fs::read_dir("."), |entries| {
            format!("{} entries", entries.count())
        }),
    );
    attempts.insert(
        "list dir",
        Attempt::from_result(std::fs::read_dir(dir), |entries| {
            format!("{} entries", entries.count())
        }),
    );
    attempts.insert(
        "write a file in dir",
        Attempt::from_result(std::fs::write(dir.join("escaped"), b"out"), |()| {
            "wrote 3 bytes".to_owned()
        }),
    );
    // The server is started with its admin password in this variable.
    attempts.insert(
        "read CASELOAD_ADMIN_PASSWORD",
        Attempt::from_result(std::env::var("CASELOAD_ADMIN_PASSWORD"), |value| {
            format!("a value of {} bytes", value.len())
        }),
    );
    let variables: Vec<String> = std::env::vars().map(|(name, _)| name).collect();
    attempts.insert(
        "list the environment",
        if variables.is_empty() {
            Attempt {
                succeeded: false,
                detail: "no variables".to_owned(),
            }
        } else {
            Attempt {
                succeeded: true,
                detail: variables.join(", "),
            }
        },
    );
    attempts.insert(
        "connect to 127.0.0.1",
        Attempt::from_result(
            std::net::TcpStream::connect(("127.0.0.1", port.unwrap_or(80))),
            |stream| format!("connected from {:?}", stream.local_addr()),
        ),
    );
    attempts.insert(
        "resolve localhost",
        Attempt::from_result(
            std::net::ToSocketAddrs::to_socket_addrs(&("localhost", port.unwrap_or(80))),
            |addresses| format!("{:?}", addresses.collect::<Vec<_>>()),
        ),
    );
    attempts.insert(
        "bind a UDP socket",
        Attempt::from_result(std::net::UdpSocket::bind("127.0.0.1:0"), |socket| {
            format!("bound {:?}", socket.local_addr())
        }),
    );
    attempts
}

caseload_sdk::export_use_case!(Runaway);

/// Reports an incumbent straight through the host import, as a plugin that ignores the
/// SDK's pace would.
#[cfg(target_arch = "wasm32")]
fn report_incumbent(objective: f64, solution: &str) {
    caseload_sdk::bindings::caseload::plugin::host::incumbent(objective, solution);
}

#[cfg(not(target_arch = "wasm32"))]
fn report_incumbent(_objective: f64, _solution: &str) {}
