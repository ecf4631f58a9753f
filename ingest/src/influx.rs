//! InfluxDB line protocol (1.x `POST /write`, 2.x `POST /api/v2/write`, and lines on the shared
//! telnet port): parsing into [`Point`]s ([`parse_body`], [`parse_line`]), timestamp
//! precisions ([`Precision`]) and what was wrong with a refused line ([`LineError`],
//! [`InfluxError`]) or precision ([`PrecisionError`]). The HTTP answers built from them are the
//! server's (`src/server/influx.rs`).
//!
//! # Syntax
//!
//! `measurement[,tag=value...] field=value[,field=value...] [timestamp]`, one point per line.
//! * Lines end with `\n`; a `\r` before it is dropped. A `\n` inside a quoted string field value
//!   does not end the line (as InfluxDB). Blank lines and lines whose first non-blank character
//!   is `#` are skipped. Leading spaces and tabs are skipped; runs of spaces between the
//!   sections are accepted (as InfluxDB 1.x), trailing spaces too.
//! * Escapes (a backslash before any other character is literal, so `\\` is two backslashes):
//!   measurement `\,` `\ `; tag keys, tag values and field keys `\,` `\=` `\ `; string field
//!   values `\"` `\\`.
//! * Field values: float (`1`, `-1.5`, `.5`, `1e-3`; no leading `+`), integer `42i`, unsigned
//!   `42u`, boolean `t T true True TRUE f F false False FALSE`, string `"..."`. `NaN`/`Inf` are
//!   not numbers in line protocol; a float that overflows (`1e400`) is refused (`invalid float`).
//! * Timestamp: optional integer in the request's [`Precision`] (nanoseconds by default).
//! * Parse-error reasons are InfluxDB's own texts (`missing fields`, `missing tag value`,
//!   `invalid field format`, `unbalanced quotes`, `invalid number`, `invalid boolean`,
//!   `bad timestamp`, `duplicate tags`, ...). Invalid UTF-8 is refused (`invalid UTF-8`).
//!
//! # Mapping to OpenTSDB points
//!
//! * One [`Point`] per numeric field; metric = `<measurement>.<field key>`, tags as given, both
//!   mapped with [`crate::names::encode_name`] (`cpu load` → `cpu%20load`). The join is not
//!   reversible when names contain `.` (as with Telegraf's own OpenTSDB output).
//! * Values: integers (`i`) → [`Value::Int`]; unsigned (`u`) → [`Value::Int`], or above
//!   `i64::MAX` → [`Value::Double`] (the u64 counter rule of [`crate::number`]); booleans → `1`/`0`
//!   as [`Value::Int`]; floats as OpenTSDB classifies them ([`Value::Float`] when exact in
//!   `f32`, else [`Value::Double`]), so `1` → `Float(1.0)`.
//! * String fields are not numbers: skipped and counted ([`InfluxBatch::string_fields`]). A line
//!   with only string fields is a valid line that yields no point; its timestamp is checked, its
//!   tags are not (nothing is stored).
//! * A repeated field key in one line: the last value wins.
//! * Timestamp: converted to milliseconds (sub-millisecond digits **truncated**: 1.9 ms → 1 ms),
//!   then checked with [`crate::timestamp::timestamp_from_millis`] (positive, not after 2106);
//!   precision `s` keeps seconds. No timestamp → the caller's `now_ms` (the crate reads no
//!   clock).
//! * **At least one tag is required.** The row key holds one or more tag pairs and every other
//!   write path requires a tag, so a line without tags is refused with OpenTSDB's
//!   `Need at least one tag (metric=<m>, tags={})`; more than [`Limits::max_tags`] tags gets
//!   OpenTSDB's `Too many tags` text. Add a tag at the client (Telegraf: `[global_tags]`).
//! * Lines are all-or-nothing: any error (syntax, a bad field, the timestamp, tags) refuses the
//!   whole line, with its line number, and never the other lines.

use std::borrow::Cow;
use std::fmt;

use crate::limits::Limits;
use crate::names::encode_name;
use crate::point::{Point, Timestamp, Value};
use crate::refusals::Refusals;
use crate::timestamp::{TimestampError, timestamp_from_millis, timestamp_from_secs};
use crate::validate::{CheckError, NameError, check_series, validate_name};

/// Timestamp unit of a write (`precision=` query parameter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Nanoseconds (the default).
    #[default]
    Nanoseconds,
    /// Microseconds.
    Microseconds,
    /// Milliseconds.
    Milliseconds,
    /// Seconds.
    Seconds,
    /// Minutes (1.x only).
    Minutes,
    /// Hours (1.x only).
    Hours,
}

/// The `precision` parameter is not one InfluxDB accepts.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid precision {0:?}")]
pub struct PrecisionError(pub String);

impl Precision {
    /// The 1.x `precision=` values: empty, `n`/`ns`, `u`/`us`/`µ`, `ms`, `s`, `m`, `h`.
    pub fn from_v1(param: &str) -> Result<Self, PrecisionError> {
        match param {
            "" | "n" | "ns" => Ok(Self::Nanoseconds),
            "u" | "us" | "µ" => Ok(Self::Microseconds),
            "ms" => Ok(Self::Milliseconds),
            "s" => Ok(Self::Seconds),
            "m" => Ok(Self::Minutes),
            "h" => Ok(Self::Hours),
            other => Err(PrecisionError(other.to_owned())),
        }
    }

    /// The 2.x `precision=` values: empty, `ns`, `us`, `ms`, `s`.
    pub fn from_v2(param: &str) -> Result<Self, PrecisionError> {
        match param {
            "" | "ns" => Ok(Self::Nanoseconds),
            "us" => Ok(Self::Microseconds),
            "ms" => Ok(Self::Milliseconds),
            "s" => Ok(Self::Seconds),
            other => Err(PrecisionError(other.to_owned())),
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Self::Nanoseconds => "ns",
            Self::Microseconds => "us",
            Self::Milliseconds => "ms",
            Self::Seconds => "s",
            Self::Minutes => "m",
            Self::Hours => "h",
        }
    }

    /// A raw line-protocol timestamp in this precision as a checked [`Timestamp`].
    fn to_timestamp(self, raw: i64) -> Result<Timestamp, TimestampError> {
        let shown = || format!("{raw} {}", self.unit());
        let ms = match self {
            // Truncation toward zero drops the sub-millisecond part of positive times.
            Self::Nanoseconds => raw / 1_000_000,
            Self::Microseconds => raw / 1_000,
            Self::Milliseconds => raw,
            Self::Seconds => {
                return timestamp_from_secs(raw).map_err(|e| reword(e, shown()));
            }
            Self::Minutes => raw.saturating_mul(60_000),
            Self::Hours => raw.saturating_mul(3_600_000),
        };
        timestamp_from_millis(ms).map_err(|e| reword(e, shown()))
    }
}

/// Puts the timestamp as sent (with its unit) into the message instead of the converted value.
fn reword(e: TimestampError, shown: String) -> TimestampError {
    match e {
        TimestampError::NotPositive(_) => TimestampError::NotPositive(format!(
            "{shown} (must be at least 1 ms after 1970-01-01T00:00:00Z)"
        )),
        TimestampError::AfterMax(_) => TimestampError::AfterMax(shown),
        TimestampError::MsNotEncodable(_) => TimestampError::MsNotEncodable(shown),
        other => other,
    }
}

