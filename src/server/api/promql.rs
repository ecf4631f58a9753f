//! PromQL over the Prometheus HTTP API (issue 21): `/api/v1/query` and
//! `/api/v1/query_range`, GET or POST with a form body, answered by the
//! query crate's evaluator (`hourglass_query::promql`) over the stored
//! series, in Prometheus' response and error shapes.
//!
//! `/api/v1/query` is also OpenTSDB's versioned `/api/query`: a request
//! that carries a `query` parameter or a form body is PromQL
//! (`http::normalize` routes it), anything else OpenTSDB's.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use hourglass_query::QueryBudget;
use hourglass_query::error::QueryError;
use hourglass_query::promql::{self, Labels, PromSource, RangeSeries, Value};
use promql_parser::parser::VectorSelector;

use super::prom_api::{bad_data, params_of, parse_time, selection_of};
use crate::engine::Engine;
use crate::server::Ctx;
use crate::server::http::error::{ApiError, ErrorFormat};
use crate::server::http::{
    ApiRequest, Params, Run, json_response, now_ms, param, respond, run_budgeted,
};

/// Prometheus' bound on a range query's steps.
const MAX_STEPS: i64 = 11_000;

/// The stored series, as PromQL sees them.
struct Store<'a> {
    engine: &'a Engine,
}

impl PromSource for Store<'_> {
    fn select(
        &self,
        vs: &VectorSelector,
        start_ms: i64,
        end_ms: i64,
        budget: &QueryBudget,
    ) -> Result<Vec<RangeSeries>, QueryError> {
        let to_query = |e: ApiError| match e.status {
            StatusCode::PAYLOAD_TOO_LARGE => QueryError::Limit(e.message),
            StatusCode::BAD_REQUEST => QueryError::BadRequest {
                message: e.message,
                details: e.details,
            },
            _ => QueryError::Execution(e.message),
        };
        let selection = selection_of(vs).map_err(to_query)?;
        let mut out = Vec::new();
        for metric in selection.metrics(self.engine).map_err(to_query)? {
            let series = selection
                .fetch(self.engine, &metric, (start_ms, end_ms), true, budget)
                .map_err(|e| to_query(e.into()))?;
            let name = hourglass_ingest::prom::opentsdb_metric_to_prom(&metric).into_owned();
            for s in series {
                let mut labels: Vec<(String, String)> = s
                    .named_tags()
                    .map(|(key, value)| {
                        (
                            hourglass_ingest::decode_name(&key).into_owned(),
                            hourglass_ingest::decode_name(&value).into_owned(),
                        )
                    })
                    .collect();
                labels.push((promql::value::METRIC_NAME.to_string(), name.clone()));
                out.push(RangeSeries {
                    labels: Labels::new(labels),
                    samples: s.points.iter().map(|&(t, v)| (t, v.as_f64())).collect(),
                });
            }
        }
        Ok(out)
    }
}

/// A JSON number of seconds, as Prometheus writes times (`1700000000.5`).
fn seconds(ms: i64) -> String {
    if ms < 0 {
        return format!("-{}", seconds(ms.saturating_neg()));
    }
    let (s, frac) = (ms.div_euclid(1000), ms.rem_euclid(1000));
    if frac == 0 {
        s.to_string()
    } else {
        format!("{s}.{frac:03}").trim_end_matches('0').to_string()
    }
}

fn point(ms: i64, v: f64) -> String {
    format!("[{},\"{}\"]", seconds(ms), promql::format_value(v))
}

fn metric(labels: &Labels) -> String {
    let map: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(n, v)| (n.to_string(), v.into()))
        .collect();
    serde_json::Value::Object(map).to_string()
}

