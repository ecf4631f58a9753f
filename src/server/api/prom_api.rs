//! The Prometheus HTTP API's series metadata (issue 21, first part), in
//! Prometheus' response and error shapes (`{"status":"success","data":…}`,
//! `{"status":"error","errorType","error"}`): `/api/v1/series`,
//! `/api/v1/labels`, `/api/v1/label/<name>/values`, and the fixed answers
//! of `/api/v1/status/buildinfo`, `/api/v1/metadata` (none is kept) and
//! `/api/v1/query_exemplars` (none is kept). GET, or POST with a form body,
//! as Prometheus takes them.
//!
//! Names are shown as Prometheus shows them: remote write's reversible
//! mapping (`.` in a metric name is `:`, `%XX` escapes decoded). `match[]`
//! selectors are PromQL series selectors (parsed with `promql-parser`),
//! answered from the series index, never from data rows. `start` and `end`
//! are checked but do not narrow the answer: the index keeps no time range
//! per series (`docs/promql.md`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use hourglass_ingest::prom::{self, pb};
use hourglass_query::QueryBudget;
use hourglass_query::lookup::LookupMatch;
use promql_parser::label::MatchOp;
use promql_parser::parser::{Expr, VectorSelector};

use super::select::{Names, Selection};
use crate::engine::Engine;
use crate::server::Ctx;
use crate::server::http::error::{ApiError, ErrorFormat};
use crate::server::http::{ApiRequest, Params, Run, json_response, respond, run_budgeted};
use crate::uid::UidKind;

/// `match[]` selectors one request may have.
const MAX_SELECTORS: usize = 64;
/// Names one list may hold without a `match[]` (the UID table's names).
const MAX_NAMES: usize = 1_000_000;

pub fn success(data: serde_json::Value, warnings: &[String]) -> Response {
    let mut body = serde_json::json!({"status": "success", "data": data});
    if !warnings.is_empty() {
        body["warnings"] = serde_json::json!(warnings);
    }
    json_response(StatusCode::OK, body.to_string())
}

pub fn bad_data(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message).in_format(ErrorFormat::Prometheus)
}

/// The request's parameters: the query string, then a form body's.
pub fn params_of(req: &ApiRequest) -> Params {
    let mut params = req.params.clone();
    if let Some(body) = &req.body {
        params.extend(
            form_urlencoded::parse(&body.bytes).map(|(k, v)| (k.into_owned(), v.into_owned())),
        );
    }
    params
}

/// What every series-metadata request shares.
struct Request {
    selectors: Vec<Selection>,
    /// At most this many items in the answer (`limit`, 0 = all).
    limit: usize,
}

fn parse_request(params: &Params) -> Result<Request, ApiError> {
    let mut selectors = Vec::new();
    for (k, v) in params {
        match k.as_str() {
            "match[]" => {
                if selectors.len() == MAX_SELECTORS {
                    return Err(bad_data(format!(
                        "more than {MAX_SELECTORS} match[] selectors"
                    )));
                }
                selectors.push(selector(v)?);
            }
            "start" | "end" => {
                parse_time(k, v)?;
            }
            _ => {}
        }
    }
    let limit = match params.iter().rev().find(|(k, _)| k == "limit") {
        None => usize::MAX,
        Some((_, v)) => match v.parse::<i64>() {
            Ok(n) if n > 0 => usize::try_from(n).unwrap_or(usize::MAX),
            Ok(0) => usize::MAX,
            _ => return Err(bad_data(format!("invalid parameter \"limit\": {v:?}"))),
        },
    };
    Ok(Request { selectors, limit })
}

/// Prometheus' time parameter, unix seconds (a float) or RFC 3339, in ms.
pub fn parse_time(name: &str, text: &str) -> Result<i64, ApiError> {
    let seconds = text.parse::<f64>().ok().filter(|s| s.is_finite());
    let ms = match seconds {
        Some(s) => Some((s * 1000.0).round()),
        None => text
            .parse::<jiff::Timestamp>()
            .ok()
            .map(|t| t.as_millisecond() as f64),
    };
    // Far enough for any date a query means; the arithmetic stays in i64.
    const LIMIT: f64 = 1e16;
    match ms {
        Some(ms) if ms.abs() < LIMIT => Ok(ms as i64),
        _ => Err(bad_data(format!(
            "invalid parameter \"{name}\": cannot parse \"{text}\" to a valid timestamp"
        ))),
    }
}

