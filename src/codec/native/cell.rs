//! A whole native cell: its header (codec id, point count, time unit, and
//! from codec `0x02` on the summary of its values) and its chain of blocks,
//! encoded from or decoded to points, columns or a visitor.

use super::bitpack::BLOCK;
use super::block::{BlockOut, H_REPEATED, MAX_OFFSET_MS, MAX_REPEAT, State, decode_block};
use super::encode::{Encoder, Head};
use super::error::{CODEC_ID_V1, CODEC_ID_V2, MAX_POINTS, NativeError};
use super::summary::CellSummary;
use super::varint::{Reader, put_uvarint};
use crate::codec::StoredValue;
use crate::codec::cell::DecodedPoint;

/// What a cell's header says: the point count, the time unit, the summary
/// (codec `0x02`, non-empty cells), and a reader at the first block.
pub(crate) struct Header<'a> {
    pub(crate) n: usize,
    pub(crate) unit: i64,
    pub(crate) summary: Option<CellSummary>,
    pub(crate) blocks: Reader<'a>,
}

/// Reads a cell's header (either codec).
pub(crate) fn read_header(cell: &[u8]) -> Result<Header<'_>, NativeError> {
    let id = *cell.first().ok_or(NativeError::Empty)?;
    if id != CODEC_ID_V1 && id != CODEC_ID_V2 {
        return Err(NativeError::UnknownCodec(id));
    }
    let mut r = Reader::new(cell, 1);
    let h = r.uvarint("point count")?;
    let n = h >> 1;
    if n > MAX_POINTS as u64 {
        return Err(r.corrupt("point count above 3600000"));
    }
    let n = n as usize;
    let summary = if id == CODEC_ID_V2 && n > 0 {
        Some(CellSummary::read(&mut r, n)?)
    } else {
        None
    };
    // One header byte covers at most 1 + MAX_REPEAT blocks, so a cell
    // claiming more blocks than that allows is rejected before any
    // allocation sized by `n`.
    let blocks = n.div_ceil(BLOCK);
    if blocks > r.remaining().saturating_mul(1 + usize::from(MAX_REPEAT)) {
        return Err(r.corrupt("point count larger than the cell can hold"));
    }
    let unit = if h & 1 == 1 { 1000 } else { 1 };
    Ok(Header {
        n,
        unit,
        summary,
        blocks: r,
    })
}

/// Decodes `n` points of blocks from `r`, calling `sink` once per block.
pub(crate) fn walk_blocks(
    r: &mut Reader<'_>,
    n: usize,
    unit: i64,
    st: &mut State,
    want_ms: bool,
    out: &mut BlockOut,
    mut sink: impl FnMut(&BlockOut),
) -> Result<(), NativeError> {
    let mut repeat = 0u8;
    let mut left = n;
    while left > 0 {
        let cnt = left.min(BLOCK);
        let h = if repeat > 0 {
            repeat -= 1;
            H_REPEATED
        } else {
            let b = r.u8("block header")?;
            repeat = b >> 4;
            b & 0x0F
        };
        decode_block(r, st, h, cnt, unit, want_ms, out)?;
        sink(out);
        left -= cnt;
    }
    if repeat != 0 {
        return Err(r.corrupt("header repeat count runs past the last block"));
    }
    Ok(())
}

fn walk_cell(cell: &[u8], want_ms: bool, sink: impl FnMut(&BlockOut)) -> Result<(), NativeError> {
    let Header {
        n,
        unit,
        blocks: mut r,
        ..
    } = read_header(cell)?;
    let mut out = BlockOut::new();
    walk_blocks(&mut r, n, unit, &mut State::new(), want_ms, &mut out, sink)?;
    if !r.at_end() {
        return Err(r.corrupt("trailing bytes after the last block"));
    }
    Ok(())
}

/// Checks that points are sorted, unique and inside the hour.
fn validate(points: &[DecodedPoint]) -> Result<(), NativeError> {
    if points.len() > MAX_POINTS {
        return Err(NativeError::TooManyPoints(points.len()));
    }
    let mut prev: Option<u32> = None;
    for (index, p) in points.iter().enumerate() {
        if p.offset_ms > MAX_OFFSET_MS {
            return Err(NativeError::OffsetOutOfRange {
                index,
                offset_ms: p.offset_ms,
            });
        }
        if prev.is_some_and(|q| p.offset_ms <= q) {
            return Err(NativeError::Unsorted {
                index,
                offset_ms: p.offset_ms,
            });
        }
        prev = Some(p.offset_ms);
    }
    Ok(())
}

