//! The query model ([`TsQuery`], [`SubQuery`]) and its two wire forms
//! (spec §4.4.1–§4.4.3): the JSON POST body and the GET query string with
//! `m=` expressions.
//!
//! Parsing happens in two phases like OpenTSDB: first the wire form becomes a
//! raw query (strings as given; filter syntax errors surface here), then
//! `validate` resolves times, the aggregator and the downsampler in
//! OpenTSDB's order so the *first* error reported is the same one OpenTSDB
//! reports.
//!
//! JSON leniency follows Jackson's defaults as OpenTSDB configures them:
//! unknown fields are ignored (Grafana sends many), numbers are accepted for
//! string fields and numeric strings for number fields, floats are truncated
//! into integer fields. `tags` and `filters` may both be present: `tags` are
//! converted to group-by filters and merged, dropping exact duplicates.
//!
//! TSUID sub queries (`"tsuids":[hex,…]` / `tsuid=<agg>:[mods:]<hex>,…`)
//! ignore the metric and filters; their hex is validated here, the "one
//! metric" rule at execution (it needs the metric UID width).
//!
//! Not supported (clear 400s instead of silently wrong data): histogram /
//! percentile queries. Pre-aggregate options change nothing (pre-aggregates
//! are series with an `_aggregate` tag, selected by a filter); `rollupUsage`
//! (and the `rollup_*` modifier) is kept for the source.

use serde_json::{Map, Value};

use crate::aggregate::Aggregator;
use crate::downsample::DownsampleSpec;
use crate::error::QueryError;
use crate::filter::{TagFilter, add_group_by};
use crate::input::{has_param, json_err, opt_array, opt_string, parse_body, value_string};
use crate::rate::RateOptions;
use crate::time::{is_supported_timezone, parse_time_tz};

/// A validated `/api/query` request.
#[derive(Debug, Clone, PartialEq)]
pub struct TsQuery {
    /// Query start (ms).
    pub start_ms: i64,
    /// Query end (ms); defaults to now.
    pub end_ms: i64,
    /// Sub queries, in request order (identical ones too).
    pub queries: Vec<SubQuery>,
    /// `msResolution` / `ms`: output timestamps in ms.
    pub ms_resolution: bool,
    /// `showTSUIDs` / `show_tsuids`.
    pub show_tsuids: bool,
    /// `showQuery` / `show_query`: echo the sub query (with `index`).
    pub show_query: bool,
    /// `arrays` query-string flag: `dps` as `[[ts,v],...]`.
    pub arrays: bool,
    /// `noAnnotations` / `no_annotations`.
    pub no_annotations: bool,
    /// `globalAnnotations` / `global_annotations`.
    pub global_annotations: bool,
    /// `useCalendar`: every downsampler is calendar based.
    pub use_calendar: bool,
    /// `timezone`: absolute dates and calendar downsampling (IANA name).
    pub timezone: Option<String>,
    /// `delete` (JSON) or `method_override=delete` (query string); parsed
    /// only, the root decides what to do with it.
    pub delete: bool,
    /// `showStats` / `show_stats` (parsed, not acted upon).
    pub show_stats: bool,
    /// `showSummary` / `show_summary` (parsed, not acted upon).
    pub show_summary: bool,
}

/// One validated sub query.
#[derive(Debug, Clone, PartialEq)]
pub struct SubQuery {
    /// Position in [`TsQuery::queries`]; echoed as `query.index`.
    pub index: usize,
    /// Cross-series aggregator.
    pub aggregator: Aggregator,
    /// Metric name (ignored when `tsuids` is set; the metric then comes from
    /// the TSUIDs).
    pub metric: String,
    /// TSUID sub query: the exact series, as upper-case hex, all of one
    /// metric; filters are ignored then.
    pub tsuids: Vec<String>,
    /// Optional downsampler.
    pub downsample: Option<DownsampleSpec>,
    /// `Some` iff this is a rate query.
    pub rate: Option<RateOptions>,
    /// Tag filters (legacy tags already converted).
    pub filters: Vec<TagFilter>,
    /// Series must carry exactly the filtered tag keys.
    pub explicit_tags: bool,
    /// Whether rollup tiers may answer (`rollupUsage`, `rollup_*`).
    pub rollup_usage: crate::rollup::RollupUsage,
}

/// A query before validation: strings as the client sent them.
#[derive(Debug, Default)]
struct RawQuery {
    start: Option<String>,
    end: Option<String>,
    queries: Vec<RawSubQuery>,
    ms_resolution: bool,
    show_tsuids: bool,
    show_query: bool,
    arrays: bool,
    no_annotations: bool,
    global_annotations: bool,
    use_calendar: bool,
    timezone: Option<String>,
    delete: bool,
    show_stats: bool,
    show_summary: bool,
}

#[derive(Debug, Default)]
struct RawSubQuery {
    aggregator: Option<String>,
    metric: Option<String>,
    tsuids: Vec<String>,
    downsample: Option<String>,
    rate: bool,
    rate_options: Option<RateOptions>,
    filters: Vec<TagFilter>,
    explicit_tags: bool,
    histogram: bool,
    rollup_usage: crate::rollup::RollupUsage,
}

// ------------------------------------------------------------------ JSON --

