//! The [`Encoder`] every wire format implements: points appended one at a
//! time to a caller-owned buffer, with hooks around a batch for the formats
//! that wrap one.

use crate::workload::Point;

/// Appends points to a send buffer in some wire format.
pub trait Encoder: Send {
    /// Called before the first point of a batch.
    fn begin_batch(&mut self, _out: &mut Vec<u8>) {}
    /// Appends one point.
    fn encode(&mut self, point: &Point, out: &mut Vec<u8>);
    /// Called after the last point of a batch; may rewrite `out` entirely
    /// (compression, protobuf framing).
    fn end_batch(&mut self, _out: &mut Vec<u8>) {}
}
