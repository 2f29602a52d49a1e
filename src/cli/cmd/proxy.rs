//! `bm2ironic proxy`: serves Nova's old `os-baremetal-nodes` API read-only from Ironic (see
//! `crate::proxy` and docs/proxy.md) until SIGTERM or Ctrl-C.

use std::net::SocketAddr;

use clap::Args;
use tokio_util::sync::CancellationToken;

use crate::cli::args::{parse_duration, parse_positive_duration, GlobalArgs};
use crate::cli::failure::Failure;
use crate::cli::output::note;
use crate::core::auth::Scope;
use crate::core::ironic::api as ironic_api;
use crate::core::ironic::target::TargetKind;
use crate::proxy::{self, AuthMode, ProxyConfig, TokenMode};
use std::time::Duration;

#[derive(Args, Debug)]
pub struct ProxyArgs {
    /// Address to listen on (6386, next to Ironic's 6385: not nova-api's 8774 nor the metadata API's 8775)
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:6386")]
    pub listen: SocketAddr,
    /// keystone: each caller's X-Auth-Token is validated with Keystone and must carry the admin role;
    /// noauth: no check (standalone Ironic on a trusted network)
    #[arg(long, value_enum, default_value = "keystone")]
    pub auth: AuthMode,
    /// forward: Ironic sees the caller's token (its policy decides what it shows); service: the
    /// proxy's own credentials (--os-cloud / OS_*, system scope), once the caller is an admin
    #[arg(long, value_enum, default_value = "forward")]
    pub ironic_token_mode: TokenMode,
    /// The status of POST / DELETE / action: 404 (the upgrade plan) or 400 (what later Nova answered)
    #[arg(long, value_name = "STATUS", default_value = "404", value_parser = mutations_status)]
    pub mutations_status: u16,
    /// Deadline of a request's calls to Ironic and Keystone (then 504)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub ironic_timeout: Duration,
    /// Requests talking to Ironic at once (more wait, up to half the --ironic-timeout, then 503)
    #[arg(long, value_name = "N", default_value_t = 32)]
    pub max_concurrent: usize,
    /// Open client connections at once (more wait to be accepted)
    #[arg(long, value_name = "N", default_value_t = 1024)]
    pub max_connections: usize,
    /// A client must send its request head within this (else 408)
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub header_timeout: Duration,
    /// The Keystone role a caller must hold
    #[arg(long, value_name = "ROLE", default_value = "admin")]
    pub admin_role: String,
    /// How long a token Keystone validated is trusted without asking again (never past its expiry);
    /// a token revoked meanwhile is refused at the latest this long after its validation. 0: no cache
    #[arg(long, value_name = "DURATION", default_value = "300", value_parser = parse_duration)]
    pub token_cache_time: Duration,
    /// The most validated tokens kept (least recently used dropped first)
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub token_cache_size: usize,
    /// Token validations in flight towards Keystone at most (more wait their turn; a refused token
    /// is remembered briefly, and callers of the same token share one validation)
    #[arg(long, value_name = "N", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_validations: u16,
}

/// `--mutations-status`: only the two answers Nova's clients know.
fn mutations_status(s: &str) -> Result<u16, String> {
    match s.trim() {
        "404" => Ok(404),
        "400" => Ok(400),
        _ => Err("expected 404 (the upgrade plan) or 400 (what later Nova answered)".into()),
    }
}

