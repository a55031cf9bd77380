//! The log, and traces over OTLP when `--otlp-endpoint` names a collector. Every span the
//! server opens is exported then; a job's spans (its submission, each execution) are joined
//! into one trace whose id is the job id (a UUIDv7 is 128 bits, as a trace id is), so that a
//! job is found by its id in any trace viewer, across replicas, with nothing stored.

use std::io::IsTerminal;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{
    SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState, TracerProvider as _,
};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The format `init` set, for the lines a command prints on standard output.
static FORMAT: std::sync::OnceLock<LogFormat> = std::sync::OnceLock::new();

/// Prints one line for whoever started the server (where it listens, the first admin's
/// password) on standard output: as it is in `text`, and in `json` as an object of the log's
/// shape, so that a collector reading both outputs reads JSON only.
pub fn announce(message: &str) {
    match FORMAT.get().copied().unwrap_or_default() {
        LogFormat::Text => println!("{message}"),
        LogFormat::Json => {
            let timestamp = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            let line = serde_json::json!({
                "timestamp": timestamp,
                "level": "INFO",
                "message": message,
                "target": "caseload",
            });
            println!("{line}");
        }
    }
}

/// Traces being exported; flushes what is left when dropped.
#[derive(Debug)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            eprintln!("caseload: cannot flush the last traces: {error}");
        }
    }
}

/// Logs to stderr at `default_level` (or `RUST_LOG`), in `format`, and exports traces to
/// `otlp` if given.
pub fn init(
    default_level: &str,
    format: LogFormat,
    otlp: Option<&url::Url>,
) -> anyhow::Result<Telemetry> {
    let _ = FORMAT.set(format);
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let (text, json) = match format {
        LogFormat::Text => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_ansi(std::io::stderr().is_terminal()),
            ),
            None,
        ),
        // One object a line: time, level, message and fields, and the fields of the spans
        // it is in (the request's id, route, user; the job's id) flattened beside them.
        LogFormat::Json => (
            None,
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false)
                    .with_span_list(true)
                    .with_writer(std::io::stderr),
            ),
        ),
    };
    let provider = otlp.map(exporter).transpose()?;
    let traces = provider
        .as_ref()
        .map(|provider| tracing_opentelemetry::layer().with_tracer(provider.tracer("caseload")));
    tracing_subscriber::registry()
        .with(filter)
        .with(text)
        .with(json)
        .with(traces)
        .init();
    if let Some(endpoint) = otlp {
        tracing::info!(%endpoint, "exporting traces over OTLP");
    }
    Ok(Telemetry { provider })
}

fn exporter(endpoint: &url::Url) -> anyhow::Result<SdkTracerProvider> {
    let traces = endpoint.join("v1/traces")?;
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(traces.as_str())
        .build()?;
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(Resource::builder().with_service_name("caseload").build())
        .build())
}

/// Puts `span` in the trace of job `job_id`: its trace id is the job's id, and its parent
/// the same span id for every span of the job, so the submission and each execution are
/// siblings in one trace. Nothing happens without an exporter, or for an id that is not a
/// UUID.
pub fn join_job_trace(span: &tracing::Span, job_id: &str) {
    let Ok(id) = uuid::Uuid::parse_str(job_id) else {
        return;
    };
    let bytes = id.as_bytes();
    let mut parent = [0u8; 8];
    parent.copy_from_slice(&bytes[8..]);
    let context = SpanContext::new(
        TraceId::from_bytes(*bytes),
        SpanId::from_bytes(parent),
        TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    );
    let _ = span.set_parent(opentelemetry::Context::new().with_remote_span_context(context));
}

/// Puts a request's span in the trace its W3C `traceparent` header names, if it has a valid
/// one, as the child of the caller's span: a client's trace goes on through the server.
pub fn continue_trace(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    if !headers.contains_key("traceparent") {
        return;
    }
    let context = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}

/// A request's headers, as the propagator reads them.
struct HeaderExtractor<'a>(&'a axum::http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|name| name.as_str()).collect()
    }
}

/// Records a request's route on its span, for the log (`route`) and for a trace viewer
/// (`http.route`, and the span's name, `METHOD ROUTE`).
pub fn record_route(span: &tracing::Span, method: &str, route: &str) {
    span.record("route", route);
    span.record("http.route", route);
    // Once entered, a span's name is the exporter's, and changes only there.
    span.context()
        .span()
        .update_name(format!("{method} {route}"));
}

/// Records a request's answer on its span: the status code, and an error status for a 5xx
/// (a 4xx is the client's error, not the server's, by the semantic conventions).
pub fn record_response(span: &tracing::Span, status: u16) {
    span.record("http.response.status_code", status);
    if status >= 500 {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of a job's submission (checked, stored), in the job's trace.
pub fn submission_span(job_id: &str, problem: &str) -> tracing::Span {
    let span = tracing::info_span!("submit", job = %job_id, problem = %problem);
    join_job_trace(&span, job_id);
    span
}
