//! `/api/query` results as an Arrow IPC **stream** ([`render_arrow`]), for
//! `?format=arrow` / `Accept: application/vnd.apache.arrow.stream`.
//!
//! One row per output point; one record batch per result series (so memory
//! follows one series at a time and the dictionaries stay tiny). Schema:
//!
//! | column | type | notes |
//! |---|---|---|
//! | `timestamp` | `Timestamp(Millisecond, "UTC")`, not null | always ms; without `msResolution` truncated to whole seconds, like the JSON keys |
//! | `value` | `Float64`, nullable | integers are converted (exact up to 2^53); NaN stays NaN, except that fill policy `null` (and `arrays`, as in the JSON) writes null |
//! | `series` | `UInt32`, not null | index of the result series (the JSON array position) |
//! | `metric` | `Dictionary(Int32, Utf8)`, not null | |
//! | `tag.<key>` | `Dictionary(Int32, Utf8)`, nullable | one column per tag key of any result's `tags`, sorted by key; null where a series does not have the key in `tags` (keys in `aggregateTags` are null too) |
//!
//! The schema's metadata carries `hourglass.aggregate_tags.<series>` =
//! comma-joined `aggregateTags` of each series that has any.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use arrow_array::builder::StringDictionaryBuilder;
use arrow_array::types::Int32Type;
use arrow_array::{ArrayRef, Float64Array, RecordBatch, TimestampMillisecondArray, UInt32Array};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::downsample::FillPolicy;
use crate::error::QueryError;
use crate::exec::QueryResult;
use crate::num::Num;
use crate::request::TsQuery;

/// Prefix of the per-tag-key columns.
pub const TAG_COLUMN_PREFIX: &str = "tag.";

fn dict_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
}

fn arrow_err(e: impl std::fmt::Display) -> QueryError {
    QueryError::Execution(format!("Arrow encoding failed: {e}"))
}

/// Renders `results` of `query` as an Arrow IPC stream.
pub fn render_arrow(query: &TsQuery, results: &[QueryResult]) -> Result<Vec<u8>, QueryError> {
    let keys: BTreeSet<&str> = results
        .iter()
        .flat_map(|r| r.tags.keys().map(String::as_str))
        .collect();
    let mut fields = vec![
        Field::new(
            "timestamp",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            false,
        ),
        Field::new("value", DataType::Float64, true),
        Field::new("series", DataType::UInt32, false),
        Field::new("metric", dict_type(), false),
    ];
    for k in &keys {
        fields.push(Field::new(
            format!("{TAG_COLUMN_PREFIX}{k}"),
            dict_type(),
            true,
        ));
    }
    let metadata: HashMap<String, String> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.aggregate_tags.is_empty())
        .map(|(i, r)| {
            (
                format!("hourglass.aggregate_tags.{i}"),
                r.aggregate_tags.join(","),
            )
        })
        .collect();
    let schema = Arc::new(Schema::new_with_metadata(fields, metadata));
    let mut out = Vec::new();
    {
        let mut writer = StreamWriter::try_new(&mut out, &schema).map_err(arrow_err)?;
        for (i, r) in results.iter().enumerate() {
            let series = u32::try_from(i).map_err(arrow_err)?;
            let nan_as_null = query.arrays
                || query
                    .queries
                    .iter()
                    .find(|s| s.index == r.sub_query)
                    .and_then(|s| s.downsample.as_ref())
                    .is_some_and(|d| d.fill == FillPolicy::Null);
            let n = r.dps.len();
            let ts: TimestampMillisecondArray = r
                .dps
                .iter()
                .map(|(t, _)| {
                    if query.ms_resolution {
                        *t
                    } else {
                        t / 1000 * 1000
                    }
                })
                .collect::<Vec<i64>>()
                .into();
            let values: Float64Array = r
                .dps
                .iter()
                .map(|(_, v)| {
                    let f = match v {
                        Num::Int(i) => *i as f64,
                        Num::Float(f) => *f,
                    };
                    (!(nan_as_null && f.is_nan())).then_some(f)
                })
                .collect();
            let mut columns: Vec<ArrayRef> = vec![
                Arc::new(ts.with_timezone("UTC")),
                Arc::new(values),
                Arc::new(UInt32Array::from(vec![series; n])),
                Arc::new(constant_dict(Some(&r.metric), n)),
            ];
            for k in &keys {
                columns.push(Arc::new(constant_dict(
                    r.tags.get(*k).map(String::as_str),
                    n,
                )));
            }
            let batch = RecordBatch::try_new(Arc::clone(&schema), columns).map_err(arrow_err)?;
            writer.write(&batch).map_err(arrow_err)?;
        }
        writer.finish().map_err(arrow_err)?;
    }
    Ok(out)
}

