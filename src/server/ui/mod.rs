//! The web UI (`docs/ui.md`): the static files under `assets/`, compiled
//! into the binary, served at `/` (the page) and `/ui/<path>` (its scripts,
//! styles and the vendored chart library). The page talks only to the
//! public HTTP API with the user's token, so the files themselves are open:
//! they hold no data.
//!
//! What a browser is told, on every UI answer: a Content-Security-Policy
//! that allows scripts, styles and connections from this origin only (an
//! injected tag name in a chart legend can never run or load anything),
//! `nosniff`, no framing, no referrer. Files are revalidated by their
//! SHA-256 (`ETag`, `no-cache`: names carry no version) and sent gzipped
//! to clients that take it, compressed once per file and process.

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use flate2::Compression;
use flate2::write::GzEncoder;

use crate::server::http::error::ApiError;
use crate::server::http::{accepts_gzip, blocking};

#[derive(rust_embed::RustEmbed)]
#[folder = "src/server/ui/assets/"]
struct Assets;

/// The policy of every UI answer (see the module doc). `img-src data:
/// blob:` for the chart's canvas export; nothing else leaves `'self'`.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

/// One file as sent: its bytes and tag, plain and gzipped (two
/// representations, so two tags: a cache keyed by `ETag` must not answer
/// a client that takes no gzip with the gzipped bytes).
struct Prepared {
    plain: Bytes,
    gzip: Bytes,
    etag: HeaderValue,
    gzip_etag: HeaderValue,
    content_type: &'static str,
}

/// Files compressed so far, by path.
type Cache = Mutex<HashMap<String, Arc<Prepared>>>;

fn cache() -> &'static Cache {
    static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
    CACHE.get_or_init(Cache::default)
}

/// `GET /`: the page.
pub async fn index(headers: HeaderMap) -> Response {
    serve("index.html".to_string(), headers).await
}

/// `GET /ui/<path>`: one of the page's files.
pub async fn asset(Path(path): Path<String>, headers: HeaderMap) -> Response {
    serve(path, headers).await
}

async fn serve(path: String, headers: HeaderMap) -> Response {
    if !safe_path(&path) {
        return not_found(&path);
    }
    let prepared = match cached(&path) {
        Some(p) => p,
        // The first answer of a file compresses it: CPU work, off the reactor.
        None => {
            let lookup = path.clone();
            match blocking(move || Ok(prepare(&lookup))).await {
                Ok(Some(p)) => p,
                Ok(None) => return not_found(&path),
                Err(e) => return e.into_response(),
            }
        }
    };
    let gzip = accepts_gzip(&headers);
    let etag = if gzip {
        &prepared.gzip_etag
    } else {
        &prepared.etag
    };
    // Either tag names the same file: a client that changed its
    // Accept-Encoding still revalidates.
    let mut resp = if not_modified(&headers, &[&prepared.etag, &prepared.gzip_etag]) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if gzip {
        let mut r = prepared.gzip.clone().into_response();
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        r
    } else {
        prepared.plain.clone().into_response()
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(prepared.content_type),
    );
    h.insert(header::ETAG, etag.clone());
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    resp
}

/// A path of letters, digits, `.`, `_`, `-` and `/` between names, never
/// `..`: nothing but the embedded tree can be named.
fn safe_path(path: &str) -> bool {
    !path.is_empty()
        && path.split('/').all(|seg| {
            !seg.is_empty()
                && !seg.starts_with('.')
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        })
}

fn cached(path: &str) -> Option<Arc<Prepared>> {
    cache().lock().ok()?.get(path).map(Arc::clone)
}

/// The file ready to send, compressed at its first use (the cache holds
/// at most every embedded file).
fn prepare(path: &str) -> Option<Arc<Prepared>> {
    if let Some(p) = cached(path) {
        return Some(p);
    }
    let file = Assets::get(path)?;
    let digest = crate::codec::hex::encode(&file.metadata.sha256_hash()[..12]);
    let plain = Bytes::from(file.data.into_owned());
    let mut gz = GzEncoder::new(Vec::with_capacity(plain.len() / 3), Compression::best());
    // Writing into a Vec cannot fail.
    let gzip = match gz.write_all(&plain).and_then(|()| gz.finish()) {
        Ok(g) => Bytes::from(g),
        Err(_) => plain.clone(),
    };
    let prepared = Arc::new(Prepared {
        plain,
        gzip,
        etag: HeaderValue::from_str(&format!("\"{digest}\"")).ok()?,
        gzip_etag: HeaderValue::from_str(&format!("\"{digest}-gz\"")).ok()?,
        content_type: content_type(path),
    });
    if let Ok(mut cache) = cache().lock() {
        cache.insert(path.to_string(), Arc::clone(&prepared));
    }
    Some(prepared)
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "text/plain; charset=utf-8",
    }
}

/// Whether `If-None-Match` names one of `tags` (weakly compared, as
/// RFC 9110 says for it) or is `*`.
fn not_modified(headers: &HeaderMap, tags: &[&HeaderValue]) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == "*" || tags.iter().any(|tag| tag.as_bytes() == t.as_bytes()))
}

fn not_found(path: &str) -> Response {
    ApiError::new(StatusCode::NOT_FOUND, "Endpoint not found")
        .with_details(format!("the UI has no file {path}"))
        .into_response()
}

/// The names of every embedded file, for the size check.
pub fn files() -> impl Iterator<Item = String> {
    Assets::iter().map(|p| p.into_owned())
}

/// The gzipped size of an embedded file, as served.
pub fn gzip_len(path: &str) -> Option<usize> {
    prepare(path).map(|p| p.gzip.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_names_inside_the_tree_are_served() {
        for ok in ["index.html", "app.js", "vendor/uplot/uPlot.min.css"] {
            assert!(safe_path(ok), "{ok}");
        }
        for bad in [
            "",
            "../Cargo.toml",
            "a/../../b",
            "/etc/passwd",
            ".hidden",
            "a//b",
            "a\\b",
            "a%2e%2e",
            "x/",
        ] {
            assert!(!safe_path(bad), "{bad}");
        }
    }

    #[test]
    fn the_whole_ui_stays_under_300_kb_compressed() {
        let total: usize = files().filter_map(|f| gzip_len(&f)).sum();
        assert!(files().any(|f| f == "index.html"));
        assert!(total > 0 && total < 300 * 1024, "{total} bytes gzipped");
    }
}