pub async fn run(global: &GlobalArgs, args: ProxyArgs) -> Result<(), Failure> {
    let cfg = ProxyConfig {
        listen: args.listen,
        auth: args.auth,
        token_mode: args.ironic_token_mode,
        mutations_status: args.mutations_status,
        admin_role: args.admin_role.clone(),
        ironic_timeout: args.ironic_timeout,
        max_concurrent: args.max_concurrent,
        max_connections: args.max_connections,
        header_timeout: args.header_timeout,
        token_cache_time: args.token_cache_time,
        token_cache_size: args.token_cache_size,
        max_validations: usize::from(args.max_validations),
        ..ProxyConfig::default()
    };
    let settings = global.settings()?;
    let target = global.api_target(&settings)?;
    if cfg.auth == AuthMode::Keystone && target.auth.is_none() {
        return Err(Failure::usage(
            "--auth keystone needs the proxy's own Keystone credentials (to validate the callers' tokens): give --os-cloud NAME or the OS_* variables, or use --auth noauth",
        ));
    }
    if cfg.auth == AuthMode::Noauth && cfg.token_mode == TokenMode::Forward && target.auth.is_some() {
        tracing::info!(
            "--auth noauth: there is no caller token to forward; Ironic is called with the proxy's own credentials"
        );
    }
    if !target.given() {
        return Err(Failure::usage("the proxy needs Ironic: give --ironic-url (or BM2IRONIC_IRONIC_URL), or Keystone credentials whose catalog has a baremetal endpoint"));
    }
    let api = ironic_api::client(&target, TargetKind::Modern)
        .await?
        .ok_or_else(|| Failure::usage("no Ironic API given"))?
        .with_retry(ironic_api::Retry {
            attempts: 2,
            first: std::time::Duration::from_millis(200),
            max: std::time::Duration::from_millis(200),
        });
    let keystone = api.session().cloned();
    if let Some(s) = &keystone {
        let scope = s.scope().await;
        let serving = cfg.auth == AuthMode::Noauth || cfg.token_mode == TokenMode::Service;
        if serving && scope != Scope::System {
            note(&format!(
                "bm2ironic proxy: warning: the proxy's own token has {}, not system scope: under Ironic's default policy it sees only that project's nodes",
                scope.describe()
            ));
        }
    }
    // the root document is public: settle the API version now if Ironic answers, else later
    match tokio::time::timeout(cfg.ironic_timeout, api.negotiate(None)).await {
        Ok(Ok(v)) => tracing::info!(version = %v, "proxy: Ironic API version"),
        Ok(Err(e)) => {
            note(&format!("bm2ironic proxy: warning: {e} (serving anyway: requests answer 502 until Ironic is back)"))
        }
        Err(_) => note(&format!(
            "bm2ironic proxy: warning: Ironic at {} did not answer within {} s (serving anyway)",
            crate::core::db::url::redact_url(api.base()),
            cfg.ironic_timeout.as_secs()
        )),
    }
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|e| Failure::runtime(format!("cannot listen on {}: {e}", cfg.listen)))?;
    let bound = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| cfg.listen.to_string());
    let mode = match (cfg.auth, cfg.token_mode) {
        (AuthMode::Noauth, _) => "no caller check".to_string(),
        (AuthMode::Keystone, TokenMode::Forward) => {
            format!("Keystone, role {}, caller's token to Ironic", cfg.admin_role)
        }
        (AuthMode::Keystone, TokenMode::Service) => {
            format!("Keystone, role {}, the proxy's token to Ironic", cfg.admin_role)
        }
    };
    let mode = match (cfg.auth, cfg.token_cache_time.is_zero() || cfg.token_cache_size == 0) {
        (AuthMode::Noauth, _) => mode,
        (_, true) => format!("{mode}, tokens not cached"),
        (_, false) => {
            format!("{mode}, tokens cached {} s, at most {}", cfg.token_cache_time.as_secs(), cfg.token_cache_size)
        }
    };
    note(&format!(
        "bm2ironic proxy: serving os-baremetal-nodes (read-only) on http://{bound}/v2.1 and /v2/{{tenant_id}} ({mode}) from Ironic at {}",
        crate::core::db::url::redact_url(api.base())
    ));
    tracing::info!(listen = %bound, ironic = %crate::core::db::url::redact_url(api.base()), auth = ?cfg.auth, token_mode = ?cfg.token_mode, "proxy started");

    let shutdown = CancellationToken::new();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
                return;
            }
        };
        tokio::select! {
            _ = term.recv() => tracing::info!("proxy: SIGTERM"),
            _ = tokio::signal::ctrl_c() => tracing::info!("proxy: interrupted"),
        }
        stop.cancel();
    });
    let p = proxy::Proxy::new(cfg, api, keystone);
    proxy::serve(listener, p, shutdown).await.map_err(|e| Failure::runtime(format!("proxy: {e}")))?;
    note("bm2ironic proxy: stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::ProxyArgs;
    use crate::proxy::{ProxyConfig, DEFAULT_PORT};

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: ProxyArgs,
    }

    #[test]
    fn the_default_port_is_no_nova_port() {
        let args = Cmd::try_parse_from(["proxy"]).unwrap().args;
        assert_eq!(args.listen.port(), DEFAULT_PORT);
        assert_eq!(ProxyConfig::default().listen.port(), DEFAULT_PORT);
        // nova-api, the metadata API, Ironic, Keystone: none of theirs
        for taken in [8774, 8775, 6385, 5000] {
            assert_ne!(DEFAULT_PORT, taken);
        }
        assert_eq!(args.token_cache_time, std::time::Duration::from_secs(300));
        assert_eq!(args.token_cache_size, 10_000);
    }
}
