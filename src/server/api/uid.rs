//! `/api/uid/*`: `assign` (POST: JSON arrays, or comma lists in the query
//! string), `uidmeta` (GET), `tsmeta` (GET by `tsuid` or `m=`), `rename`
//! (POST; a GET that would change state is refused by `http::cors`). UID
//! assignments are made durable (the UID table's sync) before the answer.
//! hourglass stores no UIDMeta/TSMeta objects: the meta answers carry
//! OpenTSDB's defaults around the names, UIDs and the series index.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use crate::server::Ctx;
use crate::server::http::ApiRequest;
use crate::server::http::error::ApiError;
use crate::server::http::{
    Params, Run, blocking, json_response, param, peer_of, respond, run_budgeted,
};
use crate::uid::{UidError, UidKind};

/// Names to assign, at most this many per request (every one is a UID
/// table write).
const MAX_ASSIGN: usize = 1000;

/// `metric` | `tagk` | `tagv` (the API's singular spelling).
fn api_kind(s: &str) -> Option<UidKind> {
    match s.to_ascii_lowercase().as_str() {
        "metric" | "metrics" => Some(UidKind::Metric),
        "tagk" => Some(UidKind::TagK),
        "tagv" => Some(UidKind::TagV),
        _ => None,
    }
}

fn api_key(kind: UidKind) -> &'static str {
    match kind {
        UidKind::Metric => "metric",
        UidKind::TagK => "tagk",
        UidKind::TagV => "tagv",
    }
}

fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("Missing message content")
            .with_details("Supply valid JSON formatted data in the body of your request"));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request("Unable to parse the given JSON").with_details(e.to_string())
    })
}

// ---------------------------------------------------------------- assign

fn assign(ctx: &Ctx, wanted: Vec<(UidKind, String)>) -> Result<Response, ApiError> {
    if wanted.is_empty() {
        return Err(ApiError::bad_request("Missing values to assign UIDs"));
    }
    if wanted.len() > MAX_ASSIGN {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "Too many names to assign: {} (at most {MAX_ASSIGN} per request)",
                wanted.len()
            ),
        ));
    }
    let uids = ctx.engine.uids();
    let mut ok: BTreeMap<&str, serde_json::Map<String, Value>> = BTreeMap::new();
    let mut errs: BTreeMap<&str, serde_json::Map<String, Value>> = BTreeMap::new();
    for (kind, name) in &wanted {
        let key = api_key(*kind);
        let res = hourglass_ingest::validate_name(key, name, ctx.limits.max_name_len)
            .map_err(|m| m.to_string())
            .and_then(|()| match uids.assign(*kind, name) {
                Ok(uid) => Ok(uids.uid_hex(*kind, uid)),
                Err(e @ (UidError::Exists { .. } | UidError::Exhausted { .. })) => {
                    Err(e.to_string())
                }
                Err(e) => Err(format!("internal error: {e}")),
            });
        match res {
            Ok(hex) => {
                ok.entry(key).or_default().insert(name.clone(), hex.into());
            }
            Err(msg) => {
                errs.entry(key)
                    .or_default()
                    .insert(name.clone(), msg.into());
            }
        }
    }
    // Assignments are buffered: durable before anyone is told about them.
    uids.sync_if_needed()?;
    let mut out = serde_json::Map::new();
    for (k, m) in ok {
        out.insert(k.to_string(), Value::Object(m));
    }
    let failed = !errs.is_empty();
    for (k, m) in errs {
        out.insert(format!("{k}_errors"), Value::Object(m));
    }
    let status = if failed {
        StatusCode::BAD_REQUEST
    } else {
        StatusCode::OK
    };
    Ok(json_response(status, Value::Object(out).to_string()))
}

/// `POST /api/uid/assign`: a JSON body (`{"metric":["a","b"],…}`), or with
/// an empty body OpenTSDB's query-string form (`?metric=a,b&tagk=c`).
pub async fn assign_post(
    State(ctx): State<Arc<Ctx>>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    let r = async {
        let req = req?;
        let mut wanted = Vec::new();
        match req.json() {
            None => {
                for (k, v) in &req.params {
                    if let Some(kind) = api_kind(k) {
                        wanted.extend(
                            v.split(',')
                                .filter(|n| !n.is_empty())
                                .map(|n| (kind, n.to_string())),
                        );
                    }
                }
            }
            Some(bytes) => {
                let v = parse_json(bytes)?;
                let obj = v.as_object().ok_or_else(|| {
                    ApiError::bad_request("Unable to parse the given JSON")
                        .with_details("expected an object")
                })?;
                for (k, names) in obj {
                    let kind = api_kind(k)
                        .ok_or_else(|| ApiError::bad_request(format!("Unknown type name: {k}")))?;
                    let list = names.as_array().ok_or_else(|| {
                        ApiError::bad_request("Unable to parse the given JSON")
                            .with_details(format!("'{k}' must be an array of names"))
                    })?;
                    for n in list {
                        let n = n.as_str().ok_or_else(|| {
                            ApiError::bad_request("Unable to parse the given JSON")
                                .with_details(format!("'{k}' must be an array of names"))
                        })?;
                        wanted.push((kind, n.to_string()));
                    }
                }
            }
        }
        let ctx = Arc::clone(&ctx);
        blocking(move || assign(&ctx, wanted)).await
    }
    .await;
    respond(&ctx, "uid_assign", r)
}