/// Why a line is refused: InfluxDB's parse-error reasons (its own texts), the timestamp rule, or
/// the semantic checks every write path applies.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InfluxError {
    /// The line is not UTF-8.
    #[error("invalid UTF-8")]
    InvalidUtf8,
    /// The line starts with a comma.
    #[error("missing measurement")]
    MissingMeasurement,
    /// The line ends before its field set.
    #[error("missing fields")]
    MissingFields,
    /// A comma in the tag set is not followed by a key.
    #[error("missing tag key")]
    MissingTagKey,
    /// A tag key without `=` or without a value.
    #[error("missing tag value")]
    MissingTagValue,
    /// A tag value holds an unescaped `=`.
    #[error("invalid tag format")]
    InvalidTagFormat,
    /// A tag key appears twice.
    #[error("duplicate tags")]
    DuplicateTags,
    /// A field starts with `=`.
    #[error("missing field key")]
    MissingFieldKey,
    /// A field is not `key=value`, or junk follows a string value.
    #[error("invalid field format")]
    InvalidFieldFormat,
    /// A field key with `=` but no value.
    #[error("missing field value")]
    MissingFieldValue,
    /// A string field value has no closing quote.
    #[error("unbalanced quotes")]
    UnbalancedQuotes,
    /// A field value that is neither a number, a boolean nor a string.
    #[error("invalid boolean")]
    InvalidBoolean,
    /// A field value that starts like a number but is none.
    #[error("invalid number")]
    InvalidNumber,
    /// A float field value out of `f64`'s range (`1e400`).
    #[error("invalid float")]
    InvalidFloat,
    /// An `i` integer field value outside `i64` (carries the digits).
    #[error("unable to parse integer {0}: value out of range")]
    IntegerOutOfRange(String),
    /// A `u` unsigned field value outside `u64` (carries the digits).
    #[error("unable to parse unsigned {0}: value out of range")]
    UnsignedOutOfRange(String),
    /// The timestamp is not an integer.
    #[error("bad timestamp")]
    BadTimestamp,
    /// Something follows the timestamp.
    #[error("point is invalid")]
    PointIsInvalid,
    /// The timestamp is refused by the timestamp rule ([`crate::timestamp`]).
    #[error(transparent)]
    Timestamp(#[from] TimestampError),
    /// The series fails the semantic checks (tags, names; [`check_series`]).
    #[error(transparent)]
    Check(#[from] CheckError),
}

impl From<NameError> for InfluxError {
    fn from(e: NameError) -> Self {
        InfluxError::Check(CheckError::Name(e))
    }
}

/// One accepted line: its tags, timestamp and one metric/value per numeric field.
#[derive(Clone, Debug, PartialEq)]
pub struct InfluxLine<'a> {
    /// Mapped tags, in input order (borrowed from the input when nothing was escaped or mapped).
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The checked timestamp.
    pub timestamp: Timestamp,
    /// `(<measurement>.<field>, value)` per numeric field, mapped and validated; first
    /// occurrence order, last value for a repeated key.
    pub fields: Vec<(String, Value)>,
    /// String fields skipped on this line.
    pub string_fields: usize,
}

impl InfluxLine<'_> {
    /// The line's points, one per numeric field.
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.fields.iter().map(move |(metric, value)| Point {
            metric: Cow::Borrowed(metric.as_str()),
            timestamp: self.timestamp,
            value: *value,
            tags: self
                .tags
                .iter()
                .map(|(k, v)| (Cow::Borrowed(k.as_ref()), Cow::Borrowed(v.as_ref())))
                .collect(),
        })
    }
}

/// A refused line of a body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based number of the line the entry starts on.
    pub line_no: usize,
    /// The line as sent (terminator removed; invalid UTF-8 replaced by U+FFFD).
    pub line: String,
    /// Why: InfluxDB's parse-error text, or hourglass's semantic error.
    pub reason: InfluxError,
}

/// Bytes of a refused line shown in its error; a longer line is cut and ends with `…`, so that
/// the answer to a body of a few huge bad lines stays small.
pub const MAX_SHOWN_LINE: usize = 1024;

impl LineError {
    /// A refused entry (the text shown is the entry without its leading
    /// blanks and trailing `\r`, cut at [`MAX_SHOWN_LINE`] bytes).
    pub fn new(line_no: usize, entry: &[u8], reason: InfluxError) -> Self {
        let shown = strip_cr(trim_start(entry));
        let line = match shown.get(..MAX_SHOWN_LINE) {
            Some(head) if shown.len() > MAX_SHOWN_LINE => {
                // A multi-byte character cut in two shows as U+FFFD.
                String::from_utf8_lossy(head).into_owned() + "…"
            }
            _ => String::from_utf8_lossy(shown).into_owned(),
        };
        LineError {
            line_no,
            line,
            reason,
        }
    }
}

impl fmt::Display for LineError {
    /// InfluxDB's per-line text: `unable to parse '<line>': <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unable to parse '{}': {}", self.line, self.reason)
    }
}

/// The outcome of parsing a whole `/write` body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfluxBatch<'a> {
    /// Accepted lines, in input order.
    pub lines: Vec<InfluxLine<'a>>,
    /// Refused lines, in input order: the first
    /// [`MAX_KEPT`](crate::refusals::MAX_KEPT) kept, every one counted.
    pub errors: Refusals<LineError>,
    /// String fields skipped on accepted lines (not numbers, so not stored).
    pub string_fields: usize,
    /// The body had no bytes at all (2.x answers `writing requires points`).
    pub empty_body: bool,
    /// Lines accepted (those in `lines`, and any a caller took another way,
    /// e.g. through a series cache).
    pub accepted_lines: usize,
}

impl InfluxBatch<'_> {
    /// Every point of the accepted lines.
    pub fn points(&self) -> impl Iterator<Item = Point<'_>> + '_ {
        self.lines.iter().flat_map(InfluxLine::points)
    }

    /// Number of points [`InfluxBatch::points`] yields.
    pub fn point_count(&self) -> usize {
        self.lines.iter().map(|l| l.fields.len()).sum()
    }

    /// The 1-based number of the first refused line.
    pub fn first_error_line(&self) -> Option<usize> {
        self.errors.first().map(|e| e.line_no)
    }

    /// The line errors kept as InfluxDB joins them (`unable to parse '...': ...`, one per
    /// line, separated by `\n`), then `and N more lines refused` for those only counted; or
    /// `None` when every line was accepted.
    pub fn error_text(&self) -> Option<String> {
        self.errors.text(LineError::to_string, "lines")
    }

    /// Counts a refused line, and keeps it while fewer than
    /// [`MAX_KEPT`](crate::refusals::MAX_KEPT) are kept.
    pub fn refuse(&mut self, line_no: usize, entry: &[u8], reason: InfluxError) {
        self.errors.push(LineError::new(line_no, entry, reason));
    }
}

