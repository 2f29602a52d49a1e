//! Keystone (identity v3): the credentials (`config`: clouds.yaml, secure.yaml, the `OS_*`
//! variables) and the session (`keystone`: a token, its scope, the Ironic endpoint from its catalog,
//! renewal), and what either fails with (`error`: `AuthError`). Passwords, secrets and tokens are
//! `Secret`s and never reach a message or the audit log.

pub mod config;
mod error;
pub mod keystone;

pub use config::{resolve, AuthConfig};
pub use error::AuthError;
pub use keystone::{Scope, Session};
