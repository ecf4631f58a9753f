//! hourglass: an OpenTSDB-compatible time-series database.
//!
//! # Layout
//! * [`codec`] — the data table's bytes: OpenTSDB's salts, row keys,
//!   qualifiers, values and packed cells; the native cell codec; how a
//!   row's cells combine (`codec::row`).
//! * [`storage`] — the sorted row/cell store trait and the embedded
//!   backend: time-windowed table files, bloom filters, block cache,
//!   manifest, compaction policy and worker.
//! * [`engine`] — the engine above the store: the series head
//!   (`engine::head`), the write-ahead log (`engine::wal`), flushes
//!   (`engine::flush`), head checkpoints, reads, deletes, retention,
//!   the row compactor, the clock.
//! * [`uid`] — name ↔ UID mapping in OpenTSDB's UID table layout, with
//!   bounded caches.
//! * [`server`] — the network front: one port for telnet and HTTP, the
//!   OpenTSDB HTTP API, errors mapped to statuses in one place.
//! * [`config`] — the TOML configuration (every key is documented in
//!   `config/hourglass.toml`).
//! * [`tools`] — offline `fsck` and `compact`.
//! * [`logfile`] — checksummed append-only frame files (WAL, store log, head
//!   checkpoints).
//! * [`checksum`] — xxh3-64 of every on-disk byte range (relaxed only
//!   under `cfg(fuzzing)`, so fuzzers reach the parsers).
//! * [`fb`] — FlatBuffers encoding of on-disk metadata.
//! * [`hashing`] — xxh3 hashing for in-memory maps of byte keys.
//! * [`metrics`] — Prometheus metrics, also rendered as `/api/stats`.
//! * [`failpoint`] — named I/O failure points for fault-injection tests.
//!
//! The pure crates `hourglass-ingest` (write formats) and `hourglass-query`
//! (the query model) know nothing of storage; [`engine`] implements the
//! query crate's `SeriesSource`, and the servers feed it parsed points.

pub mod checksum;
pub mod codec;
pub mod config;
pub mod engine;
pub mod failpoint;
pub mod fb;
pub mod findings;
pub mod hashing;
pub mod logfile;
pub mod metrics;
pub mod server;
pub mod storage;
pub mod tools;
pub mod uid;
