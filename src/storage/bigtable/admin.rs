//! Creating the tables (and OpenTSDB's rollup tables of the configured
//! intervals), idempotently: each table is created with its families if it
//! does not exist (another node creating it first is
//! fine), and a table that exists (made by an earlier hourglass, by
//! OpenTSDB's `create_table.sh`, or by hand) gets the families it lacks.
//! Every family keeps one version; the data family also expires cells by
//! age when every metric has a finite retention.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use gcp_auth::TokenProvider;
use googleapis_tonic_google_bigtable_admin_v2::google::bigtable::admin::v2::{
    ColumnFamily, CreateTableRequest, GcRule, GetTableRequest, ModifyColumnFamiliesRequest,
    Table as BtTable,
    bigtable_table_admin_client::BigtableTableAdminClient,
    gc_rule,
    modify_column_families_request::{Modification, modification},
    table,
};
use tonic::Code;
use tonic::transport::{Channel, ClientTlsConfig};

use super::rpc::{client_error, status_error};
use super::schema::{TABLES, families, table_id};
use crate::storage::retention::RetentionView;
use crate::storage::{StorageError, Table};

const ADMIN_HOST: &str = "bigtableadmin.googleapis.com";
const ADMIN_SCOPE: &str = "https://www.googleapis.com/auth/bigtable.admin.table";

/// Where the admin API is and how to authenticate to it.
pub enum AdminTarget {
    Emulator(String),
    Cloud(Arc<dyn TokenProvider>),
}

/// The garbage-collection rule of a family: one version, and for the data
/// family an age limit of the longest TTL plus an hour (cells carry their
/// row's base hour) when no metric keeps data forever.
fn gc_rule(table: Table, retention: &RetentionView) -> GcRule {
    let versions = GcRule {
        rule: Some(gc_rule::Rule::MaxNumVersions(1)),
    };
    let ttl = if retention.forever {
        None
    } else {
        retention.ttls.iter().copied().max()
    };
    match (table, ttl) {
        (Table::Data, Some(ttl)) => GcRule {
            rule: Some(gc_rule::Rule::Union(gc_rule::Union {
                rules: vec![
                    versions,
                    GcRule {
                        rule: Some(gc_rule::Rule::MaxAge(prost_types::Duration {
                            seconds: i64::try_from(ttl.saturating_add(3600)).unwrap_or(i64::MAX),
                            nanos: 0,
                        })),
                    },
                ],
            })),
        },
        _ => versions,
    }
}

fn family(table: Table, retention: &RetentionView) -> ColumnFamily {
    ColumnFamily {
        gc_rule: Some(gc_rule(table, retention)),
        value_type: None,
    }
}

/// An admin request with a deadline and, on Cloud Bigtable, the token.
fn admin_request<T>(msg: T, timeout: Duration, token: Option<&str>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(msg);
    r.set_timeout(timeout);
    if let Some(t) = token.and_then(|t| t.parse().ok()) {
        r.metadata_mut().insert("authorization", t);
    }
    r
}

/// Creates the three tables (or adds the families they lack), and
/// OpenTSDB's rollup tables `rollup_tables` (full ids, family `t`, one
/// version) where rollups written from outside go.
pub async fn ensure_tables(
    target: &AdminTarget,
    project: &str,
    instance: &str,
    prefix: &str,
    retention: &RetentionView,
    rollup_tables: &[String],
    timeout: Duration,
) -> Result<(), StorageError> {
    let (channel, token) = match target {
        AdminTarget::Emulator(host) => {
            let ch = Channel::from_shared(format!("http://{host}"))
                .map_err(|e| client_error("emulator address", e, false))?
                .connect_timeout(timeout)
                .connect()
                .await
                .map_err(|e| client_error("connecting to the Bigtable emulator", e, true))?;
            (ch, None)
        }
        AdminTarget::Cloud(provider) => {
            let tls = ClientTlsConfig::new()
                .with_webpki_roots()
                .domain_name(ADMIN_HOST);
            let ch = Channel::from_static("https://bigtableadmin.googleapis.com")
                .tls_config(tls)
                .map_err(|e| client_error("admin TLS", e, false))?
                .connect_timeout(timeout)
                .connect()
                .await
                .map_err(|e| client_error("connecting to the Bigtable admin API", e, true))?;
            let token = provider
                .token(&[ADMIN_SCOPE])
                .await
                .map_err(|e| client_error("Google credentials for the admin API", e, false))?;
            (ch, Some(format!("Bearer {}", token.as_str())))
        }
    };
    let mut admin = Admin {
        client: BigtableTableAdminClient::new(channel),
        parent: format!("projects/{project}/instances/{instance}"),
        token,
        timeout,
    };
    for t in TABLES {
        let wanted = families(t)
            .iter()
            .map(|f| (f.to_string(), family(t, retention)))
            .collect();
        admin.ensure(table_id(prefix, t), wanted).await?;
    }
    for id in rollup_tables {
        let wanted = [("t".to_string(), family(Table::Rollup, retention))].into();
        admin.ensure(id.clone(), wanted).await?;
    }
    Ok(())
}