/// Parses a POST body. `params` are the URL query-string pairs: `arrays`
/// (and, additively, `ms`, `show_tsuids`, `show_query`, `no_annotations`,
/// `global_annotations`) are honoured by presence.
pub fn parse_json_query(
    body: &[u8],
    params: &[(String, String)],
    now_ms: i64,
) -> Result<TsQuery, QueryError> {
    let root = parse_body(body)?;
    let obj = root
        .as_object()
        .ok_or_else(|| json_err("the query must be a JSON object"))?;

    let mut raw = RawQuery {
        start: opt_string(obj, "start")?,
        end: opt_string(obj, "end")?,
        ms_resolution: opt_bool(obj, "msResolution")?,
        show_tsuids: opt_bool(obj, "showTSUIDs")?,
        show_query: opt_bool(obj, "showQuery")?,
        no_annotations: opt_bool(obj, "noAnnotations")?,
        global_annotations: opt_bool(obj, "globalAnnotations")?,
        use_calendar: opt_bool(obj, "useCalendar")?,
        timezone: opt_string(obj, "timezone")?,
        delete: opt_bool(obj, "delete")?,
        show_stats: opt_bool(obj, "showStats")?,
        show_summary: opt_bool(obj, "showSummary")?,
        ..RawQuery::default()
    };
    for item in opt_array(obj, "queries")? {
        let sub = item
            .as_object()
            .ok_or_else(|| json_err("each sub query must be a JSON object"))?;
        raw.queries.push(json_sub_query(sub)?);
    }
    apply_flag_params(&mut raw, params);
    validate(raw, now_ms)
}

fn json_sub_query(obj: &Map<String, Value>) -> Result<RawSubQuery, QueryError> {
    let mut sub = RawSubQuery {
        aggregator: opt_string(obj, "aggregator")?,
        metric: opt_string(obj, "metric")?,
        downsample: opt_string(obj, "downsample")?,
        rate: opt_bool(obj, "rate")?,
        explicit_tags: opt_bool(obj, "explicitTags")?,
        rollup_usage: opt_string(obj, "rollupUsage")?
            .map(|u| crate::rollup::RollupUsage::parse(&u))
            .unwrap_or_default(),
        ..RawSubQuery::default()
    };
    for tsuid in opt_array(obj, "tsuids")? {
        if let Some(tsuid) = value_string(tsuid)? {
            sub.tsuids.push(tsuid);
        }
    }
    if let Some(opts) = obj.get("rateOptions") {
        match opts {
            Value::Null => {}
            Value::Object(o) => sub.rate_options = Some(json_rate_options(o)?),
            _ => return Err(json_err("'rateOptions' must be an object")),
        }
    }
    // Explicit filters first, then legacy tags merged as group-by filters.
    for item in opt_array(obj, "filters")? {
        let fields = item
            .as_object()
            .ok_or_else(|| json_err("each filter must be a JSON object"))?;
        let filter = json_tag_filter(fields)?;
        if !sub.filters.contains(&filter) {
            sub.filters.push(filter);
        }
    }
    match obj.get("tags") {
        None | Some(Value::Null) => {}
        Some(Value::Object(tags)) => {
            for (k, v) in tags {
                let v = value_string(v)?.unwrap_or_default();
                add_group_by(&mut sub.filters, TagFilter::from_legacy(k, &v, true)?);
            }
        }
        Some(_) => return Err(json_err("'tags' must be an object")),
    }
    let percentiles = obj.get("percentiles").is_some_and(|p| match p {
        Value::Array(a) => !a.is_empty(),
        Value::Null => false,
        _ => true,
    });
    sub.histogram = percentiles || opt_bool(obj, "showHistogramBuckets")?;
    Ok(sub)
}

/// One tag filter object (`{"type", "tagk", "filter", "groupBy"}`), as
/// `/api/query` and `/api/query/exp` filter sets write it.
pub(crate) fn json_tag_filter(fields: &Map<String, Value>) -> Result<TagFilter, QueryError> {
    let filter_type = opt_string(fields, "type")?.unwrap_or_else(|| "null".to_string());
    let tagk = opt_string(fields, "tagk")?.unwrap_or_default();
    let expr = opt_string(fields, "filter")?.unwrap_or_default();
    let group_by = opt_bool(fields, "groupBy")? || opt_bool(fields, "group_by")?;
    TagFilter::new(&filter_type, &tagk, &expr, group_by)
}

fn json_rate_options(obj: &Map<String, Value>) -> Result<RateOptions, QueryError> {
    let mut opts = RateOptions {
        counter: opt_bool(obj, "counter")? || opt_bool(obj, "isCounter")?,
        drop_resets: opt_bool(obj, "dropResets")?,
        ..RateOptions::default()
    };
    if let Some(max) = opt_i64(obj, "counterMax")? {
        opts.counter_max = max;
    }
    if let Some(reset) = opt_i64(obj, "resetValue")? {
        opts.reset_value = reset;
    }
    Ok(opts)
}

/// A boolean field ([`crate::input::opt_bool`]'s coercions), absent as
/// `false`.
fn opt_bool(obj: &Map<String, Value>, key: &str) -> Result<bool, QueryError> {
    Ok(crate::input::opt_bool(obj, key)?.unwrap_or(false))
}

/// An integer field; floats are truncated, numeric strings parsed, empty
/// strings treated as absent.
fn opt_i64(obj: &Map<String, Value>, key: &str) -> Result<Option<i64>, QueryError> {
    let bad = || json_err(&format!("'{key}' must be a number"));
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_i64() {
            Some(i) => Ok(Some(i)),
            // Saturating float-to-int cast = Jackson's truncation for sane values.
            None => n.as_f64().map(|f| Some(f as i64)).ok_or_else(bad),
        },
        Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
        Some(Value::String(s)) => {
            let s = s.trim();
            s.parse::<i64>()
                .ok()
                .or_else(|| s.parse::<f64>().ok().map(|f| f as i64))
                .map(Some)
                .ok_or_else(bad)
        }
        Some(_) => Err(bad()),
    }
}

// ---------------------------------------------------------- query string --

