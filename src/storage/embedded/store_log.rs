//! The store log: small durable writes of the meta tables (the UID table,
//! the series index) before the memtable is written out as a meta table
//! file. One frame per batch: its sequence number, then each change.
//! Drawn in `docs/format/log-files.md`.

use bytes::Bytes;

use super::keys::internal_row;
use crate::codec::varint;
use crate::logfile;
use crate::storage::{Mutation, Result, Table};

pub const LOG_MAGIC: &[u8; 8] = b"HGSTLOG2";
pub const LOG_VERSION: u32 = 2;
/// Store-log bytes kept in memory between writes: small UID assignments
/// cost one write system call per batch instead of three per name. They
/// are written and fsynced by `Store::sync`, before anything durable uses
/// them (see `Durability::Buffered`).
pub(super) const LOG_BUFFER: usize = 64 << 10;

pub(super) fn encode_log_batch(seq: u64, batch: &[Op]) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    let pos = logfile::begin_frame(&mut buf);
    buf.extend_from_slice(&seq.to_le_bytes());
    for (row, col, value) in batch {
        buf.push(u8::from(value.is_none()));
        varint::put_bytes(&mut buf, row);
        varint::put_bytes(&mut buf, col);
        if let Some(v) = value {
            varint::put_bytes(&mut buf, v);
        }
    }
    logfile::finish_frame(&mut buf, pos)?;
    Ok(buf)
}

/// One cell change: internal row, column, value (`None` = delete).
pub type Op = (Vec<u8>, Vec<u8>, Option<Bytes>);

pub(super) fn into_op(m: Mutation) -> (Table, Op) {
    match m {
        Mutation::Put {
            table,
            row,
            column,
            value,
        } => (
            table,
            (internal_row(table, &row), column, Some(Bytes::from(value))),
        ),
        Mutation::Delete { table, row, column } => {
            (table, (internal_row(table, &row), column, None))
        }
    }
}

/// Decodes one store-log frame payload: its sequence number and changes;
/// `None` if it is malformed (the caller names the file and offset).
pub fn decode_log_batch(payload: &[u8]) -> Option<(u64, Vec<Op>)> {
    let mut r = varint::Reader::new(payload);
    let seq = r.u64_le()?;
    let mut ops = Vec::new();
    while !r.is_empty() {
        let tomb = match r.u8()? {
            0 => false,
            1 => true,
            _ => return None,
        };
        let row = r.bytes()?.to_vec();
        let col = r.bytes()?.to_vec();
        let value = if tomb {
            None
        } else {
            Some(Bytes::copy_from_slice(r.bytes()?))
        };
        ops.push((row, col, value));
    }
    Some((seq, ops))
}
