//! The read-only `os-baremetal-nodes` proxy (`bm2ironic proxy`): Nova's old baremetal API, answered
//! from Ironic after Nova's own Ironic-backed one went away (microversion 2.36, Newton), so that
//! `nova baremetal-node-list` and the operators' scripts keep working, their nova_bm integer ids
//! included. A third face beside the CLI and the wizard: it uses the core's Ironic API
//! client (`core::ironic::api`) and Keystone session (`core::auth`), and adds only HTTP serving.
//!
//! - `state.rs`: the modes (`AuthMode`, `TokenMode`), `ProxyConfig` and the shared state `Proxy`;
//! - `nova.rs`: the bodies (pure): Ironic's node and ports to Nova's JSON, Nova's fault bodies;
//! - `version.rs`: the compute microversion a request asks for, and Nova's answers to it (pure);
//! - `cache.rs`: the callers' tokens Keystone answered for, by salted hash, bounded in time and number;
//! - `tokens.rs`: validating them: the caches (valid and refused), one validation per token at a
//!   time, a bound on validations towards Keystone;
//! - `index.rs`: nova_bm id -> Ironic node, for the integer ids of nova baremetal's scripts;
//! - `reply.rs`: Nova's refusals, and what passes between the layers of a request;
//! - `policy.rs`: the checks before a handler, in Nova's order (token, microversion, tenant, role);
//! - `routes.rs`: the paths (`/v2/{tenant_id}`, `/v2.1`), `/healthz`, the calls to Ironic with their
//!   deadline and the bound on concurrent calls, the access log;
//! - `server.rs`: the connections: HTTP/1.1 with a header read deadline (a slow client gets 408),
//!   a header size limit (431), a bound on open connections, graceful shutdown.
//!
//! This file only declares the modules and re-exports. See docs/proxy.md.

mod cache;
mod index;
pub mod nova;
mod policy;
mod reply;
mod routes;
mod server;
mod state;
mod tokens;
mod version;

pub use routes::router;
pub use server::serve;
pub use state::{AuthMode, Proxy, ProxyConfig, TokenMode, DEFAULT_PORT};
