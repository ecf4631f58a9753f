//! The servers the query mode can measure, and for each the request of every
//! logical query and the parsing of its answer into an [`Answer`].
//!
//! * hourglass (any OpenTSDB): `/api/query` with `m=` expressions and
//!   `/api/query/last`;
//! * hourglass-promql: hourglass's own PromQL (`/api/v1/query_range`,
//!   `/api/v1/query`), sent exactly what VictoriaMetrics and Prometheus get,
//!   names by the mapping remote write uses (`cpu.usage_user` is
//!   `cpu:usage_user`);
//! * VictoriaMetrics and Prometheus: PromQL `query_range` / `query`. Range
//!   functions are evaluated at `bucket + width - 1 s` so that their window
//!   covers exactly OpenTSDB's bucket `[b, b + width)` for data on whole
//!   seconds (Prometheus 2.x windows are closed at both ends, VictoriaMetrics
//!   windows are `(t - w, t]`; both then hold the same samples), and the
//!   answer's timestamps are moved back to the bucket start;
//! * InfluxDB 1.x: InfluxQL over `/query` with `epoch=ms`.
//!
//! Series names per target follow how the data got there (see
//! [`NameStyle`]): OpenTSDB ingest keeps `cpu.usage_user`, Prometheus remote
//! write from the bench sends `cpu:usage_user`, InfluxDB has measurement
//! `cpu` and field `usage_user`, VictoriaMetrics fed over Influx `/write`
//! names it `cpu_usage_user`.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::Deserialize;
use serde_json::Value as Json;

use super::expected::{Answer, SeriesAnswer};
use super::plan::{QueryId, QueryPlan};
use crate::http::with_query;
use crate::protocol::influx::split_metric;

/// Which kind of server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Hourglass,
    #[serde(rename = "hourglass-promql")]
    HourglassPromql,
    VictoriaMetrics,
    Prometheus,
    Influxdb,
}

/// How metric names look in a PromQL target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NameStyle {
    /// `cpu.usage_user` (OpenTSDB ingest).
    Dot,
    /// `cpu:usage_user` (the bench's Prometheus remote write).
    Colon,
    /// `cpu_usage_user` (VictoriaMetrics fed InfluxDB lines).
    Underscore,
}

/// One server to query: `KIND[/NAMES]=ADDR` on the command line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    pub kind: TargetKind,
    pub names: NameStyle,
    pub addr: String,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            TargetKind::Hourglass => "hourglass",
            TargetKind::HourglassPromql => "hourglass-promql",
            TargetKind::VictoriaMetrics => "victoriametrics",
            TargetKind::Prometheus => "prometheus",
            TargetKind::Influxdb => "influxdb",
        };
        f.write_str(kind)
    }
}

impl FromStr for Target {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (spec, addr) = s
            .split_once('=')
            .ok_or_else(|| format!("`{s}`: expected KIND[/NAMES]=HOST:PORT"))?;
        let (kind, names) = match spec.split_once('/') {
            Some((k, n)) => (k, Some(n)),
            None => (spec, None),
        };
        let kind = match kind {
            "hourglass" | "opentsdb" => TargetKind::Hourglass,
            "hourglass-promql" => TargetKind::HourglassPromql,
            "victoriametrics" | "vm" => TargetKind::VictoriaMetrics,
            "prometheus" | "prom" => TargetKind::Prometheus,
            "influxdb" | "influx" => TargetKind::Influxdb,
            other => {
                return Err(format!(
                    "unknown target kind `{other}` (hourglass, hourglass-promql, victoriametrics, prometheus, influxdb)"
                ));
            }
        };
        let names = match names {
            None => match kind {
                TargetKind::Prometheus | TargetKind::HourglassPromql => NameStyle::Colon,
                _ => NameStyle::Dot,
            },
            Some("dot") => NameStyle::Dot,
            Some("colon") => NameStyle::Colon,
            Some("underscore") => NameStyle::Underscore,
            Some(other) => {
                return Err(format!(
                    "unknown name style `{other}` (dot, colon, underscore)"
                ));
            }
        };
        if addr.is_empty() {
            return Err(format!("`{s}`: missing address"));
        }
        Ok(Target {
            kind,
            names,
            addr: addr.to_string(),
        })
    }
}

/// A request: path with query string.
pub type Request = String;

impl Target {
    /// A metric's name in this target's PromQL.
    fn prom_name(&self, metric: &str) -> String {
        match self.names {
            NameStyle::Dot => metric.to_string(),
            NameStyle::Colon => metric.replace('.', ":"),
            NameStyle::Underscore => metric.replace('.', "_"),
        }
    }

