//! The Cloud Bigtable backend (cargo feature `bigtable`): OpenTSDB's tables
//! on Bigtable, shared by every hourglass node (and by OpenTSDB itself).
//!
//! * [`schema`] — tables, families, cell timestamps, filters and mutations.
//! * [`admin`] — idempotent table creation.
//! * [`chunks`] — reassembling rows from `ReadRows` chunks.
//! * [`rpc`] — the client's runtime, waiting from blocking threads,
//!   deadlines, retries and error mapping.
//!
//! What the store promises, as Bigtable does: a write is atomic per row
//! (`MutateRows` entries are applied independently; an entry that fails
//! with a transient status is sent again, which is safe because every
//! mutation hourglass sends is idempotent); `increment` is
//! `ReadModifyWriteRow` and `check_and_put` is `CheckAndMutateRow`, both
//! atomic on their row and never retried blindly; scans stream each range
//! with a bounded read-ahead and resume after the last row on a transient
//! failure; every read asks for the newest version of each cell only. A
//! write is durable when the call returns: `Durability` is moot.
//!
//! `BIGTABLE_EMULATOR_HOST` selects Google's emulator (no credentials);
//! otherwise credentials come from `storage.bigtable.credentials_file` or
//! Google's usual environment (`GOOGLE_APPLICATION_CREDENTIALS`, gcloud's
//! application-default login, the metadata server).

mod admin;
mod chunks;
mod rpc;
mod schema;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bigtable_rs::bigtable::{BigTable, BigTableConnection};
use bigtable_rs::google::bigtable::v2::{
    CheckAndMutateRowRequest, MutateRowsRequest, ReadModifyWriteRowRequest, ReadModifyWriteRule,
    ReadRowsRequest, RowFilter, RowSet, mutate_rows_request, read_modify_write_rule, row_range,
};
use tokio::sync::mpsc;

use self::chunks::{Row, RowsReader};
use self::rpc::{ATTEMPTS, client_error, request, status_error, wait, with_retries};
use crate::codec::KeyLayout;
use crate::codec::rollup_cell::{EXTERNAL_ROW_PREFIX, external_row_prefix};
use crate::config::BigtableConfig;
use crate::storage::retention::RetentionView;
use crate::storage::{
    Cell, DataBuilder, Durability, KeyFilter, KeyRange, Mutation, RangeVisitor, Result, RowVisitor,
    StorageError, Store, Table,
};

/// Rows read ahead of the visitor, across the ranges of one scan.
const READ_AHEAD: usize = 256;
/// Row keys per `ReadRows` call of a multi-row get.
const GET_BATCH: usize = 1000;

pub struct BigtableStore {
    /// Drives the gRPC connections and runs every call.
    rt: tokio::runtime::Runtime,
    client: BigTable,
    /// Full table names, in [`Table`] order.
    names: [String; 4],
    /// OpenTSDB's rollup tables (full names) of rollups written from
    /// outside, by the interval in hours the engine's rollup-table keys
    /// carry after [`EXTERNAL_ROW_PREFIX`] (see [`BigtableStore::locate`]).
    rollups: HashMap<[u8; 2], String>,
    app_profile: String,
    timeout: Duration,
    max_mutations: usize,
    layout: KeyLayout,
    description: String,
}

impl std::fmt::Debug for BigtableStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BigtableStore")
            .field("tables", &self.names)
            .field("target", &self.description)
            .finish_non_exhaustive()
    }
}

