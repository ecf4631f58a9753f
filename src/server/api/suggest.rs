//! `/api/suggest`: names of a kind starting with a prefix.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use crate::server::Ctx;
use crate::server::http::{ApiError, Params, PeerAddr, blocking, json_response, param, respond};
use crate::uid::UidKind;

async fn suggest_run(
    ctx: &Arc<Ctx>,
    kind: Option<&str>,
    missing_msg: &str,
    q: &str,
    max: Option<&str>,
) -> Result<Response, ApiError> {
    let kind = kind
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ApiError::bad_request(missing_msg))?;
    let kind_enum = UidKind::parse(kind)
        .ok_or_else(|| ApiError::bad_request(format!("Invalid 'type' parameter:{kind}")))?;
    let max = match max {
        None | Some("") => 25,
        Some(m) => match m.trim().parse::<i64>() {
            Ok(n) if n < 1 => 25,
            Ok(n) => usize::try_from(n).unwrap_or(usize::MAX),
            Err(_) => return Err(ApiError::bad_request("Unable to parse 'max' as a number")),
        },
    };
    let engine = Arc::clone(&ctx.engine);
    let prefix = q.to_string();
    let names = blocking(move || Ok(engine.uids().suggest(kind_enum, &prefix, max)?)).await?;
    Ok(json_response(
        StatusCode::OK,
        serde_json::to_string(&names).unwrap_or_else(|_| "[]".into()),
    ))
}

pub async fn suggest_get(State(ctx): State<Arc<Ctx>>, Query(params): Query<Params>) -> Response {
    let r = suggest_run(
        &ctx,
        param(&params, "type"),
        "Missing parameter <code>type</code>",
        param(&params, "q").unwrap_or(""),
        param(&params, "max"),
    )
    .await;
    respond(&ctx, "suggest", r)
}

pub async fn suggest_post(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let read = match crate::server::http::body::read(&ctx, &headers, peer.ip(), body).await {
        Ok(b) => b,
        Err(e) => return respond(&ctx, "suggest", Err(e)),
    };
    let body = &read.bytes;
    let parsed: Result<serde_json::Value, _> = if body.is_empty() {
        Ok(serde_json::Value::Null)
    } else {
        serde_json::from_slice(body)
    };
    let r = match parsed {
        Err(e) => {
            Err(ApiError::bad_request("Unable to parse the given JSON").with_details(e.to_string()))
        }
        Ok(v) => {
            let s = |k: &str| -> Option<String> {
                v.get(k).and_then(|x| match x {
                    serde_json::Value::String(s) => Some(s.clone()),
                    serde_json::Value::Number(n) => Some(n.to_string()),
                    _ => None,
                })
            };
            // Fall back to the query string, as a GET would.
            let kind = s("type").or_else(|| param(&params, "type").map(str::to_string));
            let q = s("q")
                .or_else(|| param(&params, "q").map(str::to_string))
                .unwrap_or_default();
            let max = s("max").or_else(|| param(&params, "max").map(str::to_string));
            suggest_run(
                &ctx,
                kind.as_deref(),
                "Missing 'type' parameter",
                &q,
                max.as_deref(),
            )
            .await
        }
    };
    respond(&ctx, "suggest", r)
}
