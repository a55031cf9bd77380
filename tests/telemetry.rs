//! Traces over OTLP/HTTP to a local receiver: a job's submission and its execution arrive
//! as spans of one trace whose id is the job id, from the real binary.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{ServerOptions, TestServer};

/// An OTLP/HTTP receiver that keeps every request body sent to `/v1/traces`.
async fn receiver() -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let kept = bodies.clone();
    tokio::spawn(async move {
        while let Ok((mut connection, _)) = listener.accept().await {
            let kept = kept.clone();
            tokio::spawn(async move {
                // One request per connection read whole: head, then Content-Length bytes.
                loop {
                    let mut head = Vec::new();
                    let mut byte = [0u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if connection.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    let head = String::from_utf8_lossy(&head).to_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|line| line.strip_prefix("content-length:"))
                        .and_then(|value| value.trim().parse().ok())
                        .unwrap_or(0);
                    let mut body = vec![0u8; length];
                    if connection.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    if head.starts_with("post /v1/traces ") {
                        kept.lock().unwrap().push(body);
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if connection.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (address, bodies)
}

#[tokio::test]
async fn a_job_s_spans_reach_the_collector_in_one_trace_named_by_the_job_id() {
    let (collector, bodies) = receiver().await;
    let server = TestServer::start_with(ServerOptions {
        args: &["--otlp-endpoint", &collector],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    let job = server
        .launch(
            &token,
            "maxcut",
            &json!({"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]]}),
        )
        .await;
    server.wait_until_ended(&token, &job).await;
    let trace_id = *uuid::Uuid::parse_str(&job).unwrap().as_bytes();

    // The batch exporter sends every 5 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let received: Vec<u8> = bodies.lock().unwrap().concat();
        let in_trace = received
            .windows(trace_id.len())
            .filter(|window| *window == trace_id)
            .count();
        let named = |name: &[u8]| received.windows(name.len()).any(|window| window == name);
        // Both spans of the job, and the service's name, in protobuf's plain UTF-8.
        if in_trace >= 2 && named(b"submit") && named(b"caseload") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the collector got {} bodies, {in_trace} spans in trace {job}",
            bodies.lock().unwrap().len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every span in what the collector received, with its resource's spans flattened.
fn received_spans(
    bodies: &Mutex<Vec<Vec<u8>>>,
) -> Vec<opentelemetry_proto::tonic::trace::v1::Span> {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    bodies
        .lock()
        .unwrap()
        .iter()
        .filter_map(|body| ExportTraceServiceRequest::decode(body.as_slice()).ok())
        .flat_map(|request| request.resource_spans)
        .flat_map(|resource| resource.scope_spans)
        .flat_map(|scope| scope.spans)
        .collect()
}

/// A span's attribute, as text (a string's value, or an integer's digits).
fn attribute(span: &opentelemetry_proto::tonic::trace::v1::Span, key: &str) -> Option<String> {
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    let value = span.attributes.iter().find(|pair| pair.key == key)?;
    match value.value.as_ref()?.value.as_ref()? {
        Any::StringValue(text) => Some(text.clone()),
        Any::IntValue(number) => Some(number.to_string()),
        _ => None,
    }
}

#[tokio::test]
async fn http_spans_follow_the_semantic_conventions_and_continue_the_caller_s_trace() {
    use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
    use opentelemetry_proto::tonic::trace::v1::status::StatusCode;

    let (collector, bodies) = receiver().await;
    let server = TestServer::start_with(ServerOptions {
        args: &["--otlp-endpoint", &collector],
        ..ServerOptions::default()
    });
    let token = server.admin_token().await;
    let trace_id = "4bf92f3577b34da6a1f3a2b1c0d0e0f1";
    let caller_span = "00f067aa0ba902b7";
    let answer = server
        .client
        .get(server.url("/job/0190aaaa-0000-7000-8000-000000000000"))
        .bearer_auth(&token)
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::NOT_FOUND);

    let deadline = Instant::now() + Duration::from_secs(30);
    let span = loop {
        let found = received_spans(&bodies).into_iter().find(|span| {
            attribute(span, "http.route").as_deref() == Some("/job/{job_id}")
                && attribute(span, "http.request.method").as_deref() == Some("GET")
        });
        if let Some(span) = found {
            break span;
        }
        assert!(
            Instant::now() < deadline,
            "no span of GET /job/{{job_id}} reached the collector"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(span.name, "GET /job/{job_id}");
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(
        attribute(&span, "http.response.status_code").as_deref(),
        Some("404")
    );
    // A 4xx is the client's error: the span's status is not an error.
    assert_ne!(
        span.status.as_ref().map(|status| status.code),
        Some(StatusCode::Error as i32)
    );
    assert_eq!(hex(&span.trace_id), trace_id);
    assert_eq!(hex(&span.parent_span_id), caller_span);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[tokio::test]
async fn metrics_cover_the_build_the_process_the_database_and_the_workers() {
    let server = TestServer::start_with(ServerOptions {
        args: &["--workers", "2"],
        ..ServerOptions::default()
    });
    let text = server
        .client
        .get(server.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for family in [
        "caseload_build_info{version=",
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_max_fds ",
        "caseload_database_connections{pool=\"readers\"} ",
        "caseload_database_connections_idle{pool=\"writer\"} ",
        "caseload_workers 2",
        "caseload_workers_busy 0",
    ] {
        assert!(
            text.lines().any(|line| line.starts_with(family)),
            "no {family} in\n{text}"
        );
    }
    // Each HELP is a sentence with one full stop.
    for help in text.lines().filter(|line| line.starts_with("# HELP ")) {
        assert!(help.ends_with('.') && !help.ends_with(".."), "{help}");
    }
}