/// Parses the GET form: `start` (required), `end`, `m=` (repeatable),
/// `tsuid=` (repeatable, before all `m=`), and presence flags `ms`, `arrays`, `show_tsuids`,
/// `show_query`, `no_annotations`, `global_annotations`, `show_stats`,
/// `show_summary`, `padding`; `method_override=delete` sets `delete`.
/// (`timezone` is not read from the query string, like OpenTSDB 2.5.)
pub fn parse_query_string(params: &[(String, String)], now_ms: i64) -> Result<TsQuery, QueryError> {
    let last = |name: &str| {
        params
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let start = last("start")
        .filter(|s| !s.is_empty())
        .ok_or_else(|| QueryError::bad("Missing parameter <code>start</code>"))?;
    let mut raw = RawQuery {
        start: Some(start),
        end: last("end"),
        delete: last("method_override").is_some_and(|m| m.eq_ignore_ascii_case("delete")),
        ..RawQuery::default()
    };
    apply_flag_params(&mut raw, params);
    raw.show_stats |= has_param(params, "show_stats");
    raw.show_summary |= has_param(params, "show_summary");
    for (k, v) in params {
        if k == "tsuid" {
            raw.queries.push(parse_tsuid_sub_query(v)?);
        }
    }
    for (k, v) in params {
        if k == "m" {
            raw.queries.push(parse_m_sub_query(v)?);
        }
    }
    if raw.queries.is_empty() {
        return Err(QueryError::bad("Missing sub queries"));
    }
    validate(raw, now_ms)
}

/// Presence flags shared by both forms (OpenTSDB tests presence, not value).
fn apply_flag_params(raw: &mut RawQuery, params: &[(String, String)]) {
    raw.arrays |= has_param(params, "arrays");
    raw.ms_resolution |= has_param(params, "ms");
    raw.show_tsuids |= has_param(params, "show_tsuids");
    raw.show_query |= has_param(params, "show_query");
    raw.no_annotations |= has_param(params, "no_annotations");
    raw.global_annotations |= has_param(params, "global_annotations");
}

/// `m=<agg>:[<mod>:]{0,3}<metric>[{groupBy}][{filters}]` (spec §4.4.3).
fn parse_m_sub_query(expr: &str) -> Result<RawSubQuery, QueryError> {
    if expr.is_empty() {
        return Err(QueryError::bad("The query string was empty"));
    }
    let parts: Vec<&str> = expr.split(':').collect();
    check_part_count(expr, parts.len())?;
    let mut sub = RawSubQuery {
        aggregator: Some(parts[0].to_string()),
        ..RawSubQuery::default()
    };
    let (metric, filters) = parse_metric_and_filters(parts[parts.len() - 1])?;
    sub.metric = Some(metric);
    sub.filters = filters;
    for part in &parts[1..parts.len() - 1] {
        apply_modifier(&mut sub, part, true)?;
    }
    Ok(sub)
}

/// `tsuid=<agg>:[<mod>:]<tsuid>[,<tsuid>...]`; only rate, downsample and the
/// histogram modifiers apply.
fn parse_tsuid_sub_query(expr: &str) -> Result<RawSubQuery, QueryError> {
    if expr.is_empty() {
        return Err(QueryError::bad("The tsuid query string was empty"));
    }
    let parts: Vec<&str> = expr.split(':').collect();
    check_part_count(expr, parts.len())?;
    let mut sub = RawSubQuery {
        aggregator: Some(parts[0].to_string()),
        tsuids: parts[parts.len() - 1]
            .split(',')
            .map(str::to_string)
            .collect(),
        ..RawSubQuery::default()
    };
    for part in &parts[1..parts.len() - 1] {
        apply_modifier(&mut sub, part, false)?;
    }
    Ok(sub)
}

fn check_part_count(expr: &str, parts: usize) -> Result<(), QueryError> {
    if parts < 2 {
        return Err(QueryError::bad(format!(
            "Invalid parameter m={expr} (not enough :-separated parts)"
        )));
    }
    if parts > 5 {
        return Err(QueryError::bad(format!(
            "Invalid parameter m={expr} (too many :-separated parts)"
        )));
    }
    Ok(())
}

/// One middle part of an `m=`/`tsuid=` expression; first match wins,
/// unknown modifiers are ignored.
fn apply_modifier(sub: &mut RawSubQuery, part: &str, metric_query: bool) -> Result<(), QueryError> {
    let lower = part.to_lowercase();
    if lower.starts_with("rate") {
        sub.rate = true;
        if part.contains('{') {
            sub.rate_options = Some(parse_rate_options(part)?);
        }
    } else if part.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        sub.downsample = Some(part.to_string());
    } else if lower.starts_with("percentiles") {
        if !(part.contains('[') && part.ends_with(']')) {
            return Err(QueryError::bad(format!(
                "Malformated percentile query paramater: {part}"
            )));
        }
        sub.histogram = true;
    } else if lower.starts_with("show-histogram-buckets") {
        sub.histogram = true;
    } else if metric_query && lower.starts_with("explicit_tags") {
        sub.explicit_tags = true;
    } else if metric_query && lower.starts_with("rollup_") {
        sub.rollup_usage = crate::rollup::RollupUsage::parse(part);
    }
    // `pre-agg` picks OpenTSDB's pre-aggregate table; hourglass keeps
    // pre-aggregates in the data table as series with an `_aggregate` tag,
    // which the query's own filter selects (as in OpenTSDB): nothing to do.
    Ok(())
}

