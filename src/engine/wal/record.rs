//! The record schema of the write-ahead log: what a frame's payload means
//! (framing and checksums belong to [`crate::logfile`], segments and group
//! commit to [`super::Wal`]). Drawn in `docs/format/log-files.md`.
//!
//! ```text
//! payload := record*
//! record  := 0x01 series_id varint | series_key bytes            series definition
//!          | 0x03 count varint | point{count}                     points
//!          | 0x04 series_key bytes | start_ms varint | end_ms varint   delete
//!          | 0x05 offset varint                 end of segment (v3; alone in its frame)
//! point   := series_id varint | dts zigzag-varint | vk u8 | value
//!   dts   = timestamp in ms minus the previous point's in this record (first: minus 0)
//!   vk    = kind (bits 0-1: 0 int, 1 f32, 2 f64) | ms-precision flag (bit 2)
//!           | decimal exponent e (bits 3-7; 31 = raw bits follow)
//!   value = int: zigzag varint
//!           f32/f64 with e < 31: zigzag varint m, where the value is exactly m / 10^e
//!           f32 raw: 4 bytes LE;  f64 raw: 8 bytes LE
//! ```
//! Decimal values as monitoring agents send them (`37.21`) cost 2–3 bytes
//! instead of 8, and timestamps of a batch differ little, so a typical point
//! is 5–7 bytes. Series ids are local to a segment: every segment defines
//! the series it uses before their points, so any suffix of segments
//! replays on its own.

use std::cell::Cell;
use std::collections::HashMap;

use xxhash_rust::xxh3::Xxh3Builder;

use crate::codec::StoredValue;
use crate::codec::rowkey::split_timestamp;
use crate::codec::varint::{self, unzigzag, zigzag};
use crate::logfile::{self, LogError};

const REC_SERIES: u8 = 1;
const REC_POINTS: u8 = 3;
const REC_DELETE: u8 = 4;
/// The segment's last frame: nothing follows it, and `offset` is where the
/// frame itself starts. A segment that another follows always ends with
/// one (format v3), so a segment cut short anywhere, even at a frame
/// boundary, is told from a whole one.
const REC_END: u8 = 5;
const RAW: u8 = 31;
const MAX_EXP: u8 = 15;

const POW10: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// The smallest exponent `e` with `v == m / 10^e` exactly for an integer
/// `m` of at most 53 bits, if any (`check` compares the decoded value).
fn decimal(v: f64, check: impl Fn(f64) -> bool) -> Option<(u8, i64)> {
    if !v.is_finite() {
        return None;
    }
    for (e, &p) in POW10.iter().enumerate() {
        let scaled = v * p;
        if scaled.abs() >= 9.007_199_254_740_992e15 {
            return None;
        }
        let m = scaled.round() as i64;
        // Checked through the integer: -0.0 must not pass as 0.
        if check(m as f64 / p) {
            return Some((e as u8, m));
        }
    }
    None
}

/// Encodes records into one frame.
#[derive(Debug, Default)]
pub struct FrameBuilder {
    buf: Vec<u8>,
    pos: usize,
    /// Start of the open points record's count placeholder, if any.
    points: Vec<u8>,
    count: u64,
    prev_ms: i64,
}

impl FrameBuilder {
    pub fn new() -> Self {
        let mut buf = Vec::with_capacity(4096);
        let pos = logfile::begin_frame(&mut buf);
        Self {
            buf,
            pos,
            points: Vec::with_capacity(4096),
            count: 0,
            prev_ms: 0,
        }
    }

    fn close_points(&mut self) {
        if self.count > 0 {
            self.buf.push(REC_POINTS);
            varint::put(&mut self.buf, self.count);
            self.buf.extend_from_slice(&self.points);
            self.points.clear();
            self.count = 0;
            self.prev_ms = 0;
        }
    }

    /// Defines series `id` as `key` for the rest of the segment.
    pub fn series(&mut self, id: u32, key: &[u8]) {
        self.close_points();
        self.buf.push(REC_SERIES);
        varint::put(&mut self.buf, u64::from(id));
        varint::put_bytes(&mut self.buf, key);
    }