/// Parses a whole `/write` body. Never fails as a whole: every line is accepted or refused on
/// its own. `now_ms` is the time given to lines without a timestamp.
pub fn parse_body<'a>(
    body: &'a [u8],
    precision: Precision,
    now_ms: i64,
    limits: &Limits,
) -> InfluxBatch<'a> {
    let mut batch = InfluxBatch {
        empty_body: body.is_empty(),
        ..InfluxBatch::default()
    };
    for (line_no, entry) in body_entries(body) {
        match parse_line(entry, precision, now_ms, limits) {
            Ok(Some(line)) => {
                batch.string_fields += line.string_fields;
                batch.accepted_lines += 1;
                batch.lines.push(line);
            }
            Ok(None) => {}
            Err(reason) => batch.refuse(line_no, entry, reason),
        }
    }
    batch
}

/// The entries of a `/write` body (a line, or a string field spanning
/// lines), with the 1-based number of their first line.
pub fn body_entries(body: &[u8]) -> impl Iterator<Item = (usize, &[u8])> + '_ {
    let mut pos = 0;
    let mut line_no = 1;
    // Without a quote anywhere no entry spans lines: split at newlines.
    let quoted = body.contains(&b'"');
    std::iter::from_fn(move || {
        if pos >= body.len() {
            return None;
        }
        let end = if quoted {
            entry_end(body, pos)
        } else {
            body[pos..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(body.len(), |p| pos + p)
        };
        let entry = &body[pos..end];
        let at = line_no;
        line_no += 1 + entry.iter().filter(|&&b| b == b'\n').count();
        pos = end + 1;
        Some((at, entry))
    })
}

/// Where the entry starting at `start` ends (index of its `\n`, or the body length): at the
/// first newline outside a quoted string field value. A comment ends at the first newline. The
/// escapes are the parser's own (a backslash never escapes a newline), so the split agrees with
/// [`parse_line`] on every well-formed line; InfluxDB's `scanLine` differs on `\\ ` in names.
fn entry_end(body: &[u8], start: usize) -> usize {
    let first = body.len() - trim_start(&body[start..]).len();
    if body.get(first) == Some(&b'#') {
        return body[first..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |p| first + p);
    }
    let (mut fields, mut quoted, mut after_equals) = (false, false, false);
    let mut i = start;
    while i < body.len() {
        let c = body[i];
        let next = body.get(i + 1).copied();
        if quoted {
            match c {
                b'\\' if matches!(next, Some(b'"' | b'\\')) => i += 1,
                b'"' => quoted = false,
                _ => {}
            }
        } else {
            match c {
                b'\\' if matches!(next, Some(b',' | b'=' | b' ')) => {
                    i += 2;
                    after_equals = false;
                    continue;
                }
                b'\n' => return i,
                b' ' => fields = true,
                // A string starts where a field value starts with a quote.
                b'"' if after_equals => quoted = true,
                _ => {}
            }
            after_equals = fields && c == b'=';
        }
        i += 1;
    }
    body.len()
}

fn trim_start(bytes: &[u8]) -> &[u8] {
    let n = bytes
        .iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count();
    &bytes[n..]
}

fn strip_cr(bytes: &[u8]) -> &[u8] {
    bytes.strip_suffix(b"\r").unwrap_or(bytes)
}

/// Parses one line (terminator removed; a trailing `\r` is dropped) — the telnet-port entry
/// point, also used per line by [`parse_body`]. `Ok(None)` for a blank or comment line;
/// `Err(reason)` with InfluxDB's reason text (render with [`line_error_text`]).
pub fn parse_line<'a>(
    line: &'a [u8],
    precision: Precision,
    now_ms: i64,
    limits: &Limits,
) -> Result<Option<InfluxLine<'a>>, InfluxError> {
    let line = strip_cr(trim_start(line));
    if line.is_empty() || line[0] == b'#' {
        return Ok(None);
    }
    let text = std::str::from_utf8(line).map_err(|_| InfluxError::InvalidUtf8)?;
    let raw = scan(text)?;
    build(raw, precision, now_ms, limits).map(Some)
}

/// An InfluxDB line as a series cache sees it ([`fast_line`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FastLine<'a> {
    /// Measurement and tags exactly as sent (up to the first space).
    pub series: &'a [u8],
    pub timestamp: Timestamp,
}

/// Splits a line for a series cache without parsing its tags: `Some` only
/// for lines without escapes or string fields whose fields are numeric with
/// distinct keys and whose timestamp is valid; the fields (raw key, value)
/// are appended to `fields` in line order. When [`parse_line`] accepts such
/// a line, its points are these fields in this order with these values and
/// timestamp; whatever else it checks (names, tags, limits) depends only on
/// `series` and the field keys, so a cache filled from accepted lines may
/// skip those checks. Anything else (`None`) goes through [`parse_line`].
pub fn fast_line<'a>(
    line: &'a [u8],
    precision: Precision,
    now_ms: i64,
    fields: &mut Vec<(&'a [u8], Value)>,
) -> Option<FastLine<'a>> {
    let start = fields.len();
    let line = strip_cr(trim_start(line));
    if line.is_empty() || line[0] == b'#' || line.iter().any(|&b| b == b'\\' || b == b'"') {
        return None;
    }
    let sp = line.iter().position(|&b| b == b' ')?;
    let series = &line[..sp];
    let rest = &line[skip_spaces(line, sp)..];
    let fend = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
    for field in rest[..fend].split(|&b| b == b',') {
        let eq = field.iter().position(|&b| b == b'=');
        let parsed = eq.and_then(|eq| {
            let (k, v) = (&field[..eq], &field[eq + 1..]);
            if k.is_empty() || v.is_empty() || fields[start..].iter().any(|(pk, _)| *pk == k) {
                return None;
            }
            let v = field_value(std::str::from_utf8(v).ok()?).ok()?;
            Some((k, v))
        });
        match parsed {
            Some(kv) => fields.push(kv),
            None => {
                fields.truncate(start);
                return None;
            }
        }
    }
    let after = skip_spaces(rest, fend);
    let timestamp = if after < rest.len() {
        let tend = rest[after..]
            .iter()
            .position(|&b| b == b' ')
            .map_or(rest.len(), |p| after + p);
        let text = std::str::from_utf8(&rest[after..tend]).ok();
        let digits = text.map(|t| t.strip_prefix('-').unwrap_or(t));
        let ts = match (text, digits) {
            (Some(t), Some(d)) if !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit()) => {
                t.parse::<i64>().ok()
            }
            _ => None,
        };
        match ts {
            Some(ts) if skip_spaces(rest, tend) >= rest.len() => precision.to_timestamp(ts).ok(),
            _ => None,
        }
    } else {
        timestamp_from_millis(now_ms).ok()
    };
    let Some(timestamp) = timestamp else {
        fields.truncate(start);
        return None;
    };
    Some(FastLine { series, timestamp })
}

/// InfluxDB's text for a refused line: `unable to parse '<line>': <reason>`.
pub fn line_error_text(line: &[u8], reason: &InfluxError) -> String {
    format!(
        "unable to parse '{}': {reason}",
        String::from_utf8_lossy(strip_cr(trim_start(line)))
    )
}

// ---- scanning ----

/// A line split into its parts, names unescaped but not yet mapped.
struct RawLine<'a> {
    measurement: Cow<'a, str>,
    tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    fields: Vec<(Cow<'a, str>, Value)>,
    string_fields: usize,
    timestamp: Option<i64>,
}

/// Which characters a backslash escapes in a name element.
const MEASUREMENT_ESCAPES: &[u8] = b", ";
const KEY_ESCAPES: &[u8] = b",= ";

