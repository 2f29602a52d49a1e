//! How the Ironic API is reached: an explicit URL (`--ironic-url`), or the `baremetal` endpoint of
//! the Keystone token's catalog; with a Keystone session, a fixed token, or nothing (noauth).

use std::sync::Arc;

use super::error::ApiError;
use super::http::{ApiAuth, IronicApi};
use crate::core::auth::{AuthConfig, Session};
use crate::core::db::secret::Secret;
use crate::core::ironic::target::TargetKind;

/// What the operator gave to reach the API.
#[derive(Debug, Clone, Default)]
pub struct ApiTarget {
    /// `--ironic-url` / `BM2IRONIC_IRONIC_URL`: overrides the catalog
    pub url: Option<String>,
    /// `--os-cloud` / `OS_CLOUD` / `OS_*`
    pub auth: Option<AuthConfig>,
    /// `BM2IRONIC_IRONIC_TOKEN`, used only without Keystone credentials
    pub token: Option<Secret>,
}

impl ApiTarget {
    /// Whether there is any way to the API.
    pub fn given(&self) -> bool {
        self.url.is_some() || self.auth.is_some()
    }
}

/// Opens the API (authenticating with Keystone first when configured), negotiates the version and
/// makes one authenticated call, so that a refused token or an unreachable endpoint is said at once;
/// None when neither a URL nor Keystone credentials are given.
pub async fn open(target: &ApiTarget, kind: TargetKind) -> Result<Option<IronicApi>, ApiError> {
    let Some(api) = client(target, kind).await? else { return Ok(None) };
    if kind == TargetKind::Modern {
        api.negotiate(None).await?;
    }
    // a node that cannot exist: 404 means the token was accepted (listing nodes could fail on a
    // single unreadable row, which verify reports node by node)
    match api.get("/v1/nodes/00000000-0000-4000-8000-000000000000").await {
        Ok(_) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => return Err(e),
    }
    Ok(Some(api))
}

/// The client alone (no call made yet).
pub async fn client(target: &ApiTarget, kind: TargetKind) -> Result<Option<IronicApi>, ApiError> {
    match &target.auth {
        Some(cfg) => {
            let session = Session::connect(cfg.clone()).await?;
            let (url, from) = match &target.url {
                Some(u) => (u.clone(), "--ironic-url"),
                None => (session.endpoint("baremetal").await?, "the Keystone catalog"),
            };
            let scope = session.scope().await.describe();
            tracing::info!(url = %url, from, scope = %scope, origin = %cfg.origin, "Ironic API endpoint");
            Ok(Some(IronicApi::with_auth(&url, ApiAuth::Keystone(Arc::new(session)), kind, Some(cfg))?))
        }
        None => match &target.url {
            Some(u) => Ok(Some(IronicApi::new(u, target.token.clone(), kind)?)),
            None => Ok(None),
        },
    }
}
