//! The routes of the HTTP API, and nothing else: OpenTSDB's endpoints, the
//! InfluxDB write API (`/write`, `/api/v2/write`, `/ping`, `/query`),
//! Prometheus remote write and read (`/api/v1/write`, `/api/v1/read`) and
//! hourglass's own metrics, behind the path normalisation, the
//! browser-origin checks and access control; the web UI's files; the
//! answers for a path or method no route has.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower::util::MapRequest;

use super::api::{
    admin, annotation, config, export, expression, import, influx, info, last, prom, prom_api,
    promql, put, query, rollup, search, stats, suggest, uid,
};
use super::http::serve::Incoming;
use super::http::{ApiError, AppService, auth, cors, normalize};
use super::{Ctx, ui};

pub fn service(ctx: Arc<Ctx>) -> AppService {
    let limit = ctx.config.server.max_body_bytes;
    let router = Router::new()
        .route("/api/put", post(put::put))
        .route("/api/rollup", post(rollup::rollup))
        .route(
            "/api/query",
            get(query::query_get)
                .post(query::query_post)
                .delete(query::query_delete),
        )
        .route(
            "/api/suggest",
            get(suggest::suggest_get).post(suggest::suggest_post),
        )
        .route("/api/version", get(info::version))
        .route("/api/aggregators", get(info::aggregators))
        .route(
            "/api/config/filters",
            get(info::filters).post(info::filters),
        )
        .route(
            "/api/dropcaches",
            post(stats::dropcaches).delete(stats::dropcaches),
        )
        .route("/api/stats", get(stats::stats).post(stats::stats))
        .route("/api/stats/query", get(stats::stats_query))
        .route("/api/query/last", get(last::last).post(last::last))
        .route("/api/query/exp", post(expression::exp_post))
        .route("/api/query/gexp", get(expression::gexp_get))
        .route(
            "/api/annotation",
            get(annotation::annotation)
                .post(annotation::annotation)
                .put(annotation::annotation)
                .delete(annotation::annotation),
        )
        .route(
            "/api/annotation/bulk",
            post(annotation::bulk)
                .put(annotation::bulk)
                .delete(annotation::bulk),
        )
        .route("/api/annotations", get(annotation::globals))
        .route("/api/config", get(config::config).post(config::config))
        .route("/api/serializers", get(config::serializers))
        .route("/api/uid/assign", post(uid::assign_post))
        .route("/api/uid/uidmeta", get(uid::uidmeta_get))
        .route("/api/uid/tsmeta", get(uid::tsmeta_get))
        .route("/api/uid/rename", post(uid::rename_post))
        .route("/api/uid/{x}", axum::routing::any(uid::other))
        .route(
            "/api/search/lookup",
            get(search::lookup).post(search::lookup),
        )
        .route("/api/search/{kind}", get(search::other).post(search::other))
        .route(
            "/api/__unsupported_version",
            axum::routing::any(unsupported_version),
        )
        .route("/write", post(influx::write_v1))
        .route("/api/v2/write", post(influx::write_v2))
        .route("/ping", get(influx::ping))
        .route("/query", get(influx::query).post(influx::query))
        .route("/api/v1/write", post(prom::remote_write))
        .route("/api/v1/read", post(prom::remote_read))
        .route("/api/v1/query", get(promql::query).post(promql::query))
        .route(
            "/api/v1/query_range",
            get(promql::query_range).post(promql::query_range),
        )
        .route(
            "/api/v1/series",
            get(prom_api::series).post(prom_api::series),
        )
        .route(
            "/api/v1/labels",
            get(prom_api::labels).post(prom_api::labels),
        )
        .route("/api/v1/label/{name}/values", get(prom_api::label_values))
        .route("/api/v1/status/buildinfo", get(prom_api::buildinfo))
        .route("/api/v1/metadata", get(prom_api::metadata))
        .route(
            "/api/v1/query_exemplars",
            get(prom_api::query_exemplars).post(prom_api::query_exemplars),
        )
        .route("/metrics", get(stats::metrics))
        .route("/api/v1/export", get(export::export))
        .route("/api/v1/import", post(import::import))
        .route("/api/admin/snapshot", post(admin::take))
        .route("/api/admin/snapshots", get(admin::list))
        .route(
            "/api/admin/snapshots/{name}",
            get(admin::describe).delete(admin::delete),
        )
        .route(
            "/api/admin/snapshots/{name}/files/{*path}",
            get(admin::file),
        )
        .route("/api/stats/cardinality", get(stats::cardinality))
        .route("/", get(ui::index))
        .route("/ui/{*path}", get(ui::asset))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        // Access control inside the CORS layer, which answers preflights.
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            auth::layer,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            cors::layer,
        ))
        .with_state(ctx);
    MapRequest::new(
        router,
        normalize::normalize::<hyper::body::Incoming> as fn(Incoming) -> Incoming,
    )
}

async fn unsupported_version() -> Response {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        "Requested API version is greater than the max implemented",
    )
    .with_details("The maximum API version is 1")
    .into_response()
}

async fn not_found() -> Response {
    ApiError::new(StatusCode::NOT_FOUND, "Endpoint not found").into_response()
}

async fn method_not_allowed(method: Method) -> Response {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed")
        .with_details(format!(
            "The HTTP method [{method}] is not permitted for this endpoint"
        ))
        .into_response()
}
