//! The `/api/query/exp` response body, as OpenTSDB's `QueryExecutor`
//! writes it with Jackson:
//!
//! ```text
//! {"outputs":[{"id":…,"alias":…,"dps":[[ts,v1,v2,…],…],
//!              "dpsMeta":{"firstTimestamp":…,"lastTimestamp":…,"setCount":…,"series":…},
//!              "meta":[{"index":0,"metrics":["timestamp"]},
//!                      {"index":1,"metrics":[…],"commonTags":{…},"aggregatedTags":[…]},…]}],
//!  "query":{…the request as parsed…}}
//! ```
//!
//! Timestamps are in milliseconds; values are written as doubles (Java's
//! `Double.toString`), NaN and infinities as the strings `"NaN"`,
//! `"Infinity"`, `"-Infinity"`; `alias` only when given; `meta` only when
//! there are series; `metrics` sorted.
//!
//! Differences from OpenTSDB (bugs not reproduced): `lastTimestamp` is the
//! last written timestamp also when only one row is written (OpenTSDB
//! writes 0 then), `firstTimestamp` is 0 for an output without rows also
//! when it is a metric (OpenTSDB writes `Long.MAX_VALUE` then), and each
//! series' `metrics` are its own (OpenTSDB repeats the first series' list).

use std::fmt::Write as _;

use crate::budget::QueryBudget;
use crate::error::QueryError;
use crate::expression::exp::eval::Matrix;
use crate::expression::exp::request::{ExpRequest, JoinSpec};
use crate::expression::fill::NumericFillPolicy;
use crate::json_out::{push_jackson_double, push_str_list, push_str_lit, push_str_map};

/// Appends one output object, looking at the budget's deadline and
/// cancellation as rows go by (`tick` is the caller's loop counter): a
/// large answer takes as long to write as to compute.
pub(crate) fn push_output(
    out: &mut String,
    id: &str,
    alias: Option<&str>,
    matrix: &Matrix,
    budget: &QueryBudget,
    tick: &mut u32,
) -> Result<(), QueryError> {
    out.push_str("{\"id\":");
    push_str_lit(out, id);
    if let Some(alias) = alias {
        out.push_str(",\"alias\":");
        push_str_lit(out, alias);
    }
    out.push_str(",\"dps\":[");
    let width = matrix.series.len();
    if width > 0 {
        for (row, ts) in matrix.timestamps.iter().enumerate() {
            budget.tick(tick)?;
            if row > 0 {
                out.push(',');
            }
            let _ = write!(out, "[{ts}");
            for value in matrix.values.iter().skip(row * width).take(width) {
                out.push(',');
                push_jackson_double(out, *value);
            }
            out.push(']');
        }
    }
    out.push(']');
    let rows = if width > 0 {
        matrix.timestamps.len()
    } else {
        0
    };
    let first = if rows > 0 { matrix.timestamps[0] } else { 0 };
    let last = if rows > 0 {
        matrix.timestamps[rows - 1]
    } else {
        0
    };
    let _ = write!(
        out,
        ",\"dpsMeta\":{{\"firstTimestamp\":{first},\"lastTimestamp\":{last},\"setCount\":{rows},\"series\":{width}}}"
    );
    if width > 0 {
        out.push_str(",\"meta\":[{\"index\":0,\"metrics\":[\"timestamp\"]}");
        for (i, meta) in matrix.series.iter().enumerate() {
            budget.tick(tick)?;
            let _ = write!(out, ",{{\"index\":{},\"metrics\":[", i + 1);
            let metrics: Vec<String> = meta.metrics.iter().cloned().collect();
            push_str_list(out, &metrics);
            out.push_str("],\"commonTags\":");
            push_str_map(out, &meta.tags);
            out.push_str(",\"aggregatedTags\":[");
            let aggregated: Vec<String> = meta.aggregated_tags.iter().cloned().collect();
            push_str_list(out, &aggregated);
            out.push_str("]}");
        }
        out.push(']');
    }
    out.push('}');
    Ok(())
}

