//! The read-only `os-baremetal-nodes` proxy (`bm2ironic proxy`): Nova's old baremetal API, answered
//! from Ironic once nova baremetal is gone, so that `nova baremetal-node-list` and the operators'
//! scripts keep working. A third face beside the CLI and the wizard: it uses the core's Ironic API
//! client (`core::ironic::api`) and Keystone session (`core::auth`), and adds only HTTP serving.
//!
//! - `state.rs`: the modes (`AuthMode`, `TokenMode`), `ProxyConfig` and the shared state `Proxy`;
//! - `nova.rs`: the bodies (pure): Ironic's node and ports to Nova's JSON, Nova's fault bodies;
//! - `routes.rs`: the paths (`/v2/{tenant_id}`, `/v2.1`), the policy (Keystone token, admin role),
//!   the calls to Ironic with their deadline and the bound on concurrent calls, the access log;
//! - `server.rs`: the connections: HTTP/1.1 with a header read deadline (a slow client gets 408),
//!   a header size limit (431), a bound on open connections, graceful shutdown.
//!
//! This file only declares the modules and re-exports. See docs/proxy.md.

pub mod nova;
mod routes;
mod server;
mod state;

pub use routes::router;
pub use server::serve;
pub use state::{AuthMode, Proxy, ProxyConfig, TokenMode};
