//! Integration tests: the real `hourglass` binary on 127.0.0.1:0.

mod api_annotation;
mod api_arrow;
mod api_cardinality;
mod api_last;
mod api_lookup;
mod api_query_more;
mod api_uid;
mod auth;
mod common;
mod damage;
mod durability;
mod export_import;
mod grafana;
mod hostile;
mod http_api;
mod prom_api;
mod protocols;
mod query;
mod robustness;
mod rollup;
mod rollup_api;
mod snapshot;
mod telnet;
mod timestamps;
mod tls;
mod ui;
