//! `hourglass-ingest`: pure parsers and validators for hourglass's OpenTSDB-compatible write formats.
//!
//! This crate owns the *wire-format* half of ingestion and nothing else: it turns bytes into
//! validated [`Point`]s (or precise errors: OpenTSDB's, InfluxDB's and Prometheus's texts where
//! they have one) and never performs I/O, never reads a clock, never touches the UID tables and
//! never stores anything.
//!
//! # Layout (one line a module, leaves last; every module depends only on those below it)
//!
//! * [`telnet`] — OpenTSDB telnet line framing ([`next_line`]) and command / `put` parsing.
//! * [`json`] — the HTTP `/api/put` body ([`decode_put_body`]) and per-point checks ([`JsonPoint`]).
//! * [`jsonl`] — export and import lines: VictoriaMetrics' JSON lines, OpenTSDB's import text.
//! * [`influx`] — InfluxDB line protocol: `/write` bodies ([`influx::parse_body`]) and lines.
//! * [`selector`] — series selectors as text (`name{label="value"}`), the `match[]` of exports.
//! * [`prom`] — Prometheus remote write and remote read: the facade of the `prom::` modules below.
//! * `prom::write` — remote write: a `WriteRequest`, series by series, into points.
//! * `prom::read` — remote read: the request, its matchers, stored series as `TimeSeries`.
//! * `prom::wire` — the protobuf field reader remote write streams a request with.
//! * [`prom::pb`] — the `prompb` protobuf messages, with their official field numbers.
//! * `prom::metric_names` — Prometheus metric names to OpenTSDB metrics and back.
//! * `prom::snappy` — snappy block bodies, bounded before anything is allocated.
//! * `prom::error` — [`prom::PromError`], a request that cannot be served as a whole.
//! * [`port`] — sharing one TCP port: HTTP or line protocol, OpenTSDB command or InfluxDB line.
//! * [`validate`] — name validation and the semantic checks of every write path ([`check_point`]).
//! * [`timestamp`] — the one timestamp rule of every write format and of query times.
//! * [`number`] — OpenTSDB's number rules ([`parse_long`], [`parse_value`]).
//! * [`names`] — the reversible `%XX` mapping of foreign names ([`encode_name`], [`decode_name`]).
//! * [`point`] — the data model ([`Point`], [`Timestamp`], [`Value`], [`PutError`]).
//! * [`name_chars`] — the characters a stored name may hold, `%XX` escapes included.
//! * [`messages`] — OpenTSDB's per-point `/api/put` error texts.
//! * [`limits`] — the bounds applied while parsing ([`Limits`]).
//! * [`refusals`] — what a request had refused, the first hundred with their reasons ([`Refusals`]).
//! * `java` — Java's `toString` formats that OpenTSDB's error texts quote.

pub mod influx;
mod java;
pub mod json;
pub mod jsonl;
pub mod limits;
pub mod messages;
pub mod name_chars;
pub mod names;
pub mod number;
pub mod point;
pub mod port;
pub mod prom;
pub mod refusals;
pub mod rollup;
pub mod selector;
pub mod telnet;
pub mod timestamp;
pub mod validate;

pub use json::{BodyError, JsonPoint, decode_put_body};
pub use limits::{DEFAULT_MAX_NAME_LEN, Limits};
pub use names::{decode_name, encode_name};
pub use number::{ValueError, parse_long, parse_value};
pub use point::{Point, PutError, Timestamp, Value};
pub use refusals::Refusals;
pub use rollup::{RollupPoint, RollupSpec};
pub use telnet::{
    Command, FastPut, LineResult, fast_import, fast_put, next_line, parse_import_line, parse_line,
    unknown_command_line,
};
pub use timestamp::{
    MAX_TIMESTAMP_MS, MAX_TIMESTAMP_SECS, TimestampError, parse_query_timestamp, parse_timestamp,
    timestamp_from_millis, timestamp_from_secs,
};
pub use validate::{CheckError, NameError, check_point, check_series, validate_name};