fn matrix(series: &[RangeSeries]) -> String {
    let items: Vec<String> = series
        .iter()
        .map(|s| {
            let values: Vec<String> = s.samples.iter().map(|&(t, v)| point(t, v)).collect();
            format!(
                "{{\"metric\":{},\"values\":[{}]}}",
                metric(&s.labels),
                values.join(",")
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

fn answer(result_type: &str, result: &str) -> Response {
    json_response(
        StatusCode::OK,
        format!(
            "{{\"status\":\"success\",\"data\":{{\"resultType\":\"{result_type}\",\"result\":{result}}}}}"
        ),
    )
}

fn required<'a>(params: &'a Params, name: &str) -> Result<&'a str, ApiError> {
    param(params, name)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| bad_data(format!("invalid parameter \"{name}\": missing")))
}

/// A step: a float of seconds or a Prometheus duration (`15s`, `1m30s`).
fn parse_step(text: &str) -> Result<i64, ApiError> {
    let ms = match text.parse::<f64>() {
        // Go's time.Duration truncates to the nanosecond, then to the ms.
        Ok(s) if s.is_finite() => (s * 1e9) as i64 / 1_000_000,
        _ => promql_parser::util::parse_duration(text)
            .map(|d| d.as_millis() as i64)
            .map_err(|_| {
                bad_data(format!(
                    "invalid parameter \"step\": cannot parse \"{text}\" to a valid duration"
                ))
            })?,
    };
    if ms <= 0 {
        return Err(bad_data(
            "zero or negative query resolution step widths are not accepted. Try a positive integer",
        ));
    }
    Ok(ms)
}

/// Prometheus' statuses: 400 for the request, 422 for what the
/// expression cannot do (and for too many samples), 503 for a timeout or
/// a cancelled query.
fn to_api(e: QueryError) -> ApiError {
    let status = match &e {
        QueryError::BadRequest { .. } => StatusCode::BAD_REQUEST,
        QueryError::Execution(_) | QueryError::Limit(_) => StatusCode::UNPROCESSABLE_ENTITY,
        QueryError::Timeout(_) | QueryError::Cancelled => StatusCode::SERVICE_UNAVAILABLE,
        _ => return ApiError::from(e).in_format(ErrorFormat::Prometheus),
    };
    ApiError::new(status, e.to_string()).in_format(ErrorFormat::Prometheus)
}

/// `/api/v1/query`: `query` at `time` (default now). A JSON body without a
/// `query` parameter is OpenTSDB's `/api/query` (curl sends `-d '{…}'` as a
/// form), answered as such.
pub async fn query(
    State(ctx): State<Arc<Ctx>>,
    headers: axum::http::HeaderMap,
    ext: axum::http::Extensions,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    if let Ok(r) = &req
        && param(&r.params, "query").is_none()
        && r.json()
            .is_some_and(|b| b.trim_ascii_start().starts_with(b"{"))
    {
        let body = r.json().map(<[u8]>::to_vec).unwrap_or_default();
        return super::query::query_post(
            State(ctx),
            axum::extract::Query(r.params.clone()),
            headers,
            ext,
            axum::body::Body::from(body),
        )
        .await;
    }
    let r = async {
        let req = req?;
        let params = params_of(&req);
        let text = required(&params, "query")?.to_string();
        let t = match param(&params, "time").filter(|v| !v.is_empty()) {
            Some(v) => parse_time("time", v)?,
            None => now_ms(),
        };
        let expr = promql::parse(&text).map_err(|e| bad_data(e.to_string()))?;
        let engine = Arc::clone(&ctx.engine);
        run_budgeted(&ctx, req.text, req.peer, Run::Pool, move |budget| {
            let value = promql::eval_instant(&Store { engine: &engine }, &expr, t, budget)
                .map_err(to_api)?;
            Ok(match value {
                Value::Scalar(v) => answer("scalar", &point(t, v)),
                Value::String(s) => answer(
                    "string",
                    &format!("[{},{}]", seconds(t), serde_json::Value::String(s)),
                ),
                Value::Vector(samples) => {
                    let items: Vec<String> = samples
                        .iter()
                        .map(|s| {
                            format!(
                                "{{\"metric\":{},\"value\":{}}}",
                                metric(&s.labels),
                                point(t, s.value)
                            )
                        })
                        .collect();
                    answer("vector", &format!("[{}]", items.join(",")))
                }
                Value::Matrix(series) => answer("matrix", &matrix(&series)),
            })
        })
        .await
    }
    .await
    .map_err(|e| e.in_format(ErrorFormat::Prometheus));
    respond(&ctx, "promql_query", r)
}

/// `/api/v1/query_range`: `query` at every `step` from `start` to `end`.
pub async fn query_range(
    State(ctx): State<Arc<Ctx>>,
    req: Result<ApiRequest, ApiError>,
) -> Response {
    let r = async {
        let req = req?;
        let params = params_of(&req);
        let text = required(&params, "query")?.to_string();
        let start = parse_time("start", required(&params, "start")?)?;
        let end = parse_time("end", required(&params, "end")?)?;
        let step = parse_step(required(&params, "step")?)?;
        if end < start {
            return Err(bad_data("end timestamp must not be before start time"));
        }
        if (end - start) / step > MAX_STEPS {
            return Err(bad_data(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
            ));
        }
        let expr = promql::parse(&text).map_err(|e| bad_data(e.to_string()))?;
        let engine = Arc::clone(&ctx.engine);
        run_budgeted(&ctx, req.text, req.peer, Run::Pool, move |budget| {
            let series = promql::eval_range(&Store { engine: &engine }, &expr, start, end, step, budget)
                .map_err(to_api)?;
            Ok(answer("matrix", &matrix(&series)))
        })
        .await
    }
    .await
    .map_err(|e| e.in_format(ErrorFormat::Prometheus));
    respond(&ctx, "promql_query_range", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_written_as_prometheus_writes_them() {
        assert_eq!(seconds(1_700_000_000_000), "1700000000");
        assert_eq!(seconds(1_700_000_000_500), "1700000000.5");
        assert_eq!(seconds(1_700_000_000_005), "1700000000.005");
        assert_eq!(seconds(-1_500), "-1.5");
        assert_eq!(point(1_000, f64::NAN), "[1,\"NaN\"]");
        assert_eq!(point(1_000, 0.1 + 0.2), "[1,\"0.30000000000000004\"]");
        // Prometheus' marshalValue: %e from 1e21 on and below 1e-6.
        assert_eq!(point(1_000, 1e20), "[1,\"100000000000000000000\"]");
        assert_eq!(point(1_000, 1e21), "[1,\"1e+21\"]");
        assert_eq!(point(1_000, 2.5e-7), "[1,\"2.5e-07\"]");
    }

    #[test]
    fn steps_in_both_forms() {
        assert_eq!(parse_step("15").ok(), Some(15_000));
        assert_eq!(parse_step("0.5").ok(), Some(500));
        assert_eq!(parse_step("1.9999").ok(), Some(1999));
        assert_eq!(parse_step("1m30s").ok(), Some(90_000));
        assert!(parse_step("0").is_err());
        assert!(parse_step("x").is_err());
    }
}
