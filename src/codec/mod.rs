//! The byte layout of the data table: OpenTSDB's salts, row keys,
//! qualifiers, value encodings and packed (compacted) cells, byte-exact with
//! OpenTSDB 2.x (reference §1.3–§1.7) so a table written by OpenTSDB can be
//! read by hourglass and the reverse; the engine's own native cell codec
//! ([`native`]); how a row's cells of both kinds combine ([`row`]); and
//! how a shared store's rows of single-point cells are packed ([`pack`]);
//! OpenTSDB's rollup cells, which hold rollups written from outside
//! ([`rollup_cell`]).
//! The layouts are drawn in `docs/format/`.

pub mod cell;
pub mod column;
pub mod hex;
pub mod native;
pub mod pack;
pub mod qualifier;
pub mod rollup_cell;
pub mod row;
pub mod rowkey;
pub mod salt;
pub mod value;
pub mod varint;

pub use cell::{CellError, DecodedPoint, decode_cell, encode_packed_cell};
pub use qualifier::{PointQualifier, encode_qualifier};
pub use rowkey::KeyLayout;
pub use value::{StoredValue, encode_value};

/// Hex test vectors as written in the reference (`"00 0001 50E2"`).
#[cfg(test)]
pub(crate) fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}