/// Scans a name from `i` up to the first unescaped byte in `stops` (or the end). Returns the
/// end index and the unescaped name.
fn scan_name<'a>(
    line: &'a str,
    mut i: usize,
    escapes: &[u8],
    stops: &[u8],
) -> (usize, Cow<'a, str>) {
    let bytes = line.as_bytes();
    let start = i;
    let mut escaped = false;
    while i < bytes.len() {
        if bytes[i] == b'\\' && bytes.get(i + 1).is_some_and(|n| escapes.contains(n)) {
            escaped = true;
            i += 2;
        } else if stops.contains(&bytes[i]) {
            break;
        } else {
            i += 1;
        }
    }
    let raw = &line[start..i];
    if !escaped {
        return (i, Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    let rb = raw.as_bytes();
    let mut last = 0;
    let mut j = 0;
    while j < rb.len() {
        if rb[j] == b'\\' && rb.get(j + 1).is_some_and(|n| escapes.contains(n)) {
            out.push_str(&raw[last..j]);
            last = j + 1;
            j += 2;
        } else {
            j += 1;
        }
    }
    out.push_str(&raw[last..]);
    (i, Cow::Owned(out))
}

fn skip_spaces(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos) == Some(&b' ') {
        pos += 1;
    }
    pos
}

fn scan(line: &str) -> Result<RawLine<'_>, InfluxError> {
    let bytes = line.as_bytes();
    // Measurement.
    if bytes[0] == b',' {
        return Err(InfluxError::MissingMeasurement);
    }
    let (mut i, measurement) = scan_name(line, 0, MEASUREMENT_ESCAPES, b", ");
    if i >= bytes.len() {
        return Err(InfluxError::MissingFields);
    }
    // Tags.
    let mut tags: Vec<(Cow<'_, str>, Cow<'_, str>)> = Vec::new();
    while bytes.get(i) == Some(&b',') {
        i += 1;
        if i >= bytes.len() || matches!(bytes[i], b' ' | b',' | b'=') {
            return Err(InfluxError::MissingTagKey);
        }
        let (end, key) = scan_name(line, i, KEY_ESCAPES, b"=, ");
        if end >= bytes.len() || bytes[end] != b'=' {
            return Err(InfluxError::MissingTagValue);
        }
        i = end + 1;
        if i >= bytes.len() || matches!(bytes[i], b',' | b' ') {
            return Err(InfluxError::MissingTagValue);
        }
        let (end, value) = scan_name(line, i, KEY_ESCAPES, b"=, ");
        if end >= bytes.len() {
            return Err(InfluxError::MissingFields);
        }
        if bytes[end] == b'=' {
            return Err(InfluxError::InvalidTagFormat);
        }
        tags.push((key, value));
        i = end;
    }
    if has_duplicate(tags.iter().map(|(k, _)| k.as_ref())) {
        return Err(InfluxError::DuplicateTags);
    }
    // Fields.
    i = skip_spaces(bytes, i);
    if i >= bytes.len() {
        return Err(InfluxError::MissingFields);
    }
    let mut fields: Vec<(Cow<'_, str>, Value)> = Vec::new();
    let mut string_fields = 0;
    loop {
        if bytes.get(i) == Some(&b'=') {
            return Err(InfluxError::MissingFieldKey);
        }
        if i >= bytes.len() || bytes[i] == b' ' {
            return Err(InfluxError::InvalidFieldFormat);
        }
        let (end, key) = scan_name(line, i, KEY_ESCAPES, b"=, ");
        if end >= bytes.len() || bytes[end] != b'=' {
            return Err(InfluxError::InvalidFieldFormat);
        }
        i = end + 1;
        if i >= bytes.len() || matches!(bytes[i], b',' | b' ') {
            return Err(InfluxError::MissingFieldValue);
        }
        if bytes[i] == b'"' {
            i = skip_string(bytes, i + 1)?;
            if i < bytes.len() && !matches!(bytes[i], b',' | b' ') {
                return Err(InfluxError::InvalidFieldFormat);
            }
            string_fields += 1;
        } else {
            let end = bytes[i..]
                .iter()
                .position(|&c| c == b',' || c == b' ')
                .map_or(bytes.len(), |p| i + p);
            fields.push((key, field_value(&line[i..end])?));
            i = end;
        }
        if bytes.get(i) == Some(&b',') {
            i += 1;
        } else {
            break;
        }
    }
    dedup_last_wins(&mut fields);
    // Timestamp.
    i = skip_spaces(bytes, i);
    let timestamp = if i < bytes.len() {
        let end = bytes[i..]
            .iter()
            .position(|&c| c == b' ')
            .map_or(bytes.len(), |p| i + p);
        let text = &line[i..end];
        let digits = text.strip_prefix('-').unwrap_or(text);
        if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return Err(InfluxError::BadTimestamp);
        }
        let ts = text.parse::<i64>().map_err(|_| InfluxError::BadTimestamp)?;
        if skip_spaces(bytes, end) < bytes.len() {
            return Err(InfluxError::PointIsInvalid);
        }
        Some(ts)
    } else {
        None
    };
    Ok(RawLine {
        measurement,
        tags,
        fields,
        string_fields,
        timestamp,
    })
}

/// `true` when a name repeats (sorting, so a line with many tags stays O(n log n)).
fn has_duplicate<'a>(names: impl Iterator<Item = &'a str>) -> bool {
    let mut sorted: Vec<&str> = names.collect();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// Keeps one entry per key, at its first position, with its last value.
fn dedup_last_wins(fields: &mut Vec<(Cow<'_, str>, Value)>) {
    if !has_duplicate(fields.iter().map(|(k, _)| k.as_ref())) {
        return;
    }
    let mut last: std::collections::HashMap<&str, Value> = std::collections::HashMap::new();
    for (k, v) in fields.iter() {
        last.insert(k.as_ref(), *v);
    }
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(last.len());
    for (k, _) in fields.iter() {
        if seen.insert(k.as_ref())
            && let Some(v) = last.get(k.as_ref())
        {
            out.push((k.clone(), *v));
        }
    }
    *fields = out;
}

/// Skips a string field value starting after its opening quote; returns the index after the
/// closing quote.
fn skip_string(bytes: &[u8], mut pos: usize) -> Result<usize, InfluxError> {
    while pos < bytes.len() {
        match bytes[pos] {
            b'\\' if matches!(bytes.get(pos + 1), Some(b'"' | b'\\')) => pos += 2,
            b'"' => return Ok(pos + 1),
            _ => pos += 1,
        }
    }
    Err(InfluxError::UnbalancedQuotes)
}

/// A non-string field value: boolean, `i` integer, `u` unsigned, or float.
fn field_value(text: &str) -> Result<Value, InfluxError> {
    match text {
        "t" | "T" | "true" | "True" | "TRUE" => return Ok(Value::Int(1)),
        "f" | "F" | "false" | "False" | "FALSE" => return Ok(Value::Int(0)),
        _ => {}
    }
    let numeric_start = text
        .bytes()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'N' | b'n'));
    if !numeric_start {
        return Err(InfluxError::InvalidBoolean);
    }
    let all_digits = |d: &str| !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit());
    if let Some(int) = text.strip_suffix('i') {
        if !all_digits(int.strip_prefix('-').unwrap_or(int)) {
            return Err(InfluxError::InvalidNumber);
        }
        return int
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| InfluxError::IntegerOutOfRange(int.to_owned()));
    }
    if let Some(uint) = text.strip_suffix('u') {
        if !all_digits(uint) {
            return Err(InfluxError::InvalidNumber);
        }
        return match uint.parse::<u64>() {
            Ok(u) => Ok(i64::try_from(u).map_or(Value::Double(u as f64), Value::Int)),
            Err(_) => Err(InfluxError::UnsignedOutOfRange(uint.to_owned())),
        };
    }
    if !is_float_literal(text) {
        return Err(InfluxError::InvalidNumber);
    }
    let d: f64 = text.parse().map_err(|_| InfluxError::InvalidNumber)?;
    if !d.is_finite() {
        return Err(InfluxError::InvalidFloat);
    }
    Ok(Value::from_double(d))
}

