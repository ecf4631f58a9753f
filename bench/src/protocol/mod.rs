//! Wire formats: turning generated [`Point`]s into bytes.
//!
//! Each protocol implements [`Encoder`], which appends one point at a time to
//! a caller-owned buffer so the runner can send large batches with a single
//! write. Only the OpenTSDB telnet format exists today; HTTP `/api/put` JSON
//! and Influx line protocol can be added as further encoders (the
//! `begin_batch`/`end_batch` hooks exist for formats that wrap a batch, such as
//! a JSON array).

pub mod telnet;

use std::io::Write as _;

use crate::workload::Point;

/// The wire protocols the benchmark can speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// OpenTSDB telnet-style `put` lines over TCP.
    Telnet,
}

impl Protocol {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Telnet => "telnet",
        }
    }
}

/// Appends points to a send buffer in some wire format.
pub trait Encoder {
    /// Called before the first point of a batch.
    fn begin_batch(&mut self, _out: &mut Vec<u8>) {}
    /// Appends one point.
    fn encode(&mut self, point: &Point, out: &mut Vec<u8>);
    /// Called after the last point of a batch.
    fn end_batch(&mut self, _out: &mut Vec<u8>) {}
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

/// Appends `v` so that it always reads back as a float (it always contains a
/// `.`) and parses back to exactly `v`. Values with at most two decimals (all
/// the generator produces) take a fast path that avoids `core::fmt`.
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_finite() && v.abs() < 1e12 {
        let hundredths = (v * 100.0).round();
        // c / 100.0 is correctly rounded, so if it equals v the two-decimal
        // text denotes a real number whose nearest double is v.
        if hundredths / 100.0 == v {
            let h = hundredths as i64;
            if h < 0 {
                out.push(b'-');
            }
            let a = h.unsigned_abs();
            write_u64(out, a / 100);
            out.push(b'.');
            let frac = a % 100;
            out.push(b'0' + (frac / 10) as u8);
            if !frac.is_multiple_of(10) {
                out.push(b'0' + (frac % 10) as u8);
            }
            return;
        }
    }
    let start = out.len();
    // Writing into a Vec cannot fail.
    let _ = write!(out, "{v}");
    if v.is_finite() && !out[start..].contains(&b'.') {
        out.extend_from_slice(b".0");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        String::from_utf8(out).expect("ascii")
    }

    fn i(v: i64) -> String {
        let mut out = Vec::new();
        write_i64(&mut out, v);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn integers() {
        for v in [0, 1, -1, 9, 10, 12345, i64::MAX, i64::MIN] {
            assert_eq!(i(v), v.to_string());
        }
    }

    #[test]
    fn floats_fast_path() {
        assert_eq!(f(0.0), "0.0");
        assert_eq!(f(12.0), "12.0");
        assert_eq!(f(12.3), "12.3");
        assert_eq!(f(12.34), "12.34");
        assert_eq!(f(-0.05), "-0.05");
        assert_eq!(f(100.0), "100.0");
        for c in -20_000i64..20_000 {
            let v = c as f64 / 100.0;
            let s = f(v);
            assert_eq!(s.parse::<f64>().ok(), Some(v), "{s}");
            assert_eq!(
                s.trim_end_matches(".0"),
                v.to_string().trim_end_matches(".0")
            );
        }
    }

    #[test]
    fn floats_slow_path() {
        assert_eq!(f(0.125), "0.125");
        assert_eq!(f(1e15), "1000000000000000.0");
        assert_eq!(f(1.0 / 3.0).parse::<f64>().ok(), Some(1.0 / 3.0));
    }
}