/// `rate{counter|dropcounter|x[,<counterMax>[,<resetValue>]]}`.
fn parse_rate_options(spec: &str) -> Result<RateOptions, QueryError> {
    let chars: Vec<char> = spec.chars().collect();
    if chars.len() == 4 {
        return Ok(RateOptions::default());
    }
    if chars.len() < 6 {
        return Err(QueryError::bad(format!(
            "Invalid rate options specification: {spec}"
        )));
    }
    // Like the original: drop "rate{" and the last character, unchecked.
    let inner: String = chars[5..chars.len() - 1].iter().collect();
    let parts: Vec<&str> = inner.split(',').collect();
    if parts.len() > 3 {
        return Err(QueryError::bad(format!(
            "Incorrect number of values in rate options specification, must be \
             counter[,counter max value,reset value], recieved: {} parts",
            parts.len()
        )));
    }
    let counter = parts[0].ends_with("counter");
    let counter_max = match parts.get(1) {
        Some(p) if !p.is_empty() => p.parse::<i64>().map_err(|_| {
            QueryError::bad(format!(
                "Max value of counter was not a number, received '{p}'"
            ))
        })?,
        _ => i64::MAX,
    };
    let reset_value = match parts.get(2) {
        Some(p) if !p.is_empty() => p.parse::<i64>().map_err(|_| {
            QueryError::bad(format!(
                "Reset value of counter was not a number, received '{p}'"
            ))
        })?,
        _ => 0,
    };
    Ok(RateOptions {
        counter,
        counter_max,
        reset_value,
        drop_resets: parts[0] == "dropcounter",
    })
}

/// `metric`, `metric{}`, `metric{a=b}`, `metric{a=b}{c=d}`, `metric{}{c=d}`.
/// The non-group-by set (from the *last* `{`) is parsed first, so its filters
/// come first; group-by items equal to an existing filter are merged.
fn parse_metric_and_filters(spec: &str) -> Result<(String, Vec<TagFilter>), QueryError> {
    if spec.is_empty() {
        return Err(QueryError::bad("Metric cannot be null or empty"));
    }
    let Some(curly) = spec.find('{') else {
        return Ok((spec.to_string(), Vec::new()));
    };
    let len = spec.len();
    if !spec.ends_with('}') {
        return Err(QueryError::bad(format!(
            "Missing '}}' at the end of: {spec}"
        )));
    }
    if curly == len - 2 {
        return Ok((spec[..len - 2].to_string(), Vec::new()));
    }
    let close = spec.find('}').unwrap_or(len - 1);
    if close < curly {
        return Err(QueryError::bad(format!(
            "Missing '{{' before '}}' in: {spec}"
        )));
    }
    let mut filters = Vec::new();
    if close != len - 1 {
        let bracket = spec.rfind('{').unwrap_or(curly);
        for item in spec[bracket + 1..len - 1].split(',') {
            if item.is_empty() {
                break;
            }
            let filter = parse_tag(item)
                .and_then(|(k, v)| TagFilter::from_legacy(k, v, false))
                .map_err(|e| {
                    QueryError::bad(format!("When parsing filter '{item}': {}", e.message()))
                })?;
            filters.push(filter);
        }
    }
    for item in spec[curly + 1..close].split(',') {
        if item.is_empty() && close != len - 1 {
            break;
        }
        let filter = parse_tag(item)
            .and_then(|(k, v)| TagFilter::from_legacy(k, v, true))
            .map_err(|e| QueryError::bad(format!("When parsing tag '{item}': {}", e.message())))?;
        add_group_by(&mut filters, filter);
    }
    Ok((spec[..curly].to_string(), filters))
}

/// `k=v` with exactly one `=` and both sides non-empty.
fn parse_tag(item: &str) -> Result<(&str, &str), QueryError> {
    let mut kv = item.split('=');
    match (kv.next(), kv.next(), kv.next()) {
        (Some(k), Some(v), None) if !k.is_empty() && !v.is_empty() => Ok((k, v)),
        _ => Err(QueryError::bad(format!("invalid tag: {item}"))),
    }
}

// ------------------------------------------------------------ validation --

/// TSQuery/TSSubQuery validation in OpenTSDB's order.
fn validate(raw: RawQuery, now_ms: i64) -> Result<TsQuery, QueryError> {
    let tz = raw.timezone.as_deref().filter(|t| !t.is_empty());
    let start = raw
        .start
        .as_deref()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| QueryError::bad("Missing start time"))?;
    let start_ms = parse_time_tz(start, now_ms, tz)?;
    let end_ms = match raw.end.as_deref().filter(|s| !s.is_empty()) {
        Some(end) => parse_time_tz(end, now_ms, tz)?,
        None => now_ms,
    };
    if end_ms < start_ms {
        return Err(QueryError::bad(format!(
            "End time [{end_ms}] must be greater than or equal to the start time [{start_ms}]"
        )));
    }
    if raw.queries.is_empty() {
        return Err(QueryError::bad("Missing queries"));
    }
    // Every sub-query answers, identical ones too: clients match results
    // to sub-queries by position (`index`).
    let mut queries: Vec<SubQuery> = Vec::with_capacity(raw.queries.len());
    for sub in raw.queries {
        queries.push(validate_sub(sub, raw.use_calendar, tz)?);
    }
    for (i, q) in queries.iter_mut().enumerate() {
        q.index = i;
    }
    Ok(TsQuery {
        start_ms,
        end_ms,
        queries,
        ms_resolution: raw.ms_resolution,
        show_tsuids: raw.show_tsuids,
        show_query: raw.show_query,
        arrays: raw.arrays,
        no_annotations: raw.no_annotations,
        global_annotations: raw.global_annotations,
        use_calendar: raw.use_calendar,
        timezone: raw.timezone,
        delete: raw.delete,
        show_stats: raw.show_stats,
        show_summary: raw.show_summary,
    })
}

/// A TSUID as upper-case hex; must be non-empty, even-length hex.
fn normalise_tsuid(tsuid: &str) -> Result<String, QueryError> {
    let tsuid = tsuid.trim();
    if tsuid.is_empty()
        || !tsuid.len().is_multiple_of(2)
        || !tsuid.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(QueryError::bad(format!("Invalid TSUID: {tsuid}")));
    }
    Ok(tsuid.to_ascii_uppercase())
}