/// `-?(digits)?(.digits?)?([eE][+-]?digits)?` with at least one mantissa digit.
fn is_float_literal(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = usize::from(bytes.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while bytes.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut mantissa = digits(&mut i);
    if bytes.get(i) == Some(&b'.') {
        i += 1;
        mantissa += digits(&mut i);
    }
    if mantissa == 0 {
        return false;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == bytes.len()
}

// ---- mapping and validation ----

fn map_name(name: Cow<'_, str>) -> Cow<'_, str> {
    match name {
        Cow::Borrowed(s) => encode_name(s),
        Cow::Owned(s) => match encode_name(&s) {
            Cow::Borrowed(_) => Cow::Owned(s),
            Cow::Owned(mapped) => Cow::Owned(mapped),
        },
    }
}

fn build<'a>(
    raw: RawLine<'a>,
    precision: Precision,
    now_ms: i64,
    limits: &Limits,
) -> Result<InfluxLine<'a>, InfluxError> {
    let timestamp = match raw.timestamp {
        Some(ts) => precision.to_timestamp(ts),
        None => timestamp_from_millis(now_ms),
    }?;
    if raw.fields.is_empty() {
        // Only string fields: nothing to store, so the tags are not checked.
        return Ok(InfluxLine {
            tags: Vec::new(),
            timestamp,
            fields: Vec::new(),
            string_fields: raw.string_fields,
        });
    }
    let tags: Vec<(Cow<'a, str>, Cow<'a, str>)> = raw
        .tags
        .into_iter()
        .map(|(k, v)| (map_name(k), map_name(v)))
        .collect();
    let measurement = encode_name(&raw.measurement);
    let mut fields = Vec::with_capacity(raw.fields.len());
    for (i, (key, value)) in raw.fields.into_iter().enumerate() {
        let mut metric = String::with_capacity(measurement.len() + 1 + key.len());
        metric.push_str(&measurement);
        metric.push('.');
        metric.push_str(&encode_name(&key));
        if i == 0 {
            // The tags are the line's: checked once, with the first metric
            // (OpenTSDB's order: tag count, metric name, then the tags).
            check_series(&metric, &tags, limits)?;
        } else {
            validate_name("metric name", &metric, limits.max_name_len)?;
        }
        fields.push((metric, value));
    }
    Ok(InfluxLine {
        tags,
        timestamp,
        fields,
        string_fields: raw.string_fields,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::excessive_precision)]
mod tests {
    use super::*;
    use crate::refusals::MAX_KEPT;

    const NOW: i64 = 1_700_000_000_123;

    /// A line parsed, its refusal as the text clients see.
    fn line(s: &str) -> Result<Option<InfluxLine<'_>>, String> {
        parse_line(
            s.as_bytes(),
            Precision::Nanoseconds,
            NOW,
            &Limits::default(),
        )
        .map_err(|e| e.to_string())
    }

    fn ok(s: &str) -> InfluxLine<'_> {
        match line(s) {
            Ok(Some(l)) => l,
            other => panic!("{s:?} -> {other:?}"),
        }
    }

    fn reason(s: &str) -> String {
        match line(s) {
            Err(r) => r,
            other => panic!("{s:?} unexpectedly -> {other:?}"),
        }
    }

    fn tags(l: &InfluxLine<'_>) -> Vec<(String, String)> {
        l.tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fields(l: &InfluxLine<'_>) -> Vec<(String, Value)> {
        l.fields.clone()
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn fv(pairs: &[(&str, Value)]) -> Vec<(String, Value)> {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn basic_line() {
        let l = ok("cpu,host=a,region=eu usage=1.5,count=3i 1700000000000000000");
        assert_eq!(tags(&l), kv(&[("host", "a"), ("region", "eu")]));
        assert_eq!(
            fields(&l),
            fv(&[
                ("cpu.usage", Value::Float(1.5)),
                ("cpu.count", Value::Int(3))
            ])
        );
        assert_eq!(l.timestamp, Timestamp(1_700_000_000_000));
        assert_eq!(l.string_fields, 0);
        let points: Vec<Point<'_>> = l.points().collect();
        assert_eq!(points.len(), 2);
        assert_eq!(points[1].metric, "cpu.count");
        assert_eq!(points[1].tags, l.tags);
        // Borrowed from the input when nothing is escaped.
        assert!(matches!(l.tags[0].0, Cow::Borrowed(_)));
    }

    #[test]
    fn telegraf_replay() {
        // Telegraf's influx serializer: sorted tags, ns timestamps; its opentsdb output's `%.6f`
        // floats parse the same.
        let body = b"cpu,cpu=cpu0,host=a usage_idle=99.5,usage_user=0.5 1700000000000000000\n\
                     cpu,cpu=cpu0,host=a usage_idle=99.500000,usage_user=0.500000 1700000010000000000\n";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert!(batch.errors.is_empty(), "{:?}", batch.errors);
        let points: Vec<Point<'_>> = batch.points().collect();
        assert_eq!(points.len(), 4);
        assert_eq!(batch.point_count(), 4);
        let expect = [
            ("cpu.usage_idle", 1_700_000_000_000u64, 99.5f32),
            ("cpu.usage_user", 1_700_000_000_000, 0.5),
            ("cpu.usage_idle", 1_700_000_010_000, 99.5),
            ("cpu.usage_user", 1_700_000_010_000, 0.5),
        ];
        for (p, (m, ts, v)) in points.iter().zip(expect) {
            assert_eq!(p.metric, m);
            assert_eq!(p.timestamp, Timestamp(ts));
            assert_eq!(p.value, Value::Float(v));
            assert_eq!(
                p.tags,
                vec![
                    (Cow::Borrowed("cpu"), Cow::Borrowed("cpu0")),
                    (Cow::Borrowed("host"), Cow::Borrowed("a"))
                ]
            );
            assert_eq!(crate::check_point(p, &Limits::default()), Ok(()));
        }
        assert_eq!(batch.error_text(), None);
        assert_eq!(batch.accepted_lines, 2);
        assert!(!batch.empty_body);
    }

    #[test]
    fn escaping_rules() {
        // (line, measurement-based metric of field `v`, tags)
        type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);
        let cases: &[Case<'_>] = &[
            // Measurement: comma and space.
            (r"my\,cpu,h=a v=1", "my%2Ccpu.v", &[("h", "a")]),
            (r"my\ cpu,h=a v=1", "my%20cpu.v", &[("h", "a")]),
            // `=` needs no escape in a measurement; a backslash before it is literal.
            (r"a=b,h=a v=1", "a%3Db.v", &[("h", "a")]),
            (r"a\=b,h=a v=1", "a%5C%3Db.v", &[("h", "a")]),
            // Tag keys and values: comma, equals, space.
            (r"m,k\,1=v\,1 v=1", "m.v", &[("k%2C1", "v%2C1")]),
            (r"m,k\=1=v\=1 v=1", "m.v", &[("k%3D1", "v%3D1")]),
            (r"m,k\ 1=v\ 1 v=1", "m.v", &[("k%201", "v%201")]),
            // A backslash before anything else is literal; `\\` is two backslashes.
            (r"m,k=a\b v=1", "m.v", &[("k", "a%5Cb")]),
            (r"m,k=a\\b v=1", "m.v", &[("k", "a%5C%5Cb")]),
            (r"m,k=a\\,j v=1", "m.v", &[("k", "a%5C%2Cj")]),
            (r"m,k=a\n v=1", "m.v", &[("k", "a%5Cn")]),
            (r"m\,,k=a v=1", "m%2C.v", &[("k", "a")]),
            (r"m\x,k=a v=1", "m%5Cx.v", &[("k", "a")]),
            // Characters OpenTSDB forbids are mapped, `%` too.
            ("m,k=50% v=1", "m.v", &[("k", "50%25")]),
            ("m,k=a:b v=1", "m.v", &[("k", "a%3Ab")]),
            ("m,k=Zürich v=1", "m.v", &[("k", "Zürich")]),
            ("m,k=😀 v=1", "m.v", &[("k", "%F0%9F%98%80")]),
            ("m,k=\"q\" v=1", "m.v", &[("k", "%22q%22")]),
        ];
        for (text, metric, want_tags) in cases {
            let l = ok(text);
            assert_eq!(l.fields.len(), 1, "{text}");
            assert_eq!(l.fields[0].0, *metric, "{text}");
            assert_eq!(tags(&l), kv(want_tags), "{text}");
        }
        // An escaped space does not end the tag set; the `=` after it is then inside a value.
        assert_eq!(reason(r"m,k=a\ v=1"), "invalid tag format");
        // A backslash escaping the comma after a literal backslash: `\\,` is `\` + `,`.
        assert_eq!(reason(r"m,k=a\\,j=b v=1"), "invalid tag format");
        // Field keys: comma, equals, space.
        let l = ok(r"m,h=a f\,1=1,f\=2=2,f\ 3=3");
        assert_eq!(
            fields(&l),
            fv(&[
                ("m.f%2C1", Value::Float(1.0)),
                ("m.f%3D2", Value::Float(2.0)),
                ("m.f%203", Value::Float(3.0)),
            ])
        );
        // Field keys may contain quotes literally.
        assert_eq!(
            fields(&ok(r#"m,h=a f"k=1"#)),
            fv(&[("m.f%22k", Value::Float(1.0))])
        );
    }

    #[test]
    fn string_fields_are_skipped_and_counted() {
        let l = ok(
            r#"m,h=a s="hello",v=1,t="a \"quoted\" \\ back\slash, = comma" 1700000000000000000"#,
        );
        assert_eq!(fields(&l), fv(&[("m.v", Value::Float(1.0))]));
        assert_eq!(l.string_fields, 2);
        // Only string fields: a valid line without points (no tags needed then).
        let l = ok(r#"log msg="x""#);
        assert!(l.fields.is_empty());
        assert_eq!(l.string_fields, 1);
        assert_eq!(l.points().count(), 0);
        // Separators inside strings.
        let l = ok(r#"m,h=a s="a,b c=d",v=2i"#);
        assert_eq!(fields(&l), fv(&[("m.v", Value::Int(2))]));
        assert_eq!(reason(r#"m,h=a s="abc"#), "unbalanced quotes");
        assert_eq!(reason(r#"m,h=a s="abc\"#), "unbalanced quotes");
        assert_eq!(
            fields(&ok(r#"m,h=a s="abc\"",v=1"#)),
            fv(&[("m.v", Value::Float(1.0))])
        );
        assert_eq!(reason(r#"m,h=a s="abc"x"#), "invalid field format");
        // A body-level newline inside a string does not end the line.
        let body =
            b"m,h=a s=\"two\nlines\",v=1 1700000000000000000\nm,h=b v=2 1700000000000000000\n";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert!(batch.errors.is_empty(), "{:?}", batch.errors);
        assert_eq!(batch.lines.len(), 2);
        assert_eq!(batch.string_fields, 1);
    }

    #[test]
    fn value_types() {
        let v = |s: &str| {
            let text = format!("m,h=a v={s}");
            match line(&text) {
                Ok(Some(l)) => Ok(l.fields[0].1),
                Ok(None) => panic!("{text}"),
                Err(r) => Err(r),
            }
        };
        assert_eq!(v("1"), Ok(Value::Float(1.0)));
        assert_eq!(v("-1.5"), Ok(Value::Float(-1.5)));
        assert_eq!(v(".5"), Ok(Value::Float(0.5)));
        assert_eq!(v("5."), Ok(Value::Float(5.0)));
        assert_eq!(v("1e3"), Ok(Value::Float(1000.0)));
        assert_eq!(v("1E-3"), Ok(Value::Double(0.001)));
        assert_eq!(v("1.5e+2"), Ok(Value::Float(150.0)));
        assert_eq!(v("0.1"), Ok(Value::Double(0.1)));
        assert_eq!(v("-0"), Ok(Value::Float(-0.0)));
        assert_eq!(v("42i"), Ok(Value::Int(42)));
        assert_eq!(v("-42i"), Ok(Value::Int(-42)));
        assert_eq!(v("9223372036854775807i"), Ok(Value::Int(i64::MAX)));
        assert_eq!(v("-9223372036854775808i"), Ok(Value::Int(i64::MIN)));
        assert_eq!(v("42u"), Ok(Value::Int(42)));
        assert_eq!(v("9223372036854775807u"), Ok(Value::Int(i64::MAX)));
        assert_eq!(
            v("18446744073709551615u"),
            Ok(Value::Double(1.844_674_407_370_955_2e19))
        );
        for t in ["t", "T", "true", "True", "TRUE"] {
            assert_eq!(v(t), Ok(Value::Int(1)), "{t}");
        }
        for f in ["f", "F", "false", "False", "FALSE"] {
            assert_eq!(v(f), Ok(Value::Int(0)), "{f}");
        }
        for (bad, why) in [
            ("tRUE", "invalid boolean"),
            ("yes", "invalid boolean"),
            ("+1", "invalid boolean"),
            ("Inf", "invalid boolean"),
            ("NaN", "invalid number"),
            ("nan", "invalid number"),
            ("-inf", "invalid number"),
            ("1.2.3", "invalid number"),
            ("1e", "invalid number"),
            ("1e+", "invalid number"),
            ("-", "invalid number"),
            (".", "invalid number"),
            ("-.", "invalid number"),
            ("1x", "invalid number"),
            ("1.5i", "invalid number"),
            ("1e3i", "invalid number"),
            ("i", "invalid boolean"),
            ("-1u", "invalid number"),
            ("1.0u", "invalid number"),
            ("1iu", "invalid number"),
            ("0x10", "invalid number"),
            ("1e400", "invalid float"),
            ("-1e400", "invalid float"),
            (
                "9223372036854775808i",
                "unable to parse integer 9223372036854775808: value out of range",
            ),
            (
                "18446744073709551616u",
                "unable to parse unsigned 18446744073709551616: value out of range",
            ),
        ] {
            assert_eq!(v(bad), Err(why.to_owned()), "{bad}");
        }
    }

    #[test]
    fn syntax_errors() {
        for (text, why) in [
            ("cpu", "missing fields"),
            ("cpu ", "missing fields"),
            ("cpu,host=a", "missing fields"),
            ("cpu,host=a ", "missing fields"),
            (",host=a v=1", "missing measurement"),
            ("cpu, v=1", "missing tag key"),
            ("cpu,=a v=1", "missing tag key"),
            ("cpu,,h=a v=1", "missing tag key"),
            ("cpu,host v=1", "missing tag value"),
            ("cpu,host= v=1", "missing tag value"),
            ("cpu,host=,x=y v=1", "missing tag value"),
            ("cpu,host", "missing tag value"),
            ("cpu,host=a=b v=1", "invalid tag format"),
            ("cpu,host=a,host=b v=1", "duplicate tags"),
            ("cpu,b=1,a=2,b=3 v=1", "duplicate tags"),
            ("cpu,h=a =1", "missing field key"),
            ("cpu,h=a v=1,=2", "missing field key"),
            ("cpu,h=a v", "invalid field format"),
            ("cpu,h=a v=1,w", "invalid field format"),
            ("cpu,h=a v=1,", "invalid field format"),
            ("cpu,h=a v=1, w=2", "invalid field format"),
            ("cpu,h=a v=", "missing field value"),
            ("cpu,h=a v=,w=1", "missing field value"),
            ("cpu,h=a v= 1", "missing field value"),
            ("cpu,h=a v=1 abc", "bad timestamp"),
            ("cpu,h=a v=1 12a", "bad timestamp"),
            ("cpu,h=a v=1 -", "bad timestamp"),
            ("cpu,h=a v=1 1.5", "bad timestamp"),
            ("cpu,h=a v=1 99999999999999999999", "bad timestamp"),
            ("cpu,h=a v=1 1700000000000000000 x", "point is invalid"),
        ] {
            assert_eq!(reason(text), why, "{text}");
        }
        assert_eq!(
            parse_line(
                b"cpu,h=\xff v=1",
                Precision::Nanoseconds,
                NOW,
                &Limits::default()
            ),
            Err(InfluxError::InvalidUtf8)
        );
    }

    #[test]
    fn whitespace_comments_and_crlf() {
        assert_eq!(line(""), Ok(None));
        assert_eq!(line("   \t "), Ok(None));
        assert_eq!(line("# a comment, with = \"quotes"), Ok(None));
        assert_eq!(line("  # indented comment"), Ok(None));
        assert_eq!(line("\r"), Ok(None));
        let l = ok("  cpu,h=a  v=1   1700000000000000000  \r");
        assert_eq!(l.timestamp, Timestamp(1_700_000_000_000));
        assert_eq!(fields(&l), fv(&[("cpu.v", Value::Float(1.0))]));
        // Tabs are not separators inside a line.
        assert_eq!(reason("cpu,h=a\tv=1"), "invalid tag format");
    }

    #[test]
    fn timestamps_and_precision() {
        let at = |p: Precision, ts: &str| {
            let text = format!("m,h=a v=1 {ts}");
            parse_line(text.as_bytes(), p, NOW, &Limits::default())
                .map(|l| l.map(|l| l.timestamp.as_millis()))
                .map_err(|e| e.to_string())
        };
        use Precision::*;
        assert_eq!(
            at(Nanoseconds, "1700000000123456789"),
            Ok(Some(1_700_000_000_123))
        );
        assert_eq!(
            at(Microseconds, "1700000000123456"),
            Ok(Some(1_700_000_000_123))
        );
        assert_eq!(
            at(Milliseconds, "1700000000123"),
            Ok(Some(1_700_000_000_123))
        );
        assert_eq!(at(Seconds, "1700000000"), Ok(Some(1_700_000_000_000)));
        assert_eq!(at(Minutes, "28333333"), Ok(Some(1_699_999_980_000)));
        assert_eq!(at(Hours, "472222"), Ok(Some(1_699_999_200_000)));
        // Seconds precision stores seconds, like telnet.
        let l = parse_line(b"m,h=a v=1 1700000000", Seconds, NOW, &Limits::default());
        assert_eq!(l.unwrap().unwrap().timestamp, Timestamp(1_700_000_000));
        // Sub-millisecond digits are truncated.
        assert_eq!(
            at(Nanoseconds, "1700000000123999999"),
            Ok(Some(1_700_000_000_123))
        );
        // Missing timestamp: now.
        assert_eq!(ok("m,h=a v=1").timestamp, Timestamp(NOW as u64));
        // Refused by the timestamp rule.
        assert_eq!(
            at(Nanoseconds, "0"),
            Err(
                "invalid timestamp: 0 ns (must be at least 1 ms after 1970-01-01T00:00:00Z)"
                    .to_owned()
            )
        );
        assert_eq!(
            at(Nanoseconds, "999999"),
            Err(
                "invalid timestamp: 999999 ns (must be at least 1 ms after 1970-01-01T00:00:00Z)"
                    .to_owned()
            )
        );
        assert_eq!(
            at(Nanoseconds, "-1700000000000000000"),
            Err("invalid timestamp: -1700000000000000000 ns (must be at least 1 ms after 1970-01-01T00:00:00Z)".to_owned())
        );
        assert_eq!(
            at(Milliseconds, "4294967296000"),
            Err("invalid timestamp: 4294967296000 ms is after 2106-02-07T06:28:15Z, the latest time a row key can hold".to_owned())
        );
        assert_eq!(
            at(Seconds, "4294967296"),
            Err("invalid timestamp: 4294967296 s is after 2106-02-07T06:28:15Z, the latest time a row key can hold".to_owned())
        );
        assert_eq!(
            at(Hours, "9223372036854775807"),
            Err("invalid timestamp: 9223372036854775807 h is after 2106-02-07T06:28:15Z, the latest time a row key can hold".to_owned())
        );
        assert!(
            at(Milliseconds, "1500")
                .unwrap_err()
                .contains("1500 ms is a millisecond time before")
        );
        assert_eq!(at(Milliseconds, "2000"), Ok(Some(2000)));
        // now_ms is checked too.
        assert_eq!(
            parse_line(b"m,h=a v=1", Nanoseconds, 0, &Limits::default()).map_err(|e| e.to_string()),
            Err("invalid timestamp: 0 ms".to_owned())
        );
    }

    #[test]
    fn precision_params() {
        use Precision::*;
        for (p, want) in [
            ("", Nanoseconds),
            ("n", Nanoseconds),
            ("ns", Nanoseconds),
            ("u", Microseconds),
            ("us", Microseconds),
            ("µ", Microseconds),
            ("ms", Milliseconds),
            ("s", Seconds),
            ("m", Minutes),
            ("h", Hours),
        ] {
            assert_eq!(Precision::from_v1(p), Ok(want), "{p}");
        }
        for (p, want) in [
            ("", Nanoseconds),
            ("ns", Nanoseconds),
            ("us", Microseconds),
            ("ms", Milliseconds),
            ("s", Seconds),
        ] {
            assert_eq!(Precision::from_v2(p), Ok(want), "{p}");
        }
        for bad in ["n", "u", "m", "h", "sec", "NS"] {
            assert_eq!(
                Precision::from_v2(bad),
                Err(PrecisionError(bad.to_owned())),
                "{bad}"
            );
        }
        let e = Precision::from_v1("sec").unwrap_err();
        assert_eq!(e, PrecisionError("sec".to_owned()));
        assert_eq!(e.to_string(), r#"invalid precision "sec""#);
    }

    #[test]
    fn semantic_errors() {
        assert_eq!(
            reason("cpu v=1"),
            "Need at least one tag (metric=cpu.v, tags={})"
        );
        assert_eq!(
            reason("cpu,a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9 v=1"),
            "Too many tags: 9 maximum allowed: 8, tags: {a=1, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9}"
        );
        let limits = Limits {
            max_tags: 9,
            ..Limits::default()
        };
        assert!(
            parse_line(
                b"cpu,a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9 v=1",
                Precision::Nanoseconds,
                NOW,
                &limits
            )
            .is_ok()
        );
        // The whole line fails when one field does.
        assert_eq!(reason("cpu,h=a v=1,w=NaN"), "invalid number");
        // Repeated field: last value wins.
        assert_eq!(
            fields(&ok("cpu,h=a v=1,w=2,v=3i")),
            fv(&[("cpu.v", Value::Int(3)), ("cpu.w", Value::Float(2.0))])
        );
        // Many tags and fields stay fast (duplicate checks sort instead of comparing pairs).
        let many: String = (0..50_000).map(|i| format!(",t{i}=v")).collect();
        let fields_many: Vec<String> = (0..50_000).map(|i| format!("f{}={i}i", i % 100)).collect();
        let text = format!("m{many} {}", fields_many.join(","));
        assert!(reason(&text).starts_with("Too many tags: 50000 maximum allowed: 8"));
        let text = format!("m,h=a {}", fields_many.join(","));
        let l = ok(&text);
        assert_eq!(l.fields.len(), 100);
        assert_eq!(l.fields[0], ("m.f0".to_owned(), Value::Int(49_900)));
    }

    #[test]
    fn body_errors_with_line_numbers() {
        let body = b"# header\n\
                     cpu,h=a v=1 1700000000000000000\n\
                     \n\
                     cpu,h=a v=oops 1700000000000000000\r\n\
                     cpu v=1 1700000000000000000\n\
                     cpu,h=b v=2 1700000000000000000";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.lines.len(), 2);
        assert_eq!(
            batch.errors.to_vec(),
            vec![
                LineError {
                    line_no: 4,
                    line: "cpu,h=a v=oops 1700000000000000000".to_owned(),
                    reason: InfluxError::InvalidBoolean,
                },
                LineError {
                    line_no: 5,
                    line: "cpu v=1 1700000000000000000".to_owned(),
                    reason: InfluxError::Check(CheckError::NoTags {
                        metric: "cpu.v".to_owned()
                    }),
                },
            ]
        );
        let joined = "unable to parse 'cpu,h=a v=oops 1700000000000000000': invalid boolean\nunable to parse 'cpu v=1 1700000000000000000': Need at least one tag (metric=cpu.v, tags={})";
        assert_eq!(batch.error_text().as_deref(), Some(joined));
        assert_eq!(batch.first_error_line(), Some(4));
        assert_eq!(batch.accepted_lines, 2);
        // Every line failed.
        let batch = parse_body(b"cpu\n", Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.accepted_lines, 0);
        assert_eq!(batch.first_error_line(), Some(1));
        assert_eq!(
            batch.error_text().as_deref(),
            Some("unable to parse 'cpu': missing fields")
        );
        // An empty body, and one of blank and comment lines only.
        let empty = parse_body(b"", Precision::Nanoseconds, NOW, &Limits::default());
        assert!(empty.empty_body);
        assert_eq!(empty.error_text(), None);
        let blank = parse_body(
            b"\n\n# c\n",
            Precision::Nanoseconds,
            NOW,
            &Limits::default(),
        );
        assert!(!blank.empty_body);
        assert_eq!(blank.error_text(), None);
        assert_eq!(blank.accepted_lines, 0);
        assert_eq!(
            line_error_text(b"  bad\r", &InfluxError::MissingFields),
            "unable to parse 'bad': missing fields"
        );
    }

    #[test]
    fn refused_lines_past_the_first_hundred_are_counted_not_kept() {
        let mut body = b"x\n".repeat(1000);
        body.extend_from_slice(b"cpu,h=a v=1 1700000000000000000\n");
        let batch = parse_body(&body, Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.errors.len(), MAX_KEPT);
        assert_eq!(batch.errors.count(), 1000);
        assert_eq!(batch.accepted_lines, 1);
        assert_eq!(batch.first_error_line(), Some(1));
        assert_eq!(batch.errors[99].line_no, 100);
        let text = batch.error_text().unwrap_or_default();
        assert!(
            text.starts_with("unable to parse 'x': missing fields\n"),
            "{text}"
        );
        assert!(
            text.ends_with("unable to parse 'x': missing fields\nand 900 more lines refused"),
            "{text}"
        );
        assert_eq!(text.lines().count(), MAX_KEPT + 1);
    }

    #[test]
    fn a_long_refused_line_is_shown_cut() {
        let long = format!("cpu,h=a {}", "v".repeat(5000));
        let batch = parse_body(
            long.as_bytes(),
            Precision::Nanoseconds,
            NOW,
            &Limits::default(),
        );
        assert_eq!(batch.errors.count(), 1);
        let shown = &batch.errors[0].line;
        assert_eq!(shown.len(), MAX_SHOWN_LINE + "…".len());
        assert!(
            shown.starts_with("cpu,h=a vvv") && shown.ends_with("v…"),
            "{shown}"
        );
        // A line at the bound is shown whole.
        let exact = "x".repeat(MAX_SHOWN_LINE);
        let batch = parse_body(
            exact.as_bytes(),
            Precision::Nanoseconds,
            NOW,
            &Limits::default(),
        );
        assert_eq!(batch.errors[0].line, exact);
    }

    #[test]
    fn line_numbers_count_newlines_inside_strings() {
        let body = b"m,h=a s=\"1\n2\n3\",v=1\nbad\n";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.lines.len(), 1);
        assert_eq!(batch.errors.len(), 1);
        assert_eq!(batch.errors[0].line_no, 4);
        // A comment with a quote does not swallow the next line.
        let body = b"# say \"hi\nm,h=a v=1\n";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.lines.len(), 1, "{:?}", batch.errors);
        // A backslash does not escape a newline.
        let body = b"m,h=a\\\nm,h=a v=1\n";
        let batch = parse_body(body, Precision::Nanoseconds, NOW, &Limits::default());
        assert_eq!(batch.lines.len(), 1);
        assert_eq!(batch.errors[0].line_no, 1);
        assert_eq!(batch.errors[0].reason, InfluxError::MissingFields);
    }
}
