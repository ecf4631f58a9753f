//! `hourglass-ingest`: pure parsers and validators for hourglass's OpenTSDB-compatible write formats.
//!
//! This crate owns the *wire-format* half of ingestion and nothing else: it turns bytes into
//! validated [`Point`]s (or precise errors: OpenTSDB's, InfluxDB's and Prometheus's texts where
//! they have one) and never performs I/O, never reads a clock, never touches the UID tables and
//! never stores anything.
//!
//! * [`telnet`] — line framing ([`telnet::next_line`]) and the telnet command / `put` parser
//!   ([`telnet::parse_line`]).
//! * [`json`] — the HTTP `/api/put` body decoder ([`json::decode_put_body`]) and per-point
//!   validation ([`json::JsonPoint::to_point`]).
//! * [`timestamp`] — the one timestamp rule of every write format ([`parse_timestamp`],
//!   [`timestamp_from_millis`], [`MAX_TIMESTAMP_MS`]), also applied to query times
//!   ([`parse_query_timestamp`]).
//! * [`influx`] — InfluxDB line protocol: whole `/write` bodies ([`influx::parse_body`]) with
//!   per-line errors and InfluxDB 1.x/2.x responses, single telnet-port lines
//!   ([`influx::parse_line`]).
//! * [`prom`] — Prometheus remote write ([`prom::decode_write`]) and remote read
//!   ([`prom::decode_read`], [`prom::encode_read_response`]): hand-derived `prost` messages,
//!   bounded snappy decoding, the name mapping both ways.
//! * [`port`] — sharing one TCP port: HTTP or line protocol from a connection's first bytes
//!   ([`port::sniff_connection`]), OpenTSDB command or InfluxDB line per line
//!   ([`port::classify_line`]).
//! * [`number`] — OpenTSDB's number rules (`Tags.parseLong`, value classification).
//! * [`names`] — the reversible `%XX` mapping of foreign names (InfluxDB, Prometheus) onto
//!   OpenTSDB's name characters ([`encode_name`], [`decode_name`]).
//! * [`validate`] — name validation and the semantic checks shared by every write path.
//! * [`point`] — the data model ([`Point`], [`Timestamp`], [`Value`], [`PutError`]).

pub mod influx;
pub mod json;
pub mod names;
pub mod number;
pub mod point;
pub mod port;
pub mod prom;
pub mod telnet;
pub mod timestamp;
pub mod validate;

pub use json::{BodyError, JsonPoint, decode_put_body};
pub use names::{decode_name, encode_name};
pub use number::{ValueError, parse_long, parse_value};
pub use point::{Point, PutError, Timestamp, Value};
pub use telnet::{
    Command, FastPut, LineResult, fast_put, next_line, parse_line, unknown_command_line,
};
pub use timestamp::{
    MAX_TIMESTAMP_MS, MAX_TIMESTAMP_SECS, TimestampError, parse_query_timestamp, parse_timestamp,
    timestamp_from_millis, timestamp_from_secs,
};
pub use validate::{check_point, check_series, validate_name};

/// The default of [`Limits::max_name_len`].
pub const DEFAULT_MAX_NAME_LEN: usize = 1024;

/// Limits applied while parsing and validating writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Maximum number of tags on one data point (`tsd.storage.max_tags`, OpenTSDB default 8).
    pub max_tags: usize,
    /// Maximum telnet line length in bytes, excluding the terminator (OpenTSDB: 1024).
    pub max_line_len: usize,
    /// Longest metric name, tag key or tag value in bytes, as stored (after the `%XX` mapping
    /// of foreign names), on every protocol. OpenTSDB's telnet line bound keeps its names under
    /// 1,024 bytes; hourglass applies that bound to HTTP, InfluxDB and Prometheus writes too.
    pub max_name_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_tags: 8,
            max_line_len: 1024,
            max_name_len: DEFAULT_MAX_NAME_LEN,
        }
    }
}
