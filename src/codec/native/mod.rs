//! hourglass's native cell codec: a lossless, versioned compression format
//! for the points of one series in one hour-row, and [`Chunk`], its
//! appendable form for the series head.
//!
//! This module owns the byte format drawn in `docs/format/native-cell.md`:
//!
//! ```text
//! cell  = codec id (0x02) ‖ varint(n << 1 | whole_seconds) ‖ summary ‖ block*   (⌈n/128⌉ blocks)
//!         (codec 0x01, still read: no summary)
//! block = [header] [timestamp fields] [value params] [extra] [first value]
//!         timestamps ‖ values ‖ [ms bitmap] ‖ [kind map] ‖ [exceptions]
//! ```
//!
//! Blocks chain on the previous block's state, so a block whose timestamps
//! continue the previous step and whose values fit the previous parameters
//! costs one header byte — or nothing, when an earlier header's 4-bit repeat
//! count covers it. Values are integers (delta, delta-of-delta or frame of
//! reference, bit-packed), decimals (ALP-style `m = v·10^e`, verified bit for
//! bit, misfits stored as exceptions), Gorilla XOR, or raw f64. The `ms` flag
//! and the Int/Float/Double kind are derived from the offset and value and
//! stored per point only in blocks where the derivation fails.
//!
//! Decoding treats the input as hostile: every read is bounds-checked, counts
//! are capped at [`MAX_POINTS`] and checked against the input length before
//! anything is allocated, and trailing bytes are an error.
//!
//! ```
//! use hourglass::codec::StoredValue;
//! use hourglass::codec::cell::DecodedPoint;
//! use hourglass::codec::native::{Chunk, decode_cell, encode_cell, for_each_point};
//!
//! let points: Vec<DecodedPoint> = [37.21, 37.25, 36.9]
//!     .iter()
//!     .enumerate()
//!     .map(|(i, &v)| DecodedPoint {
//!         offset_ms: i as u32 * 10_000,
//!         ms: false,
//!         value: if v == 37.25 { StoredValue::Float(37.25) } else { StoredValue::Double(v) },
//!     })
//!     .collect();
//! let mut cell = Vec::new();
//! encode_cell(&points, &mut cell)?;
//! assert_eq!(cell[0], 0x02);
//! let summary = hourglass::codec::native::cell_summary(&cell)?.expect("three points");
//! assert_eq!((summary.min, summary.max, summary.last), (36.9, 37.25, 36.9));
//!
//! let mut back = Vec::new();
//! decode_cell(&cell, &mut back)?;
//! assert_eq!(back, points);
//!
//! let mut sum = 0.0;
//! for_each_point(&cell, |_offset_ms, v| sum += v.as_f64())?;
//!
//! // The head appends one point at a time; to_cell gives the same bytes.
//! let mut head = Chunk::new();
//! for p in &points {
//!     head.push(*p).expect("offsets increase");
//! }
//! let mut again = Vec::new();
//! head.to_cell(&mut again);
//! assert_eq!(again, cell);
//! # Ok::<(), hourglass::codec::native::NativeError>(())
//! ```

mod bitpack;
mod block;
mod cell;
mod chunk;
mod decimal;
mod encode;
mod error;
mod plan;
mod rollup;
mod stream;
mod summary;
mod tier_row;
mod varint;
mod xor;

#[cfg(test)]
mod measure;
#[cfg(test)]
mod tests;

pub use cell::{
    cell_point_count, cell_summary, decode_cell, decode_columns, encode_cell, for_each_point,
};
pub use chunk::Chunk;
pub use error::{CODEC_ID_V1, CODEC_ID_V2, MAX_POINTS, NativeError};
pub use rollup::TierValue;
pub use summary::CellSummary;
pub use tier_row::{TIER_ROW_V1, TierRow};
