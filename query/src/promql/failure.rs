//! The evaluator's errors, in the words Prometheus uses where it has them.

use crate::error::QueryError;

/// A feature of PromQL this evaluator does not have yet: named, never a
/// wrong answer.
pub fn unsupported(what: impl std::fmt::Display) -> QueryError {
    QueryError::Execution(format!("{what} is not supported yet"))
}

/// An expression that cannot be evaluated (Prometheus' `execution`).
pub fn execution(message: impl Into<String>) -> QueryError {
    QueryError::Execution(message.into())
}