/// The `query` object: the request as OpenTSDB's pojos serialise after
/// validation (an expression without `join` shows the default union).
pub(crate) fn push_query_echo(out: &mut String, req: &ExpRequest) {
    out.push_str("{\"name\":");
    push_opt_str(out, req.name.as_deref());
    out.push_str(",\"time\":");
    match &req.time {
        None => out.push_str("null"),
        Some(t) => {
            out.push_str("{\"start\":");
            push_opt_str(out, t.start.as_deref());
            out.push_str(",\"end\":");
            push_opt_str(out, t.end.as_deref());
            out.push_str(",\"timezone\":");
            push_opt_str(out, t.timezone.as_deref());
            out.push_str(",\"downsampler\":");
            match &t.downsampler {
                None => out.push_str("null"),
                Some(d) => {
                    out.push_str("{\"interval\":");
                    push_opt_str(out, d.interval.as_deref());
                    out.push_str(",\"aggregator\":");
                    push_opt_str(out, d.aggregator.as_deref());
                    out.push_str(",\"fillPolicy\":");
                    push_fill(out, d.fill_policy);
                    out.push('}');
                }
            }
            out.push_str(",\"aggregator\":");
            push_opt_str(out, t.aggregator.as_deref());
            let _ = write!(out, ",\"rate\":{}}}", t.rate);
        }
    }
    out.push_str(",\"filters\":");
    push_list(out, req.filters.as_deref(), |out, f| {
        out.push_str("{\"id\":");
        push_opt_str(out, f.id.as_deref());
        out.push_str(",\"tags\":");
        push_list(out, f.tags.as_deref(), |out, tag| {
            out.push_str("{\"tagk\":");
            push_str_lit(out, &tag.tagk);
            out.push_str(",\"filter\":");
            push_str_lit(out, tag.expression());
            let _ = write!(out, ",\"group_by\":{},\"type\":", tag.group_by);
            push_str_lit(out, tag.type_name());
            out.push('}');
        });
        let _ = write!(out, ",\"explicitTags\":{}}}", f.explicit_tags);
    });
    out.push_str(",\"metrics\":");
    push_list(out, req.metrics.as_deref(), |out, m| {
        out.push_str("{\"metric\":");
        push_opt_str(out, m.metric.as_deref());
        out.push_str(",\"id\":");
        push_opt_str(out, m.id.as_deref());
        out.push_str(",\"filter\":");
        push_opt_str(out, m.filter.as_deref());
        out.push_str(",\"aggregator\":");
        push_opt_str(out, m.aggregator.as_deref());
        out.push_str(",\"fillPolicy\":");
        push_fill(out, m.fill_policy);
        out.push_str(",\"timeOffset\":");
        push_opt_str(out, m.time_offset.as_deref());
        out.push('}');
    });
    out.push_str(",\"expressions\":");
    push_list(out, req.expressions.as_deref(), |out, e| {
        out.push_str("{\"id\":");
        push_opt_str(out, e.id.as_deref());
        out.push_str(",\"expr\":");
        push_opt_str(out, e.expr.as_deref());
        out.push_str(",\"join\":");
        push_join(out, e.join);
        out.push_str(",\"fillPolicy\":");
        push_fill(out, e.fill_policy);
        out.push('}');
    });
    out.push_str(",\"outputs\":");
    push_list(out, req.outputs.as_deref(), |out, o| {
        out.push_str("{\"id\":");
        push_opt_str(out, o.id.as_deref());
        out.push_str(",\"alias\":");
        push_opt_str(out, o.alias.as_deref());
        out.push('}');
    });
    out.push('}');
}

fn push_join(out: &mut String, join: Option<JoinSpec>) {
    match join {
        None => out.push_str("null"),
        Some(j) => {
            out.push_str("{\"operator\":");
            push_opt_str(out, j.operator.map(|op| op.name()));
            let _ = write!(
                out,
                ",\"useQueryTags\":{},\"includeAggTags\":{}}}",
                j.use_query_tags, j.include_agg_tags
            );
        }
    }
}

fn push_fill(out: &mut String, fill: Option<NumericFillPolicy>) {
    match fill {
        None => out.push_str("null"),
        Some(f) => {
            out.push_str("{\"policy\":");
            push_str_lit(out, f.kind.name());
            out.push_str(",\"value\":");
            push_jackson_double(out, f.value);
            out.push('}');
        }
    }
}

fn push_opt_str(out: &mut String, value: Option<&str>) {
    match value {
        Some(s) => push_str_lit(out, s),
        None => out.push_str("null"),
    }
}

fn push_list<T>(out: &mut String, items: Option<&[T]>, mut item: impl FnMut(&mut String, &T)) {
    let Some(items) = items else {
        out.push_str("null");
        return;
    };
    out.push('[');
    for (i, value) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        item(out, value);
    }
    out.push(']');
}