    /// One point of series `id`; `raw_ts` as sent (seconds, or ms above
    /// `u32::MAX`).
    pub fn point(&mut self, id: u32, raw_ts: u64, value: StoredValue) {
        let (base, offset_ms, ms) = split_timestamp(raw_ts);
        let ts_ms = i64::from(base) * 1000 + i64::from(offset_ms);
        let out = &mut self.points;
        varint::put(out, u64::from(id));
        varint::put(out, zigzag(ts_ms.wrapping_sub(self.prev_ms)));
        self.prev_ms = ts_ms;
        let ms_bit = if ms { 4 } else { 0 };
        match value {
            StoredValue::Int(v) => {
                out.push(ms_bit);
                varint::put(out, zigzag(v));
            }
            StoredValue::Float(f) => {
                match decimal(f64::from(f), |d| (d as f32).to_bits() == f.to_bits()) {
                    Some((e, m)) => {
                        out.push(1 | ms_bit | (e << 3));
                        varint::put(out, zigzag(m));
                    }
                    None => {
                        out.push(1 | ms_bit | (RAW << 3));
                        out.extend_from_slice(&f.to_le_bytes());
                    }
                }
            }
            StoredValue::Double(d) => match decimal(d, |x| x.to_bits() == d.to_bits()) {
                Some((e, m)) => {
                    out.push(2 | ms_bit | (e << 3));
                    varint::put(out, zigzag(m));
                }
                None => {
                    out.push(2 | ms_bit | (RAW << 3));
                    out.extend_from_slice(&d.to_le_bytes());
                }
            },
        }
        self.count += 1;
    }

    /// Deletes the points of `series_key` with `start_ms <= ts <= end_ms`.
    pub fn delete(&mut self, series_key: &[u8], start_ms: i64, end_ms: i64) {
        self.close_points();
        self.buf.push(REC_DELETE);
        varint::put_bytes(&mut self.buf, series_key);
        varint::put(&mut self.buf, start_ms.max(0) as u64);
        varint::put(&mut self.buf, end_ms.max(0) as u64);
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0 && self.buf.len() == self.pos + logfile::FRAME_HEADER_LEN
    }

    /// Bytes of the frame so far.
    pub fn len(&self) -> usize {
        self.buf.len() + self.points.len()
    }

    pub(super) fn finish(mut self) -> Result<Vec<u8>, LogError> {
        self.close_points();
        logfile::finish_frame(&mut self.buf, self.pos)?;
        Ok(self.buf)
    }
}

/// One replayed change.
#[derive(Debug, Clone, PartialEq)]
pub enum Event<'a> {
    Point {
        series_key: &'a [u8],
        /// A slot the consumer may use to remember what it resolved
        /// `series_key` to (it starts at [`UNRESOLVED`] and is reset when
        /// the segment redefines the series id), so replaying millions of
        /// points costs one key lookup per series, not per point.
        resolved: &'a Cell<u32>,
        /// As sent: seconds, or ms above `u32::MAX`.
        raw_ts: u64,
        value: StoredValue,
    },
    Delete {
        series_key: &'a [u8],
        start_ms: i64,
        end_ms: i64,
    },
}

/// The initial value of [`Def::resolved`].
pub const UNRESOLVED: u32 = u32::MAX;

/// One series definition of the segment being replayed.
#[derive(Debug)]
pub struct Def {
    pub key: Vec<u8>,
    pub resolved: Cell<u32>,
}

/// Series definitions of the segment being replayed, by series id, looked
/// up once per replayed point. The ids are ours (head slots, dense from 0),
/// so they index a vector; an id beyond [`DENSE_IDS`] (only a damaged or
/// foreign log has one) goes to a map instead of growing the vector.
#[derive(Debug, Default)]
pub struct Defs {
    dense: Vec<Option<Def>>,
    sparse: HashMap<u64, Def, Xxh3Builder>,
}

/// Ids below this are kept in [`Defs`]'s vector (32 bytes a slot).
pub const DENSE_IDS: u64 = 1 << 22;

