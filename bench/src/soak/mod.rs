//! Soak mode (placeholder while being written).
use crate::error::BenchError;
use std::process::ExitCode;
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {}
pub async fn run(_a: &SoakArgs, _now: i64) -> Result<ExitCode, BenchError> {
    Err(BenchError::Config("todo".into()))
}
