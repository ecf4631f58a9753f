//! The crate's one error type, [`QueryError`].
//!
//! This module owns the mapping from "what went wrong" to a typed variant; it
//! deliberately knows nothing about HTTP. The root crate turns variants into
//! status codes in one place (OpenTSDB answers 400 for most variants, 413
//! for limits and timeouts; see the variant docs).

use thiserror::Error;

/// Everything that can make parsing, validating or executing a query fail.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The request is malformed or fails validation. OpenTSDB: 400.
    ///
    /// `message` is the exact OpenTSDB text where one exists (clients and
    /// tests match on it); `details` is the optional secondary text that
    /// OpenTSDB puts in the error body's `details` field.
    #[error("{message}")]
    BadRequest {
        /// Primary, user-facing message.
        message: String,
        /// Optional extra text (e.g. the JSON parser's complaint).
        details: Option<String>,
    },
    /// A metric, tag key or tag value named by the query does not exist.
    /// OpenTSDB: 400 with `No such name for '<kind>': '<name>'`.
    #[error("No such name for '{kind}': '{name}'")]
    NoSuchName {
        /// `metrics`, `tagk` or `tagv`.
        kind: &'static str,
        /// The unknown name.
        name: String,
    },
    /// The storage layer failed while fetching series (the source's text).
    /// OpenTSDB answers 424/408/500 depending on the cause; the root decides.
    #[error("{0}")]
    Source(String),
    /// The query was valid but the data cannot be aggregated as asked, e.g.
    /// an infinite aggregate, non-increasing timestamps under `rate`, more than
    /// one value for the `none` aggregator, or the `scalar` fill policy.
    /// OpenTSDB reports these as 400 with the message.
    #[error("{0}")]
    Execution(String),
    /// The query exceeds a configured limit (points fetched, values held).
    /// OpenTSDB: 413.
    #[error("{0}")]
    Limit(String),
    /// The query ran past its deadline (`tsd.query.timeout`). OpenTSDB: 413.
    #[error("{0}")]
    Timeout(String),
    /// The query was cancelled (client gone, server stopping); nobody reads
    /// the answer.
    #[error("The query was cancelled")]
    Cancelled,
    /// The server as a whole is out of query memory (the pool shared by
    /// running queries); retrying later may succeed. The root answers 503
    /// with `Retry-After`.
    #[error("{0}")]
    Overloaded(String),
    /// The storage is unreachable for now; retrying later may succeed. The
    /// root answers 503 with `Retry-After`.
    #[error("{0}")]
    Unavailable(String),
}

impl QueryError {
    /// A [`QueryError::BadRequest`] without details.
    pub(crate) fn bad(message: impl Into<String>) -> Self {
        QueryError::BadRequest {
            message: message.into(),
            details: None,
        }
    }

    /// A [`QueryError::BadRequest`] with details.
    pub(crate) fn bad_with(message: impl Into<String>, details: impl Into<String>) -> Self {
        QueryError::BadRequest {
            message: message.into(),
            details: Some(details.into()),
        }
    }

    /// The user-facing message (the `message` field of an OpenTSDB error body).
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The optional `details` field of an OpenTSDB error body.
    pub fn details(&self) -> Option<String> {
        match self {
            QueryError::BadRequest { details, .. } => details.clone(),
            _ => None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let e = QueryError::NoSuchName {
            kind: "metrics",
            name: "sys.cpu.nice".into(),
        };
        assert_eq!(e.message(), "No such name for 'metrics': 'sys.cpu.nice'");
        assert_eq!(e.details(), None);
        let e = QueryError::bad_with("Unable to parse the given JSON", "eof");
        assert_eq!(e.message(), "Unable to parse the given JSON");
        assert_eq!(e.details().as_deref(), Some("eof"));
        assert_eq!(QueryError::Source("boom".into()).message(), "boom");
    }
}
