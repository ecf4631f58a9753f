//! The error type shared by every part of the benchmark binary.
//!
//! Errors are returned up to `main`, which prints them and exits non-zero;
//! nothing on an I/O path panics.

use std::io;

/// Everything that can make a benchmark run fail.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Invalid flags or flag combinations.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// Could not open a connection to the server.
    #[error("cannot connect to {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: io::Error,
    },
    /// An I/O error on an established connection, a file or stdout.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// The server misbehaved (closed early, did not answer in time, ...).
    #[error("{0}")]
    Protocol(String),
    /// The server answered an HTTP request with a status that ends the run
    /// (typically 404/405/501: the endpoint is not served).
    #[error("{method} {path} answered HTTP {status}{hint}: {body}")]
    Http {
        method: &'static str,
        path: String,
        status: u16,
        /// Why this probably happened, e.g. " (endpoint not served)".
        hint: &'static str,
        /// The response body, shortened.
        body: String,
    },
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
