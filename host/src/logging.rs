//! Log output: tracing's human-readable text, or one JSON object per line with the field
//! names log pipelines expect (`ts`, `level`, `msg`, then the event's own fields such as `key`).
//!
//! Hand-written formatter: tracing-subscriber's own JSON layer nests fields under `fields` and
//! names them `timestamp` and `message`, with no way to rename them.

use std::fmt;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line: `ts`, `level`, `msg`, `target` and the event's fields.
    Json,
}

/// Installs the global subscriber, logging to stderr. `filter` is an EnvFilter directive;
/// without one `RUST_LOG` applies, else `info`. A bad filter falls back to `info` with a
/// message on stderr. Text is coloured only on a terminal without `NO_COLOR`: a container's
/// log (kubectl logs, a log shipper) is a pipe or a file, where colour codes are noise.
pub fn init(filter: Option<&str>, format: LogFormat) {
    use std::io::IsTerminal;
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    init_with(filter, format, std::io::stderr, colour);
}

/// Like [`init`], appending to the file at `path` (created if missing), without colours:
/// `weir demo` keeps its logs off the screen it draws.
pub fn init_to_file(
    filter: Option<&str>,
    format: LogFormat,
    path: &std::path::Path,
) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    init_with(filter, format, std::sync::Mutex::new(file), false);
    Ok(())
}

fn init_with<W>(filter: Option<&str>, format: LogFormat, writer: W, ansi: bool)
where
    W: for<'w> tracing_subscriber::fmt::MakeWriter<'w> + Send + Sync + 'static,
{
    use tracing_subscriber::EnvFilter;
    let filter = match filter {
        Some(directives) => EnvFilter::try_new(directives).unwrap_or_else(|e| {
            eprintln!("weir: --log {directives:?} is not a valid filter ({e}); using `info`");
            EnvFilter::new("info")
        }),
        None => match std::env::var("RUST_LOG") {
            Ok(directives) if !directives.is_empty() => EnvFilter::try_new(&directives)
                .unwrap_or_else(|e| {
                    eprintln!(
                        "weir: RUST_LOG {directives:?} is not a valid filter ({e}); using `info`"
                    );
                    EnvFilter::new("info")
                }),
            _ => EnvFilter::new("info"),
        },
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(writer);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.event_format(JsonLines).init(),
    }
}

/// Formats each event as one JSON object.
struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert(
            "ts".into(),
            k8s_openapi::jiff::Timestamp::now().to_string().into(),
        );
        line.insert(
            "level".into(),
            meta.level().as_str().to_ascii_lowercase().into(),
        );
        line.insert("msg".into(), Value::String(String::new()));
        line.insert("target".into(), meta.target().into());
        event.record(&mut Fields(&mut line));
        writeln!(writer, "{}", Value::Object(line))
    }
}

/// Collects an event's fields; `message` becomes `msg`. A field named like one of the fixed
/// keys does not overwrite it.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        match field.name() {
            "message" => {
                self.0.insert("msg".into(), value);
            }
            name => {
                self.0.entry(name).or_insert(value);
            }
        }
    }
}

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, value.into());
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, value.to_string().into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, format!("{value:?}").into());
    }
}
