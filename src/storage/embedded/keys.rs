//! Internal row keys: the table byte followed by the row key, so the three
//! tables share one sorted key space; scan bounds over them; and the key
//! layout as the manifest records it.

use crate::codec::KeyLayout;
use crate::fb::SchemaData;
use crate::storage::Table;

pub(super) fn internal_row(table: Table, row: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(row.len() + 1);
    k.push(table as u8);
    k.extend_from_slice(row);
    k
}

/// Internal bounds of a scan of `table` over `[start, end)`.
pub(super) fn internal_bounds(table: Table, start: &[u8], end: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let s = internal_row(table, start);
    let e = if end.is_empty() {
        vec![table as u8 + 1]
    } else {
        internal_row(table, end)
    };
    (s, e)
}

pub(super) fn schema_of(layout: &KeyLayout) -> SchemaData {
    SchemaData {
        salt_width: layout.salt_width as u32,
        salt_buckets: layout.salt_buckets,
        metric_width: layout.metric_width as u32,
        tagk_width: layout.tagk_width as u32,
        tagv_width: layout.tagv_width as u32,
    }
}
