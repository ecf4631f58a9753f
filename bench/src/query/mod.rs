//! Query mode (placeholder while being written).
pub mod expected;
use crate::error::BenchError;
use std::process::ExitCode;
#[derive(Debug, Clone, clap::Args)]
pub struct QueryArgs {}
pub async fn run(_a: &QueryArgs, _now: i64) -> Result<ExitCode, BenchError> {
    Err(BenchError::Config("todo".into()))
}
