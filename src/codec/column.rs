//! A row's columns in the HBase/Bigtable model every backend stores: a
//! column is a family byte followed by the qualifier, and a cell is one
//! column with its value. The codec lays OpenTSDB's rows out in these terms;
//! the storage backends store them.

use bytes::Bytes;

/// Column families, one byte each. A *column* is the family byte followed by
/// the qualifier bytes, so the columns of a row sort by family, then
/// qualifier.
pub mod family {
    /// Data points (`t` in OpenTSDB's data table).
    pub const DATA: u8 = b't';
    /// UID table, name → UID and the UID counters (`id`).
    pub const ID: u8 = b'i';
    /// UID table, UID → name (`name`).
    pub const NAME: u8 = b'n';
}

pub fn column(family: u8, qualifier: &[u8]) -> Vec<u8> {
    let mut c = Vec::with_capacity(1 + qualifier.len());
    c.push(family);
    c.extend_from_slice(qualifier);
    c
}

/// One cell of a row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    /// Family byte followed by the qualifier.
    pub column: Vec<u8>,
    /// Shares the block it was read from (no copy).
    pub value: Bytes,
}
