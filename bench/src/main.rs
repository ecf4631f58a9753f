//! `hourglass-bench`: the load generator and measuring instrument of hourglass.
//!
//! * `ingest` writes a deterministic workload over one of seven protocols and
//!   reports the rate the server acknowledged;
//! * `query` times the reference queries and checks every answer against the
//!   generated data, for hourglass and for the peers side by side;
//! * `soak` mixes ingest, queries, bad input and stalled connections for a
//!   while and checks that nothing acknowledged was lost;
//! * `series` creates many new series and checks that the cost of a batch
//!   of new series does not grow with the series count.
//!
//! ## Layout
//!
//! One line per module, top to bottom; a module uses only modules listed
//! below it (test code aside). A module root declares its children,
//! re-exports what other modules use of them, and holds what uses them (a
//! mode's run, the generator, the choice of encoder); what its children
//! share lives in a file of its own.
//!
//! - [`cli`]: the command line, assembled from each mode's flags
//! - [`ingest`]: the ingest mode: run, `--dry-run`, Influx `CREATE DATABASE`
//!   - `ingest::plan`: ingest flags validated into the spec, run options and echoed config
//!   - `ingest::args`: the flags of `ingest`
//!   - `ingest::report`: the ingest report, human and `--json`
//! - [`query`]: the query mode: timed reference queries, every answer checked
//!   - `query::report`: latency percentiles, check outcomes, the side-by-side table
//!   - `query::targets`: per server kind, the request of each query and the parsing of its answer
//!   - `query::plan`: the reference queries, their windows and expected answers
//!   - `query::expected`: expected answers with OpenTSDB's semantics, and the comparison
//! - [`soak`]: the soak mode: its timeline of tasks, and the verdict
//!   - `soak::report`: the soak report and its failure rules
//!   - `soak::writers`: acknowledged steady ingest, and the read-back of every acked point
//!   - `soak::hostile`: bad input, queries, idle and stalled connections, slow bodies, probes
//!   - `soak::args`: the flags of `soak`
//!   - `soak::shared`: the state every soak task shares: counters, refusals, first errors
//! - [`series`]: the series mode: new-series cost at the start and at the end
//! - [`workload_args`]: the workload flags of `ingest` and `query`, validated into a spec
//! - [`runner`]: sending a workload over many connections and measuring it
//!   - `runner::tcp`: a line-protocol connection, acknowledged by `version` or a close
//!   - `runner::http`: an HTTP ingest connection, acknowledged by 2xx responses
//!   - `runner::connection`: what a connection task gets and gives back
//!   - `runner::options`: what a run is told (transport, limits, pacing, pre-generation)
//!   - `runner::pacing`: rate and time limits per connection, data-time lockstep across them
//!   - `runner::payload`: encoded batches, pre-generated or streamed by producer threads
//! - [`protocol`]: the ingest protocols and the encoder of each
//!   - `protocol::mixed`: `put` and Influx lines interleaved on one connection
//!   - `protocol::influx`: InfluxDB line protocol
//!   - `protocol::json`: OpenTSDB `/api/put` JSON
//!   - `protocol::prom`: Prometheus remote write
//!   - `protocol::telnet`: OpenTSDB `put` lines
//!   - `protocol::encoder`: the `Encoder` trait every format implements
//!   - `protocol::text`: decimal numbers, timestamps and pod names written into buffers
//!   - `protocol::gzip`: gzip of a finished body
//!   - `protocol::testutil` (tests): encode a whole workload, read it back with our parsers
//! - [`workload`]: deterministic points: the workload kinds, the spec, the generator
//!   - `workload::highcard`: the `high-cardinality` workload, with pods that churn
//!   - `workload::cpu`: the `cpu` workload (TSBS `cpu-only`)
//!   - `workload::devops`: the `devops` workload's catalog of metrics and host tags
//!   - `workload::metric`: a metric's name and how its values evolve
//!   - `workload::host`: a host's tags
//!   - `workload::rng`: SplitMix64, the source of every random choice
//! - [`http`]: the keep-alive HTTP/1.1 client, query strings, body snippets
//! - [`report`]: how every report prints itself, and the figures reports share
//! - [`progress`]: progress bars and spinners on stderr
//! - [`procfs`]: the server's memory and CPU time, and its data directory's size
//! - [`net`]: TCP connect with a timeout, addresses, tasks that end with their owner
//! - [`clock`]: the current time in milliseconds
//! - [`duration`]: durations as flags spell them and reports print them
//! - [`error`]: [`BenchError`], the one error type, returned up to `main`
//!
//! Exit status: 0 on success, 1 on failure (bad flags after parsing,
//! connection or I/O errors, server not answering, a wrong query answer, a
//! lost acknowledged point), 2 on usage errors (from clap), 3 when an ingest
//! completed but the server refused some of it.

mod cli;
mod clock;
mod duration;
mod error;
mod http;
mod ingest;
mod net;
mod procfs;
mod progress;
mod protocol;
mod query;
mod report;
mod runner;
mod series;
mod soak;
mod tsdb_answer;
mod workload;
mod workload_args;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use crate::clock::now_ms;
use crate::error::BenchError;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = runtime().and_then(|rt| match cli.command {
        Command::Ingest(args) => ingest::run(&rt, &args),
        Command::Query(args) => rt.block_on(query::run(&args, now_ms()?)),
        Command::Soak(args) => rt.block_on(soak::run(&args, now_ms()?)),
        Command::Series(args) => rt.block_on(series::run(&args)),
    });
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hourglass-bench: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, BenchError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| BenchError::io("starting the tokio runtime", e))
}
