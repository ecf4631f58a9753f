//! What a check of the data directory finds (`hourglass fsck`, and the
//! checks of each file kind the storage engine and the write-ahead log run
//! for it): findings with a severity, the file and, where there is one, the
//! offset.

use std::path::PathBuf;

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Normal after a crash; recovered automatically on open.
    Info,
    /// Unexpected but harmless (e.g. a stray file that open moves aside).
    Warning,
    /// Damage: the server refuses to start until it is repaired.
    Error,
}

/// One thing `fsck` found.
#[derive(Clone, Debug)]
pub struct Finding {
    pub severity: Severity,
    pub path: PathBuf,
    pub offset: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sev = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "ERROR",
        };
        write!(f, "{sev}: {}", self.path.display())?;
        if let Some(o) = self.offset {
            write!(f, " at offset {o}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Collects findings.
#[derive(Debug, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// What was checked, for the summary line.
    pub checked: Vec<String>,
}

impl Report {
    pub fn push(
        &mut self,
        severity: Severity,
        path: impl Into<PathBuf>,
        offset: Option<u64>,
        message: impl Into<String>,
    ) {
        self.findings.push(Finding {
            severity,
            path: path.into(),
            offset,
            message: message.into(),
        });
    }

    /// A log whose last write was cut short by a crash: harmless, cut on
    /// open.
    pub fn torn_tail(&mut self, path: impl Into<PathBuf>, valid_len: u64, torn_bytes: u64) {
        self.push(
            Severity::Info,
            path,
            Some(valid_len),
            format!("torn tail of {torn_bytes} bytes (an unacknowledged write; truncated on open)"),
        );
    }

    /// A log that cannot be read: damage, at its offset where known.
    pub fn log_error(&mut self, path: impl Into<PathBuf>, e: &crate::logfile::LogError) {
        self.push(Severity::Error, path, e.offset(), e.to_string());
    }

    pub fn errors(&self) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .count()
    }
}