impl BigtableStore {
    /// Connects (to the emulator if `BIGTABLE_EMULATOR_HOST` is set) and,
    /// if configured, creates the tables.
    /// `rollup_tables`: OpenTSDB's rollup table (without the prefix) of
    /// each interval (seconds) rollups may be written for from outside.
    pub fn open(
        cfg: &BigtableConfig,
        layout: KeyLayout,
        retention: &RetentionView,
        rollup_tables: &[(u32, String)],
    ) -> Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hourglass-bigtable")
            .enable_all()
            .build()
            .map_err(|e| client_error("starting the Bigtable client runtime", e, false))?;
        let timeout = Duration::from_millis(cfg.timeout_ms);
        let emulator = std::env::var("BIGTABLE_EMULATOR_HOST")
            .ok()
            .filter(|h| !h.is_empty());
        let (project, instance) = (cfg.project.clone(), cfg.instance.clone());
        let credentials = cfg.credentials_file.clone();
        let (prefix, create) = (cfg.table_prefix.clone(), cfg.create_tables);
        let retention = retention.clone();
        let emu = emulator.clone();
        let rollup_ids: Vec<String> = rollup_tables
            .iter()
            .map(|(_, t)| format!("{}{t}", cfg.table_prefix))
            .collect();
        let max_message = cfg.max_decoding_message_bytes;
        let connect = async move {
            let (conn, admin) = match emu {
                Some(host) => (
                    BigTableConnection::new_with_emulator(
                        &host,
                        &project,
                        &instance,
                        false,
                        2,
                        Some(timeout),
                    ),
                    admin::AdminTarget::Emulator(host),
                ),
                None => {
                    let provider: Arc<dyn gcp_auth::TokenProvider> = if credentials.is_empty() {
                        gcp_auth::provider()
                            .await
                            .map_err(|e| client_error("Google credentials", e, false))?
                    } else {
                        Arc::new(
                            gcp_auth::CustomServiceAccount::from_file(&credentials).map_err(
                                |e| {
                                    client_error(
                                        &format!("credentials file {credentials}"),
                                        e,
                                        false,
                                    )
                                },
                            )?,
                        )
                    };
                    (
                        BigTableConnection::new_with_token_provider(
                            &project,
                            &instance,
                            false,
                            4,
                            Some(timeout),
                            Arc::clone(&provider),
                        ),
                        admin::AdminTarget::Cloud(provider),
                    )
                }
            };
            let conn = conn.map_err(|e| client_error("connecting to Bigtable", e, true))?;
            if create {
                admin::ensure_tables(
                    &admin,
                    &project,
                    &instance,
                    &prefix,
                    &retention,
                    &rollup_ids,
                    timeout,
                )
                .await?;
            }
            let mut client = conn.client();
            // tonic's default of 4 MiB per message is below what one
            // response of large rows may hold.
            let inner = client.get_client();
            *inner = inner
                .clone()
                .max_decoding_message_size(max_message)
                .max_encoding_message_size(max_message);
            Ok::<_, StorageError>(client)
        };
        let client = match wait(rt.spawn(connect)) {
            Ok(r) => r?,
            Err(e) => return Err(client_error("connecting to Bigtable", e, false)),
        };
        let names = schema::ALL_TABLES.map(|t| {
            format!(
                "projects/{}/instances/{}/tables/{}",
                cfg.project,
                cfg.instance,
                schema::table_id(&cfg.table_prefix, t)
            )
        });
        let rollups = rollup_tables
            .iter()
            .map(|(interval, t)| {
                let [_, _, hi, lo] = external_row_prefix(*interval);
                (
                    [hi, lo],
                    format!(
                        "projects/{}/instances/{}/tables/{}{t}",
                        cfg.project, cfg.instance, cfg.table_prefix
                    ),
                )
            })
            .collect();
        let description = match &emulator {
            Some(h) => format!("emulator at {h}"),
            None => format!("projects/{}/instances/{}", cfg.project, cfg.instance),
        };
        tracing::info!(target = %description, prefix = %cfg.table_prefix, "bigtable backend ready");
        Ok(Self {
            rt,
            client,
            names,
            rollups,
            app_profile: cfg.app_profile.clone(),
            timeout,
            max_mutations: cfg.max_mutations_per_request,
            layout,
            description,
        })
    }

    fn name(&self, table: Table) -> &str {
        &self.names[table as usize]
    }

    /// Where a key of `table` lives: the table's name, the key there, and
    /// the prefix taken off it. A rollup-table key of a rollup written from
    /// outside (`FF FD ‖ interval hours ‖ data row key`) is the data row
    /// key in OpenTSDB's rollup table of that interval, so that OpenTSDB
    /// and hourglass share it; keys read from it get the prefix back.
    fn locate<'k>(&self, table: Table, key: &'k [u8]) -> Result<(&str, &'k [u8], &'k [u8])> {
        if table != Table::Rollup || !key.starts_with(&EXTERNAL_ROW_PREFIX) {
            return Ok((self.name(table), key, &[]));
        }
        let (prefix, rest) = key.split_at(key.len().min(4));
        let name = <[u8; 2]>::try_from(&prefix[2..])
            .ok()
            .and_then(|id| self.rollups.get(&id))
            .ok_or_else(|| {
                StorageError::Unsupported(format!(
                    "no OpenTSDB rollup table configured for the rollup key prefix {prefix:02X?}"
                ))
            })?;
        Ok((name, rest, prefix))
    }

    /// A range of `table` as [`BigtableStore::locate`] places it (one table:
    /// a range may end at the end of its rollup table, not past it).
    fn locate_range(&self, table: Table, r: &KeyRange) -> Result<(String, KeyRange, Vec<u8>)> {
        let (name, start, prefix) = self.locate(table, &r.start)?;
        if prefix.is_empty() {
            return Ok((name.to_string(), r.clone(), Vec::new()));
        }
        let end = if let Some(end) = r.end.strip_prefix(prefix) {
            // An empty end would read as "to the end of the table".
            if end.is_empty() {
                return Err(StorageError::Unsupported(
                    "an empty range of an OpenTSDB rollup table".into(),
                ));
            }
            end.to_vec()
        } else if r.end <= crate::storage::prefix_end(prefix) {
            // The rest of the table.
            Vec::new()
        } else {
            return Err(StorageError::Unsupported(
                "a scan across OpenTSDB rollup tables".into(),
            ));
        };
        Ok((
            name.to_string(),
            KeyRange {
                start: start.to_vec(),
                end,
            },
            prefix.to_vec(),
        ))
    }

    /// Runs a call on the client's runtime and waits for it here.
    fn call<T: Send + 'static>(
        &self,
        fut: impl Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        match wait(self.rt.spawn(fut)) {
            Ok(r) => r,
            Err(e) => Err(client_error("bigtable call", e, false)),
        }
    }

    /// A `ReadRows` request (newest version of each cell only).
    fn read_request(
        &self,
        table_name: &str,
        rows: RowSet,
        filter: Option<RowFilter>,
    ) -> ReadRowsRequest {
        ReadRowsRequest {
            table_name: table_name.to_string(),
            app_profile_id: self.app_profile.clone(),
            rows: Some(rows),
            filter: Some(match filter {
                Some(f) => schema::chain(vec![schema::latest_only(), f]),
                None => schema::latest_only(),
            }),
            ..ReadRowsRequest::default()
        }
    }

    /// Streams the rows of several ranges into one bounded channel, one
    /// task per range, and hands them to `visit` on this thread.
    fn stream(
        &self,
        table: Table,
        ranges: &[KeyRange],
        visit: &mut dyn FnMut(usize, Vec<u8>, Vec<Cell>) -> Result<bool>,
    ) -> Result<()> {
        let located = ranges
            .iter()
            .map(|r| self.locate_range(table, r))
            .collect::<Result<Vec<_>>>()?;
        let (tx, mut rx) = mpsc::channel::<(usize, Result<Row>)>(READ_AHEAD);
        let tasks: Vec<_> = located
            .iter()
            .enumerate()
            .map(|(i, (name, r, _))| {
                let req = self.read_request(name, schema::range_set(r), None);
                let task = stream_range(
                    self.client.clone(),
                    req,
                    r.end.clone(),
                    self.app_profile.clone(),
                    self.timeout,
                    i,
                    tx.clone(),
                );
                self.rt.spawn(task)
            })
            .collect();
        drop(tx);
        let result = (|| {
            while let Some((i, row)) = wait(rx.recv()) {
                let (mut key, cells) = row?;
                if let Some((_, _, prefix)) = located.get(i)
                    && !prefix.is_empty()
                {
                    key.splice(0..0, prefix.iter().copied());
                }
                if !visit(i, key, cells)? {
                    break;
                }
            }
            Ok(())
        })();
        // Stop the ranges still reading (an early stop or an error).
        for t in tasks {
            t.abort();
        }
        result
    }

    /// Sends mutations grouped by row, in requests of at most
    /// `max_mutations` mutations, retrying failed entries.
    fn mutate(&self, table: Table, batch: Vec<Mutation>) -> Result<()> {
        // By Bigtable table (a rollup-table batch may reach OpenTSDB's
        // rollup tables), rows as keyed there.
        let mut by_name: Vec<(String, bool, Vec<Mutation>)> = Vec::new();
        for mut m in batch {
            let (Mutation::Put { row, .. } | Mutation::Delete { row, .. }) = &mut m;
            let (name, key, prefix) = self.locate(table, row)?;
            let (name, cut) = (name.to_string(), prefix.len());
            debug_assert_eq!(key.len() + cut, row.len());
            row.drain(..cut);
            match by_name.iter_mut().find(|(n, _, _)| *n == name) {
                Some((_, _, muts)) => muts.push(m),
                None => by_name.push((name, cut > 0, vec![m])),
            }
        }
        for (name, rollup, muts) in by_name {
            // OpenTSDB writes its rollup cells at the server's time: so do
            // we there, so that a later write of a cell (by either) is the
            // newer version, and a max-age rule ages cells from their write.
            let at = rollup.then(|| {
                let us = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
                us - us % 1000
            });
            self.mutate_table(table, name, at, muts)?;
        }
        Ok(())
    }

    /// Writes mutations of `table` to the Bigtable table `table_name`, at
    /// cell time `at` (µs) if given.
    fn mutate_table(
        &self,
        table: Table,
        table_name: String,
        at: Option<i64>,
        batch: Vec<Mutation>,
    ) -> Result<()> {
        // One entry per row, mutations in order (MutateRows applies an
        // entry atomically; entries of one request in no given order).
        let mut order: Vec<Vec<u8>> = Vec::new();
        let mut by_row: HashMap<Vec<u8>, Vec<_>> = HashMap::new();
        for m in &batch {
            let row = match m {
                Mutation::Put { row, .. } | Mutation::Delete { row, .. } => row,
            };
            let bt = schema::mutation(&self.layout, m, at)?;
            match by_row.get_mut(row) {
                Some(v) => v.push(bt),
                None => {
                    order.push(row.clone());
                    by_row.insert(row.clone(), vec![bt]);
                }
            }
        }
        let mut requests: Vec<Vec<mutate_rows_request::Entry>> = vec![Vec::new()];
        let mut in_request = 0;
        for row in order {
            let mutations = by_row.remove(&row).unwrap_or_default();
            if mutations.len() > self.max_mutations {
                return Err(StorageError::Unsupported(format!(
                    "a row mutation of {} cells is over Bigtable's limit of {} per request",
                    mutations.len(),
                    self.max_mutations
                )));
            }
            if in_request + mutations.len() > self.max_mutations {
                requests.push(Vec::new());
                in_request = 0;
            }
            in_request += mutations.len();
            if let Some(last) = requests.last_mut() {
                last.push(mutate_rows_request::Entry {
                    row_key: row,
                    mutations,
                    idempotency: None,
                });
            }
        }
        debug_assert!(table != Table::Data || table_name == self.name(Table::Data));
        let (profile, timeout) = (self.app_profile.clone(), self.timeout);
        let client = self.client.clone();
        self.call(async move {
            let sends: Vec<_> = requests
                .into_iter()
                .filter(|r| !r.is_empty())
                .map(|entries| {
                    tokio::spawn(mutate_rows(
                        client.clone(),
                        table_name.clone(),
                        profile.clone(),
                        timeout,
                        entries,
                    ))
                })
                .collect();
            for s in sends {
                s.await
                    .map_err(|e| client_error("bigtable write", e, false))??;
            }
            Ok(())
        })
    }
}

