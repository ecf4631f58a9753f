//! The error type shared by every part of the benchmark binary.
//!
//! Errors are returned up to `main`, which prints them and exits non-zero;
//! nothing on an I/O path panics.

use std::fmt;
use std::io;

/// Everything that can make a benchmark run fail.
#[derive(Debug)]
pub enum BenchError {
    /// Invalid flags or flag combinations.
    Config(String),
    /// Could not open a connection to the server.
    Connect { addr: String, source: io::Error },
    /// An I/O error on an established connection or on stdout.
    Io { context: String, source: io::Error },
    /// The server misbehaved (closed early, did not answer in time, ...).
    Protocol(String),
}

impl BenchError {
    /// Wraps an I/O error with a short description of what was being done.
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        BenchError::Io {
            context: context.into(),
            source,
        }
    }
}

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BenchError::Config(msg) => write!(f, "invalid configuration: {msg}"),
            BenchError::Connect { addr, source } => {
                write!(f, "cannot connect to {addr}: {source}")
            }
            BenchError::Io { context, source } => write!(f, "{context}: {source}"),
            BenchError::Protocol(msg) => write!(f, "{msg}"),
        }
    }
}

impl std::error::Error for BenchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BenchError::Connect { source, .. } | BenchError::Io { source, .. } => Some(source),
            BenchError::Config(_) | BenchError::Protocol(_) => None,
        }
    }
}
