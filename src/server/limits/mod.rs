//! Server-wide bounds that no single request may break:
//!
//! * [`Inflight`] — bytes of request bodies and line-protocol input being
//!   decoded and written at once, across all connections
//!   (`server.max_inflight_bytes`). HTTP requests that find it full get 503
//!   with `Retry-After`; line-protocol connections wait (stop reading, so TCP
//!   slows the client down).
//! * [`AddressLimits`] — connections per client address
//!   (`server.max_connections_per_address`), so one host cannot take every
//!   connection slot.
//! * [`QueryGate`] — queries running at once (`query.max_concurrent`), a
//!   bounded queue in front of it, the memory pool all running queries share
//!   (`query.max_memory_bytes`), and the list of running and recent queries
//!   (`/api/stats/query`, cancelled at shutdown).

mod addresses;
mod inflight;
mod query_gate;

pub use addresses::{AddressLimits, AddressSlot};
pub use inflight::{Inflight, InflightGuard};
pub use query_gate::{QueryGate, QueryRecord, QueryTicket, Refused};