/// Streams one range into `tx`, resuming after the last row delivered
/// when the stream fails with a transient status.
async fn stream_range(
    client: BigTable,
    mut req: ReadRowsRequest,
    end: Vec<u8>,
    profile: String,
    timeout: Duration,
    index: usize,
    tx: mpsc::Sender<(usize, Result<Row>)>,
) {
    let mut attempt = 1;
    let mut last: Option<Vec<u8>> = None;
    loop {
        if let Some(k) = &last {
            // Resume after the last row handed over.
            req.rows = Some(RowSet {
                row_keys: Vec::new(),
                row_ranges: vec![bigtable_rs::google::bigtable::v2::RowRange {
                    start_key: Some(row_range::StartKey::StartKeyOpen(k.clone())),
                    end_key: (!end.is_empty()).then(|| row_range::EndKey::EndKeyOpen(end.clone())),
                }],
            });
        }
        match read_into(
            client.clone(),
            &req,
            &profile,
            timeout,
            index,
            &tx,
            &mut last,
        )
        .await
        {
            Ok(()) => return,
            Err(e) if e.is_retryable() && attempt < ATTEMPTS => {
                tracing::warn!(error = %e, attempt, "bigtable scan interrupted; resuming");
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
                attempt += 1;
            }
            Err(e) => {
                let _ = tx.send((index, Err(e))).await;
                return;
            }
        }
    }
}

