//! How the network front writes: protocol code puts the points it parsed
//! into a [`PointSink`]; [`WriteBatch`], the one implementor, builds the
//! engine's entries, writes them on a blocking thread's call, and maps the
//! engine's refusals back to the request's items.

mod batch;
mod sink;

pub use batch::{Refused, WriteBatch, Written};
pub use sink::PointSink;
