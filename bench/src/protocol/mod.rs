//! Wire formats: turning generated [`Point`](crate::workload::Point)s into
//! request payloads.
//!
//! Each format implements [`Encoder`], which appends one point at a time to
//! a caller-owned buffer, with hooks around a batch for formats that wrap one
//! (a JSON array, a gzip stream, a protobuf `WriteRequest` compressed with
//! snappy). A batch is one TCP write for the line formats and one HTTP
//! request body for the others.
//!
//! * [`telnet`] — OpenTSDB `put` lines;
//! * [`json`] — `/api/put` JSON arrays, optionally gzip;
//! * [`influx`] — InfluxDB line protocol (one line per host, timestamp and
//!   measurement, the metrics as fields);
//! * [`prom`] — Prometheus remote write (snappy block of a `WriteRequest`);
//! * [`mixed`] — `put` and Influx lines interleaved on one connection.
//!
//! This root names the protocols ([`Protocol`]) and builds the encoder of
//! each ([`encoder_for`]). Shared by the formats: the [`Encoder`] trait
//! ([`encoder`]), the number and tag text they append ([`text`]) and their
//! gzip step ([`gzip`]).

pub mod encoder;
pub mod gzip;
pub mod influx;
pub mod json;
pub mod mixed;
pub mod prom;
pub mod telnet;
#[cfg(test)]
mod testutil;
pub mod text;

pub use encoder::Encoder;

use std::sync::Arc;

use crate::workload::Workload;

/// The ingest protocols the benchmark can speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// OpenTSDB telnet `put` lines over TCP.
    Telnet,
    /// InfluxDB line protocol over the TCP (telnet) port.
    InfluxTcp,
    /// `put` and InfluxDB lines interleaved on each TCP connection.
    MixedTcp,
    /// OpenTSDB HTTP `POST /api/put` with JSON arrays.
    HttpPut,
    /// InfluxDB 1.x `POST /write?db=&precision=`.
    InfluxHttp,
    /// InfluxDB 2.x `POST /api/v2/write?bucket=&precision=`.
    InfluxV2,
    /// Prometheus remote write `POST /api/v1/write` (snappy protobuf).
    PromWrite,
}

impl Protocol {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Telnet => "telnet",
            Protocol::InfluxTcp => "influx-tcp",
            Protocol::MixedTcp => "mixed-tcp",
            Protocol::HttpPut => "http-put",
            Protocol::InfluxHttp => "influx-http",
            Protocol::InfluxV2 => "influx-v2",
            Protocol::PromWrite => "prom-write",
        }
    }

    /// Line protocols over a raw TCP connection (acknowledged with `version`).
    pub fn is_tcp(self) -> bool {
        matches!(
            self,
            Protocol::Telnet | Protocol::InfluxTcp | Protocol::MixedTcp
        )
    }

    /// Default points per batch (a TCP write or an HTTP request).
    pub fn default_batch(self) -> usize {
        match self {
            Protocol::Telnet | Protocol::InfluxTcp | Protocol::MixedTcp => 1_000,
            Protocol::HttpPut => 5_000,
            Protocol::InfluxHttp | Protocol::InfluxV2 => 10_000,
            // As the peers were measured (and Prometheus's own ceiling is far above).
            Protocol::PromWrite => 50_000,
        }
    }
}

/// Options that shape payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeOptions {
    /// gzip the body (`/api/put`, Influx HTTP).
    pub gzip: bool,
    /// Influx timestamp precision.
    pub precision: influx::Precision,
}

/// Builds the encoder of `protocol` for `workload`.
pub fn encoder_for(
    protocol: Protocol,
    workload: &Arc<Workload>,
    opts: EncodeOptions,
) -> Box<dyn Encoder> {
    match protocol {
        Protocol::Telnet => Box::new(telnet::TelnetEncoder::new(Arc::new(
            telnet::TelnetTemplates::new(workload),
        ))),
        Protocol::InfluxTcp => Box::new(influx::InfluxEncoder::new(
            Arc::new(influx::InfluxTemplates::new(workload)),
            opts.precision,
            false,
        )),
        Protocol::InfluxHttp | Protocol::InfluxV2 => Box::new(influx::InfluxEncoder::new(
            Arc::new(influx::InfluxTemplates::new(workload)),
            opts.precision,
            opts.gzip,
        )),
        Protocol::MixedTcp => Box::new(mixed::MixedEncoder::new(workload, opts.precision)),
        Protocol::HttpPut => Box::new(json::JsonEncoder::new(
            Arc::new(json::JsonTemplates::new(workload)),
            opts.gzip,
        )),
        Protocol::PromWrite => Box::new(prom::PromEncoder::new(Arc::clone(workload))),
    }
}
