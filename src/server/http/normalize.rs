//! Request paths normalised before routing, as OpenTSDB does: a trailing
//! slash is ignored, `/api/v1/...` is the same as `/api/...`, higher API
//! versions get 501, and the endpoint name is case-insensitive. The three
//! foreign paths under `/api/` are kept as they are before that rule
//! applies: `/api/v1/write`, `/api/v1/read` and the Prometheus HTTP API's
//! `/api/v1/query_range`, `/api/v1/query` (when it carries a `query`
//! parameter or a form body; else it is OpenTSDB's `/api/query`),
//! `/api/v1/series`, `/labels`, `/label/<name>/values` (the name as sent),
//! `/status/buildinfo`, `/metadata` and `/query_exemplars` are
//! Prometheus's (OpenTSDB has none of them), `/api/v2/write` is InfluxDB
//! 2.x's, `/api/v1/export` and `/api/v1/import` VictoriaMetrics'. Below
//! `/api/admin/snapshots/` only the endpoint is case-insensitive: what
//! follows names a snapshot and its files, which keep their case.

use axum::http::Uri;

/// Paths under `/api/` that belong to other systems' APIs and so escape
/// OpenTSDB's version rule (`/api/v1/x` = `/api/x`, `/api/v2/...` = 501).
const FOREIGN_API_PATHS: [&str; 11] = [
    "/api/v1/write",
    "/api/v1/read",
    "/api/v2/write",
    "/api/v1/export",
    "/api/v1/import",
    "/api/v1/series",
    "/api/v1/labels",
    "/api/v1/status/buildinfo",
    "/api/v1/metadata",
    "/api/v1/query_exemplars",
    "/api/v1/query_range",
];

/// `/api/v1/query` is Prometheus' instant query and OpenTSDB's versioned
/// `/api/query`: PromQL when it carries a `query` parameter or a form
/// body (OpenTSDB's has `m=`/`tsuid=` or a JSON body).
const SHARED_QUERY: &str = "/api/v1/query";

fn is_promql<B>(req: &hyper::Request<B>) -> bool {
    let form = req
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let query_param = req
        .uri()
        .query()
        .is_some_and(|q| form_urlencoded::parse(q.as_bytes()).any(|(k, _)| k == "query"));
    form || query_param
}

/// Prometheus' `/api/v1/label/<name>/values`: kept as sent (a label name
/// keeps its case).
const PROMETHEUS_LABEL: &str = "/api/v1/label/";

/// Endpoints whose path goes on with names that keep their case.
const NAMED_TAILS: [&str; 1] = ["/api/admin/snapshots/"];

/// A path below one of [`NAMED_TAILS`] (`/api/v1/…` too): the endpoint in
/// lower case, the rest as sent.
fn named_tail(path: &str, lower: &str) -> Option<String> {
    // `/api/v1/x` is `/api/x`: the version goes first. (Lower-casing ASCII
    // keeps every byte where it was, so `path` and `lower` index alike.)
    let (path, lower) = match lower.strip_prefix("/api/v1/") {
        Some(rest) => (
            format!("/api/{}", &path["/api/v1/".len()..]),
            format!("/api/{rest}"),
        ),
        None => (path.to_string(), lower.to_string()),
    };
    NAMED_TAILS
        .iter()
        .find(|t| lower.starts_with(*t))
        .map(|prefix| format!("{prefix}{}", &path[prefix.len()..]))
}

