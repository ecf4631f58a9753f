//! The network front: one TCP listener serving every protocol, as OpenTSDB
//! does, shaped like the path of a request (mini-redis' listener →
//! connection → frame → command):
//!
//! * `listener` — accepts connections within the server's bounds, drains at shutdown.
//! * `connection` — the first bytes decide: TLS (then the decrypted bytes
//!   decide: [`tls`], `prefixed`), HTTP, or the line protocol.
//! * [`line`] — the line protocol: the connection's read loop, framing, commands, its session and replies.
//! * [`http`] — serving an HTTP connection and what every endpoint shares (bodies, errors, CORS, requests).
//! * [`router`] — the HTTP routes, and nothing else.
//! * [`api`] — the HTTP endpoints, one file per family.
//! * [`ui`] — the web UI's files, compiled in.
//! * [`write`] — the sink between the parsers and the engine: how every protocol writes.
//! * `ctx` — what every handler shares; [`limits`] — in-flight memory, connections per
//!   address, query admission; [`series_cache`] — raw series text → resolved series.

pub mod api;
mod connection;
mod ctx;
pub mod http;
pub mod limits;
pub mod line;
mod listener;
mod prefixed;
pub mod router;
pub mod series_cache;
pub mod tls;
pub mod ui;
pub mod write;

pub use ctx::{Ctx, version_lines};
pub use listener::run;
