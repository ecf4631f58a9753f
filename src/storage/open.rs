//! The backend factory: `[storage] backend` picks the store the engine
//! runs on. Everything backend-specific in the configuration is read here,
//! so the engine only ever sees a [`Store`].

use std::sync::Arc;

use super::embedded::{EmbeddedOptions, EmbeddedStore};
use super::retention::RetentionView;
use super::{StorageError, Store};
use crate::config::{Backend, Config};

/// Opens the configured backend. `retention` is the engine's view of the
/// TTLs in force (the embedded store drops expired windows with it; the
/// Bigtable backend sets it as the data family's garbage-collection age).
pub fn open(cfg: &Config, retention: RetentionView) -> Result<Arc<dyn Store>, StorageError> {
    let layout = cfg.layout();
    match cfg.storage.backend {
        Backend::Embedded => {
            let st = &cfg.storage;
            let mut o = EmbeddedOptions::new(st.data_dir.join("store"), layout);
            o.memtable_bytes = st.memtable_bytes;
            o.max_meta_files = st.max_meta_files;
            o.windows = [st.window_hours * 3600, st.merged_window_hours * 3600];
            o.settle_secs = cfg.head.flush_grace_secs + 2 * cfg.head.flush_interval_secs;
            o.block_cache_bytes = st.block_cache_bytes;
            o.bloom_bits_per_key = st.bloom_bits_per_key;
            o.retention = retention;
            o.repair = st.repair;
            o.cell_stats = Some(crate::codec::row::cell_stats);
            Ok(Arc::new(EmbeddedStore::open(o)?))
        }
        #[cfg(feature = "bigtable")]
        Backend::Bigtable => {
            // OpenTSDB's rollup tables of the configured intervals, where
            // rollups written from outside go (`docs/rollups.md`).
            let rollup_tables: Vec<(u32, String)> = cfg
                .rollup
                .tiers()
                .map_err(|e| StorageError::Unsupported(e.to_string()))?
                .into_iter()
                .map(|t| (t.interval, t.table))
                .collect();
            Ok(Arc::new(super::bigtable::BigtableStore::open(
                &cfg.storage.bigtable,
                layout,
                &retention,
                &rollup_tables,
            )?))
        }
        #[cfg(not(feature = "bigtable"))]
        Backend::Bigtable => Err(StorageError::Unsupported(
            "storage.backend \"bigtable\" is not available in this build: build with `--features bigtable`"
                .into(),
        )),
    }
}
