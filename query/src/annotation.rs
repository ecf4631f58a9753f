//! Annotations (spec §1.9, §4.4.4, §4.10): the [`Annotation`] model, its two
//! JSON forms, the `/api/annotation` and `/api/annotation/bulk` request
//! parsing with OpenTSDB's error texts, and the pure POST-merge / PUT-replace
//! rule the server applies against the stored note.
//!
//! Two serialisations exist on purpose, because OpenTSDB has two:
//! * storage ([`Annotation::to_storage_json`], `getStorageJSON`): `tsuid`
//!   (omitted for global notes), `startTime`, `endTime`, `description`,
//!   `notes`, `custom` (`null` or an object with sorted keys);
//! * responses ([`Annotation::to_response_json`], Jackson on the bean):
//!   `tsuid` (empty string for global notes), `description`, `notes`,
//!   `custom` (omitted when null), `startTime`, `endTime`.
//!
//! Times are whatever the client stored: seconds normally, milliseconds when
//! larger than `u32::MAX` (OpenTSDB's `SECOND_MASK` test).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{Map, Value};

use crate::error::QueryError;
use crate::input::{
    first_param, has_param, json_err, lenient_flag, opt_array, opt_string, parse_body,
};
use crate::json_out::{push_str_list, push_str_lit, push_str_map};
use crate::time::parse_time;

/// One annotation (note).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Annotation {
    /// Upper- or lower-case hex TSUID as given; empty for a global note.
    pub tsuid: String,
    /// Start time (seconds, or ms when > `u32::MAX`); required, `>= 1`.
    pub start_time: i64,
    /// End time, 0 when open.
    pub end_time: i64,
    /// Short text shown by dashboards.
    pub description: String,
    /// Longer text.
    pub notes: String,
    /// Optional user key/values (`null` when never set).
    pub custom: Option<BTreeMap<String, String>>,
}

/// The start time in ms, for window checks (OpenTSDB: `ts & SECOND_MASK`).
pub(crate) fn time_ms(time: i64) -> i64 {
    if time > i64::from(u32::MAX) || time < 0 {
        time
    } else {
        time.saturating_mul(1000)
    }
}

impl Annotation {
    /// Whether this is a global note (no TSUID).
    pub fn is_global(&self) -> bool {
        self.tsuid.is_empty()
    }

    /// The storage JSON (§1.9 field order; the compare-and-set value).
    pub fn to_storage_json(&self) -> String {
        let mut out = String::from("{");
        if !self.tsuid.is_empty() {
            out.push_str("\"tsuid\":");
            push_str_lit(&mut out, &self.tsuid);
            out.push(',');
        }
        let _ = write!(
            out,
            "\"startTime\":{},\"endTime\":{},\"description\":",
            self.start_time, self.end_time
        );
        push_str_lit(&mut out, &self.description);
        out.push_str(",\"notes\":");
        push_str_lit(&mut out, &self.notes);
        out.push_str(",\"custom\":");
        match &self.custom {
            Some(map) => push_str_map(&mut out, map),
            None => out.push_str("null"),
        }
        out.push('}');
        out
    }

    /// The response JSON (Jackson's order for OpenTSDB's bean).
    pub fn to_response_json(&self) -> String {
        let mut out = String::new();
        self.push_response_json(&mut out);
        out
    }

    pub(crate) fn push_response_json(&self, out: &mut String) {
        out.push_str("{\"tsuid\":");
        push_str_lit(out, &self.tsuid);
        out.push_str(",\"description\":");
        push_str_lit(out, &self.description);
        out.push_str(",\"notes\":");
        push_str_lit(out, &self.notes);
        if let Some(map) = &self.custom {
            out.push_str(",\"custom\":");
            push_str_map(out, map);
        }
        let _ = write!(
            out,
            ",\"startTime\":{},\"endTime\":{}}}",
            self.start_time, self.end_time
        );
    }

    /// Parses an annotation JSON object (either form; unknown fields are
    /// ignored like Jackson's `ignoreUnknown`).
    pub fn from_json(v: &Value) -> Result<AnnotationUpdate, QueryError> {
        let obj = v
            .as_object()
            .ok_or_else(|| json_err("an annotation must be a JSON object"))?;
        update_from_object(obj)
    }

    /// Parses the storage JSON back (a stored note).
    pub fn from_storage_json(bytes: &[u8]) -> Result<Annotation, QueryError> {
        let v: Value = serde_json::from_slice(bytes)
            .map_err(|e| QueryError::bad_with("Unable to parse the given JSON", e.to_string()))?;
        Ok(Annotation::from_json(&v)?.annotation)
    }
}