/// The admin client of one instance.
struct Admin {
    client: BigtableTableAdminClient<Channel>,
    parent: String,
    token: Option<String>,
    timeout: Duration,
}

impl Admin {
    /// Creates table `id` with `wanted` families, or adds those it lacks.
    async fn ensure(
        &mut self,
        id: String,
        wanted: HashMap<String, ColumnFamily>,
    ) -> Result<(), StorageError> {
        let (parent, timeout, token) = (self.parent.clone(), self.timeout, self.token.clone());
        let name = format!("{parent}/tables/{id}");
        let created = self
            .client
            .create_table(admin_request(
                CreateTableRequest {
                    parent,
                    table_id: id.clone(),
                    table: Some(BtTable {
                        column_families: wanted.clone(),
                        ..BtTable::default()
                    }),
                    initial_splits: Vec::new(),
                },
                timeout,
                token.as_deref(),
            ))
            .await;
        match created {
            Ok(_) => {
                tracing::info!(table = %id, "created Bigtable table");
                return Ok(());
            }
            Err(s) if s.code() == Code::AlreadyExists => {}
            Err(s) => return Err(status_error(&format!("creating table {id}"), &s)),
        }
        let existing = self
            .client
            .get_table(admin_request(
                GetTableRequest {
                    name: name.clone(),
                    view: table::View::SchemaView as i32,
                },
                timeout,
                token.as_deref(),
            ))
            .await
            .map_err(|s| status_error(&format!("reading table {id}"), &s))?
            .into_inner();
        let missing: Vec<Modification> = wanted
            .into_iter()
            .filter(|(f, _)| !existing.column_families.contains_key(f))
            .map(|(f, cf)| Modification {
                id: f,
                update_mask: None,
                r#mod: Some(modification::Mod::Create(cf)),
            })
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let added: Vec<String> = missing.iter().map(|m| m.id.clone()).collect();
        match self
            .client
            .modify_column_families(admin_request(
                ModifyColumnFamiliesRequest {
                    name,
                    modifications: missing,
                    ignore_warnings: false,
                },
                timeout,
                token.as_deref(),
            ))
            .await
        {
            Ok(_) => tracing::info!(table = %id, families = ?added, "added column families"),
            // Another node added them meanwhile.
            Err(s) if s.code() == Code::AlreadyExists => {}
            Err(s) => return Err(status_error(&format!("adding families to {id}"), &s)),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_family_expires_by_age_only_when_every_metric_does() {
        let forever = RetentionView {
            ttls: vec![86_400],
            forever: true,
        };
        assert_eq!(
            gc_rule(Table::Data, &forever).rule,
            Some(gc_rule::Rule::MaxNumVersions(1))
        );
        let finite = RetentionView {
            ttls: vec![3600, 86_400],
            forever: false,
        };
        match gc_rule(Table::Data, &finite).rule {
            Some(gc_rule::Rule::Union(u)) => {
                assert!(u.rules.iter().any(|r| matches!(
                    &r.rule,
                    Some(gc_rule::Rule::MaxAge(d)) if d.seconds == 86_400 + 3600
                )));
            }
            other => panic!("unexpected rule {other:?}"),
        }
        assert_eq!(
            gc_rule(Table::Uid, &finite).rule,
            Some(gc_rule::Rule::MaxNumVersions(1))
        );
    }
}
