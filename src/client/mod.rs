//! The command-line clients of a running server: [`backup`] (`hourglass
//! backup`: a snapshot copied incrementally into a backup directory, which
//! `hourglass restore` reads), [`export`] and [`import`] (points out of and
//! into a server, in VictoriaMetrics' JSON lines or OpenTSDB's import
//! text), and the HTTP connection they share ([`remote`]). The server's
//! side is `server::api::{admin, export, import}`.

pub mod backup;
pub mod export;
pub mod import;
pub mod remote;

pub use remote::Remote;

/// Why a client command failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("{0}")]
    Usage(String),
    #[error("cannot reach the server at {0}")]
    Connect(String),
    #[error("the server answered {status}: {message}")]
    Server { status: u16, message: String },
    #[error("{0}")]
    Protocol(String),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Damaged(String),
}

impl ClientError {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> ClientError + '_ {
        move |source| ClientError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
