//! The network front: one TCP listener serving every protocol, as OpenTSDB
//! does. The first bytes of a connection decide: an HTTP method token and its
//! space (`GET `, `POST `, …; [`hourglass_ingest::port::sniff_connection`])
//! is HTTP (axum on hyper) for the life of the connection, anything else is
//! the line protocol, where each line is an OpenTSDB command or an InfluxDB
//! line (`telnet.rs`). OpenTSDB's own rule (first byte `A`–`Z` is HTTP) would
//! send an InfluxDB line such as `CPU,host=a v=1` to the HTTP decoder.
//! Connections are capped by a semaphore taken before the connection is
//! served.
//! `influx` and `prom` serve the InfluxDB and Prometheus HTTP endpoints.
//!
//! * `http` — routing and the core endpoints; `api` — helpers for the
//!   endpoints in their own files: `api_search` (`/api/search/*`),
//!   `api_last` (`/api/query/last`), `api_uid` (`/api/uid/*`),
//!   `api_config` (`/api/config`, `/api/serializers`), `api_arrow` (the
//!   Arrow output format of `/api/query`), `api_annotation`
//!   (`/api/annotation[/bulk]`, `/api/annotations`).
//! * `series_cache` — a line-protocol connection's raw series text →
//!   resolved series, under a budget shared by all connections.

pub mod api;
mod connection;
mod ctx;
pub mod http;
pub mod limits;
pub mod line;
mod listener;
pub mod router;
pub mod series_cache;
pub mod write;

pub use ctx::{Ctx, version_lines};
pub use listener::run;
