//! `/api/admin/*` (admin scope): online snapshots. `POST
//! /api/admin/snapshot` takes one and answers `{"path": …}`; `GET
//! /api/admin/snapshots` lists them; `GET` and `DELETE
//! /api/admin/snapshots/{name}` describe (with every file) and delete one;
//! `GET /api/admin/snapshots/{name}/files/{path}` streams one file, which is
//! what `hourglass backup` copies. The engine's `snapshot` module owns the
//! snapshots themselves.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::TokenStore;
use crate::server::Ctx;
use crate::server::http::error::ApiError;
use crate::server::http::{blocking, json_response, stream};

/// `POST /api/admin/snapshot`.
pub async fn take(State(ctx): State<Arc<Ctx>>) -> Response {
    // The token file goes along when it lives in the data directory (its
    // hashes are what a restored server must check).
    let token_file = TokenStore::path_for(&ctx.config);
    let extra = token_file
        .strip_prefix(&ctx.config.storage.data_dir)
        .ok()
        .and_then(|p| p.to_str())
        .map(str::to_string);
    let engine = Arc::clone(&ctx.engine);
    let taken = blocking(move || {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        engine.snapshot(&extra).map_err(ApiError::from)
    })
    .await;
    match taken {
        Ok(info) => json_response(
            StatusCode::OK,
            serde_json::to_vec(&info).unwrap_or_default(),
        ),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/admin/snapshots`.
pub async fn list(State(ctx): State<Arc<Ctx>>) -> Response {
    let engine = Arc::clone(&ctx.engine);
    match blocking(move || engine.snapshots().map_err(ApiError::from)).await {
        Ok(all) => json_response(StatusCode::OK, serde_json::to_vec(&all).unwrap_or_default()),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/admin/snapshots/{name}`: the description and every file.
pub async fn describe(State(ctx): State<Arc<Ctx>>, Path(name): Path<String>) -> Response {
    let engine = Arc::clone(&ctx.engine);
    let found = blocking(move || {
        let info = engine.snapshot_info(&name)?;
        let files = engine.snapshot_files(&name)?;
        Ok((info, files))
    })
    .await;
    match found {
        Ok((info, files)) => {
            let mut body = serde_json::to_value(&info).unwrap_or_default();
            body["files"] = json!(files);
            json_response(StatusCode::OK, body.to_string())
        }
        Err(e) => e.into_response(),
    }
}

/// `DELETE /api/admin/snapshots/{name}`.
pub async fn delete(State(ctx): State<Arc<Ctx>>, Path(name): Path<String>) -> Response {
    let engine = Arc::clone(&ctx.engine);
    let shown = name.clone();
    match blocking(move || engine.delete_snapshot(&name).map_err(ApiError::from)).await {
        Ok(()) => json_response(StatusCode::OK, json!({"deleted": shown}).to_string()),
        Err(e) => e.into_response(),
    }
}

/// `GET /api/admin/snapshots/{name}/files/{*path}`.
pub async fn file(
    State(ctx): State<Arc<Ctx>>,
    Path((name, rel)): Path<(String, String)>,
) -> Response {
    let engine = Arc::clone(&ctx.engine);
    let found = blocking(move || {
        let path = engine.snapshot_file(&name, &rel)?;
        let len = std::fs::metadata(&path)
            .map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    format!("{}: {e}", path.display()),
                )
            })?
            .len();
        Ok((path, len))
    })
    .await;
    match found {
        Ok((path, len)) => (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, "application/octet-stream".to_string()),
                (header::CONTENT_LENGTH, len.to_string()),
            ],
            stream::file(path),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
