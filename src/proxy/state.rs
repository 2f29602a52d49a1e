//! What the proxy is started with and shares between requests: how callers are checked
//! ([`AuthMode`]), which token Ironic sees ([`TokenMode`]), the limits and deadlines
//! ([`ProxyConfig`]), and the shared state ([`Proxy`]: the config, the Ironic client, the Keystone
//! session, the bound on concurrent calls, the token caches and validations, the nova_bm id index, the last health
//! probe). `routes.rs`, `policy.rs` and `server.rs` import it; it imports none of them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use super::index::NovaBmIndex;
use super::tokens::Validations;
use crate::core::auth::Session;
use crate::core::ironic::api::IronicApi;

/// The default port: next to Ironic's 6385, and none that nova-api (8774), its metadata API (8775)
/// or another OpenStack service listens on.
pub const DEFAULT_PORT: u16 = 6386;

/// How callers are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// every caller's X-Auth-Token is validated with Keystone and must carry the admin role
    Keystone,
    /// no check (a standalone Ironic with `auth_strategy = noauth`, on a trusted network)
    Noauth,
}

/// Which token the proxy shows Ironic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TokenMode {
    /// the caller's own token: Ironic's policy decides what it sees
    Forward,
    /// the proxy's own (system-scoped) token, once the caller is known to be an admin
    Service,
}

/// What the proxy needs besides the Ironic client.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    pub auth: AuthMode,
    pub token_mode: TokenMode,
    /// 404 (the upgrade plan) or 400 (what later Nova answered) for the mutations
    pub mutations_status: u16,
    /// the role a caller must hold
    pub admin_role: String,
    /// the deadline of one request's calls to Ironic (and to Keystone): 504 after it
    pub ironic_timeout: Duration,
    /// requests talking to Ironic at once; more wait, up to half the deadline (then 503)
    pub max_concurrent: usize,
    /// open client connections; more wait in the kernel's accept queue
    pub max_connections: usize,
    /// a client must send its whole request head within this (else 408 and the connection closes)
    pub header_timeout: Duration,
    /// how long in-flight requests may run on after SIGTERM
    pub shutdown_grace: Duration,
    /// how long a validated token is trusted without asking Keystone again (0: not cached)
    pub token_cache_time: Duration,
    /// the most tokens cached (valid ones; as many refused ones again)
    pub token_cache_size: usize,
    /// validations of callers' tokens in flight towards Keystone at once; more wait their turn
    /// (within `ironic_timeout`)
    pub max_validations: usize,
    /// the least time between two scans of Ironic's nodes for the nova_bm id index (per view)
    pub index_rescan_after: Duration,
    /// the deadline of `/healthz`'s probe of Ironic
    pub health_timeout: Duration,
}

impl Default for ProxyConfig {
    fn default() -> Self {
        ProxyConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            auth: AuthMode::Keystone,
            token_mode: TokenMode::Forward,
            mutations_status: 404,
            admin_role: "admin".into(),
            ironic_timeout: Duration::from_secs(10),
            max_concurrent: 32,
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(10),
            token_cache_time: Duration::from_secs(300),
            token_cache_size: 10_000,
            max_validations: 8,
            index_rescan_after: Duration::from_secs(10),
            health_timeout: Duration::from_secs(2),
        }
    }
}

/// The proxy's shared state.
pub struct Proxy {
    pub cfg: ProxyConfig,
    /// the Ironic client: noauth, or the proxy's own Keystone session (service mode); in forward
    /// mode each request uses a copy speaking with the caller's token
    pub api: IronicApi,
    /// the proxy's Keystone session, which validates the callers' tokens (`--auth keystone`)
    pub keystone: Option<Arc<Session>>,
    /// the bound on requests talking to Ironic at once (`max_concurrent`)
    pub(super) permits: tokio::sync::Semaphore,
    /// the callers' tokens Keystone validated or refused, the validations in flight, the bound on
    /// them (`token_cache_time`, `token_cache_size`, `max_validations`)
    pub(super) validations: Arc<Validations>,
    /// nova_bm id -> Ironic node, for the integer ids of nova baremetal
    pub(super) index: NovaBmIndex,
    /// the last probe of Ironic by `/healthz` (when, and what it found); one probe at a time
    pub(super) health: tokio::sync::Mutex<Option<(std::time::Instant, Result<(), String>)>>,
}

impl Proxy {
    pub fn new(cfg: ProxyConfig, api: IronicApi, keystone: Option<Arc<Session>>) -> Arc<Proxy> {
        let permits = tokio::sync::Semaphore::new(cfg.max_concurrent.max(1));
        let validations = Arc::new(Validations::new(cfg.token_cache_time, cfg.token_cache_size, cfg.max_validations));
        let index = NovaBmIndex::new(cfg.index_rescan_after);
        Arc::new(Proxy { cfg, api, keystone, permits, validations, index, health: Default::default() })
    }
}