/// Renders a JSON array of annotations (response form).
pub fn render_annotations(notes: &[Annotation]) -> Vec<u8> {
    let mut out = String::from("[");
    for (i, n) in notes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        n.push_response_json(&mut out);
    }
    out.push(']');
    out.into_bytes()
}

/// Which user-editable fields a request set to a new value (OpenTSDB's
/// `changed` map: a setter flags a field only when the value differs from
/// the default; `custom` is flagged whenever it is given non-null).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChangedFields {
    /// `endTime`
    pub end_time: bool,
    /// `description`
    pub description: bool,
    /// `notes`
    pub notes: bool,
    /// `custom`
    pub custom: bool,
}

impl ChangedFields {
    fn any(self) -> bool {
        self.end_time || self.description || self.notes || self.custom
    }
}

/// A parsed `/api/annotation` request: the note as sent plus what it changes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AnnotationUpdate {
    /// The note as the client sent it (defaults for missing fields).
    pub annotation: Annotation,
    /// Fields the client set.
    pub changed: ChangedFields,
}

/// What a POST/PUT should do, decided by [`merge`] / [`replace`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyncOutcome {
    /// Store (compare-and-set against the stored bytes) and return this note.
    Store(Annotation),
    /// Nothing changed: answer 304 without a body.
    NotModified,
}

/// POST: fields the request did not change keep their stored values.
pub fn merge(
    update: &AnnotationUpdate,
    stored: Option<&Annotation>,
) -> Result<SyncOutcome, QueryError> {
    sync(update, stored, false)
}

/// PUT: every user field comes from the request.
pub fn replace(
    update: &AnnotationUpdate,
    stored: Option<&Annotation>,
) -> Result<SyncOutcome, QueryError> {
    sync(update, stored, true)
}

/// `Annotation.syncToStorage` + `syncNote`.
fn sync(
    update: &AnnotationUpdate,
    stored: Option<&Annotation>,
    overwrite: bool,
) -> Result<SyncOutcome, QueryError> {
    let mut note = update.annotation.clone();
    if note.start_time < 1 {
        return Err(QueryError::bad("The start timestamp has not been set"));
    }
    if !update.changed.any() {
        return Ok(SyncOutcome::NotModified);
    }
    if let Some(old) = stored {
        if old.start_time > 0 && (old.start_time < note.start_time || note.start_time == 0) {
            note.start_time = old.start_time;
        }
        let c = update.changed;
        if !overwrite && !c.end_time {
            note.end_time = old.end_time;
        }
        if !overwrite && !c.description {
            note.description.clone_from(&old.description);
        }
        if !overwrite && !c.notes {
            note.notes.clone_from(&old.notes);
        }
        if !overwrite && !c.custom {
            note.custom.clone_from(&old.custom);
        }
    }
    Ok(SyncOutcome::Store(note))
}

/// `startTime` / `endTime`: a number or numeric string by the one timestamp
/// rule (seconds, 13-digit milliseconds or `<seconds>.<3 digits>`, not after
/// 2106), kept raw as OpenTSDB does (seconds stay seconds). Zero means unset.
fn time_field(obj: &Map<String, Value>, key: &str) -> Result<Option<i64>, QueryError> {
    let text = match obj.get(key) {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(_) => return Err(json_err(&format!("'{key}' must be a number"))),
    };
    if text == "0" {
        return Ok(Some(0));
    }
    match hourglass_ingest::parse_timestamp(&text) {
        // At most MAX_TIMESTAMP_MS, far below i64::MAX.
        Ok(t) => Ok(Some(t.0 as i64)),
        Err(e) => Err(QueryError::bad(format!("Invalid {key}: {e}"))),
    }
}

fn update_from_object(obj: &Map<String, Value>) -> Result<AnnotationUpdate, QueryError> {
    let mut u = AnnotationUpdate::default();
    let n = &mut u.annotation;
    if let Some(t) = opt_string(obj, "tsuid")? {
        n.tsuid = t;
    }
    if let Some(t) = time_field(obj, "startTime")? {
        n.start_time = t;
    }
    if let Some(t) = time_field(obj, "endTime")? {
        u.changed.end_time = t != n.end_time;
        n.end_time = t;
    }
    if let Some(d) = opt_string(obj, "description")? {
        u.changed.description = d != n.description;
        n.description = d;
    }
    if let Some(d) = opt_string(obj, "notes")? {
        u.changed.notes = d != n.notes;
        n.notes = d;
    }
    match obj.get("custom") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            let mut custom = BTreeMap::new();
            for (k, v) in m {
                let v = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                custom.insert(k.clone(), v);
            }
            n.custom = Some(custom);
            u.changed.custom = true;
        }
        Some(_) => return Err(json_err("'custom' must be an object")),
    }
    Ok(u)
}

