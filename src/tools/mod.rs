//! Offline tools on a data directory, run by the `hourglass` command with
//! the server stopped: [`fsck`] verifies every checksum, the manifest, the
//! logs and the head checkpoints and reports each problem with its file and
//! offset; [`compact`] runs a full compaction; [`rollup`] rebuilds the
//! rollup tiers; [`restore`] makes a data directory from a backup.

pub mod compact;
pub mod fsck;
pub mod restore;
pub mod rollup;

pub use crate::findings::{Finding, Report, Severity};
