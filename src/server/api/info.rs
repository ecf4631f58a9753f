//! What the server is and can do: `/api/version`, `/api/aggregators`,
//! `/api/config/filters`.

use axum::http::StatusCode;
use axum::response::Response;

use crate::server::http::json_response;

pub async fn version() -> Response {
    let v = serde_json::json!({
        "version": env!("CARGO_PKG_VERSION"),
        "short_revision": option_env!("HOURGLASS_GIT_REVISION").unwrap_or(""),
        "full_revision": option_env!("HOURGLASS_GIT_REVISION").unwrap_or(""),
        "timestamp": "",
        "repo_status": "",
        "user": "",
        "host": "",
        "repo": "hourglass",
        "branch": "",
        "compatibility": "OpenTSDB 2.4",
    });
    json_response(StatusCode::OK, v.to_string())
}

pub async fn aggregators() -> Response {
    json_response(
        StatusCode::OK,
        serde_json::to_string(hourglass_query::aggregate::AGGREGATOR_NAMES).unwrap_or_default(),
    )
}

pub async fn filters() -> Response {
    json_response(
        StatusCode::OK,
        hourglass_query::filter::filter_types().to_string(),
    )
}
