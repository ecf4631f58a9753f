//! What a run is told: where to send, over which protocol, how many
//! connections and points per payload, the timeouts, how TCP connections
//! learn that everything was processed, the HTTP request shape, the limits
//! and pacing, and when to pre-generate.

use std::time::Duration;

use super::payload::PregenMode;
use crate::protocol::{EncodeOptions, Protocol};

/// How a TCP connection learns that the server processed everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TcpAck {
    /// Send `version` and wait for the reply (OpenTSDB, hourglass).
    Version,
    /// Half-close and wait for the server to close (servers without `version`,
    /// e.g. VictoriaMetrics's OpenTSDB listener).
    Close,
}

/// The HTTP request shape of an HTTP protocol.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    /// Path and query string.
    pub path: String,
    pub headers: Vec<(String, String)>,
}

/// Transport settings of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub addr: String,
    pub protocol: Protocol,
    pub connections: u32,
    /// Points per payload.
    pub batch: usize,
    pub encode: EncodeOptions,
    pub connect_timeout: Duration,
    /// TCP: how long to wait for the acknowledgement; HTTP: per request.
    pub reply_timeout: Duration,
    pub tcp_ack: TcpAck,
    pub http: Option<HttpTarget>,
    /// Send at most this many points (in global generation order).
    pub points: Option<u64>,
    /// Total points per second (spread evenly over connections).
    pub rate: Option<f64>,
    /// Stop sending after this long.
    pub max_time: Option<Duration>,
    /// Keep connections within this much data time of each other.
    pub max_skew_ms: Option<i64>,
    pub pregen: PregenMode,
    pub pregen_max_bytes: u64,
    pub progress: bool,
    /// A TCP connection's first line: `auth <token>` (hourglass with access
    /// control), answered `ok`.
    pub auth: Option<String>,
}