/// One `ReadRows` call, its rows sent to `tx` as they complete.
async fn read_into(
    client: BigTable,
    req: &ReadRowsRequest,
    profile: &str,
    timeout: Duration,
    index: usize,
    tx: &mpsc::Sender<(usize, Result<Row>)>,
    last: &mut Option<Vec<u8>>,
) -> Result<()> {
    let mut reader = RowsReader::open(client, req.clone(), profile, timeout).await?;
    let mut done = Vec::new();
    while reader.next_rows(&mut done).await? {
        for row in done.drain(..) {
            *last = Some(row.0.clone());
            if tx.send((index, Ok(row))).await.is_err() {
                // The reader stopped: nothing more is wanted.
                return Ok(());
            }
        }
    }
    Ok(())
}

/// One `MutateRows` request, re-sending the entries that failed with a
/// transient status.
async fn mutate_rows(
    mut client: BigTable,
    table_name: String,
    profile: String,
    timeout: Duration,
    mut entries: Vec<mutate_rows_request::Entry>,
) -> Result<()> {
    let mut attempt = 1;
    loop {
        let req = MutateRowsRequest {
            table_name: table_name.clone(),
            app_profile_id: profile.clone(),
            entries: entries.clone(),
            ..MutateRowsRequest::default()
        };
        let sent = client
            .get_client()
            .mutate_rows(request(req, &table_name, &profile, timeout))
            .await;
        let mut failed: Vec<(usize, tonic::Status)> = Vec::new();
        let mut answered = vec![false; entries.len()];
        let outcome: Result<()> = async {
            let mut stream = sent.map_err(|s| status_error("write", &s))?.into_inner();
            while let Some(msg) = stream
                .message()
                .await
                .map_err(|s| status_error("write", &s))?
            {
                for e in msg.entries {
                    let i = usize::try_from(e.index).unwrap_or(usize::MAX);
                    if let Some(a) = answered.get_mut(i) {
                        *a = true;
                    }
                    if let Some(st) = e.status
                        && st.code != 0
                    {
                        failed.push((
                            i,
                            tonic::Status::new(tonic::Code::from(st.code), st.message),
                        ));
                    }
                }
            }
            Ok(())
        }
        .await;
        let (retry, error): (Vec<usize>, Option<StorageError>) = match outcome {
            // The whole call failed: every entry not known to be done is
            // sent again (idempotent).
            Err(e) => (
                (0..entries.len()).filter(|&i| !answered[i]).collect(),
                Some(e),
            ),
            Ok(()) => {
                let permanent = failed.iter().find(|(_, s)| !rpc::retryable(s.code()));
                if let Some((_, s)) = permanent {
                    return Err(status_error("write", s));
                }
                let mut retry: Vec<usize> = failed.iter().map(|(i, _)| *i).collect();
                retry.extend((0..entries.len()).filter(|&i| !answered[i]));
                let err = failed.first().map(|(_, s)| status_error("write", s));
                (retry, err)
            }
        };
        if retry.is_empty() {
            return Ok(());
        }
        let error = error.unwrap_or_else(|| client_error("write", "entries left unanswered", true));
        if !error.is_retryable() || attempt >= ATTEMPTS {
            return Err(error);
        }
        tracing::warn!(error = %error, entries = retry.len(), attempt, "bigtable write partly failed; retrying");
        let mut keep = vec![false; entries.len()];
        for i in retry {
            if let Some(k) = keep.get_mut(i) {
                *k = true;
            }
        }
        let mut i = 0;
        entries.retain(|_| {
            i += 1;
            keep[i - 1]
        });
        tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
        attempt += 1;
    }
}

