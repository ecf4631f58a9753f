//! The read side's errors as the query layer takes them: a name that does
//! not exist, a store that may answer later (503), damage (logged).

use hourglass_query::exec::SourceError;

use crate::uid::UidError;

pub(super) fn source_err(e: UidError) -> SourceError {
    match e {
        UidError::NoSuchName { kind, name } => SourceError::NoSuchName {
            kind: kind.as_str(),
            name,
        },
        UidError::Storage(s) => storage_source_err(&s),
        other => SourceError::Storage(other.to_string()),
    }
}

/// A storage failure for the query layer: transient ones (a remote store
/// timing out) can be retried by the client (503).
pub(super) fn storage_source_err(e: &crate::storage::StorageError) -> SourceError {
    if matches!(e, crate::storage::StorageError::Corrupt { .. }) {
        tracing::error!(error = %e, "a read found damaged data");
    }
    if e.is_retryable() {
        SourceError::Unavailable(e.to_string())
    } else {
        SourceError::Storage(e.to_string())
    }
}
