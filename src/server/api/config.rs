//! `/api/config` (the effective configuration in OpenTSDB's shape: one flat
//! JSON object of strings, sorted by key) and `/api/serializers`.
//!
//! Every hourglass key appears as `hourglass.<table>.<key>`, and the
//! OpenTSDB keys with an hourglass equivalent as `tsd.*`, so scripts that
//! read e.g. `tsd.network.port` or `tsd.core.auto_create_metrics` work.
//! Values of keys that look secret are masked (OpenTSDB masks `PASS`).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use crate::config::Config;
use crate::server::Ctx;
use crate::server::http::{json_response, respond};

const MASK: &str = "********";

fn secret(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["pass", "secret", "token", "credential", "private_key"]
        .iter()
        .any(|s| k.contains(s))
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(text).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// Objects become dotted keys; everything else one string value.
fn flatten(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                flatten(&format!("{prefix}.{k}"), v, out);
            }
        }
        other => {
            let value = if secret(prefix) {
                MASK.to_string()
            } else {
                text(other)
            };
            out.insert(prefix.to_string(), value);
        }
    }
}

/// The effective configuration as OpenTSDB prints it.
pub fn config_map(cfg: &Config) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Ok(v) = serde_json::to_value(cfg) {
        flatten("hourglass", &v, &mut out);
    }
    let b = |x: bool| x.to_string();
    let tsd = [
        ("tsd.mode", "rw".to_string()),
        ("tsd.network.bind", cfg.server.bind.clone()),
        ("tsd.network.port", cfg.server.port.to_string()),
        (
            "tsd.core.auto_create_metrics",
            b(cfg.uid.auto_create_metrics),
        ),
        ("tsd.core.auto_create_tagks", b(cfg.uid.auto_create_tagks)),
        ("tsd.core.auto_create_tagvs", b(cfg.uid.auto_create_tagvs)),
        ("tsd.core.meta.enable_tsuid_tracking", "false".to_string()),
        ("tsd.storage.fix_duplicates", "true".to_string()),
        (
            "tsd.storage.uid.width.metric",
            cfg.schema.metric_width.to_string(),
        ),
        (
            "tsd.storage.uid.width.tagk",
            cfg.schema.tagk_width.to_string(),
        ),
        (
            "tsd.storage.uid.width.tagv",
            cfg.schema.tagv_width.to_string(),
        ),
        ("tsd.storage.salt.width", cfg.schema.salt_width.to_string()),
        (
            "tsd.storage.salt.buckets",
            cfg.schema.salt_buckets.to_string(),
        ),
        ("tsd.storage.max_tags", cfg.schema.max_tags.to_string()),
        (
            "tsd.query.timeout",
            (cfg.query.timeout_secs * 1000).to_string(),
        ),
        (
            "tsd.query.limits.data_points.default",
            cfg.query.max_points.to_string(),
        ),
        ("tsd.http.query.allow_delete", b(cfg.query.allow_delete)),
        (
            "tsd.http.request.max_chunk",
            cfg.server.max_body_bytes.to_string(),
        ),
        ("tsd.http.request.enable_chunked", "true".to_string()),
        (
            "tsd.http.request.cors_domains",
            cfg.server.cors_domains.join(","),
        ),
        (
            "tsd.http.request.cors_headers",
            cfg.server.cors_headers.clone(),
        ),
    ];
    for (k, v) in tsd {
        out.insert(k.to_string(), v);
    }
    out
}

pub async fn config(State(ctx): State<Arc<Ctx>>) -> Response {
    let body = serde_json::to_string(&config_map(&ctx.config)).unwrap_or_else(|_| "{}".into());
    respond(&ctx, "config", Ok(json_response(StatusCode::OK, body)))
}

/// OpenTSDB 2.3's shape; only the JSON serializer exists (Arrow output is
/// chosen per query with `format=arrow` or `Accept`, not a serializer).
pub async fn serializers(State(ctx): State<Arc<Ctx>>) -> Response {
    let body = serde_json::json!([{
        "serializer": "json",
        "class": "net.opentsdb.tsd.HttpJsonSerializer",
        "request_content_type": "application/json",
        "response_content_type": "application/json; charset=UTF-8",
        "parsers": ["parsePutV1", "parseSuggestV1", "parseUidAssignV1", "parseUidRenameV1",
                    "parseQueryV1", "parseLastPointQueryV1", "parseSearchQueryV1"],
        "formatters": ["formatSuggestV1", "formatSerializersV1", "formatAggregatorsV1",
                       "formatVersionV1", "formatQueryV1", "formatLastPointQueryV1",
                       "formatUidAssignV1", "formatUidRenameV1", "formatUidMetaV1",
                       "formatTSMetaV1", "formatSearchResultsV1", "formatConfigV1",
                       "formatFilterConfigV1", "formatStatsV1"],
    }]);
    respond(
        &ctx,
        "serializers",
        Ok(json_response(StatusCode::OK, body.to_string())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_sorted_strings_with_secrets_masked() {
        let cfg = Config::default();
        let m = config_map(&cfg);
        assert_eq!(m["tsd.core.auto_create_metrics"], "true");
        assert_eq!(m["hourglass.server.port"], cfg.server.port.to_string());
        assert_eq!(m["hourglass.retention.ttl"], cfg.retention.ttl);
        let mut out = BTreeMap::new();
        flatten(
            "x",
            &serde_json::json!({"db": {"password": "p", "user": "u", "list": [1, 2]}}),
            &mut out,
        );
        assert_eq!(out["x.db.password"], MASK);
        assert_eq!(out["x.db.user"], "u");
        assert_eq!(out["x.db.list"], "1,2");
    }
}
