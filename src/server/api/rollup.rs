//! `POST /api/rollup`: OpenTSDB 2.4's writes of rollups computed elsewhere,
//! the `/api/put` body and answers with `interval`, `aggregator` and
//! `groupByAggregator` per element (`engine::rollup::external` says where
//! they go and when queries read them).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use hourglass_ingest::JsonPoint;

use super::put::{Wrote, write_body};
use crate::engine::PointError;
use crate::server::Ctx;
use crate::server::http::{ApiError, Params, PeerAddr, respond};
use crate::uid::UidError;

pub async fn rollup(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    headers: HeaderMap,
    peer: PeerAddr,
    body: Body,
) -> Response {
    let r = write_body(&ctx, &params, &headers, peer, body, write_json_rollups).await;
    respond(&ctx, "rollup", r)
}

/// Checks and writes the elements (blocking).
fn write_json_rollups(ctx: &Ctx, items: &[JsonPoint<'_>]) -> Result<Wrote, ApiError> {
    let mut points = Vec::new();
    let mut origins = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let checked = item.to_point(&ctx.limits).and_then(|p| {
            let spec = item.rollup_spec()?;
            crate::server::write::check_rollup(p, spec, &ctx.limits)
                .map_err(|e| e.http_message().to_owned())
        });
        match checked {
            Ok(p) => {
                points.push(p);
                origins.push(i);
            }
            Err(msg) => errors.push((i, msg)),
        }
    }
    if !errors.is_empty() {
        ctx.metrics
            .points_rejected
            .with_label_values(&["invalid"])
            .inc_by(errors.len() as u64);
    }
    let receipt = ctx.engine.write_rollups(&points)?;
    crate::server::write::Protocol::Rollup.count(&ctx.metrics, receipt.accepted);
    for (i, e) in receipt.errors {
        let msg = match e {
            PointError::Uid(UidError::NoSuchName { .. }) => "Unknown metric".to_string(),
            other => other.to_string(),
        };
        errors.push((origins[i], msg));
    }
    Ok(Wrote {
        lsn: receipt.lsn,
        accepted: receipt.accepted,
        errors,
    })
}