/// `/api/annotation` with a JSON body (any method).
pub fn parse_annotation_json(body: &[u8]) -> Result<AnnotationUpdate, QueryError> {
    Annotation::from_json(&parse_body(body)?)
}

/// `/api/annotation` from the query string: `tsuid`, `start_time` (required:
/// "Missing start time"), `end_time`, `description`, `notes`; times are
/// §5.2 strings converted to seconds.
pub fn parse_annotation_query_string(
    params: &[(String, String)],
    now_ms: i64,
) -> Result<AnnotationUpdate, QueryError> {
    let get = |name: &str| first_param(params, name);
    let mut u = AnnotationUpdate::default();
    if let Some(t) = get("tsuid") {
        u.annotation.tsuid = t.to_string();
    }
    let start = match get("start_time").filter(|s| !s.is_empty()) {
        Some(s) => parse_time(s, now_ms)?,
        None => -1,
    };
    if start < 1 {
        return Err(QueryError::bad("Missing start time"));
    }
    u.annotation.start_time = start / 1000;
    let end = match get("end_time").filter(|s| !s.is_empty()) {
        Some(s) => parse_time(s, now_ms)? / 1000,
        None => 0,
    };
    u.changed.end_time = end != 0;
    u.annotation.end_time = end;
    if let Some(d) = get("description") {
        u.changed.description = !d.is_empty();
        u.annotation.description = d.to_string();
    }
    if let Some(d) = get("notes") {
        u.changed.notes = !d.is_empty();
        u.annotation.notes = d.to_string();
    }
    Ok(u)
}

/// `/api/annotation/bulk` POST/PUT: a JSON array of annotations. Each is
/// then synced with [`merge`] (POST) or [`replace`] (PUT); one whose start
/// time is missing fails the request with "The start timestamp has not been
/// set" (details: `Annotation error: <note>`).
pub fn parse_bulk_annotations(body: &[u8]) -> Result<Vec<AnnotationUpdate>, QueryError> {
    match parse_body(body)? {
        Value::Array(items) => items.iter().map(Annotation::from_json).collect(),
        _ => Err(json_err("expected an array of annotations")),
    }
}

/// A validated `/api/annotation/bulk` DELETE request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BulkDelete {
    /// TSUIDs whose notes to delete.
    pub tsuids: Vec<String>,
    /// Also delete global notes.
    pub global: bool,
    /// `startTime` as given.
    pub start_time: String,
    /// `endTime` as given (`None`: now).
    pub end_time: Option<String>,
    /// Parsed start (ms).
    pub start_ms: i64,
    /// Parsed end (ms).
    pub end_ms: i64,
}

fn bulk_delete(
    tsuids: Vec<String>,
    global: bool,
    start: Option<String>,
    end: Option<String>,
    now_ms: i64,
) -> Result<BulkDelete, QueryError> {
    let start = start
        .filter(|s| !s.is_empty())
        .ok_or_else(|| QueryError::bad("Missing the start time value"))?;
    if !global && tsuids.is_empty() {
        return Err(QueryError::bad(
            "Missing the TSUIDs or global annotations flag",
        ));
    }
    let start_ms = parse_time(&start, now_ms)?;
    let end = end.filter(|s| !s.is_empty());
    let end_ms = match &end {
        Some(e) => parse_time(e, now_ms)?,
        None => now_ms,
    };
    Ok(BulkDelete {
        tsuids,
        global,
        start_time: start,
        end_time: end,
        start_ms,
        end_ms,
    })
}

/// Bulk DELETE with a JSON body `{"tsuids":[…],"global":bool,"startTime":…,"endTime":…}`.
pub fn parse_bulk_delete_json(body: &[u8], now_ms: i64) -> Result<BulkDelete, QueryError> {
    let v = parse_body(body)?;
    let obj = v
        .as_object()
        .ok_or_else(|| json_err("the bulk delete request must be a JSON object"))?;
    let tsuids = opt_array(obj, "tsuids")?
        .iter()
        .filter_map(|tsuid| tsuid.as_str().map(str::to_string))
        .collect();
    let global = lenient_flag(obj.get("global"));
    bulk_delete(
        tsuids,
        global,
        opt_string(obj, "startTime")?,
        opt_string(obj, "endTime")?,
        now_ms,
    )
}

