//! Value encodings: integers on the smallest of 1/2/4/8 bytes, IEEE single
//! (4 bytes) and double (8 bytes) floats, all big-endian. The qualifier's low
//! four bits carry the flags: bit 3 = float, bits 0–2 = length − 1.

/// A stored numeric value, as classified at ingest (reference §3.4 step 6).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StoredValue {
    Int(i64),
    Float(f32),
    Double(f64),
}

impl StoredValue {
    pub fn is_integer(self) -> bool {
        matches!(self, StoredValue::Int(_))
    }

    /// Prometheus' staleness marker (kept bit for bit in a double): the
    /// end of a series for PromQL, never a value for OpenTSDB's readers.
    #[inline]
    pub fn is_stale_marker(self) -> bool {
        matches!(self, StoredValue::Double(d) if hourglass_ingest::prom::is_stale_marker(d))
    }

    pub fn as_f64(self) -> f64 {
        match self {
            StoredValue::Int(v) => v as f64,
            StoredValue::Float(v) => f64::from(v),
            StoredValue::Double(v) => v,
        }
    }
}

pub const FLAG_FLOAT: u8 = 0x8;
pub const LENGTH_MASK: u8 = 0x7;

/// Appends the encoded value to `out` and returns its flags.
pub fn encode_value(value: StoredValue, out: &mut Vec<u8>) -> u8 {
    match value {
        StoredValue::Int(v) => {
            if let Ok(b) = i8::try_from(v) {
                out.push(b as u8);
                0
            } else if let Ok(s) = i16::try_from(v) {
                out.extend_from_slice(&s.to_be_bytes());
                1
            } else if let Ok(i) = i32::try_from(v) {
                out.extend_from_slice(&i.to_be_bytes());
                3
            } else {
                out.extend_from_slice(&v.to_be_bytes());
                7
            }
        }
        StoredValue::Float(f) => {
            out.extend_from_slice(&f.to_be_bytes());
            FLAG_FLOAT | 3
        }
        StoredValue::Double(d) => {
            out.extend_from_slice(&d.to_be_bytes());
            FLAG_FLOAT | 7
        }
    }
}

/// Number of value bytes the flags announce.
pub fn value_len(flags: u8) -> usize {
    usize::from(flags & LENGTH_MASK) + 1
}

/// Decodes a value of the given flags from exactly `bytes`. `None` when the
/// length is not one OpenTSDB writes (corrupt data).
pub fn decode_value(flags: u8, bytes: &[u8]) -> Option<StoredValue> {
    if flags & FLAG_FLOAT != 0 {
        match bytes.len() {
            4 => Some(StoredValue::Float(f32::from_be_bytes(
                bytes.try_into().ok()?,
            ))),
            8 => Some(StoredValue::Double(f64::from_be_bytes(
                bytes.try_into().ok()?,
            ))),
            _ => None,
        }
    } else {
        match bytes.len() {
            1 => Some(StoredValue::Int(i64::from(bytes[0] as i8))),
            2 => Some(StoredValue::Int(i64::from(i16::from_be_bytes(
                bytes.try_into().ok()?,
            )))),
            4 => Some(StoredValue::Int(i64::from(i32::from_be_bytes(
                bytes.try_into().ok()?,
            )))),
            8 => Some(StoredValue::Int(i64::from_be_bytes(bytes.try_into().ok()?))),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: StoredValue) -> (Vec<u8>, u8) {
        let mut out = Vec::new();
        let flags = encode_value(v, &mut out);
        (out, flags)
    }

    /// TestTSDBAddPoint vectors (reference §1.6).
    #[test]
    fn reference_vectors() {
        assert_eq!(enc(StoredValue::Int(42)), (vec![0x2A], 0));
        assert_eq!(enc(StoredValue::Int(-42)), (vec![0xD6], 0));
        assert_eq!(enc(StoredValue::Int(257)), (vec![1, 1], 1));
        assert_eq!(enc(StoredValue::Int(65537)), (vec![0, 1, 0, 1], 3));
        assert_eq!(
            enc(StoredValue::Int(4_294_967_296)),
            (vec![0, 0, 0, 1, 0, 0, 0, 0], 7)
        );
        assert_eq!(enc(StoredValue::Float(42.5)), (vec![0x42, 0x2A, 0, 0], 0xB));
        let (b, f) = enc(StoredValue::Double(0.1));
        assert_eq!((b.len(), f), (8, 0xF));
    }

    #[test]
    fn round_trip() {
        for v in [
            StoredValue::Int(0),
            StoredValue::Int(i64::MIN),
            StoredValue::Int(i64::MAX),
            StoredValue::Int(-32769),
            StoredValue::Float(-1.5),
            StoredValue::Double(1e300),
        ] {
            let (b, f) = enc(v);
            assert_eq!(value_len(f), b.len());
            assert_eq!(decode_value(f, &b), Some(v));
        }
        assert_eq!(decode_value(0x2, &[0, 0, 0]), None);
        assert_eq!(decode_value(0x9, &[0, 0]), None);
    }
}
