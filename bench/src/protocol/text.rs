//! Text appended straight to send buffers, without `format!`: decimal
//! integers, the two-decimal values, the cached text of the current
//! timestamp, and the pod tag value of the high-cardinality workload.

use crate::workload::Value;

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

/// Appends the `pod` tag value of `(host, epoch)` (the high-cardinality
/// workload's pods are too many to render up front, unlike host tags).
pub fn pod_name(host: u32, epoch: u32, out: &mut Vec<u8>) {
    out.extend_from_slice(b"pod-");
    write_u64(out, u64::from(host));
    out.push(b'-');
    write_u64(out, u64::from(epoch));
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
    fn pod_names() {
        let mut out = Vec::new();
        pod_name(12, 3, &mut out);
        assert_eq!(out, b"pod-12-3");
    }
}
