//! `hourglass import`: files of points (VictoriaMetrics' JSON lines or
//! OpenTSDB's import text, detected from the first line or named; gzip
//! files read as such; `-` is stdin) sent to a running server's
//! `/api/v1/import` in bodies of whole lines, over one or more connections.
//!
//! A bad line is reported with its file and line number. With `stop` (the
//! default) the server writes nothing from the bad line on in its body and
//! no further body is sent; bodies already in flight on other connections
//! still land (`--connections 1` makes the stop exact). With `skip` the bad
//! lines are left out and the rest is written. Nothing is ever stored in a
//! form other than the line says: every line is checked whole first.

use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use tokio::sync::{Mutex, mpsc};

use hourglass_ingest::jsonl::LineFormat;

use super::{ClientError, Remote};

/// Longest line taken (a JSON line carries a whole series' window).
pub const MAX_LINE: usize = 64 << 20;

/// How an import runs.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// `None`: detected per input.
    pub format: Option<LineFormat>,
    /// Skip bad lines (else stop at the first).
    pub skip: bool,
    /// Bytes of whole lines per request.
    pub batch_bytes: usize,
    pub connections: usize,
}

/// What an import did.
#[derive(Debug, Default, Clone)]
pub struct ImportReport {
    pub bytes: u64,
    pub lines: u64,
    pub points: u64,
    /// (input, line number, why), in order.
    pub errors: Vec<(String, u64, String)>,
    /// Errors beyond those listed.
    pub more_errors: u64,
    pub stopped: bool,
}

/// One body: its input, the number of its first line, its format.
struct Chunk {
    input: usize,
    first_line: u64,
    format: LineFormat,
    bytes: Bytes,
}

/// Imports `inputs` (paths; `-` is stdin). `connect` opens a connection
/// (one per worker); `progress` sees the report so far.
pub async fn run(
    connect: &(dyn Fn() -> Result<Remote, ClientError> + Sync),
    inputs: &[PathBuf],
    opts: &ImportOptions,
    progress: &(dyn Fn(&ImportReport) + Sync),
) -> Result<ImportReport, ClientError> {
    let (tx, rx) = mpsc::channel::<Result<Chunk, ClientError>>(opts.connections.max(1) * 2);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let inputs = inputs.to_vec();
        let opts = opts.clone();
        let stop = Arc::clone(&stop);
        tokio::task::spawn_blocking(move || read_inputs(&inputs, &opts, &tx, &stop))
    };
    let rx = Arc::new(Mutex::new(rx));
    let report = Arc::new(std::sync::Mutex::new(ImportReport::default()));
    let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
    let mut workers = Vec::new();
    for _ in 0..opts.connections.max(1) {
        let mut remote = connect()?;
        let rx = Arc::clone(&rx);
        let report = Arc::clone(&report);
        let stop = Arc::clone(&stop);
        let names = names.clone();
        let skip = opts.skip;
        workers.push(async move {
            let work = async {
                loop {
                    if stop.load(Ordering::Acquire) {
                        return Ok::<(), ClientError>(());
                    }
                    let next = rx.lock().await.recv().await;
                    let Some(chunk) = next else { return Ok(()) };
                    let chunk = chunk?;
                    let len = chunk.bytes.len() as u64;
                    let path = format!(
                        "/api/v1/import?format={}&on_error={}",
                        chunk.format.param(),
                        if skip { "skip" } else { "stop" }
                    );
                    // A refused line is a 400 with the same answer as a 200.
                    let (status, answer) = remote
                        .post_any(&path, "application/x-ndjson", chunk.bytes, 1 << 20)
                        .await?;
                    let answer: serde_json::Value = serde_json::from_slice(&answer)
                        .ok()
                        .filter(|a: &serde_json::Value| a.get("lines").is_some())
                        .ok_or_else(|| ClientError::Server {
                            status,
                            message: String::from_utf8_lossy(&answer).chars().take(500).collect(),
                        })?;
                    let mut r = report
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    r.bytes += len;
                    r.lines += answer["lines"].as_u64().unwrap_or(0);
                    r.points += answer["points"].as_u64().unwrap_or(0);
                    r.more_errors += answer["more_errors"].as_u64().unwrap_or(0);
                    for e in answer["errors"].as_array().into_iter().flatten() {
                        let line = chunk.first_line - 1 + e["line"].as_u64().unwrap_or(0);
                        let why = e["error"].as_str().unwrap_or("").to_string();
                        r.errors.push((names[chunk.input].clone(), line, why));
                    }
                    if !answer["stopped_at"].is_null() {
                        r.stopped = true;
                        stop.store(true, Ordering::Release);
                    }
                    progress(&r);
                }
            };
            let result: Result<(), ClientError> = work.await;
            if result.is_err() {
                // One connection failing ends the import: no more bodies.
                stop.store(true, Ordering::Release);
            }
            result
        });
    }
    let results = run_all(workers).await;
    stop.store(true, Ordering::Release);
    // The reader ends once the channel is closed or the stop is seen.
    drop(rx);
    let read = reader
        .await
        .map_err(|e| ClientError::Protocol(format!("the reader failed: {e}")))?;
    results?;
    read?;
    let mut report = report
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    report.errors.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(report)
}

