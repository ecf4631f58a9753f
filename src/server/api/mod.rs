//! The endpoints of the HTTP API, one file per family: `put` (`/api/put`),
//! `rollup` (`/api/rollup`, the same body with rollup fields),
//! `query` (`/api/query`) with its Arrow output (`arrow`), `suggest`,
//! `last` (`/api/query/last`), `search` (`/api/search/*`), `uid`
//! (`/api/uid/*`), `annotation` (`/api/annotation[s|/bulk]`), `config`
//! (`/api/config`, `/api/serializers`), `info` (version, aggregators,
//! filters), `stats` (`/api/stats[/query]`, `/metrics`, `/api/dropcaches`),
//! `influx` (InfluxDB's write API), `prom` (Prometheus remote write and
//! read), `prom_api` (the Prometheus HTTP API's series metadata) and
//! `promql` (`/api/v1/query`, `/api/v1/query_range`); `admin` (`/api/admin/*`: snapshots); `export` and `import`
//! (`/api/v1/export`, `/api/v1/import`: JSON lines and OpenTSDB's import text);
//! `select` (series chosen by label matchers, for remote read, export and
//! the series API).

pub mod admin;
pub mod annotation;
pub mod arrow;
pub mod config;
pub mod export;
pub mod expression;
pub mod import;
pub mod influx;
pub mod info;
pub mod last;
pub mod prom;
pub mod prom_api;
pub mod promql;
pub mod put;
pub mod query;
pub mod rollup;
pub mod search;
pub mod select;
pub mod stats;
pub mod suggest;
pub mod uid;
