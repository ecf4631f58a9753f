//! The native codec's format constants and its error.

/// Codec id of the first format: blocks only (still read).
pub const CODEC_ID_V1: u8 = 0x01;

/// Codec id of the format this build writes (byte 0 of every native cell):
/// blocks after a [`CellSummary`](super::CellSummary).
pub const CODEC_ID_V2: u8 = 0x02;

/// Most points one cell may hold: one per millisecond of the hour.
pub const MAX_POINTS: usize = 3_600_000;

/// Why a native cell could not be encoded or decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum NativeError {
    #[error("empty native cell: no codec id byte")]
    Empty,
    #[error(
        "unknown cell codec {0:#04x} (this build reads codecs 0x01 and 0x02); written by a newer hourglass?"
    )]
    UnknownCodec(u8),
    #[error("corrupt native cell at byte {offset}: {reason}")]
    Corrupt { offset: usize, reason: &'static str },
    #[error("{0} points in one cell; a cell holds at most 3600000")]
    TooManyPoints(usize),
    #[error("point {index} (offset {offset_ms} ms) is not after the point before it")]
    Unsorted { index: usize, offset_ms: u32 },
    #[error("point {index} has offset {offset_ms} ms, beyond the hour (at most 3599999)")]
    OffsetOutOfRange { index: usize, offset_ms: u32 },
}
