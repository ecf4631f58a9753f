//! The line protocol on a connection, shaped like its path: the
//! connection's read loop (`connection`) frames its input into lines
//! (`frame`), each handled as an InfluxDB point, an OpenTSDB `put` or a
//! command (`command`), after the access check of its token (`access`),
//! into the connection's state (`session`: its
//! series cache, the batch of the current read and the batches not yet
//! durable); everything sent back goes through one bounded queue
//! (`replies`). OpenTSDB commands and InfluxDB line-protocol points mix
//! freely, decided per line ([`hourglass_ingest::port::classify_line`]).

mod access;
mod command;
mod connection;
mod frame;
mod replies;
mod session;

pub use connection::serve;