/// Bulk DELETE from the query string: `start_time`, `end_time`, `tsuids`
/// (comma list), `global` (presence).
pub fn parse_bulk_delete_query_string(
    params: &[(String, String)],
    now_ms: i64,
) -> Result<BulkDelete, QueryError> {
    let get = |name: &str| first_param(params, name).map(str::to_owned);
    let tsuids = get("tsuids")
        .map(|t| {
            t.split(',')
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let global = has_param(params, "global");
    bulk_delete(tsuids, global, get("start_time"), get("end_time"), now_ms)
}

/// The bulk DELETE response `{"tsuids":…,"global":…,"startTime":…,"endTime":…,"totalDeleted":n}`.
pub fn render_bulk_delete(req: &BulkDelete, total_deleted: u64) -> Vec<u8> {
    let mut out = String::from("{\"tsuids\":");
    if req.tsuids.is_empty() {
        out.push_str("null");
    } else {
        out.push('[');
        push_str_list(&mut out, &req.tsuids);
        out.push(']');
    }
    let _ = write!(out, ",\"global\":{},\"startTime\":", req.global);
    push_str_lit(&mut out, &req.start_time);
    out.push_str(",\"endTime\":");
    match &req.end_time {
        Some(e) => push_str_lit(&mut out, e),
        None => out.push_str("null"),
    }
    let _ = write!(out, ",\"totalDeleted\":{total_deleted}}}");
    out.into_bytes()
}

/// Keeps the notes a query result shows (§4.4.4): start time (in ms) within
/// `[start_ms, end_ms]`, sorted by start time (stable).
pub(crate) fn in_query_range(notes: &[Annotation], start_ms: i64, end_ms: i64) -> Vec<&Annotation> {
    let mut v: Vec<&Annotation> = notes
        .iter()
        .filter(|n| {
            let t = time_ms(n.start_time);
            t >= start_ms && t <= end_ms
        })
        .collect();
    v.sort_by_key(|n| n.start_time);
    v
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // panicking on a broken fixture is the point of a test
mod tests {
    use super::*;

    const NOW: i64 = 1_400_000_000_000;

    fn note() -> Annotation {
        Annotation {
            tsuid: "000001000001000001".into(),
            start_time: 1_356_998_490,
            end_time: 0,
            description: "Hello".into(),
            notes: String::new(),
            custom: None,
        }
    }

    #[test]
    fn storage_and_response_json() {
        let n = note();
        assert_eq!(
            n.to_storage_json(),
            r#"{"tsuid":"000001000001000001","startTime":1356998490,"endTime":0,"description":"Hello","notes":"","custom":null}"#
        );
        // the §4.4.4 example
        assert_eq!(
            n.to_response_json(),
            r#"{"tsuid":"000001000001000001","description":"Hello","notes":"","startTime":1356998490,"endTime":0}"#
        );
        let mut g = n.clone();
        g.tsuid.clear();
        g.custom = Some(BTreeMap::from([
            ("z".to_string(), "1".to_string()),
            ("a".to_string(), "\"".to_string()),
        ]));
        assert_eq!(
            g.to_storage_json(),
            r#"{"startTime":1356998490,"endTime":0,"description":"Hello","notes":"","custom":{"a":"\"","z":"1"}}"#
        );
        assert_eq!(
            g.to_response_json(),
            r#"{"tsuid":"","description":"Hello","notes":"","custom":{"a":"\"","z":"1"},"startTime":1356998490,"endTime":0}"#
        );
        assert_eq!(
            Annotation::from_storage_json(g.to_storage_json().as_bytes()).unwrap(),
            g
        );
        assert_eq!(
            Annotation::from_storage_json(n.to_storage_json().as_bytes()).unwrap(),
            n
        );
        assert_eq!(render_annotations(&[]), b"[]");
    }

    #[test]
    fn post_merges_put_replaces() {
        let stored = Annotation {
            end_time: 1_356_998_999,
            notes: "old notes".into(),
            custom: Some(BTreeMap::from([("k".into(), "v".into())])),
            ..note()
        };
        let u = parse_annotation_json(
            br#"{"tsuid":"000001000001000001","startTime":1356998490,"description":"New"}"#,
        )
        .unwrap();
        assert!(u.changed.description && !u.changed.notes);
        let SyncOutcome::Store(m) = merge(&u, Some(&stored)).unwrap() else {
            panic!("expected a store")
        };
        assert_eq!(m.description, "New");
        assert_eq!(m.notes, "old notes");
        assert_eq!(m.end_time, 1_356_998_999);
        assert_eq!(m.custom, stored.custom);
        let SyncOutcome::Store(r) = replace(&u, Some(&stored)).unwrap() else {
            panic!("expected a store")
        };
        assert_eq!(r.description, "New");
        assert_eq!(
            (r.notes.as_str(), r.end_time, r.custom.clone()),
            ("", 0, None)
        );
        // no new stored note: written as sent
        assert_eq!(
            merge(&u, None).unwrap(),
            SyncOutcome::Store(u.annotation.clone())
        );
        // nothing changed: 304
        let same = parse_annotation_json(br#"{"startTime":1356998490,"description":""}"#).unwrap();
        assert_eq!(
            merge(&same, Some(&stored)).unwrap(),
            SyncOutcome::NotModified
        );
        // missing start time
        let e = merge(
            &parse_annotation_json(br#"{"description":"x"}"#).unwrap(),
            None,
        )
        .unwrap_err();
        assert_eq!(e.message(), "The start timestamp has not been set");
        // the earlier stored start time wins
        let later = parse_annotation_json(br#"{"startTime":1356998500,"notes":"n"}"#).unwrap();
        let SyncOutcome::Store(m) = merge(&later, Some(&stored)).unwrap() else {
            panic!("expected a store")
        };
        assert_eq!(m.start_time, 1_356_998_490);
    }

    #[test]
    fn query_string_form() {
        let qs = |p: &[(&str, &str)]| -> Vec<(String, String)> {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let u = parse_annotation_query_string(
            &qs(&[
                ("tsuid", "000001000001000001"),
                ("start_time", "2013/01/01 00:01:30"),
                ("end_time", "1357000000"),
                ("description", "d"),
            ]),
            NOW,
        )
        .unwrap();
        assert_eq!(u.annotation.start_time, 1_356_998_490);
        assert_eq!(u.annotation.end_time, 1_357_000_000);
        assert!(u.changed.description && u.changed.end_time && !u.changed.notes);
        let e = parse_annotation_query_string(&qs(&[("tsuid", "01")]), NOW).unwrap_err();
        assert_eq!(e.message(), "Missing start time");
        let e = parse_annotation_json(b"").unwrap_err();
        assert_eq!(e.message(), "Missing message content");
        let e = parse_annotation_json(b"{").unwrap_err();
        assert_eq!(e.message(), "Unable to parse the given JSON");
    }

    #[test]
    fn bulk() {
        let v = parse_bulk_annotations(
            br#"[{"tsuid":"01","startTime":1,"description":"a"},{"startTime":2,"notes":"b","custom":{"x":"y"}}]"#,
        )
        .unwrap();
        assert_eq!(v.len(), 2);
        assert!(v[1].annotation.is_global() && v[1].changed.custom);
        let d = parse_bulk_delete_json(
            br#"{"tsuids":["000001000001000001"],"startTime":"1h-ago","endTime":"1400000000"}"#,
            NOW,
        )
        .unwrap();
        assert_eq!((d.start_ms, d.end_ms), (NOW - 3_600_000, NOW));
        assert_eq!(
            String::from_utf8(render_bulk_delete(&d, 3)).unwrap(),
            r#"{"tsuids":["000001000001000001"],"global":false,"startTime":"1h-ago","endTime":"1400000000","totalDeleted":3}"#
        );
        let e = parse_bulk_delete_json(br#"{"global":true}"#, NOW).unwrap_err();
        assert_eq!(e.message(), "Missing the start time value");
        let e = parse_bulk_delete_json(br#"{"startTime":"1h-ago"}"#, NOW).unwrap_err();
        assert_eq!(e.message(), "Missing the TSUIDs or global annotations flag");
        let p: Vec<(String, String)> = vec![
            ("start_time".into(), "1h-ago".into()),
            ("global".into(), String::new()),
        ];
        let d = parse_bulk_delete_query_string(&p, NOW).unwrap();
        assert!(d.global && d.tsuids.is_empty() && d.end_time.is_none());
        assert_eq!(d.end_ms, NOW);
        assert_eq!(
            String::from_utf8(render_bulk_delete(&d, 0)).unwrap(),
            r#"{"tsuids":null,"global":true,"startTime":"1h-ago","endTime":null,"totalDeleted":0}"#
        );
    }

    #[test]
    fn query_range_filter() {
        let a = Annotation {
            start_time: 20,
            ..note()
        };
        let b = Annotation {
            start_time: 10,
            ..note()
        };
        let ms = Annotation {
            start_time: 15_000_000_000,
            ..note()
        };
        let c = Annotation {
            start_time: 40,
            ..note()
        };
        let all = [a.clone(), b.clone(), ms.clone(), c];
        let got = in_query_range(&all, 10_000, 30_000);
        assert_eq!(got, vec![&b, &a]);
        let got = in_query_range(&all, 0, 15_000_000_000);
        assert_eq!(got.len(), 4);
    }
}