/// A dictionary column holding `value` (or null) `len` times.
fn constant_dict(value: Option<&str>, len: usize) -> arrow_array::DictionaryArray<Int32Type> {
    let mut b =
        StringDictionaryBuilder::<Int32Type>::with_capacity(len, 1, value.map_or(0, str::len));
    for _ in 0..len {
        match value {
            Some(v) => {
                b.append_value(v);
            }
            None => b.append_null(),
        }
    }
    b.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use std::collections::BTreeMap;
    use std::io::Cursor;

    use arrow_array::Array;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, TimestampMillisecondType, UInt32Type};
    use arrow_ipc::reader::StreamReader;

    use super::*;
    use crate::render::render_json;
    use crate::request::parse_query_string;

    fn query(extra: &[(&str, &str)], m: &[&str]) -> TsQuery {
        let mut p = vec![
            ("start".to_string(), "1356998400".to_string()),
            ("end".to_string(), "1357041600".to_string()),
        ];
        p.extend(m.iter().map(|m| ("m".to_string(), m.to_string())));
        p.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        parse_query_string(&p, 0).unwrap()
    }

    fn result(
        sub: usize,
        tags: &[(&str, &str)],
        agg: &[&str],
        dps: Vec<(i64, Num)>,
    ) -> QueryResult {
        QueryResult {
            sub_query: sub,
            metric: format!("sys.m{sub}"),
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            aggregate_tags: agg.iter().map(|s| s.to_string()).collect(),
            tsuids: Vec::new(),
            annotations: Vec::new(),
            global_annotations: Vec::new(),
            dps,
        }
    }

    /// Decodes the IPC stream and compares every row with the JSON
    /// renderer's output for the same results.
    fn check_against_json(q: &TsQuery, results: &[QueryResult]) {
        let bytes = render_arrow(q, results).unwrap();
        let reader = StreamReader::try_new(Cursor::new(bytes), None).unwrap();
        let schema = reader.schema();
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let json: serde_json::Value = serde_json::from_slice(&render_json(q, results)).unwrap();
        let json = json.as_array().unwrap();
        let mut rows = 0;
        for batch in &batches {
            let ts = batch.column(0).as_primitive::<TimestampMillisecondType>();
            let vs = batch.column(1).as_primitive::<Float64Type>();
            let series = batch.column(2).as_primitive::<UInt32Type>();
            let metric = batch.column(3).as_dictionary::<Int32Type>();
            let metric_values = metric.values().as_string::<i32>();
            for row in 0..batch.num_rows() {
                let s = series.value(row) as usize;
                let obj = &json[s];
                assert_eq!(
                    metric_values.value(metric.keys().value(row) as usize),
                    obj["metric"]
                );
                let key_ts = if q.ms_resolution {
                    ts.value(row)
                } else {
                    ts.value(row) / 1000
                };
                let r = &results[s];
                let pos = r
                    .dps
                    .iter()
                    .position(|(t, _)| (if q.ms_resolution { *t } else { t / 1000 }) == key_ts)
                    .unwrap();
                let want = &obj["dps"][key_ts.to_string()];
                if vs.is_null(row) {
                    assert!(want.is_null(), "{want}");
                } else if vs.value(row).is_nan() {
                    assert_eq!(want, "NaN");
                } else {
                    assert_eq!(vs.value(row), want.as_f64().unwrap(), "row {row}");
                    assert!(pos < r.dps.len());
                }
                // tag columns
                for (ci, f) in schema.fields().iter().enumerate().skip(4) {
                    let key = f.name().strip_prefix(TAG_COLUMN_PREFIX).unwrap();
                    let col = batch.column(ci).as_dictionary::<Int32Type>();
                    let vals = col.values().as_string::<i32>();
                    match obj["tags"].get(key) {
                        Some(v) => assert_eq!(vals.value(col.keys().value(row) as usize), v),
                        None => assert!(col.is_null(row)),
                    }
                }
                rows += 1;
            }
        }
        let want_rows: usize = results.iter().map(|r| r.dps.len()).sum();
        assert_eq!(rows, want_rows);
    }

    #[test]
    fn arrow_matches_json() {
        let q = query(&[], &["sum:m", "sum:1m-avg-nan:m2"]);
        let results = vec![
            result(
                0,
                &[("host", "web01")],
                &["dc"],
                vec![
                    (1_356_998_430_000, Num::Int(1)),
                    (1_356_998_460_000, Num::Int(-3)),
                    (1_356_998_490_000, Num::Float(2.5)),
                ],
            ),
            result(
                1,
                &[("dc", "lga")],
                &[],
                vec![
                    (1_356_998_400_000, Num::Float(f64::NAN)),
                    (1_356_998_460_000, Num::Float(0.1)),
                ],
            ),
        ];
        check_against_json(&q, &results);
        let q = query(&[("ms", "")], &["sum:m", "sum:1m-avg-null:m2"]);
        let mut ms = results.clone();
        ms[0].dps[0].0 += 123;
        check_against_json(&q, &ms);
        let bytes = render_arrow(&q, &ms).unwrap();
        // Manual cross-check with another Arrow implementation (pyarrow):
        // HOURGLASS_ARROW_SAMPLE=/tmp/s.arrows cargo test -p hourglass-query arrow
        if let Ok(path) = std::env::var("HOURGLASS_ARROW_SAMPLE") {
            std::fs::write(path, &bytes).unwrap();
        }
        let reader = StreamReader::try_new(Cursor::new(bytes), None).unwrap();
        let schema = reader.schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names,
            [
                "timestamp",
                "value",
                "series",
                "metric",
                "tag.dc",
                "tag.host"
            ]
        );
        assert_eq!(
            schema
                .metadata()
                .get("hourglass.aggregate_tags.0")
                .map(String::as_str),
            Some("dc")
        );
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        // ms timestamps survive; null fill writes null
        let ts = batches[0]
            .column(0)
            .as_primitive::<TimestampMillisecondType>();
        assert_eq!(ts.value(0), 1_356_998_430_123);
        assert!(batches[1].column(1).is_null(0));
    }

    #[test]
    fn empty_result_is_a_schema_only_stream() {
        let q = query(&[], &["sum:m"]);
        let bytes = render_arrow(&q, &[]).unwrap();
        let reader = StreamReader::try_new(Cursor::new(bytes), None).unwrap();
        assert_eq!(reader.schema().fields().len(), 4);
        assert_eq!(reader.count(), 0);
    }
}