/// Rewrites the request path to its canonical route.
pub fn normalize<B>(mut req: hyper::Request<B>) -> hyper::Request<B> {
    let uri = req.uri();
    let path = uri.path();
    let mut p = path.trim_end_matches('/').to_string();
    if p.is_empty() {
        p.push('/');
    }
    let lower = p.to_ascii_lowercase();
    if FOREIGN_API_PATHS.contains(&lower.as_str()) || (lower == SHARED_QUERY && is_promql(&req)) {
        p = lower;
    } else if let Some(named) = named_tail(&p, &lower) {
        p = named;
    } else if lower == "/api"
        || (lower.starts_with("/api/") && !lower.starts_with(PROMETHEUS_LABEL))
    {
        let mut segs: Vec<&str> = lower.split('/').skip(2).collect();
        if let Some(v) = segs.first().and_then(|s| s.strip_prefix('v'))
            && !v.is_empty()
            && v.bytes().all(|b| b.is_ascii_digit())
        {
            if v.parse::<u32>().map_or(true, |n| n > 1) {
                segs = vec!["__unsupported_version"];
            } else {
                segs.remove(0);
            }
        }
        p = format!("/api/{}", segs.join("/"));
    }
    if p != path {
        let pq = match uri.query() {
            Some(q) => format!("{p}?{q}"),
            None => p,
        };
        if let Ok(new) = pq.parse::<axum::http::uri::PathAndQuery>() {
            let mut parts = uri.clone().into_parts();
            parts.path_and_query = Some(new);
            if let Ok(u) = Uri::from_parts(parts) {
                *req.uri_mut() = u;
            }
        }
    }
    req
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    fn with_type(p: &str, content_type: &str) -> String {
        let req = axum::extract::Request::builder()
            .uri(p)
            .header("Content-Type", content_type)
            .body(Body::empty())
            .unwrap();
        normalize(req).uri().to_string()
    }

    #[test]
    fn v1_query_is_promql_only_with_a_query_or_a_form() {
        assert_eq!(path_of("/api/v1/query?query=up"), "/api/v1/query?query=up");
        assert_eq!(path_of("/api/v1/query_range/"), "/api/v1/query_range");
        assert_eq!(
            with_type("/api/v1/query", "application/x-www-form-urlencoded"),
            "/api/v1/query"
        );
        assert_eq!(path_of("/api/v1/query?m=sum:x"), "/api/query?m=sum:x");
        assert_eq!(with_type("/api/v1/query", "application/json"), "/api/query");
    }

    fn path_of(p: &str) -> String {
        let req = axum::extract::Request::builder()
            .uri(p)
            .body(Body::empty())
            .unwrap();
        normalize(req).uri().to_string()
    }

    #[test]
    fn path_normalisation() {
        assert_eq!(path_of("/api/put/"), "/api/put");
        assert_eq!(path_of("/api/v1/put?details"), "/api/put?details");
        assert_eq!(path_of("/API/V1/PUT"), "/api/put");
        assert_eq!(path_of("/api/v2/query"), "/api/__unsupported_version");
        assert_eq!(path_of("/api/config/filters/"), "/api/config/filters");
        assert_eq!(path_of("/"), "/");
        assert_eq!(path_of("/metrics"), "/metrics");
        // Prometheus and InfluxDB 2.x paths are not OpenTSDB's.
        assert_eq!(path_of("/api/v1/write"), "/api/v1/write");
        assert_eq!(path_of("/api/v1/read/"), "/api/v1/read");
        assert_eq!(
            path_of("/api/v1/export?match[]=x"),
            "/api/v1/export?match[]=x"
        );
        assert_eq!(path_of("/API/V1/IMPORT"), "/api/v1/import");
        assert_eq!(path_of("/api/v1/Labels"), "/api/v1/labels");
        assert_eq!(
            path_of("/api/v1/label/Job/values/"),
            "/api/v1/label/Job/values"
        );
        assert_eq!(
            path_of("/API/Admin/Snapshots/20261126T053512Z-0/files/SNAPSHOT"),
            "/api/admin/snapshots/20261126T053512Z-0/files/SNAPSHOT"
        );
        assert_eq!(
            path_of("/api/v1/admin/snapshots/Ab-1/"),
            "/api/admin/snapshots/Ab-1"
        );
        assert_eq!(
            path_of("/api/v2/write?bucket=b&precision=s"),
            "/api/v2/write?bucket=b&precision=s"
        );
        assert_eq!(path_of("/API/V1/WRITE"), "/api/v1/write");
        assert_eq!(path_of("/api/v1/query"), "/api/query");
        assert_eq!(path_of("/api/v2/query"), "/api/__unsupported_version");
    }
}
