//! hourglass: an OpenTSDB-compatible time-series database.
//!
//! # Layout (layers one way: codec → storage → engine → server and tools;
//! one line a module)
//!
//! Foundations
//! * [`checksum`] — xxh3-64 of every on-disk byte range (relaxed under `cfg(fuzzing)`).
//! * [`hashing`] — xxh3 hashing for in-memory maps of byte keys.
//! * [`failpoint`] — named I/O failure points for fault-injection tests.
//! * [`metrics`] — Prometheus metrics (`/metrics`), also `/api/stats` and telnet `stats`.
//! * [`findings`] — what a check of the data directory found (fsck's report).
//! * [`logfile`] — checksummed append-only frame files (WAL, store log, head checkpoints).
//! * [`fb`] — FlatBuffers encoding of the manifest and table-file metadata (`fb::hourglass_generated`: flatc's output).
//! * [`config`] — the TOML configuration; every key documented in `config/hourglass.toml`.
//!
//! [`codec`] — the bytes of the data table
//! * `codec::rowkey` — row keys `[salt][metric][base hour][tagk tagv]…`; `codec::salt` — the salt.
//! * `codec::qualifier`, `codec::value` — OpenTSDB's point qualifiers and value encodings.
//! * `codec::cell` — OpenTSDB's single and packed cells; `codec::pack` — packing a shared store's row.
//! * `codec::row` — how a row's cells of both formats (and tombstones) combine.
//! * `codec::column` — families, columns and cells of the row/cell model.
//! * `codec::varint` — LEB128 and zigzag; `codec::hex` — hex text of UIDs and TSUIDs.
//! * `codec::native` — hourglass's native cell codec: `cell` (a whole cell), `block` (one block of
//!   128 points), `encode` (the block writer), `plan` (choosing a block's layout), `stream`
//!   (integer transforms), `bitpack`, `xor`, `decimal`, `varint` (prefix varints), `chunk` (the
//!   head's appendable cell), `error`.
//!
//! [`storage`] — the sorted row/cell store (one trait, two backends)
//! * `storage::open` — the backend factory; `storage::fanout` — one scan per salt bucket on a
//!   persistent pool; `storage::retention` — the retention horizons a store applies.
//! * `storage::embedded` — the embedded LSM store: `store` (state and the `Store` trait),
//!   `options`, `open` (recovery and repairs), `salvage`, `read` (read path), `write` (write path
//!   and publishing), `store_log`, `memtable`, `file_set`, `keys`, `manifest`, `merge_iter`,
//!   `bloom`, `cache`, `check` (fsck), `compaction::{policy, worker}`,
//!   `table::{format, writer, reader, range_iter}`.
//! * `storage::bigtable` — Cloud Bigtable (feature `bigtable`): `schema`, `admin`, `chunks`
//!   (rows from `ReadRows`), `rpc`.
//!
//! [`uid`] — name ↔ UID mapping in OpenTSDB's UID table, with bounded caches.
//!
//! [`engine`] — the engine above the store
//! * `engine::write` — the write path; `engine::pending` — writes logged, not yet durable.
//! * `engine::wal` — the write-ahead log (`engine::wal::record`: its record schema; `engine::wal::publish`: applying and publishing what is durable).
//! * `engine::head` — the series registry and the open hours; `engine::checkpoint` — its snapshots.
//! * `engine::flush` — closed hours to the store; `engine::row_compactor` — how a row's cells merge.
//! * `engine::read` — queries (one scan per salt bucket, merged with the head); `engine::last` —
//!   `/api/query/last`; `engine::index` — the series index; `engine::annotations` — notes.
//! * `engine::delete`, `engine::retention`, `engine::shared` (a shared store's write path),
//!   `engine::open`, `engine::clock`; `engine::snapshot` — online snapshots.
//!
//! [`server`] — the network front, shaped like its path
//! * `server::listener` → `server::connection` (sniffs the protocol) → `server::line` (the line
//!   protocol: `connection`, `frame`, `command`, `session`, `replies`) or `server::http::serve`.
//! * `server::router` — the HTTP routes only; `server::api` — one file per endpoint family (`put`,
//!   `query`, `arrow`, `suggest`, `last`, `search`, `uid`, `annotation`, `config`, `info`,
//!   `stats`, `influx`, `prom`, `admin`).
//! * `server::http` — HTTP plumbing: `serve`, `normalize`, `request`, `body`, `cors`, `error`,
//!   `helpers`, `stream`.
//! * `server::write` — the sink between the parsers and the engine (`sink`, `batch`).
//! * `server::ctx`, `server::limits` (in-flight memory, connections per address, query
//!   admission), `server::series_cache`.
//!
//! [`tools`] — offline `fsck`, `compact` and `restore` on a stopped server's data directory.
//!
//! [`client`] — command-line clients of a running server: `backup` (and its HTTP `remote`).
//!
//! [`auth`] — access tokens and their scopes, which the server checks.
//!
//! The pure crates `hourglass-ingest` (write formats) and `hourglass-query`
//! (the query model) know nothing of storage; [`engine`] implements the
//! query crate's `SeriesSource`, and the servers feed it parsed points.
//! The path of a telnet `put` and of a `/api/query`, file by file:
//! `docs/architecture.md`.

pub mod auth;
pub mod checksum;
pub mod client;
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