    /// The request of query `q`.
    pub fn request(&self, q: QueryId, plan: &QueryPlan) -> Request {
        match self.kind {
            TargetKind::Hourglass => opentsdb_request(q, plan),
            TargetKind::HourglassPromql | TargetKind::VictoriaMetrics | TargetKind::Prometheus => {
                self.promql_request(q, plan)
            }
            TargetKind::Influxdb => influxql_request(q, plan),
        }
    }

    /// Parses the answer to query `q`.
    pub fn parse(&self, q: QueryId, plan: &QueryPlan, body: &[u8]) -> Result<Answer, String> {
        match self.kind {
            TargetKind::Hourglass => parse_opentsdb(q, plan, body),
            TargetKind::HourglassPromql | TargetKind::VictoriaMetrics | TargetKind::Prometheus => {
                self.parse_promql(q, plan, body)
            }
            TargetKind::Influxdb => parse_influxql(q, plan, body),
        }
    }

    fn selector(&self, metric: &str, host: Option<&str>) -> String {
        let name = self.prom_name(metric);
        match host {
            Some(h) => format!("{{__name__=\"{name}\",hostname=\"{h}\"}}"),
            None => format!("{{__name__=\"{name}\"}}"),
        }
    }

    fn promql_request(&self, q: QueryId, plan: &QueryPlan) -> Request {
        let secs = |ms: i64| (ms.div_euclid(1000)).to_string();
        let range = |query: String, width_ms: i64, start: i64, end: i64, step_ms: i64| {
            // Evaluate at the bucket's last second so the window is the bucket.
            let shift = width_ms - 1000;
            with_query(
                "/api/v1/query_range",
                &[
                    ("query", &query),
                    ("start", &secs(start + shift)),
                    ("end", &secs(end - step_ms + shift)),
                    ("step", &format!("{}s", step_ms / 1000)),
                ],
            )
        };
        let m = plan.metric(0);
        let host = plan.host_name();
        match q {
            QueryId::HourAvg | QueryId::DayAvg => {
                let w = plan.window(q);
                let query = format!("avg_over_time({}[60s])", self.selector(m, Some(host)));
                range(query, 60_000, w.start_ms, w.end_ms, 60_000)
            }
            QueryId::MaxPerHost => {
                let w = plan.window(q);
                let query = format!(
                    "max by (hostname) (max_over_time({}[3600s]))",
                    self.selector(m, None)
                );
                range(query, 3_600_000, w.start_ms, w.end_ms, 3_600_000)
            }
            QueryId::Last => {
                let query = format!("last_over_time({}[1d])", self.selector(m, Some(host)));
                with_query(
                    "/api/v1/query",
                    &[("query", &query), ("time", &secs(plan.last_ts_ms))],
                )
            }
            QueryId::SumAll => {
                let w = plan.window(q);
                let names: Vec<String> = plan.metrics.iter().map(|m| self.prom_name(m)).collect();
                let query = format!("sum by (__name__) ({{__name__=~\"{}\"}})", names.join("|"));
                let step = plan.interval_ms;
                // Raw samples on the step grid: no window shift.
                with_query(
                    "/api/v1/query_range",
                    &[
                        ("query", &query),
                        ("start", &secs(w.start_ms)),
                        ("end", &secs(w.end_ms - step)),
                        ("step", &format!("{}s", step / 1000)),
                    ],
                )
            }
        }
    }