/// One `match[]`: a PromQL series selector, as matchers on stored names.
fn selector(text: &str) -> Result<Selection, ApiError> {
    let invalid = |why: String| bad_data(format!("invalid parameter \"match[]\": {why}"));
    // Go's `\Q…\E` in matchers, as in queries.
    let rewritten = hourglass_query::promql::go_regex::rewrite_matchers(text);
    let expr = promql_parser::parser::parse(&rewritten).map_err(invalid)?;
    let Expr::VectorSelector(vs) = expr else {
        return Err(invalid(format!("{text:?} is not a series selector")));
    };
    selection_of(&vs).map_err(|e| invalid(e.message))
}

/// The selection a PromQL vector selector makes (its name and matchers),
/// on stored names.
pub fn selection_of(vs: &VectorSelector) -> Result<Selection, ApiError> {
    if !vs.matchers.or_matchers.is_empty() {
        return Err(bad_data("`or` in a selector is not supported"));
    }
    let mut matchers = Vec::with_capacity(vs.matchers.matchers.len() + 1);
    if let Some(name) = &vs.name {
        matchers.push(pb::LabelMatcher {
            r#type: pb::MatchType::Eq as i32,
            name: "__name__".to_string(),
            value: name.clone(),
        });
    }
    let mut matches_something = vs.name.is_some();
    for m in &vs.matchers.matchers {
        let (op, matches_empty) = match &m.op {
            MatchOp::Equal => (pb::MatchType::Eq, m.value.is_empty()),
            MatchOp::NotEqual => (pb::MatchType::Neq, !m.value.is_empty()),
            MatchOp::Re(re) => (pb::MatchType::Re, re.is_match("")),
            MatchOp::NotRe(re) => (pb::MatchType::Nre, !re.is_match("")),
        };
        matches_something |= !matches_empty;
        matchers.push(pb::LabelMatcher {
            r#type: op as i32,
            name: m.name.clone(),
            value: m.value.clone(),
        });
    }
    // Prometheus' rule: a selector must narrow the series down.
    if !matches_something {
        return Err(bad_data(format!(
            "{vs} has no matcher that does not match the empty string"
        )));
    }
    let mapped = matchers
        .iter()
        .map(prom::map_matcher)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad_data(e.to_string()))?;
    Selection::new(mapped, Names::Prometheus).map_err(|e| e.in_format(ErrorFormat::Prometheus))
}

/// Every series the selectors choose, once each, at most `limit` (and
/// whether the limit cut the list).
fn selected_series(
    engine: &Engine,
    selectors: &[Selection],
    limit: usize,
    budget: &QueryBudget,
) -> Result<(Vec<LookupMatch>, bool), ApiError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for sel in selectors {
        for metric in sel.metrics(engine)? {
            // One more than the limit tells that it cut.
            for s in sel.series_from_index(engine, &metric, limit.saturating_add(1), budget)? {
                if seen.insert(s.tsuid.clone()) {
                    if out.len() == limit {
                        return Ok((out, true));
                    }
                    out.push(s);
                }
            }
        }
    }
    Ok((out, false))
}

/// A series' labels as Prometheus shows them.
fn labels_of(s: &LookupMatch) -> BTreeMap<String, String> {
    let mut labels: BTreeMap<String, String> = s
        .tags
        .iter()
        .map(|(k, v)| {
            (
                hourglass_ingest::decode_name(k).into_owned(),
                hourglass_ingest::decode_name(v).into_owned(),
            )
        })
        .collect();
    labels.insert(
        "__name__".to_string(),
        prom::opentsdb_metric_to_prom(&s.metric).into_owned(),
    );
    labels
}

fn truncated(cut: bool) -> Vec<String> {
    if cut {
        vec!["results truncated due to limit".to_string()]
    } else {
        Vec::new()
    }
}

