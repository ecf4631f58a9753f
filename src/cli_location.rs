//! Where a command finds its configuration and data: `--config`,
//! `--data-dir` and the backend flags every offline command and `serve`
//! share, applied over the configuration file.

use std::path::PathBuf;

use clap::Args;
use hourglass::config::{Backend, Config};

/// Where the configuration and data are.
#[derive(Args, Debug)]
pub struct Location {
    /// TOML config file (see config/hourglass.toml for every option).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Data directory (overrides storage.data_dir).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Storage backend, `embedded` or `bigtable` (overrides
    /// storage.backend).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Bigtable project (overrides storage.bigtable.project).
    #[arg(long)]
    bigtable_project: Option<String>,
    /// Bigtable instance (overrides storage.bigtable.instance).
    #[arg(long)]
    bigtable_instance: Option<String>,
    /// Prefix of the Bigtable table names (overrides
    /// storage.bigtable.table_prefix).
    #[arg(long)]
    bigtable_table_prefix: Option<String>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum BackendArg {
    Embedded,
    Bigtable,
}

impl Location {
    pub fn load(self) -> Result<Config, Box<dyn std::error::Error>> {
        let mut cfg = Config::read(self.config.as_deref())?;
        if let Some(d) = self.data_dir {
            cfg.storage.data_dir = d;
        }
        if let Some(b) = self.backend {
            cfg.storage.backend = match b {
                BackendArg::Embedded => Backend::Embedded,
                BackendArg::Bigtable => Backend::Bigtable,
            };
        }
        let bt = &mut cfg.storage.bigtable;
        for (arg, key) in [
            (self.bigtable_project, &mut bt.project),
            (self.bigtable_instance, &mut bt.instance),
            (self.bigtable_table_prefix, &mut bt.table_prefix),
        ] {
            if let Some(v) = arg {
                *key = v;
            }
        }
        cfg.validate()?;
        Ok(cfg)
    }
}