/// Runs the workers together; the first error wins.
async fn run_all<F>(workers: Vec<F>) -> Result<(), ClientError>
where
    F: std::future::Future<Output = Result<(), ClientError>>,
{
    let mut set = Vec::new();
    for w in workers {
        set.push(Box::pin(w));
    }
    let mut first = Ok(());
    // Polled together: each worker awaits the server on its own connection.
    let results = futures_join_all(set).await;
    for r in results {
        if first.is_ok() {
            first = r;
        }
    }
    first
}

async fn futures_join_all<F: std::future::Future + Unpin>(mut futures: Vec<F>) -> Vec<F::Output> {
    let mut out: Vec<Option<F::Output>> = (0..futures.len()).map(|_| None).collect();
    std::future::poll_fn(move |cx| {
        let mut pending = false;
        for (i, f) in futures.iter_mut().enumerate() {
            if out[i].is_some() {
                continue;
            }
            match std::pin::Pin::new(f).poll(cx) {
                std::task::Poll::Ready(v) => out[i] = Some(v),
                std::task::Poll::Pending => pending = true,
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(out.iter_mut().filter_map(Option::take).collect())
        }
    })
    .await
}

/// Reads every input into chunks of whole lines (blocking).
fn read_inputs(
    inputs: &[PathBuf],
    opts: &ImportOptions,
    tx: &mpsc::Sender<Result<Chunk, ClientError>>,
    stop: &AtomicBool,
) -> Result<(), ClientError> {
    for (index, path) in inputs.iter().enumerate() {
        let mut source = open(path)?;
        let mut pending: Vec<u8> = Vec::new();
        let mut next_line = 1u64;
        let mut format = opts.format;
        let mut eof = false;
        // Bytes to gather before cutting: a batch, more while one line is
        // longer than that.
        let mut want = opts.batch_bytes.max(1 << 10);
        while !eof || !pending.is_empty() {
            if stop.load(Ordering::Acquire) {
                return Ok(());
            }
            while !eof && pending.len() < want {
                let start = pending.len();
                pending.resize(want.max(start + (64 << 10)), 0);
                let n = source
                    .read(&mut pending[start..])
                    .map_err(ClientError::io(path))?;
                pending.truncate(start + n);
                if n == 0 {
                    eof = true;
                }
            }
            let cut = if eof {
                pending.len()
            } else {
                match pending.iter().rposition(|&b| b == b'\n') {
                    Some(i) => i + 1,
                    None if pending.len() >= MAX_LINE => {
                        return Err(ClientError::Usage(format!(
                            "{}: line {next_line} is longer than {MAX_LINE} bytes",
                            path.display()
                        )));
                    }
                    // A line longer than a batch: gather more.
                    None => {
                        want = pending.len().saturating_mul(2).min(MAX_LINE);
                        continue;
                    }
                }
            };
            want = opts.batch_bytes.max(1 << 10);
            let rest = pending.split_off(cut);
            let body = std::mem::replace(&mut pending, rest);
            if body.iter().all(u8::is_ascii_whitespace) {
                next_line += body.iter().filter(|&&b| b == b'\n').count() as u64;
                continue;
            }
            let chunk_format = *format.get_or_insert_with(|| LineFormat::detect(&body));
            let lines = body.iter().filter(|&&b| b == b'\n').count() as u64;
            let chunk = Chunk {
                input: index,
                first_line: next_line,
                format: chunk_format,
                bytes: Bytes::from(body),
            };
            next_line += lines;
            if tx.blocking_send(Ok(chunk)).is_err() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// An input's bytes: a file or stdin, gunzipped when it is gzip.
fn open(path: &PathBuf) -> Result<Box<dyn Read + Send>, ClientError> {
    let raw: Box<dyn Read + Send> = if path.as_os_str() == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(ClientError::io(path))?)
    };
    let mut buffered = std::io::BufReader::with_capacity(1 << 20, raw);
    let head = std::io::BufRead::fill_buf(&mut buffered).map_err(ClientError::io(path))?;
    if head.starts_with(&[0x1f, 0x8b]) {
        Ok(Box::new(flate2::read::MultiGzDecoder::new(buffered)))
    } else {
        Ok(Box::new(buffered))
    }
}