impl Store for BigtableStore {
    fn backend_name(&self) -> &'static str {
        "bigtable"
    }

    fn shared(&self) -> bool {
        true
    }

    fn get_row(&self, table: Table, row: &[u8]) -> Result<Vec<Cell>> {
        Ok(self
            .get_rows(table, &[row.to_vec()])?
            .pop()
            .unwrap_or_default())
    }

    fn get_rows(&self, table: Table, rows: &[Vec<u8>]) -> Result<Vec<Vec<Cell>>> {
        // By Bigtable table (see `locate`), keys as stored there.
        let mut by_name: Vec<(String, Vec<u8>, Vec<Vec<u8>>)> = Vec::new();
        for row in rows {
            let (name, key, prefix) = self.locate(table, row)?;
            match by_name
                .iter_mut()
                .find(|(n, p, _)| n == name && p == prefix)
            {
                Some((_, _, keys)) => keys.push(key.to_vec()),
                None => by_name.push((name.to_string(), prefix.to_vec(), vec![key.to_vec()])),
            }
        }
        let mut found: HashMap<Vec<u8>, Vec<Cell>> = HashMap::new();
        for (name, prefix, keys) in &by_name {
            for keys in keys.chunks(GET_BATCH) {
                let req = self.read_request(
                    name,
                    RowSet {
                        row_keys: keys.to_vec(),
                        row_ranges: Vec::new(),
                    },
                    None,
                );
                let (client, profile, timeout) =
                    (self.client.clone(), self.app_profile.clone(), self.timeout);
                let got = self.call(async move {
                    with_retries(|| read_all(client.clone(), req.clone(), profile.clone(), timeout))
                        .await
                })?;
                found.extend(got.into_iter().map(|(k, cells)| {
                    let mut full = prefix.clone();
                    full.extend_from_slice(&k);
                    (full, cells)
                }));
            }
        }
        Ok(rows
            .iter()
            .map(|k| found.get(k).cloned().unwrap_or_default())
            .collect())
    }

    fn scan(
        &self,
        table: Table,
        start: &[u8],
        end: &[u8],
        visit: &mut RowVisitor<'_>,
    ) -> Result<()> {
        let range = [KeyRange {
            start: start.to_vec(),
            end: end.to_vec(),
        }];
        self.stream(table, &range, &mut |_, key, cells| visit(&key, cells))
    }

    /// The key filter runs here, on the rows as they arrive (tag filters
    /// on binary UIDs make poor `RowKeyRegexFilter`s).
    fn scan_ranges(
        &self,
        table: Table,
        ranges: &[KeyRange],
        filter: &KeyFilter<'_>,
        visit: &RangeVisitor<'_>,
    ) -> Result<()> {
        self.stream(table, ranges, &mut |i, key, cells| {
            if filter(&key) {
                visit(i, &key, cells)
            } else {
                Ok(true)
            }
        })
    }

    fn write(&self, batch: Vec<Mutation>, _durability: Durability) -> Result<()> {
        let mut by_table: [Vec<Mutation>; 4] = Default::default();
        for m in batch {
            by_table[m.table() as usize].push(m);
        }
        for (t, muts) in schema::ALL_TABLES.into_iter().zip(by_table) {
            if !muts.is_empty() {
                self.mutate(t, muts)?;
            }
        }
        Ok(())
    }

    fn write_data(&self, _build: &mut DataBuilder<'_>) -> Result<()> {
        Err(StorageError::Unsupported(
            "ordered data writes (native cells, tombstones) are not offered by a shared store"
                .into(),
        ))
    }

    fn increment(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        delta: i64,
        _durability: Durability,
    ) -> Result<i64> {
        let (fam, q) = schema::split_column(column)?;
        let req = ReadModifyWriteRowRequest {
            table_name: self.name(table).to_string(),
            app_profile_id: self.app_profile.clone(),
            row_key: row.to_vec(),
            rules: vec![ReadModifyWriteRule {
                family_name: fam.to_string(),
                column_qualifier: q.to_vec(),
                rule: Some(read_modify_write_rule::Rule::IncrementAmount(delta)),
            }],
            ..ReadModifyWriteRowRequest::default()
        };
        let (mut client, profile, timeout) =
            (self.client.clone(), self.app_profile.clone(), self.timeout);
        let what = format!("{table:?} row {row:02X?} column {fam}:{q:02X?}");
        // Not retried: an increment that reached Bigtable before its
        // answer was lost would count twice.
        let resp = self.call(async move {
            let name = req.table_name.clone();
            client
                .get_client()
                .read_modify_write_row(request(req, &name, &profile, timeout))
                .await
                .map_err(|s| status_error("increment", &s))
                .map(tonic::Response::into_inner)
        })?;
        let value = resp
            .row
            .into_iter()
            .flat_map(|r| r.families)
            .flat_map(|f| f.columns)
            .flat_map(|c| c.cells)
            .next()
            .map(|c| c.value)
            .ok_or_else(|| StorageError::NotACounter { what: what.clone() })?;
        let b: [u8; 8] = value
            .try_into()
            .map_err(|_| StorageError::NotACounter { what })?;
        Ok(i64::from_be_bytes(b))
    }

    fn check_and_put(
        &self,
        table: Table,
        row: &[u8],
        column: &[u8],
        expected: Option<&[u8]>,
        value: Vec<u8>,
        _durability: Durability,
    ) -> Result<bool> {
        let (fam, q) = schema::split_column(column)?;
        let put = schema::mutation(
            &self.layout,
            &Mutation::Put {
                table,
                row: row.to_vec(),
                column: column.to_vec(),
                value,
            },
            None,
        )?;
        let mut predicate = vec![schema::latest_only(), schema::column_filter(fam, q)];
        if let Some(v) = expected {
            predicate.push(schema::value_filter(v));
        }
        // Absent expected: write if the column has no cell. Expected: write
        // if its newest cell has that value.
        let (true_mutations, false_mutations) = match expected {
            None => (Vec::new(), vec![put]),
            Some(_) => (vec![put], Vec::new()),
        };
        let req = CheckAndMutateRowRequest {
            table_name: self.name(table).to_string(),
            app_profile_id: self.app_profile.clone(),
            row_key: row.to_vec(),
            predicate_filter: Some(schema::chain(predicate)),
            true_mutations,
            false_mutations,
            ..CheckAndMutateRowRequest::default()
        };
        let (mut client, profile, timeout) =
            (self.client.clone(), self.app_profile.clone(), self.timeout);
        let matched = self.call(async move {
            let name = req.table_name.clone();
            client
                .get_client()
                .check_and_mutate_row(request(req, &name, &profile, timeout))
                .await
                .map_err(|s| status_error("check-and-mutate", &s))
                .map(|r| r.into_inner().predicate_matched)
        })?;
        Ok(match expected {
            None => !matched,
            Some(_) => matched,
        })
    }

    fn sync(&self) -> Result<()> {
        Ok(())
    }

    fn checkpoint(&self) -> Result<()> {
        Ok(())
    }
}

/// One `ReadRows` call, every row collected.
async fn read_all(
    client: BigTable,
    req: ReadRowsRequest,
    profile: String,
    timeout: Duration,
) -> Result<Vec<Row>> {
    let mut reader = RowsReader::open(client, req, &profile, timeout).await?;
    let mut out = Vec::new();
    while reader.next_rows(&mut out).await? {}
    Ok(out)
}