/// Writes the cell header for `n` points with their summary (`None` only
/// for an empty cell).
pub(crate) fn put_header(
    out: &mut Vec<u8>,
    n: usize,
    whole_seconds: bool,
    summary: Option<&CellSummary>,
) {
    out.push(CODEC_ID_V2);
    put_uvarint(out, (n as u64) << 1 | u64::from(whole_seconds));
    if let Some(s) = summary {
        s.write(n, out);
    }
}

/// Encodes sorted, unique points into a native cell (codec id first),
/// appending to `out`. Returns an error (and leaves `out` unchanged) if the
/// points are unsorted or duplicated, or an offset is beyond the hour.
pub fn encode_cell(points: &[DecodedPoint], out: &mut Vec<u8>) -> Result<(), NativeError> {
    validate(points)?;
    let whole_seconds =
        !points.is_empty() && points.iter().all(|p| p.offset_ms.is_multiple_of(1000));
    let summary = CellSummary::of(points.iter().map(|p| p.value));
    put_header(out, points.len(), whole_seconds, summary.as_ref());
    out.reserve(points.len() + points.len() / 8);
    let mut enc = Encoder::new(if whole_seconds { 1000 } else { 1 });
    let mut last_h = 0usize;
    for blk in points.chunks(BLOCK) {
        let at = out.len();
        match enc.encode_block(blk, out) {
            Head::New => last_h = at,
            Head::Repeat => out[last_h] += 0x10,
        }
    }
    Ok(())
}

/// Decodes a native cell, appending its points in order to `out`. On error
/// `out` is left as it was.
pub fn decode_cell(cell: &[u8], out: &mut Vec<DecodedPoint>) -> Result<(), NativeError> {
    let start = out.len();
    out.reserve(cell_point_count(cell)?);
    let r = walk_cell(cell, true, |b| {
        for i in 0..b.n {
            out.push(b.point(i));
        }
    });
    if r.is_err() {
        out.truncate(start);
    }
    r
}

/// Number of points of a native cell, read from its header only (the rest
/// is not validated; [`decode_cell`] does that).
pub fn cell_point_count(cell: &[u8]) -> Result<usize, NativeError> {
    read_header(cell).map(|h| h.n)
}

/// The aggregates of a native cell's values, read from its header only:
/// `None` for an empty cell or one of codec `0x01`, which has none (the
/// blocks are not validated; [`decode_cell`] does that).
pub fn cell_summary(cell: &[u8]) -> Result<Option<CellSummary>, NativeError> {
    read_header(cell).map(|h| h.summary)
}

/// The query fast path: calls `f(offset_ms, value)` for every point in
/// order, decoding block by block into a reused buffer (no `Vec` of points,
/// and the `ms` flags are not computed).
///
/// A block is decoded and checked whole before any of its points is
/// visited, but on a corrupt cell the points of earlier blocks have already
/// been visited when the error is returned.
pub fn for_each_point(cell: &[u8], mut f: impl FnMut(u32, StoredValue)) -> Result<(), NativeError> {
    walk_cell(cell, false, |b| {
        for (&o, &v) in b.off[..b.n].iter().zip(&b.val[..b.n]) {
            f(o, v);
        }
    })
}

/// Decodes a native cell into separate offset and value columns (appended),
/// the layout aggregation loops want. On error both are left as they were.
pub fn decode_columns(
    cell: &[u8],
    offsets: &mut Vec<u32>,
    values: &mut Vec<StoredValue>,
) -> Result<(), NativeError> {
    let (so, sv) = (offsets.len(), values.len());
    let n = cell_point_count(cell)?;
    offsets.reserve(n);
    values.reserve(n);
    let r = walk_cell(cell, false, |b| {
        offsets.extend_from_slice(&b.off[..b.n]);
        values.extend_from_slice(&b.val[..b.n]);
    });
    if r.is_err() {
        offsets.truncate(so);
        values.truncate(sv);
    }
    r
}
