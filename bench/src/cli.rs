//! The command line: [`Cli`] and its subcommands, assembled from the flags
//! each mode defines next to its code ([`IngestArgs`], [`QueryArgs`],
//! [`SoakArgs`], [`SeriesArgs`]).

use clap::{Parser, Subcommand};

use crate::ingest::IngestArgs;
use crate::query::QueryArgs;
use crate::series::SeriesArgs;
use crate::soak::SoakArgs;

/// Load generator and measuring instrument for hourglass and other
/// OpenTSDB-compatible servers (and, for comparison, VictoriaMetrics,
/// InfluxDB and Prometheus).
#[derive(Debug, Parser)]
#[command(name = "hourglass-bench", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a deterministic workload and measure ingest throughput.
    Ingest(IngestArgs),
    /// Time the reference queries over an ingested cpu workload and check every answer.
    Query(QueryArgs),
    /// Mixed ingest, queries, bad input and stalled connections for a while; check nothing acknowledged was lost.
    Soak(SoakArgs),
    /// Create many new series through /api/put; check a batch costs as much at the end as at the start.
    Series(SeriesArgs),
}
