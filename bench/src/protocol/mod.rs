//! Wire formats: turning generated [`Point`]s into request payloads.
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

pub mod influx;
pub mod json;
pub mod mixed;
pub mod prom;
pub mod telnet;
#[cfg(test)]
mod testutil;

use std::sync::Arc;

use crate::workload::{Point, Value, Workload};

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

/// Appends points to a send buffer in some wire format.
pub trait Encoder: Send {
    /// Called before the first point of a batch.
    fn begin_batch(&mut self, _out: &mut Vec<u8>) {}
    /// Appends one point.
    fn encode(&mut self, point: &Point, out: &mut Vec<u8>);
    /// Called after the last point of a batch; may rewrite `out` entirely
    /// (compression, protobuf framing).
    fn end_batch(&mut self, _out: &mut Vec<u8>) {}
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

/// Appends the decimal form of `v`.
pub fn write_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends the decimal form of `v`.
pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    write_u64(out, v.unsigned_abs());
}

/// Appends `h / 100` with exactly two decimals (`12.30`, `0.05`, `-1.00`).
pub fn write_hundredths(out: &mut Vec<u8>, h: i64) {
    if h < 0 {
        out.push(b'-');
    }
    let a = h.unsigned_abs();
    write_u64(out, a / 100);
    let frac = (a % 100) as u8;
    out.extend_from_slice(&[b'.', b'0' + frac / 10, b'0' + frac % 10]);
}

/// Appends a value the way OpenTSDB clients write it: integers bare, the
/// two-decimal floats with their two decimals.
pub fn write_value(out: &mut Vec<u8>, v: Value) {
    match v {
        Value::Int(v) => write_i64(out, v),
        Value::Hundredths(h) => write_hundredths(out, h),
    }
}

/// A timestamp text cache: consecutive points mostly share their timestamp.
#[derive(Debug, Default)]
pub(crate) struct TsCache {
    ts: Option<i64>,
    text: Vec<u8>,
}

impl TsCache {
    /// The decimal text of `ts` converted by `convert`.
    pub(crate) fn get(&mut self, ts_ms: i64, convert: impl Fn(i64) -> i64) -> &[u8] {
        if self.ts != Some(ts_ms) {
            self.text.clear();
            write_i64(&mut self.text, convert(ts_ms));
            self.ts = Some(ts_ms);
        }
        &self.text
    }
}

/// gzip-compresses `out` in place.
pub(crate) fn gzip_in_place(out: &mut Vec<u8>) {
    use std::io::Write as _;
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(out.len() / 4),
        flate2::Compression::default(),
    );
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(out);
    if let Ok(compressed) = enc.finish() {
        *out = compressed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl Fn(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        f(&mut out);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn integers() {
        for v in [0, 1, -1, 9, 10, 12345, i64::MAX, i64::MIN] {
            assert_eq!(text(|o| write_i64(o, v)), v.to_string());
        }
    }

    #[test]
    fn two_decimals() {
        assert_eq!(text(|o| write_hundredths(o, 0)), "0.00");
        assert_eq!(text(|o| write_hundredths(o, 5)), "0.05");
        assert_eq!(text(|o| write_hundredths(o, 1230)), "12.30");
        assert_eq!(text(|o| write_hundredths(o, 10_000)), "100.00");
        assert_eq!(text(|o| write_hundredths(o, -105)), "-1.05");
        for h in -20_000i64..20_000 {
            let s = text(|o| write_hundredths(o, h));
            assert_eq!(s.parse::<f64>().ok(), Some(h as f64 / 100.0), "{s}");
        }
    }

    #[test]
    fn gzip_round_trip() {
        use std::io::Read as _;
        let mut data = b"hello hello hello".to_vec();
        gzip_in_place(&mut data);
        let mut back = String::new();
        flate2::read::GzDecoder::new(&data[..])
            .read_to_string(&mut back)
            .expect("gunzip");
        assert_eq!(back, "hello hello hello");
    }
}
