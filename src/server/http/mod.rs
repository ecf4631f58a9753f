//! HTTP plumbing of the network front: serving a connection
//! ([`serve`]), the path rules applied before routing ([`normalize`]),
//! reading bodies within bounds ([`body`]), who may change state from a
//! browser ([`cors`]), which token may call what ([`auth`]), errors and their status codes ([`error`]), a request
//! as the endpoints read it ([`request`]), bodies streamed from blocking
//! producers ([`stream`]), and what every endpoint shares
//! ([`helpers`]). The routes are `router.rs`'s, the
//! endpoints `api/`'s.

pub mod auth;
pub mod body;
pub mod cors;
pub mod error;
pub mod helpers;
pub mod normalize;
pub mod request;
pub mod serve;
pub mod stream;

pub use auth::Caller;
pub use error::{ApiError, ErrorFormat};
pub use helpers::{
    Params, PeerAddr, Run, accepts_gzip, blocking, has_flag, json_response, now_ms, param, peer_ip,
    peer_of, respond, run_budgeted, run_budgeted_held,
};
pub use request::ApiRequest;
pub use serve::{AppService, serve};
