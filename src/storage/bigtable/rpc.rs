//! Calling Bigtable from the engine's blocking threads: the gRPC client
//! lives on a runtime of its own (so its connections are driven whatever
//! the caller is doing), calls are spawned there and awaited with a
//! park-based wait that works from any thread, in or out of a Tokio
//! runtime. Also: per-call deadlines, retries of idempotent calls, and the
//! mapping of gRPC statuses to storage errors.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use tonic::Code;

use crate::storage::StorageError;

/// Attempts of an idempotent call before its error is returned.
pub const ATTEMPTS: u32 = 4;
/// Wait before the first retry; doubled each time.
const BACKOFF: Duration = Duration::from_millis(50);

struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls a future on this thread until it is ready, parking between
/// wake-ups. Only for futures that need no runtime of their own (channel
/// receives, join handles): the I/O runs on the client's runtime.
pub fn wait<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

/// Whether a failed call may succeed if sent again.
pub fn retryable(code: Code) -> bool {
    matches!(
        code,
        Code::Unavailable
            | Code::DeadlineExceeded
            | Code::Aborted
            | Code::ResourceExhausted
            | Code::Internal
            | Code::Unknown
    )
}

/// A gRPC status as a storage error.
pub fn status_error(what: &str, s: &tonic::Status) -> StorageError {
    StorageError::Unavailable {
        backend: "bigtable",
        message: format!("{what}: {:?}: {}", s.code(), s.message()),
        retryable: retryable(s.code()),
    }
}

/// A client-side failure (transport, auth, a malformed answer).
pub fn client_error(what: &str, e: impl std::fmt::Display, retryable: bool) -> StorageError {
    StorageError::Unavailable {
        backend: "bigtable",
        message: format!("{what}: {e}"),
        retryable,
    }
}

/// Runs an idempotent call, retrying retryable failures with exponential
/// backoff.
pub async fn with_retries<T, F, Fut>(mut call: F) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StorageError>>,
{
    let mut pause = BACKOFF;
    let mut attempt = 1;
    loop {
        match call().await {
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                tracing::warn!(error = %e, attempt, "bigtable call failed; retrying");
                tokio::time::sleep(pause).await;
                pause *= 2;
                attempt += 1;
            }
            other => return other,
        }
    }
}

/// The `x-goog-request-params` routing header Bigtable expects on data
/// calls (the table and the app profile, percent-encoded).
pub fn routing_header(table_name: &str, app_profile: &str) -> String {
    fn enc(s: &str, out: &mut String) {
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    let mut h = String::from("table_name=");
    enc(table_name, &mut h);
    h.push_str("&app_profile_id=");
    enc(app_profile, &mut h);
    h
}

/// A request with the routing header and a deadline.
pub fn request<T>(
    msg: T,
    table_name: &str,
    app_profile: &str,
    timeout: Duration,
) -> tonic::Request<T> {
    let mut req = tonic::Request::new(msg);
    if let Ok(v) = routing_header(table_name, app_profile).parse() {
        req.metadata_mut().insert("x-goog-request-params", v);
    }
    req.set_timeout(timeout);
    req
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_header_is_percent_encoded() {
        assert_eq!(
            routing_header("projects/p/instances/i/tables/tsdb", ""),
            "table_name=projects%2Fp%2Finstances%2Fi%2Ftables%2Ftsdb&app_profile_id="
        );
    }

    #[test]
    fn wait_runs_a_future_from_inside_a_runtime_thread() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let h = rt.spawn(async { 7 });
        // No panic even on a thread that is itself inside a runtime.
        let other = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = other.block_on(async { wait(h) });
        assert_eq!(got.unwrap(), 7);
    }

    #[test]
    fn only_transient_codes_are_retried() {
        assert!(retryable(Code::Unavailable));
        assert!(retryable(Code::DeadlineExceeded));
        assert!(!retryable(Code::NotFound));
        assert!(!retryable(Code::InvalidArgument));
        assert!(!retryable(Code::PermissionDenied));
        let e = status_error("read", &tonic::Status::unavailable("down"));
        assert!(e.is_retryable());
    }

    #[test]
    fn retries_stop_at_success_or_a_permanent_error() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut calls = 0;
        let r: Result<u32, _> = rt.block_on(with_retries(|| {
            calls += 1;
            let n = calls;
            async move {
                if n < 3 {
                    Err(status_error("x", &tonic::Status::unavailable("")))
                } else {
                    Ok(n)
                }
            }
        }));
        assert_eq!(r.unwrap(), 3);
        let mut calls = 0;
        let r: Result<u32, _> = rt.block_on(with_retries(|| {
            calls += 1;
            async { Err(status_error("x", &tonic::Status::not_found(""))) }
        }));
        assert!(r.is_err());
        assert_eq!(calls, 1);
    }
}