/// Runs `f` under the query limits; errors in Prometheus' shape.
async fn run<F>(ctx: &Arc<Ctx>, endpoint: &str, req: Result<ApiRequest, ApiError>, f: F) -> Response
where
    F: FnOnce(&Engine, Request, &QueryBudget) -> Result<Response, ApiError> + Send + 'static,
{
    let r = async {
        let req = req?;
        let parsed = parse_request(&params_of(&req))?;
        let engine = Arc::clone(&ctx.engine);
        run_budgeted(ctx, req.text, req.peer, Run::Pool, move |budget| {
            f(&engine, parsed, budget)
        })
        .await
    }
    .await
    .map_err(|e| e.in_format(ErrorFormat::Prometheus));
    respond(ctx, endpoint, r)
}

/// `/api/v1/series`: the label sets of the series `match[]` selects.
pub async fn series(State(ctx): State<Arc<Ctx>>, req: Result<ApiRequest, ApiError>) -> Response {
    run(&ctx, "prom_series", req, |engine, r, budget| {
        if r.selectors.is_empty() {
            return Err(bad_data("no match[] parameter provided"));
        }
        let (found, cut) = selected_series(engine, &r.selectors, r.limit, budget)?;
        let data: Vec<_> = found.iter().map(labels_of).collect();
        Ok(success(serde_json::json!(data), &truncated(cut)))
    })
    .await
}

/// `/api/v1/labels`: label names, of every series or of those `match[]`
/// selects.
pub async fn labels(State(ctx): State<Arc<Ctx>>, req: Result<ApiRequest, ApiError>) -> Response {
    run(&ctx, "prom_labels", req, |engine, r, budget| {
        let mut names = BTreeSet::new();
        if r.selectors.is_empty() {
            names.insert("__name__".to_string());
            let keys = engine
                .uids()
                .suggest(UidKind::TagK, "", MAX_NAMES)
                .map_err(ApiError::from)?;
            budget.check()?;
            names.extend(
                keys.iter()
                    .map(|k| hourglass_ingest::decode_name(k).into_owned()),
            );
        } else {
            let (found, _) = selected_series(engine, &r.selectors, usize::MAX, budget)?;
            for s in &found {
                names.extend(labels_of(s).into_keys());
            }
        }
        let cut = names.len() > r.limit;
        let data: Vec<_> = names.into_iter().take(r.limit).collect();
        Ok(success(serde_json::json!(data), &truncated(cut)))
    })
    .await
}

/// `/api/v1/label/<name>/values`: the values of one label, over every
/// series or those `match[]` selects.
pub async fn label_values(
    State(ctx): State<Arc<Ctx>>,
    Path(name): Path<String>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    run(&ctx, "prom_label_values", req, move |engine, r, budget| {
        let mut values = BTreeSet::new();
        if r.selectors.is_empty() && name == "__name__" {
            let metrics = engine
                .uids()
                .suggest(UidKind::Metric, "", MAX_NAMES)
                .map_err(ApiError::from)?;
            values.extend(
                metrics
                    .iter()
                    .map(|m| prom::opentsdb_metric_to_prom(m).into_owned()),
            );
        } else {
            let selectors = if r.selectors.is_empty() {
                // Every series that has the label.
                let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
                vec![selector(&format!("{{{escaped}=~\".+\"}}"))?]
            } else {
                r.selectors
            };
            let (found, _) = selected_series(engine, &selectors, usize::MAX, budget)?;
            for s in &found {
                if let Some(v) = labels_of(s).remove(&name) {
                    values.insert(v);
                }
            }
        }
        let cut = values.len() > r.limit;
        let data: Vec<_> = values.into_iter().take(r.limit).collect();
        Ok(success(serde_json::json!(data), &truncated(cut)))
    })
    .await
}

/// `/api/v1/status/buildinfo`: the Prometheus version whose API and
/// PromQL hourglass follows, and hourglass's own.
pub async fn buildinfo() -> Response {
    success(
        serde_json::json!({
            "version": "2.42.0",
            "revision": option_env!("HOURGLASS_GIT_REVISION").unwrap_or(""),
            "branch": format!("hourglass-{}", env!("CARGO_PKG_VERSION")),
            "buildUser": "hourglass",
            "buildDate": "",
            "goVersion": "",
        }),
        &[],
    )
}

/// `/api/v1/metadata`: none is kept (remote write's metadata is counted
/// and dropped).
pub async fn metadata() -> Response {
    success(serde_json::json!({}), &[])
}

/// `/api/v1/query_exemplars`: none is kept.
pub async fn query_exemplars() -> Response {
    success(serde_json::json!([]), &[])
}