    fn parse_promql(&self, q: QueryId, plan: &QueryPlan, body: &[u8]) -> Result<Answer, String> {
        #[derive(Deserialize)]
        struct Envelope {
            status: String,
            data: Option<Data>,
            error: Option<String>,
        }
        #[derive(Deserialize)]
        struct Data {
            result: Vec<PromSeries>,
        }
        #[derive(Deserialize)]
        struct PromSeries {
            #[serde(default)]
            metric: BTreeMap<String, String>,
            #[serde(default)]
            values: Vec<(f64, String)>,
            value: Option<(f64, String)>,
        }
        let env: Envelope = serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
        if env.status != "success" {
            return Err(format!(
                "status {}: {}",
                env.status,
                env.error.unwrap_or_default()
            ));
        }
        let result = env.data.map(|d| d.result).unwrap_or_default();
        let num = |s: &str| s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}"));
        if q == QueryId::Last {
            let [one] = result.as_slice() else {
                return Err(format!("{} series answered, 1 expected", result.len()));
            };
            let (_, v) = one.value.as_ref().ok_or("no value in the instant answer")?;
            return Ok(Answer::Last {
                ts: None,
                value: num(v)?,
            });
        }
        let shift = match q {
            QueryId::HourAvg | QueryId::DayAvg => 60_000 - 1000,
            QueryId::MaxPerHost => 3_600_000 - 1000,
            _ => 0,
        };
        let mut out = SeriesAnswer::new();
        for s in result {
            let key = match q {
                QueryId::MaxPerHost => s.metric.get("hostname").cloned().unwrap_or_default(),
                QueryId::SumAll => {
                    let name = s.metric.get("__name__").cloned().unwrap_or_default();
                    plan.metrics
                        .iter()
                        .find(|m| self.prom_name(m) == name)
                        .cloned()
                        .unwrap_or(name)
                }
                _ => String::new(),
            };
            let mut points = Vec::with_capacity(s.values.len());
            for (t, v) in &s.values {
                points.push(((t * 1000.0).round() as i64 - shift, num(v)?));
            }
            out.insert(key, points);
        }
        Ok(Answer::Series(out))
    }
}

fn opentsdb_request(q: QueryId, plan: &QueryPlan) -> Request {
    let secs = |ms: i64| ms.div_euclid(1000).to_string();
    let host = plan.host_name();
    let m = plan.metric(0);
    if q == QueryId::Last {
        return with_query(
            "/api/query/last",
            &[
                ("timeseries", &format!("{m}{{hostname={host}}}")),
                ("resolve", "true"),
            ],
        );
    }
    let w = plan.window(q);
    // OpenTSDB's end is inclusive: stop one second before the window's end.
    let mut params = vec![
        ("start".to_string(), secs(w.start_ms)),
        ("end".to_string(), secs(w.end_ms - 1000)),
    ];
    match q {
        QueryId::HourAvg | QueryId::DayAvg => {
            params.push(("m".into(), format!("avg:1m-avg:{m}{{hostname={host}}}")));
        }
        QueryId::MaxPerHost => params.push(("m".into(), format!("max:1h-max:{m}{{hostname=*}}"))),
        QueryId::SumAll => {
            for m in &plan.metrics {
                params.push(("m".into(), format!("sum:{m}")));
            }
        }
        QueryId::Last => {}
    }
    let params: Vec<(&str, &str)> = params
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    with_query("/api/query", &params)
}

fn parse_opentsdb(q: QueryId, plan: &QueryPlan, body: &[u8]) -> Result<Answer, String> {
    if q == QueryId::Last {
        #[derive(Deserialize)]
        struct Last {
            timestamp: i64,
            value: Json,
        }
        let rows: Vec<Last> = serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
        let [row] = rows.as_slice() else {
            return Err(format!("{} points answered, 1 expected", rows.len()));
        };
        let value = match &row.value {
            Json::String(s) => s.parse::<f64>().map_err(|e| format!("value {s:?}: {e}"))?,
            Json::Number(n) => n.as_f64().unwrap_or(f64::NAN),
            other => return Err(format!("value {other}")),
        };
        return Ok(Answer::Last {
            ts: Some(row.timestamp),
            value,
        });
    }
    let mut out = SeriesAnswer::new();
    for s in crate::tsdb_answer::parse(body)? {
        let key = match q {
            QueryId::MaxPerHost => s.tags.get("hostname").cloned().unwrap_or_default(),
            QueryId::SumAll => s.metric.clone(),
            _ => String::new(),
        };
        // Second keys unless the server answered in milliseconds.
        let points: Vec<(i64, f64)> = s
            .points
            .into_iter()
            .map(|(t, v)| (if t < 100_000_000_000 { t * 1000 } else { t }, v))
            .collect();
        if out.insert(key.clone(), points).is_some() {
            return Err(format!("two answers for {key:?}"));
        }
    }
    let _ = plan;
    Ok(Answer::Series(out))
}

/// `"name"` quoted as an InfluxQL identifier.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\\\""))
}

