//! Compaction of the embedded store: the policy ([`policy`], a pure
//! decision over a snapshot of the file set: what to merge, what to drop)
//! and the worker that executes it ([`worker`]: merging meta files, merging
//! a window's files through the engine's row compactor, dropping expired
//! windows).

pub mod policy;
mod worker;

pub use policy::{FileInfo, Job, Policy, window_of};