// ---------------------------------------------------------------- uidmeta

/// A UIDMeta object with OpenTSDB's defaults (no meta is stored).
fn uid_meta(kind: UidKind, uid_hex: &str, name: &str) -> Value {
    json!({
        "uid": uid_hex,
        "type": api_key(kind).to_ascii_uppercase(),
        "name": name,
        "description": "",
        "notes": "",
        "created": 0,
        "custom": null,
        "displayName": "",
    })
}

fn uidmeta(ctx: &Ctx, params: &Params) -> Result<Response, ApiError> {
    let uid = param(params, "uid")
        .filter(|u| !u.is_empty())
        .ok_or_else(|| ApiError::bad_request("Missing parameter <code>uid</code>"))?;
    let kind_s = param(params, "type")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ApiError::bad_request("Missing parameter <code>type</code>"))?;
    let kind = api_kind(kind_s)
        .ok_or_else(|| ApiError::bad_request(format!("Invalid UID type: {kind_s}")))?;
    let uids = ctx.engine.uids();
    let bytes = crate::codec::hex::decode(uid)
        .filter(|b| !b.is_empty())
        .filter(|b| b.len() <= uids.width(kind))
        .ok_or_else(|| ApiError::bad_request(format!("Invalid UID: {uid}")))?;
    let id = crate::codec::rowkey::uid_from_bytes(&bytes);
    let name = uids
        .name_of(kind, id)?
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, "Could not find the requested UID"))?;
    Ok(json_response(
        StatusCode::OK,
        uid_meta(kind, &uids.uid_hex(kind, id), &name).to_string(),
    ))
}

pub async fn uidmeta_get(State(ctx): State<Arc<Ctx>>, Query(params): Query<Params>) -> Response {
    let worker = Arc::clone(&ctx);
    let r = blocking(move || uidmeta(&worker, &params)).await;
    respond(&ctx, "uid_uidmeta", r)
}

// ---------------------------------------------------------------- tsmeta

/// A TSMeta object for an indexed series, with OpenTSDB's defaults for
/// the fields hourglass does not keep.
fn ts_meta(engine: &crate::engine::Engine, tsuid: &[u8]) -> Result<Value, ApiError> {
    let layout = *engine.layout();
    let uids = engine.uids();
    let hex = crate::codec::hex::encode;
    let described = engine.describe_tsuid(tsuid)?;
    let (m, tags) = tsuid.split_at(layout.metric_width.min(tsuid.len()));
    let mut tag_metas = Vec::new();
    for ((k, v), (kn, vn)) in layout.tag_pairs(tags).zip(
        layout
            .tag_pairs(tags)
            .map(|(k, v)| {
                let name = |kind, b: &[u8]| {
                    uids.name_of(kind, crate::codec::rowkey::uid_from_bytes(b))
                        .map(|n| n.map_or_else(|| hex(b), |n| n.to_string()))
                };
                Ok::<_, UidError>((name(UidKind::TagK, k)?, name(UidKind::TagV, v)?))
            })
            .collect::<Result<Vec<_>, _>>()?,
    ) {
        tag_metas.push(uid_meta(UidKind::TagK, &hex(k), &kn));
        tag_metas.push(uid_meta(UidKind::TagV, &hex(v), &vn));
    }
    Ok(json!({
        "tsuid": hex(tsuid),
        "metric": uid_meta(UidKind::Metric, &hex(m), &described.metric),
        "tags": tag_metas,
        "description": "",
        "notes": "",
        "created": 0,
        "units": "",
        "retention": 0,
        "max": "NaN",
        "min": "NaN",
        "displayName": "",
        "dataType": "",
        "lastReceived": 0,
        "totalDatapoints": 0,
        "custom": null,
    }))
}