fn influxql_request(q: QueryId, plan: &QueryPlan) -> Request {
    let (measurement, field) = split_metric(plan.metric(0));
    let (measurement, field) = (ident(measurement), ident(field));
    let host = plan.host_name();
    let time = |q: QueryId| {
        let w = plan.window(q);
        format!("time >= {}ms AND time < {}ms", w.start_ms, w.end_ms)
    };
    let query = match q {
        QueryId::HourAvg | QueryId::DayAvg => format!(
            "SELECT mean({field}) FROM {measurement} WHERE \"hostname\" = '{host}' AND {} GROUP BY time(1m) fill(none)",
            time(q)
        ),
        QueryId::MaxPerHost => format!(
            "SELECT max({field}) FROM {measurement} WHERE {} GROUP BY time(1h), \"hostname\" fill(none)",
            time(q)
        ),
        QueryId::Last => {
            format!("SELECT last({field}) FROM {measurement} WHERE \"hostname\" = '{host}'")
        }
        QueryId::SumAll => {
            let fields: Vec<String> = plan
                .metrics
                .iter()
                .map(|m| format!("sum({})", ident(split_metric(m).1)))
                .collect();
            format!(
                "SELECT {} FROM {measurement} WHERE {} GROUP BY time({}ms) fill(none)",
                fields.join(", "),
                time(q),
                plan.interval_ms
            )
        }
    };
    with_query(
        "/query",
        &[("db", &plan.influx_db), ("epoch", "ms"), ("q", &query)],
    )
}

fn parse_influxql(q: QueryId, plan: &QueryPlan, body: &[u8]) -> Result<Answer, String> {
    #[derive(Deserialize)]
    struct Response {
        #[serde(default)]
        results: Vec<StatementResult>,
        error: Option<String>,
    }
    #[derive(Deserialize)]
    struct StatementResult {
        #[serde(default)]
        series: Vec<InfluxSeries>,
        error: Option<String>,
    }
    #[derive(Deserialize)]
    struct InfluxSeries {
        #[serde(default)]
        tags: BTreeMap<String, String>,
        columns: Vec<String>,
        values: Vec<Vec<Json>>,
    }
    let r: Response = serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
    if let Some(e) = r.error {
        return Err(e);
    }
    let Some(result) = r.results.into_iter().next() else {
        return Err("no statement result".into());
    };
    if let Some(e) = result.error {
        return Err(e);
    }
    let num = |v: &Json| v.as_f64().ok_or_else(|| format!("not a number: {v}"));
    let ts = |v: &Json| {
        v.as_i64()
            .ok_or_else(|| format!("not a millisecond time: {v}"))
    };
    if q == QueryId::Last {
        let row = result
            .series
            .first()
            .and_then(|s| s.values.first())
            .ok_or("no point answered")?;
        return Ok(Answer::Last {
            ts: Some(ts(row.first().ok_or("empty row")?)?),
            value: num(row.get(1).ok_or("no value column")?)?,
        });
    }
    let mut out = SeriesAnswer::new();
    for s in result.series {
        if q == QueryId::SumAll {
            // One series; one column per metric, named sum, sum_1, ... in order.
            for (col, metric) in plan.metrics.iter().enumerate() {
                let mut points = Vec::with_capacity(s.values.len());
                for row in &s.values {
                    let v = row.get(col + 1).ok_or("missing column")?;
                    if !v.is_null() {
                        points.push((ts(&row[0])?, num(v)?));
                    }
                }
                out.insert(metric.clone(), points);
            }
            let _ = &s.columns;
            continue;
        }
        let key = match q {
            QueryId::MaxPerHost => s.tags.get("hostname").cloned().unwrap_or_default(),
            _ => String::new(),
        };
        let mut points = Vec::with_capacity(s.values.len());
        for row in &s.values {
            let (Some(t), Some(v)) = (row.first(), row.get(1)) else {
                return Err("short row".into());
            };
            points.push((ts(t)?, num(v)?));
        }
        out.insert(key, points);
    }
    Ok(Answer::Series(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_specs() {
        let t: Target = "hourglass=127.0.0.1:4242".parse().expect("valid");
        assert_eq!((t.kind, t.names), (TargetKind::Hourglass, NameStyle::Dot));
        let t: Target = "prometheus=127.0.0.1:9090".parse().expect("valid");
        assert_eq!(t.names, NameStyle::Colon);
        let t: Target = "hourglass-promql=127.0.0.1:4242".parse().expect("valid");
        assert_eq!(
            (t.kind, t.names),
            (TargetKind::HourglassPromql, NameStyle::Colon)
        );
        assert_eq!(t.to_string(), "hourglass-promql");
        let t: Target = "vm/underscore=127.0.0.1:8428".parse().expect("valid");
        assert_eq!(
            (t.kind, t.names),
            (TargetKind::VictoriaMetrics, NameStyle::Underscore)
        );
        assert!("mysql=1:2".parse::<Target>().is_err());
        assert!("hourglass".parse::<Target>().is_err());
        assert!("vm/x=1:2".parse::<Target>().is_err());
    }
}
