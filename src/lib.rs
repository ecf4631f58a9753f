//! hourglass: an OpenTSDB-compatible time-series database.
//!
//! # Layout
//! * [`codec`] — OpenTSDB's byte layout: salts, row keys, qualifiers, values,
//!   packed cells.
//! * [`storage`] — the sorted row/cell store trait and the embedded LSM
//!   backend.
//! * [`logfile`] — checksummed append-only frame files (WAL, store log).
//! * [`fb`] — FlatBuffers encoding of on-disk metadata.

pub mod codec;
pub mod config;
pub mod engine;
pub mod failpoint;
pub mod fb;
pub mod logfile;
pub mod metrics;
pub mod server;
pub mod storage;
pub mod tools;
pub mod uid;