pub async fn tsmeta_get(
    State(ctx): State<Arc<Ctx>>,
    Query(params): Query<Params>,
    uri: axum::http::Uri,
    ext: axum::http::Extensions,
) -> Response {
    let r = async {
        if let Some(t) = param(&params, "tsuid") {
            let engine = &ctx.engine;
            let tsuid = crate::codec::hex::decode(t)
                .filter(|b| !b.is_empty())
                .filter(|b| engine.layout().series_key_from_tsuid(b).is_some())
                .ok_or_else(|| ApiError::bad_request(format!("Invalid TSUID: {t}")))?;
            let engine = Arc::clone(engine);
            return blocking(move || {
                if !engine
                    .is_indexed(&tsuid)
                    .map_err(crate::engine::EngineError::from)?
                {
                    return Err(ApiError::new(
                        StatusCode::NOT_FOUND,
                        "Could not find Timeseries meta data",
                    ));
                }
                Ok(json_response(
                    StatusCode::OK,
                    ts_meta(&engine, &tsuid)?.to_string(),
                ))
            })
            .await;
        }
        let m = param(&params, "m")
            .filter(|m| !m.is_empty())
            .ok_or_else(|| {
                ApiError::bad_request("Missing parameter <code>tsuid</code> or <code>m</code>")
            })?;
        // `m=<metric>{k=v,…}`: every indexed series with those tags.
        let mut lq = hourglass_query::lookup::parse_lookup_query_string(&[(
            "m".to_string(),
            m.to_string(),
        )])?;
        lq.limit = 0;
        if lq.metric_filter().is_none() {
            return Err(ApiError::bad_request(format!("Missing metric in: {m}")));
        }
        let engine = Arc::clone(&ctx.engine);
        let body = run_budgeted(
            &ctx,
            uri.to_string(),
            peer_of(&ext),
            Run::Pool,
            move |budget| {
                let tsuids = engine.lookup_series_tsuids(&lq, budget)?;
                let mut out = Vec::with_capacity(tsuids.len());
                for t in tsuids {
                    budget.check()?;
                    out.push(ts_meta(&engine, &t)?);
                }
                Ok(Value::Array(out).to_string())
            },
        )
        .await?;
        Ok(json_response(StatusCode::OK, body))
    }
    .await;
    respond(&ctx, "uid_tsmeta", r)
}

// ---------------------------------------------------------------- rename

fn rename(ctx: &Ctx, fields: &BTreeMap<String, String>) -> Result<Response, ApiError> {
    let failure = |status: StatusCode, msg: String| {
        json_response(status, json!({"result": "false", "error": msg}).to_string())
    };
    let olds: Vec<(UidKind, &String)> = fields
        .iter()
        .filter_map(|(k, v)| Some((api_kind(k).filter(|_| k != "metrics")?, v)))
        .collect();
    let new = fields.get("name").filter(|n| !n.is_empty());
    let (Some(new), [(kind, old)]) = (new, olds.as_slice()) else {
        return Err(ApiError::bad_request(
            "Missing necessary values to rename UID",
        ));
    };
    if let Err(m) = hourglass_ingest::validate_name(api_key(*kind), new, ctx.limits.max_name_len) {
        return Ok(failure(StatusCode::BAD_REQUEST, m.to_string()));
    }
    match ctx.engine.uids().rename(*kind, old, new) {
        Ok(()) => {
            // Cached series texts hold the old name: a write of it must
            // make a new series, not land in the renamed one.
            ctx.engine.drop_caches();
            ctx.forget_series();
            Ok(json_response(
                StatusCode::OK,
                json!({"result": "true"}).to_string(),
            ))
        }
        Err(UidError::NoSuchName { name, .. }) => Ok(failure(
            StatusCode::BAD_REQUEST,
            format!("Name(\"{name}\") does not exist"),
        )),
        Err(UidError::Exists { name, .. }) => Ok(failure(
            StatusCode::BAD_REQUEST,
            format!("Name(\"{name}\") already exists"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// `POST /api/uid/rename`: a JSON body (`{"metric":"old","name":"new"}`),
/// or with an empty body the same fields as query-string parameters.
pub async fn rename_post(
    State(ctx): State<Arc<Ctx>>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    let r = async {
        let req = req?;
        let fields: BTreeMap<String, String> = match req.json() {
            None => req.params.iter().cloned().collect(),
            Some(bytes) => {
                let v = parse_json(bytes)?;
                let obj = v.as_object().ok_or_else(|| {
                    ApiError::bad_request("Unable to parse the given JSON")
                        .with_details("expected an object")
                })?;
                obj.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            }
        };
        let ctx = Arc::clone(&ctx);
        blocking(move || rename(&ctx, &fields)).await
    }
    .await;
    respond(&ctx, "uid_rename", r)
}

/// Any other `/api/uid/<x>`.
pub async fn other(State(ctx): State<Arc<Ctx>>, Path(_x): Path<String>) -> Response {
    let r = Err(ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "Other UID endpoints have not been implemented yet",
    ));
    respond(&ctx, "uid", r)
}
