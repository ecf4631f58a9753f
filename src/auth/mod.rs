//! Access control (`docs/security.md`): tokens with a scope, kept as
//! argon2id hashes ([`TokenStore`]), the forms in which clients present
//! them ([`credentials`]), and what each scope allows ([`Scope`]). The
//! server asks for a token on every HTTP request and line-protocol
//! connection when `[auth] enabled = true`.

pub mod credentials;
mod scope;
mod token_store;

pub use scope::Scope;
pub use token_store::{AuthError, Busy, TokenRecord, TokenStore, Verified};
