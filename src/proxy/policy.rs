//! The checks before a handler, in Nova's order (keystonemiddleware, then
//! `nova.api.openstack.wsgi.Resource`, then the method's policy):
//!
//! 1. `--auth keystone`: the X-Auth-Token, validated with Keystone or found in a token cache
//!    (`tokens.rs`): missing, invalid, expired or revoked **401**; Keystone unreachable **503**;
//! 2. the microversion headers (`version.rs`): malformed **400**, out of Nova's range **406**
//!    (ignored under `/v2/{tenant_id}`, Nova's legacy v2 mode);
//! 3. a tenant id in the path (`/v2/{tenant_id}`, `/v2.1/{tenant_id}`) must be the token's project:
//!    else **400** "Malformed request URL: URL's project_id '...' doesn't match Context's
//!    project_id '...'", as Nova words it. A system- or domain-scoped token has no project: Nova
//!    compares with None and refuses, and so does the proxy (such callers use `/v2.1`);
//! 4. microversion 2.36 or newer: **404** "The resource could not be found." (the API is gone there);
//! 5. `--auth keystone`: the admin role (`--admin-role`), else **403**.

use std::sync::Arc;

use axum::extract::{OriginalUri, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::nova;
use super::reply::{Caller, Logged, Reply, Served};
use super::state::{AuthMode, Proxy, TokenMode};
use super::version;
use crate::core::auth::Scope;
use crate::core::db::secret::Secret;

/// The key of the view a caller of `scope` has of Ironic (see `index.rs`).
fn view_of(p: &Proxy, scope: Option<&Scope>) -> String {
    match (p.cfg.auth, p.cfg.token_mode, scope) {
        (AuthMode::Keystone, TokenMode::Forward, Some(s)) => match s {
            Scope::System => "system".into(),
            Scope::Project { id, .. } => format!("project:{id}"),
            Scope::Domain { name } => format!("domain:{name}"),
            Scope::Unscoped => "unscoped".into(),
        },
        _ => "proxy".into(),
    }
}

/// `(legacy v2, the tenant id in the path)` of an API path (`/v2/{t}/...`, `/v2.1/{t}/...`, `/v2.1/...`).
pub fn prefix(path: &str) -> (bool, Option<String>) {
    let mut segs = path.trim_start_matches('/').split('/');
    let legacy = segs.next() == Some("v2");
    let tenant = segs
        .next()
        .filter(|s| *s != "os-baremetal-nodes")
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned());
    (legacy, tenant)
}

/// Nova's words for a tenant id that is not the token's project.
pub fn tenant_mismatch(path_id: &str, token_project: Option<&str>) -> String {
    let shown = |s: &str| crate::core::text::visible_line(s).chars().take(80).collect::<String>();
    format!(
        "Malformed request URL: URL's project_id '{}' doesn't match Context's project_id '{}'",
        shown(path_id),
        token_project.map(shown).unwrap_or_else(|| "None".into())
    )
}

fn with<T: Clone + Send + Sync + 'static>(mut r: Response, ext: Option<T>) -> Response {
    if let Some(e) = ext {
        r.extensions_mut().insert(e);
    }
    r
}

/// The checks, in order (see the module doc).
pub async fn policy(State(p): State<Arc<Proxy>>, mut req: Request, next: Next) -> Response {
    let path = req.extensions().get::<OriginalUri>().map(|u| u.path().to_string());
    let (legacy, tenant) = prefix(path.as_deref().unwrap_or_else(|| req.uri().path()));

    // 1. who is calling
    let (token, who) = if p.cfg.auth == AuthMode::Keystone {
        let unauthorized = || {
            let mut r = Reply { status: 401, body: nova::unauthorized(), www_authenticate: None };
            if let Some(s) = &p.keystone {
                r.www_authenticate = Some(format!("Keystone uri=\"{}\"", s.config().auth_url));
            }
            r.into_response()
        };
        let token = req
            .headers()
            .get("X-Auth-Token")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|t| !t.is_empty() && t.len() <= 8192);
        let Some(token) = token.map(Secret::new) else { return unauthorized() };
        match p.validations.validate(p.keystone.as_ref(), &token, p.cfg.ironic_timeout).await {
            Err(r) => return r.into_response(),
            Ok(None) => return unauthorized(),
            Ok(Some(v)) => (Some(token), Some(v)),
        }
    } else {
        (None, None)
    };
    let logged = match &who {
        Some(v) => Logged { user: v.user.clone(), scope: v.scope.describe() },
        None => Logged { user: "-".into(), scope: "noauth".into() },
    };

    // 2. the microversion
    let served = if legacy {
        None
    } else {
        let h = |name: &str| {
            let vals: Vec<&str> = req.headers().get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
            (!vals.is_empty()).then(|| vals.join(","))
        };
        let asked = version::asked(h("OpenStack-API-Version").as_deref(), h("X-OpenStack-Nova-API-Version").as_deref());
        match version::negotiate(asked.as_deref()) {
            Ok(v) => Some(Served(v)),
            Err(r) => return with(Reply::fault(r.status, r.message).into_response(), Some(logged)),
        }
    };

    // 3. the tenant id of the path
    if let (Some(t), Some(v)) = (&tenant, &who) {
        let project = match &v.scope {
            Scope::Project { id, .. } => Some(id.as_str()),
            _ => None,
        };
        if project != Some(t.as_str()) {
            let r = Reply::fault(400, tenant_mismatch(t, project)).into_response();
            return with(with(r, Some(logged)), served);
        }
    }

    // 4. the API is gone from 2.36 on
    if let Some(Served(v)) = served {
        if !version::has_api(v) {
            let r = Reply::fault(404, "The resource could not be found.").into_response();
            return with(with(r, Some(logged)), served);
        }
    }

    // 5. the admin role
    if let Some(v) = &who {
        if !v.roles.iter().any(|r| *r == p.cfg.admin_role) {
            let r = Reply::fault(403, "Policy doesn't allow os_compute_api:os-baremetal-nodes to be performed.")
                .into_response();
            return with(with(r, Some(logged)), served);
        }
    }

    let view = view_of(&p, who.as_ref().map(|v| &v.scope));
    req.extensions_mut().insert(Caller { token, view });
    let r = next.run(req).await;
    with(with(r, Some(logged)), served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_and_tenants() {
        assert_eq!(prefix("/v2/t1/os-baremetal-nodes"), (true, Some("t1".into())));
        assert_eq!(prefix("/v2.1/t1/os-baremetal-nodes/12"), (false, Some("t1".into())));
        assert_eq!(prefix("/v2.1/os-baremetal-nodes/12"), (false, None));
        assert_eq!(prefix("/v2.1/os-baremetal-nodes"), (false, None));
        assert_eq!(prefix("/v2.1/a%20b/os-baremetal-nodes"), (false, Some("a b".into())));
    }

    #[test]
    fn novas_words_for_a_foreign_tenant() {
        assert_eq!(
            tenant_mismatch("abc", Some("def")),
            "Malformed request URL: URL's project_id 'abc' doesn't match Context's project_id 'def'"
        );
        assert_eq!(
            tenant_mismatch("abc", None),
            "Malformed request URL: URL's project_id 'abc' doesn't match Context's project_id 'None'"
        );
    }
}
