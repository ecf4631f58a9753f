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
//! The pieces are kept apart:
//!
//! - [`workload`] generates points (no I/O, no wire format);
//! - [`protocol`] encodes points into payloads;
//! - [`runner`] opens connections, sends, and measures ingest;
//! - [`http`] is the keep-alive HTTP client every HTTP mode uses;
//! - [`query`], [`soak`] and [`series`] are the other modes;
//! - [`report`], [`progress`] and [`procfs`] print and measure;
//! - [`cli`] parses and validates flags.
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