impl Defs {
    pub fn insert(&mut self, id: u64, def: Def) {
        if id < DENSE_IDS {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize_with(i + 1, || None);
            }
            self.dense[i] = Some(def);
        } else {
            self.sparse.insert(id, def);
        }
    }

    pub fn get(&self, id: u64) -> Option<&Def> {
        if id < DENSE_IDS {
            self.dense.get(id as usize).and_then(Option::as_ref)
        } else {
            self.sparse.get(&id)
        }
    }

    /// Every definition, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Def> {
        self.dense.iter().flatten().chain(self.sparse.values())
    }
}

/// The framed end-of-segment record for a segment whose frames end at
/// `offset` (where this frame starts).
pub fn end_frame(offset: u64) -> Result<Vec<u8>, LogError> {
    let mut buf = Vec::with_capacity(logfile::FRAME_HEADER_LEN + 11);
    let pos = logfile::begin_frame(&mut buf);
    buf.push(REC_END);
    varint::put(&mut buf, offset);
    logfile::finish_frame(&mut buf, pos)?;
    Ok(buf)
}

/// Decodes one frame payload, calling `visit` for every change in order.
/// Returns the offset an end-of-segment record names, if the frame is one.
/// `Err` names what is malformed; the caller adds the file and offset.
pub fn decode(
    payload: &[u8],
    defs: &mut Defs,
    visit: &mut dyn FnMut(Event<'_>),
) -> Result<Option<u64>, &'static str> {
    let mut r = varint::Reader::new(payload);
    if payload.first() == Some(&REC_END) {
        r.u8();
        let offset = r.varint().ok_or("bad end-of-segment record")?;
        if !r.is_empty() {
            return Err("bytes after the end-of-segment record");
        }
        return Ok(Some(offset));
    }
    while !r.is_empty() {
        match r.u8() {
            Some(REC_SERIES) => {
                let id = r.varint().ok_or("bad series record")?;
                let key = r.bytes().ok_or("bad series record")?;
                defs.insert(
                    id,
                    Def {
                        key: key.to_vec(),
                        resolved: Cell::new(UNRESOLVED),
                    },
                );
            }
            Some(REC_POINTS) => {
                let count = r.varint().ok_or("bad points record")?;
                let mut prev_ms = 0i64;
                for _ in 0..count {
                    let id = r.varint().ok_or("bad point")?;
                    let dts = unzigzag(r.varint().ok_or("bad point")?);
                    let ts_ms = prev_ms.wrapping_add(dts);
                    prev_ms = ts_ms;
                    let vk = r.u8().ok_or("bad point")?;
                    let e = vk >> 3;
                    let value = match (vk & 3, e) {
                        (0, _) => StoredValue::Int(unzigzag(r.varint().ok_or("bad point value")?)),
                        (1, RAW) => StoredValue::Float(f32::from_le_bytes(
                            r.take(4)
                                .and_then(|b| b.try_into().ok())
                                .ok_or("bad point value")?,
                        )),
                        (2, RAW) => StoredValue::Double(f64::from_le_bytes(
                            r.take(8)
                                .and_then(|b| b.try_into().ok())
                                .ok_or("bad point value")?,
                        )),
                        (k @ (1 | 2), e) if e <= MAX_EXP => {
                            let m = unzigzag(r.varint().ok_or("bad point value")?);
                            let d = m as f64 / POW10[usize::from(e)];
                            if k == 1 {
                                StoredValue::Float(d as f32)
                            } else {
                                StoredValue::Double(d)
                            }
                        }
                        _ => return Err("bad point value kind"),
                    };
                    if ts_ms < 0 {
                        return Err("negative timestamp");
                    }
                    let ms = vk & 4 != 0;
                    let raw_ts = if ms {
                        ts_ms as u64
                    } else {
                        (ts_ms / 1000) as u64
                    };
                    let def = defs.get(id).ok_or("point of an undefined series")?;
                    visit(Event::Point {
                        series_key: &def.key,
                        resolved: &def.resolved,
                        raw_ts,
                        value,
                    });
                }
            }
            Some(REC_DELETE) => {
                let key = r.bytes().ok_or("bad delete record")?;
                let start_ms = r.varint().ok_or("bad delete record")?;
                let end_ms = r.varint().ok_or("bad delete record")?;
                visit(Event::Delete {
                    series_key: key,
                    start_ms: i64::try_from(start_ms).map_err(|_| "bad delete record")?,
                    end_ms: i64::try_from(end_ms).map_err(|_| "bad delete record")?,
                });
            }
            Some(REC_END) => return Err("end-of-segment record inside a frame of changes"),
            _ => return Err("unknown record type"),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn round_trip(points: &[(u64, StoredValue)]) -> (Vec<(u64, StoredValue)>, usize) {
        let mut f = FrameBuilder::new();
        f.series(7, b"key");
        for &(ts, v) in points {
            f.point(7, ts, v);
        }
        f.delete(b"key", 5, 9);
        let bytes = f.finish().unwrap();
        let payload = &bytes[logfile::FRAME_HEADER_LEN..];
        let mut out = Vec::new();
        let mut deletes = Vec::new();
        let mut defs = Defs::default();
        decode(payload, &mut defs, &mut |e| match e {
            Event::Point { raw_ts, value, .. } => out.push((raw_ts, value)),
            Event::Delete {
                start_ms, end_ms, ..
            } => deletes.push((start_ms, end_ms)),
        })
        .unwrap();
        assert_eq!(deletes, vec![(5, 9)]);
        (out, bytes.len())
    }

    fn same(a: StoredValue, b: StoredValue) -> bool {
        match (a, b) {
            (StoredValue::Int(x), StoredValue::Int(y)) => x == y,
            (StoredValue::Float(x), StoredValue::Float(y)) => x.to_bits() == y.to_bits(),
            (StoredValue::Double(x), StoredValue::Double(y)) => x.to_bits() == y.to_bits(),
            _ => false,
        }
    }

    #[test]
    fn decimal_values_are_small_and_exact() {
        let pts: Vec<(u64, StoredValue)> = (0..1000u64)
            .map(|i| {
                let v = (i as f64 * 0.37).round() / 100.0;
                (1_700_000_000 + i * 10, StoredValue::Double(v))
            })
            .collect();
        let (out, len) = round_trip(&pts);
        assert!(
            out.iter()
                .zip(&pts)
                .all(|(a, b)| a.0 == b.0 && same(a.1, b.1))
        );
        assert!(len < 1000 * 7, "{len} bytes for 1000 points");
        let odd = [
            (1u64, StoredValue::Double(0.1 + 0.2)),
            (4_294_967_296, StoredValue::Float(f32::MIN_POSITIVE)),
            (1_356_998_400_123, StoredValue::Double(-0.0)),
            (9, StoredValue::Double(f64::MAX)),
            (10, StoredValue::Int(i64::MIN)),
            (11, StoredValue::Float(-0.0)),
            (12, StoredValue::Double(1e300)),
            (13, StoredValue::Float(16_777_217.0)),
        ];
        let (out, _) = round_trip(&odd);
        for (a, b) in out.iter().zip(&odd) {
            assert!(a.0 == b.0 && same(a.1, b.1), "{a:?} != {b:?}");
        }
    }

    proptest! {
        #[test]
        fn any_points_round_trip(pts in proptest::collection::vec(
            (1u64..=4_294_967_295_999, prop_oneof![
                any::<i64>().prop_map(StoredValue::Int),
                any::<f32>().prop_map(StoredValue::Float),
                any::<f64>().prop_map(StoredValue::Double),
                (-100_000i64..100_000).prop_map(|m| StoredValue::Double(m as f64 / 100.0)),
            ]), 0..50)) {
            let (out, _) = round_trip(&pts);
            prop_assert_eq!(out.len(), pts.len());
            for (a, b) in out.iter().zip(&pts) {
                prop_assert!(a.0 == b.0 && same(a.1, b.1), "{:?} != {:?}", a, b);
            }
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut defs = Defs::default();
        for bytes in [
            &[9u8][..],
            &[3, 5],
            &[3, 1, 0, 0, 0x0B],
            &[1, 1],
            &[4, 3, 1],
        ] {
            assert!(decode(bytes, &mut defs, &mut |_| {}).is_err(), "{bytes:?}");
        }
    }
}
