//! Sending generated load to a server and measuring it.
//!
//! A run partitions the workload's hosts across connections, opens every
//! connection first (a failure aborts the run before anything is sent), then
//! starts the clock and drives all connections concurrently. Each connection
//! reports what it sent, when the server confirmed it had processed
//! everything, and any error replies. Protocol-specific drivers live in
//! submodules; today that is [`telnet`].

pub mod telnet;

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::error::BenchError;
use crate::protocol::Protocol;
use crate::workload::Workload;

/// How many server error lines each connection keeps verbatim.
pub const MAX_ERROR_SAMPLES: usize = 5;

/// Transport settings of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub addr: String,
    pub connections: u32,
    pub batch_lines: usize,
    pub connect_timeout: Duration,
    pub reply_timeout: Duration,
}

/// What one connection did.
#[derive(Debug, Clone, Default)]
pub struct ConnResult {
    pub id: usize,
    pub hosts: usize,
    pub points: u64,
    pub bytes: u64,
    /// From the common start until the server confirmed the last point.
    pub elapsed: Duration,
    pub error_lines: u64,
    pub first_errors: Vec<String>,
    pub server_version: Option<String>,
}

/// What a whole run did.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// Per connection, ordered by id.
    pub connections: Vec<ConnResult>,
    /// From the common start until the last connection finished.
    pub elapsed: Duration,
}

/// Sends the whole workload to the server and measures it.
pub async fn run_ingest(
    workload: Arc<Workload>,
    protocol: Protocol,
    opts: &RunOptions,
) -> Result<RunResult, BenchError> {
    match protocol {
        Protocol::Telnet => telnet::run(workload, opts).await,
    }
}

/// Opens a TCP connection with a timeout and Nagle disabled.
pub async fn connect(addr: &str, timeout: Duration) -> Result<TcpStream, BenchError> {
    let connect_err = |source| BenchError::Connect {
        addr: addr.to_string(),
        source,
    };
    let stream = match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(result) => result.map_err(connect_err)?,
        Err(_) => {
            return Err(connect_err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("timed out after {timeout:?}"),
            )));
        }
    };
    stream.set_nodelay(true).map_err(connect_err)?;
    Ok(stream)
}

/// Aborts a background task when dropped, so early returns never leak it.
#[derive(Debug)]
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
