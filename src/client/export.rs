//! `hourglass export`: the points a selection names, from a running
//! server's `/api/v1/export`, written to stdout (or a file) as they arrive
//! — VictoriaMetrics' JSON lines or OpenTSDB's import text, gzip-compressed
//! by the server when asked (the bytes are passed through as they come).
//! A transfer that ends short is an error, never a quiet partial file.

use std::io::Write;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::Method;

use super::{ClientError, Remote};

/// What to export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Series selectors (`match[]`); empty: every metric.
    pub selectors: Vec<String>,
    pub start: String,
    pub end: Option<String>,
    /// `jsonl` or `opentsdb`.
    pub format: String,
    pub gzip: bool,
}

/// What an export sent.
#[derive(Debug, Default, Clone, Copy)]
pub struct ExportReport {
    pub bytes: u64,
    /// Lines (uncompressed output only).
    pub lines: u64,
}

/// Streams the export into `out`; `progress` sees the bytes (and lines)
/// so far.
pub async fn run(
    remote: &mut Remote,
    opts: &ExportOptions,
    out: &mut dyn Write,
    progress: &mut dyn FnMut(ExportReport),
) -> Result<ExportReport, ClientError> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    if opts.selectors.is_empty() {
        query.append_pair("match[]", "{__name__=~\".+\"}");
    }
    for s in &opts.selectors {
        query.append_pair("match[]", s);
    }
    query.append_pair("start", &opts.start);
    if let Some(end) = &opts.end {
        query.append_pair("end", end);
    }
    query.append_pair("format", &opts.format);
    let path = format!("/api/v1/export?{}", query.finish());
    let accept = if opts.gzip { Some("gzip") } else { None };
    let resp = remote
        .send_with(Method::GET, &path, None, accept, Bytes::new())
        .await?;
    let compressed = resp
        .headers()
        .get(hyper::header::CONTENT_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
    if opts.gzip && !compressed {
        return Err(ClientError::Protocol(
            "asked for gzip, the server sent the export uncompressed".into(),
        ));
    }
    let mut report = ExportReport::default();
    let mut body = resp.into_body();
    let stdout_err = |e: std::io::Error| ClientError::Io {
        path: "the output".into(),
        source: e,
    };
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ClientError::Protocol(format!(
                "the export ended short after {} bytes: {e}",
                report.bytes
            ))
        })?;
        if let Ok(data) = frame.into_data() {
            report.bytes += data.len() as u64;
            if !compressed {
                report.lines += data.iter().filter(|&&b| b == b'\n').count() as u64;
            }
            out.write_all(&data).map_err(stdout_err)?;
            progress(report);
        }
    }
    out.flush().map_err(stdout_err)?;
    Ok(report)
}