/// Decodes validated upper-case hex.
pub(crate) fn decode_hex(hex: &str) -> Vec<u8> {
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let d = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
            (d(pair[0]) << 4) | d(pair.get(1).copied().unwrap_or(b'0'))
        })
        .collect()
}

fn validate_sub(
    raw: RawSubQuery,
    use_calendar: bool,
    tz: Option<&str>,
) -> Result<SubQuery, QueryError> {
    let agg_name = raw
        .aggregator
        .as_deref()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| QueryError::bad("Missing the aggregation function"))?;
    let aggregator = Aggregator::from_name(agg_name)
        .ok_or_else(|| QueryError::bad(format!("No such aggregation function: {agg_name}")))?;
    let metric = raw.metric.unwrap_or_default();
    if raw.tsuids.is_empty() && metric.is_empty() {
        return Err(QueryError::bad(
            "Missing the metric or tsuids, provide at least one",
        ));
    }
    let mut tsuids = Vec::with_capacity(raw.tsuids.len());
    for t in &raw.tsuids {
        tsuids.push(normalise_tsuid(t)?);
    }
    let downsample = match raw.downsample.as_deref().filter(|d| !d.is_empty()) {
        Some(d) => Some(DownsampleSpec::parse(d, use_calendar)?),
        None => None,
    };
    if raw.histogram {
        return Err(QueryError::bad(
            "Histogram and percentile queries are not supported yet",
        ));
    }
    if downsample.is_some()
        && let Some(tz) = tz
        && !is_supported_timezone(tz)
    {
        return Err(QueryError::bad(
            "The timezone specification could not be found",
        ));
    }
    // A TSUID query ignores the metric and the filters (§4.4.2).
    let filters = if tsuids.is_empty() {
        raw.filters
    } else {
        Vec::new()
    };
    Ok(SubQuery {
        index: 0,
        aggregator,
        metric,
        tsuids,
        downsample,
        rate: raw.rate.then(|| raw.rate_options.unwrap_or_default()),
        filters,
        explicit_tags: raw.explicit_tags,
        rollup_usage: raw.rollup_usage,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;
    use crate::input::owned_params;

    const NOW: i64 = 1_700_000_000_000;

    fn get(m: &str) -> Result<TsQuery, QueryError> {
        parse_query_string(&owned_params(&[("start", "1h-ago"), ("m", m)]), NOW)
    }

    fn get_ok(m: &str) -> SubQuery {
        get(m).unwrap().queries.remove(0)
    }

    fn get_err(m: &str) -> String {
        get(m).unwrap_err().message()
    }

    fn types(sub: &SubQuery) -> Vec<(&str, &str, &str, bool)> {
        sub.filters
            .iter()
            .map(|f| (f.type_name(), f.tagk.as_str(), f.expression(), f.group_by))
            .collect()
    }

    #[test]
    fn m_basic_forms() {
        let s = get_ok("sum:sys.cpu.0");
        assert_eq!(
            (s.aggregator, s.metric.as_str()),
            (Aggregator::Sum, "sys.cpu.0")
        );
        assert!(s.filters.is_empty() && s.rate.is_none() && s.downsample.is_none());
        let q = parse_query_string(
            &owned_params(&[
                ("start", "1h-ago"),
                ("end", "5m-ago"),
                ("m", "sum:sys.cpu.0"),
                ("m", "avg:sys.cpu.1"),
            ]),
            NOW,
        )
        .unwrap();
        assert_eq!(q.start_ms, NOW - 3_600_000);
        assert_eq!(q.end_ms, NOW - 300_000);
        assert_eq!(q.queries.len(), 2);
        assert_eq!(q.queries[1].aggregator, Aggregator::Avg);
        assert_eq!(q.queries[1].index, 1);
        assert!(get_ok("sum:rate:sys.cpu.0").rate.is_some());
        assert_eq!(
            get_ok("sum:1h-avg:sys.cpu.0").downsample.unwrap().spec,
            "1h-avg"
        );
        let s = get_ok("sum:1h-avg:rate:sys.cpu.0");
        assert!(s.rate.is_some());
        assert_eq!(s.downsample.unwrap().spec, "1h-avg");
        assert_eq!(get_ok("sum:sys.cpu.0{}").metric, "sys.cpu.0");
        assert!(get_ok("sum:sys.cpu.0{}{}").filters.is_empty());
    }

    #[test]
    fn m_tags_and_filters() {
        let s = get_ok("sum:sys.cpu.0{host=web01}");
        assert_eq!(types(&s), [("literal_or", "host", "web01", true)]);
        let s = get_ok("sum:sys.cpu.0{host=regexp(something(foo|bar))}");
        assert_eq!(types(&s), [("regexp", "host", "something(foo|bar)", true)]);
        let s = get_ok("sum:sys.cpu.0{host=wildcard(*quirm)}");
        assert_eq!(types(&s), [("wildcard", "host", "*quirm", true)]);
        let s = get_ok("sum:sys.cpu.0{host=*quirm}");
        assert_eq!(types(&s), [("wildcard", "host", "*quirm", true)]);
        let s = get_ok("sum:sys.cpu.0{}{host=wildcard(*quirm)}");
        assert_eq!(types(&s), [("wildcard", "host", "*quirm", false)]);
        let s = get_ok("sum:sys.cpu.0{}{host=*quirm}");
        assert_eq!(types(&s), [("wildcard", "host", "*quirm", false)]);
        let s = get_ok("sum:sys.cpu.0{colo=lga}{host=wildcard(*quirm)}");
        assert_eq!(
            types(&s),
            [
                ("wildcard", "host", "*quirm", false),
                ("literal_or", "colo", "lga", true)
            ]
        );
        let s = get_ok("sum:sys.cpu.0{host=quirm|tsort}{host=wildcard(*quirm)}");
        assert_eq!(
            types(&s),
            [
                ("wildcard", "host", "*quirm", false),
                ("literal_or", "host", "quirm|tsort", true)
            ]
        );
        let s = get_ok("sum:sys.cpu.0{host=wildcard(*tsort)}{host=wildcard(*quirm)}");
        assert_eq!(s.filters.len(), 2);
        // identical filter in both sets is merged and marked group-by
        let s = get_ok("sum:explicit_tags:sys.cpu.system{host=*}{host=*}");
        assert_eq!(types(&s), [("wildcard", "host", "*", true)]);
        assert!(s.explicit_tags);
        let s = get_ok("avg:1h-avg-nan:sys.cpu.0{}{host=wildcard(web*),colo=regexp(sjc.*)}");
        assert_eq!(
            types(&s),
            [
                ("wildcard", "host", "web*", false),
                ("regexp", "colo", "sjc.*", false)
            ]
        );
    }

    #[test]
    fn m_modifiers() {
        let s = get_ok("sum:explicit_tags:sys.cpu.0{host=web01}");
        assert!(s.explicit_tags);
        let s = get_ok("sum:explicit_tags:rate:1m-sum:sys.cpu.0{host=web01}");
        assert!(s.explicit_tags && s.rate.is_some());
        assert_eq!(s.downsample.unwrap().spec, "1m-sum");
        let s = get_ok("sum:explicit_tags:1m-sum:rate:sys.cpu.0{host=web01}");
        assert!(s.explicit_tags && s.rate.is_some());
        // `all` must be written with a leading digit
        assert!(get_ok("sum:0all-sum:m").downsample.is_some());
        assert!(get_ok("sum:all-sum:m").downsample.is_none());
        // unknown modifiers and pre-agg are ignored; rollup_* is kept
        let s = get_ok("sum:whatever:pre-agg:rollup_raw:m");
        assert!(s.downsample.is_none() && s.rate.is_none());
        assert_eq!(s.rollup_usage, crate::rollup::RollupUsage::Raw);
        let s = get_ok("sum:1d-max:m");
        assert_eq!(s.rollup_usage, crate::rollup::RollupUsage::NoFallback);
    }

    #[test]
    fn m_rate_options() {
        let r = get_ok("sum:rate{counter,,1000}:if.octets.in").rate.unwrap();
        assert_eq!(
            r,
            RateOptions {
                counter: true,
                counter_max: i64::MAX,
                reset_value: 1000,
                drop_resets: false
            }
        );
        let r = get_ok("sum:rate{counter,100,10}:m").rate.unwrap();
        assert_eq!((r.counter_max, r.reset_value), (100, 10));
        let r = get_ok("sum:rate{dropcounter}:m").rate.unwrap();
        assert!(r.counter && r.drop_resets);
        let r = get_ok("sum:rate{}:m").rate.unwrap();
        assert_eq!(r, RateOptions::default());
        let r = get_ok("sum:RATE:m").rate.unwrap();
        assert_eq!(r, RateOptions::default());
        assert_eq!(
            get_err("sum:rate{counter,abc}:m"),
            "Max value of counter was not a number, received 'abc'"
        );
        assert_eq!(
            get_err("sum:rate{counter,,abc}:m"),
            "Reset value of counter was not a number, received 'abc'"
        );
        assert_eq!(
            get_err("sum:rate{counter,1,2,3}:m"),
            "Incorrect number of values in rate options specification, must be \
             counter[,counter max value,reset value], recieved: 4 parts"
        );
        assert_eq!(
            get_err("sum:rate{:m"),
            "Invalid rate options specification: rate{"
        );
    }

    #[test]
    fn m_errors() {
        assert_eq!(
            get_err("sum"),
            "Invalid parameter m=sum (not enough :-separated parts)"
        );
        assert_eq!(
            get_err("sum:a:b:c:d:m"),
            "Invalid parameter m=sum:a:b:c:d:m (too many :-separated parts)"
        );
        assert_eq!(get_err(""), "The query string was empty");
        assert_eq!(
            get_err("sum:sys.cpu.0{host=wildcard(*tsort)}{host=wildcard(*quirm)"),
            "Missing '}' at the end of: sys.cpu.0{host=wildcard(*tsort)}{host=wildcard(*quirm)"
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{host=wildcard(*tsort)}{hostwildcard(*quirm)}"),
            "When parsing filter 'hostwildcard(*quirm)': invalid tag: hostwildcard(*quirm)"
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{host=nosuchfilter(*tsort)}{host=dummyfilter(*quirm)}"),
            "When parsing filter 'host=dummyfilter(*quirm)': Could not find a tag value filter \
             of the type: dummyfilter"
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{host=a=b}"),
            "When parsing tag 'host=a=b': invalid tag: host=a=b"
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{host=}"),
            "When parsing tag 'host=': invalid tag: host="
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{a=b,}"),
            "When parsing tag '': invalid tag: "
        );
        assert_eq!(
            get_err("sum:sys.cpu.0{host=iwildcard(web)}"),
            "When parsing tag 'host=iwildcard(web)': Filter must contain an asterisk"
        );
        assert_eq!(get_err("nosuch:m"), "No such aggregation function: nosuch");
        assert_eq!(get_err(":m"), "Missing the aggregation function");
        assert_eq!(
            get_err("sum:{host=a}"),
            "Missing the metric or tsuids, provide at least one"
        );
        assert_eq!(get_err("sum:"), "Metric cannot be null or empty");
        assert_eq!(
            get_err("sum:10m-avg-badbadbad:m"),
            "Unrecognized fill policy: badbadbad"
        );
        assert_eq!(
            get_err("sum:percentiles[99]:m"),
            "Histogram and percentile queries are not supported yet"
        );
        assert_eq!(
            get_err("sum:percentiles:m"),
            "Malformated percentile query paramater: percentiles"
        );
    }

    #[test]
    fn query_string_level_errors_and_flags() {
        let e = parse_query_string(&owned_params(&[("end", "1h-ago"), ("m", "sum:m")]), NOW)
            .unwrap_err();
        assert_eq!(e.message(), "Missing parameter <code>start</code>");
        let e = parse_query_string(&owned_params(&[("start", "1h-ago")]), NOW).unwrap_err();
        assert_eq!(e.message(), "Missing sub queries");
        let q = parse_query_string(
            &owned_params(&[
                ("start", "1h-ago"),
                (
                    "tsuid",
                    "sum:1m-avg:rate:000001000001000001,000001000001000002",
                ),
                ("m", "sum:m"),
            ]),
            NOW,
        )
        .unwrap();
        let t = &q.queries[0];
        assert_eq!(t.tsuids, ["000001000001000001", "000001000001000002"]);
        assert!(t.rate.is_some() && t.downsample.is_some());
        assert_eq!(q.queries[1].metric, "m");
        let e = parse_query_string(
            &owned_params(&[("start", "1h-ago"), ("tsuid", "sum:00001")]),
            NOW,
        )
        .unwrap_err();
        assert_eq!(e.message(), "Invalid TSUID: 00001");
        let e = parse_query_string(
            &owned_params(&[("start", "1h-ago"), ("end", "2h-ago"), ("m", "sum:m")]),
            NOW,
        )
        .unwrap_err();
        assert_eq!(
            e.message(),
            format!(
                "End time [{}] must be greater than or equal to the start time [{}]",
                NOW - 7_200_000,
                NOW - 3_600_000
            )
        );
        // start == end is fine
        assert!(
            parse_query_string(
                &owned_params(&[
                    ("start", "1356998400"),
                    ("end", "1356998400"),
                    ("m", "sum:m")
                ]),
                NOW
            )
            .is_ok()
        );
        let q = parse_query_string(
            &owned_params(&[
                ("start", "1356998400"),
                ("m", "sum:m"),
                ("ms", ""),
                ("arrays", "true"),
                ("show_tsuids", ""),
                ("show_query", ""),
                ("no_annotations", ""),
                ("global_annotations", ""),
                ("padding", ""),
            ]),
            NOW,
        )
        .unwrap();
        assert_eq!(q.start_ms, 1_356_998_400_000);
        assert_eq!(q.end_ms, NOW);
        assert!(q.ms_resolution && q.arrays && q.show_tsuids && q.show_query);
        assert!(q.no_annotations && q.global_annotations && !q.delete);
        let q = parse_query_string(
            &owned_params(&[
                ("start", "1h-ago"),
                ("m", "sum:m"),
                ("method_override", "DELETE"),
            ]),
            NOW,
        )
        .unwrap();
        assert!(q.delete);
    }

    fn post(body: &str) -> Result<TsQuery, QueryError> {
        parse_json_query(body.as_bytes(), &[], NOW)
    }

    fn post_err(body: &str) -> String {
        post(body).unwrap_err().message()
    }

    #[test]
    fn json_validation_messages() {
        assert_eq!(post_err(""), "Missing message content");
        assert_eq!(post_err("{"), "Unable to parse the given JSON");
        assert!(post("{").unwrap_err().details().is_some());
        assert_eq!(post_err("[]"), "Unable to parse the given JSON");
        assert_eq!(
            post_err(r#"{"queries":[{"aggregator":"sum","metric":"m"}]}"#),
            "Missing start time"
        );
        assert_eq!(post_err(r#"{"start":"1h-ago"}"#), "Missing queries");
        assert_eq!(
            post_err(r#"{"start":"1h-ago","queries":[]}"#),
            "Missing queries"
        );
        assert_eq!(
            post_err(r#"{"start":"1h-ago","queries":[{"metric":"m"}]}"#),
            "Missing the aggregation function"
        );
        assert_eq!(
            post_err(r#"{"start":"1h-ago","queries":[{"aggregator":"x","metric":"m"}]}"#),
            "No such aggregation function: x"
        );
        assert_eq!(
            post_err(r#"{"start":"1h-ago","queries":[{"aggregator":"sum"}]}"#),
            "Missing the metric or tsuids, provide at least one"
        );
        let q = post(
            r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"ignored","tsuids":["000001000001000001"],"tags":{"host":"*"}}]}"#,
        )
        .unwrap();
        assert_eq!(q.queries[0].tsuids, ["000001000001000001"]);
        assert!(q.queries[0].filters.is_empty());
        assert_eq!(
            post_err(r#"{"start":"1h-ago","queries":[{"aggregator":"sum","tsuids":["xyz1"]}]}"#),
            "Invalid TSUID: xyz1"
        );
        assert_eq!(
            post_err(
                r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","downsample":"1m-"}]}"#
            ),
            "Invalid downsampling specifier '1m-': must provide at least interval and function"
        );
        assert_eq!(
            post_err(
                r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","filters":[{"type":"nope","tagk":"host","filter":"x"}]}]}"#
            ),
            "Could not find a tag value filter of the type: nope"
        );
        assert_eq!(
            post_err(
                r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","filters":[{"tagk":"host","filter":"x"}]}]}"#
            ),
            "Could not find a tag value filter of the type: null"
        );
        assert_eq!(
            post_err(
                r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","percentiles":[99.0]}]}"#
            ),
            "Histogram and percentile queries are not supported yet"
        );
        assert_eq!(
            post_err(
                r#"{"start":"2013/01/01","timezone":"America/Nowhere","queries":[{"aggregator":"sum","metric":"m"}]}"#
            ),
            "Invalid timezone name: America/Nowhere"
        );
        assert_eq!(
            post_err(
                r#"{"start":"1h-ago","timezone":"America/Nowhere","queries":[{"aggregator":"sum","metric":"m","downsample":"1m-avg"}]}"#
            ),
            "The timezone specification could not be found"
        );
        // every IANA zone works, for dates and for downsampling
        let q = post(
            r#"{"start":"2013/01/01","timezone":"America/Denver","queries":[{"aggregator":"sum","metric":"m","downsample":"1dc-avg"}]}"#,
        )
        .unwrap();
        assert_eq!(q.start_ms, 1_357_023_600_000);
    }

    #[test]
    fn json_full_sub_query() {
        let q = post(
            r#"{"start":1356998400,"end":"1356998460","msResolution":true,"showTSUIDs":"true",
                "showQuery":1,"useCalendar":true,"timezone":"UTC","delete":false,
                "queries":[{"aggregator":"sum","metric":"sys.cpu.user","downsample":"1d-avg",
                  "rate":true,"rateOptions":{"counter":true,"counterMax":100.7,"resetValue":"5","dropResets":true},
                  "explicitTags":true,
                  "filters":[{"type":"literal_or","tagk":"host","filter":"web01|web02","group_by":true},
                             {"type":"regexp","tagk":"dc","filter":"^lga","groupBy":false}],
                  "tags":{"owner":"*"}}]}"#,
        )
        .unwrap();
        assert_eq!(
            (q.start_ms, q.end_ms),
            (1_356_998_400_000, 1_356_998_460_000)
        );
        assert!(q.ms_resolution && q.show_tsuids && q.show_query && q.use_calendar);
        assert_eq!(q.timezone.as_deref(), Some("UTC"));
        let s = &q.queries[0];
        assert!(matches!(
            s.downsample.as_ref().unwrap().interval,
            crate::downsample::DownsampleInterval::Calendar { .. }
        ));
        assert_eq!(
            s.rate,
            Some(RateOptions {
                counter: true,
                counter_max: 100,
                reset_value: 5,
                drop_resets: true
            })
        );
        assert!(s.explicit_tags);
        assert_eq!(
            types(s),
            [
                ("literal_or", "host", "web01|web02", true),
                ("regexp", "dc", "^lga", false),
                ("wildcard", "owner", "*", true)
            ]
        );
    }

    #[test]
    fn json_tags_and_filters_merge() {
        let q = post(
            r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m",
                "tags":{"host":"*","dc":"lga|sjc","rack":"r*"},
                "filters":[{"type":"wildcard","tagk":"host","filter":"*","groupBy":false}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            types(&q.queries[0]),
            [
                ("wildcard", "host", "*", true),
                ("literal_or", "dc", "lga|sjc", true),
                ("wildcard", "rack", "r*", true)
            ]
        );
        assert!(
            q.queries[0].filters[2].matches("R1"),
            "legacy star values ignore case"
        );
    }

    #[test]
    fn json_rate_without_options_and_counter_alias() {
        let q =
            post(r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","rate":true}]}"#)
                .unwrap();
        assert_eq!(q.queries[0].rate, Some(RateOptions::default()));
        let q = post(
            r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","rate":false,"rateOptions":{"isCounter":true}}]}"#,
        )
        .unwrap();
        assert_eq!(q.queries[0].rate, None);
        let q = post(
            r#"{"start":"1h-ago","queries":[{"aggregator":"sum","metric":"m","rate":true,"rateOptions":{"isCounter":true,"counterMax":""}}]}"#,
        )
        .unwrap();
        assert_eq!(
            q.queries[0].rate,
            Some(RateOptions {
                counter: true,
                ..RateOptions::default()
            })
        );
    }

    #[test]
    fn json_identical_sub_queries_each_answer_in_order() {
        // Issue 22, defect 5: identical sub-queries were collapsed into one,
        // and clients match results to sub-queries by position.
        let q = post(
            r#"{"start":"1h-ago","queries":[
                {"aggregator":"sum","metric":"a"},
                {"aggregator":"sum","metric":"a"},
                {"aggregator":"sum","metric":"b"}]}"#,
        )
        .unwrap();
        let names: Vec<(&str, usize)> = q
            .queries
            .iter()
            .map(|s| (s.metric.as_str(), s.index))
            .collect();
        assert_eq!(names, [("a", 0), ("a", 1), ("b", 2)]);
    }

    #[test]
    fn json_params_and_time_forms() {
        let params = owned_params(&[("arrays", "true")]);
        let q = parse_json_query(
            br#"{"start":1700000000000,"end":1700003600000,"queries":[{"aggregator":"sum","metric":"m"}]}"#,
            &params,
            NOW,
        )
        .unwrap();
        assert!(q.arrays);
        assert_eq!(
            (q.start_ms, q.end_ms),
            (1_700_000_000_000, 1_700_003_600_000)
        );
        let q = post(r#"{"start":1700000000,"end":1700003600,"queries":[{"aggregator":"sum","metric":"m"}]}"#)
            .unwrap();
        assert_eq!(
            (q.start_ms, q.end_ms),
            (1_700_000_000_000, 1_700_003_600_000)
        );
        let q = post(r#"{"start":"1699920000","queries":[{"aggregator":"sum","metric":"m"}]}"#)
            .unwrap();
        assert_eq!(q.start_ms, 1_699_920_000_000);
        assert_eq!(q.end_ms, NOW);
    }
}
