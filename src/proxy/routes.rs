//! The paths, the policy and the calls to Ironic.
//!
//! Every request: a request id, a path check (`..`, `.`, encoded slashes, backslashes or dots, NUL:
//! 400), then for the API paths the policy (`--auth keystone`: the X-Auth-Token validated with
//! Keystone, 401 when it is not valid, 403 without the admin role), then the handler. The calls to
//! Ironic share a bound (`max_concurrent`) and a deadline (`ironic_timeout`): 504 after it, 502 when
//! Ironic cannot be reached or answers 5xx. One access-log record per request (target
//! `bm2ironic::proxy::access`): request id, peer, method, path, status, milliseconds, user and
//! scope; never a token, a query string or a body.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::nova::{self, Mutation};
use super::state::{AuthMode, Proxy, TokenMode};
use crate::core::db::secret::Secret;
use crate::core::ironic::api::{ApiError, IronicApi};
use crate::core::text::visible_line;

/// The microversion these answers belong to (the proxy API was frozen at 2.1 and removed in 2.36).
const NOVA_VERSION: &str = "2.1";
/// The longest path and node id accepted.
const MAX_PATH: usize = 2048;
const MAX_ID: usize = 255;
/// The largest `action` body read.
const MAX_BODY: usize = 64 * 1024;

/// A refused or failed request: a status and a Nova fault body.
pub struct Reply {
    status: u16,
    body: Value,
    www_authenticate: Option<String>,
}

impl Reply {
    fn fault(status: u16, message: impl AsRef<str>) -> Reply {
        Reply { status, body: nova::fault(status, message.as_ref()), www_authenticate: None }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut r = (status, Json(self.body)).into_response();
        if let Some(w) = self.www_authenticate.and_then(|w| HeaderValue::from_str(&w).ok()) {
            r.headers_mut().insert("WWW-Authenticate", w);
        }
        r
    }
}

/// Who is calling (put in the request's extensions by the policy).
#[derive(Clone)]
struct Caller {
    token: Option<Secret>,
}

/// What the access log names (put in the response's extensions).
#[derive(Clone)]
struct Logged {
    user: String,
    scope: String,
}

/// The router: `/healthz`, and the API under `/v2/{tenant_id}`, `/v2.1` and `/v2.1/{tenant_id}`.
pub fn router(proxy: Arc<Proxy>) -> Router {
    let api = Router::new()
        .route("/os-baremetal-nodes", get(list).post(create))
        .route("/os-baremetal-nodes/{id}", get(show).delete(delete))
        .route("/os-baremetal-nodes/{id}/action", post(action))
        .method_not_allowed_fallback(not_allowed)
        .layer(middleware::from_fn_with_state(proxy.clone(), policy));
    Router::new()
        .route("/healthz", get(healthz))
        .nest("/v2/{tenant_id}", api.clone())
        .nest("/v2.1/{tenant_id}", api.clone())
        .nest("/v2.1", api)
        .fallback(not_found)
        .method_not_allowed_fallback(not_allowed)
        .layer(middleware::from_fn(guard))
        .layer(middleware::from_fn(access_log))
        .with_state(proxy)
}

async fn healthz() -> Response {
    Json(json!({"status": "ok"})).into_response()
}

/// Anything unrouted: the version documents clients discover first (public, as in Nova), else 404.
async fn not_found(req: Request) -> Response {
    let host = req
        .headers()
        .get("host")
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty() && h.len() < 256 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let base = format!("http://{host}");
    if req.method() == axum::http::Method::GET {
        match req.uri().path() {
            "/" => return (StatusCode::MULTIPLE_CHOICES, Json(nova::versions(&base))).into_response(),
            "/v2.1" | "/v2.1/" => return Json(json!({ "version": nova::version(&base, "v2.1") })).into_response(),
            "/v2" | "/v2/" => return Json(json!({ "version": nova::version(&base, "v2.0") })).into_response(),
            _ => {}
        }
    }
    Reply::fault(404, "The resource could not be found.").into_response()
}

async fn not_allowed() -> Reply {
    Reply::fault(405, "The method is not allowed for this resource (os-baremetal-nodes is read-only).")
}

/// The request id, the Nova version headers, and one access-log record.
async fn access_log(req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = format!("req-{}", uuid::Uuid::new_v4());
    let method = req.method().clone();
    let path: String = visible_line(req.uri().path()).chars().take(200).collect();
    let peer = req.extensions().get::<SocketAddr>().map(|p| p.to_string()).unwrap_or_default();
    let mut resp = next.run(req).await;
    let status = resp.status().as_u16();
    let (user, scope) =
        resp.extensions().get::<Logged>().map(|l| (l.user.clone(), l.scope.clone())).unwrap_or_default();
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        h.insert("X-Compute-Request-Id", v.clone());
        h.insert("X-OpenStack-Request-Id", v);
    }
    h.insert("X-OpenStack-Nova-API-Version", HeaderValue::from_static(NOVA_VERSION));
    h.insert("OpenStack-API-Version", HeaderValue::from_static("compute 2.1"));
    h.insert("Vary", HeaderValue::from_static("OpenStack-API-Version, X-OpenStack-Nova-API-Version"));
    tracing::info!(target: "bm2ironic::proxy::access", request_id = %id, %peer, %method, %path, status,
        ms = format!("{ms:.1}"), user = %user, scope = %scope, "request");
    resp
}

/// Path tricks: a 400 before any routing (the router would not match most of them, but the node id
/// is decoded from the path and must never carry a `/` or `..` to Ironic).
async fn guard(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let lower = path.to_ascii_lowercase();
    let bad = path.len() > MAX_PATH
        || path.contains("//")
        || path.contains('\\')
        || ["%2f", "%5c", "%2e", "%00"].iter().any(|p| lower.contains(p))
        || path.split('/').any(|s| s == ".." || s == ".");
    if bad {
        return Reply::fault(400, "Malformed request URL.").into_response();
    }
    next.run(req).await
}

/// The policy of `--auth keystone`: a valid token with the admin role.
async fn policy(State(p): State<Arc<Proxy>>, mut req: Request, next: Next) -> Response {
    if p.cfg.auth == AuthMode::Noauth {
        req.extensions_mut().insert(Caller { token: None });
        let mut r = next.run(req).await;
        r.extensions_mut().insert(Logged { user: "-".into(), scope: "noauth".into() });
        return r;
    }
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
    let (Some(token), Some(session)) = (token, &p.keystone) else { return unauthorized() };
    let token = Secret::new(token);
    let checked = tokio::time::timeout(p.cfg.ironic_timeout, session.validate(&token)).await;
    let info = match checked {
        Err(_) => {
            return Reply::fault(503, "Keystone did not answer in time: the token cannot be validated.").into_response()
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "token validation failed");
            return Reply::fault(503, format!("The token cannot be validated: {e}")).into_response();
        }
        Ok(Ok(None)) => return unauthorized(),
        Ok(Ok(Some(info))) => info,
    };
    let logged = Logged { user: info.user.clone(), scope: info.scope.describe() };
    if !info.roles.iter().any(|r| *r == p.cfg.admin_role) {
        let mut r = Reply::fault(403, "Policy doesn't allow os_compute_api:os-baremetal-nodes to be performed.")
            .into_response();
        r.extensions_mut().insert(logged);
        return r;
    }
    req.extensions_mut().insert(Caller { token: Some(token) });
    let mut r = next.run(req).await;
    r.extensions_mut().insert(logged);
    r
}

/// The client this request talks to Ironic with.
fn ironic_for(p: &Proxy, caller: &Caller) -> Option<IronicApi> {
    match (p.cfg.auth, p.cfg.token_mode, &caller.token) {
        (AuthMode::Keystone, TokenMode::Forward, Some(t)) => Some(p.api.as_caller(t.clone())),
        _ => None,
    }
}

/// Ironic's failure as the caller sees it.
fn from_ironic(e: ApiError, what: &str) -> Reply {
    match &e {
        ApiError::TokenRefused { .. } => Reply::fault(401, "Ironic refused the token."),
        ApiError::Forbidden { message, .. } => Reply::fault(403, format!("Ironic refused {what}: {message}")),
        ApiError::Status { status, body, .. } if *status >= 500 => {
            Reply::fault(502, format!("Ironic failed to answer {what} (HTTP {status}): {body}"))
        }
        ApiError::Status { status, body, .. } => {
            Reply::fault(502, format!("Ironic refused {what} (HTTP {status}): {body}"))
        }
        ApiError::NoCredentials { .. } => {
            Reply::fault(502, "Ironic asks for a token and this proxy runs with --auth noauth.")
        }
        _ => Reply::fault(502, format!("Ironic is not reachable for {what}: {e}")),
    }
}

/// Runs `f` against Ironic within the bound on concurrent calls (503 when no slot frees within half
/// the deadline) and the deadline (504).
async fn call<T, F>(p: &Proxy, what: &str, f: F) -> Result<T, Reply>
where
    F: std::future::Future<Output = Result<T, Reply>>,
{
    let now = tokio::time::Instant::now();
    let deadline = now + p.cfg.ironic_timeout;
    // a request waits for a free slot for half the deadline at most, keeping the rest for Ironic
    let Ok(Ok(_permit)) = tokio::time::timeout_at(now + p.cfg.ironic_timeout / 2, p.permits.acquire()).await else {
        return Err(Reply::fault(503, "The proxy is busy: too many requests to Ironic at once. Retry later."));
    };
    match tokio::time::timeout_at(deadline, f).await {
        Ok(r) => r,
        Err(_) => Err(Reply::fault(
            504,
            format!(
                "Ironic did not answer {what} within {} s (the proxy's --ironic-timeout).",
                p.cfg.ironic_timeout.as_secs_f64()
            ),
        )),
    }
}

fn ok(body: Value) -> Response {
    Json(body).into_response()
}

async fn list(State(p): State<Arc<Proxy>>, axum::Extension(caller): axum::Extension<Caller>) -> Response {
    let own = ironic_for(&p, &caller);
    let api = own.as_ref().unwrap_or(&p.api);
    let path = format!("/v1/nodes?fields={}", nova::NODE_FIELDS);
    let r = call(&p, "the node list", async {
        api.list_all(&path, "nodes", crate::core::ironic::api::nodes::PAGE)
            .await
            .map_err(|e| from_ironic(e, "the node list"))
    })
    .await;
    match r {
        Ok(nodes) => ok(nova::list(&nodes)),
        Err(r) => r.into_response(),
    }
}

/// A node id as Ironic takes it (a uuid or a name: letters, digits, `-._~`); anything else is 404
/// without asking Ironic.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID
        && id != "."
        && id != ".."
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

fn no_such_node(id: &str) -> Reply {
    let shown: String = visible_line(id).chars().take(80).collect();
    Reply::fault(404, format!("Node {shown} could not be found."))
}

async fn show(
    State(p): State<Arc<Proxy>>,
    axum::Extension(caller): axum::Extension<Caller>,
    Path(params): Path<Vec<(String, String)>>,
) -> Response {
    let id = params.iter().rev().find(|(k, _)| k == "id").map(|(_, v)| v.clone()).unwrap_or_default();
    if !valid_id(&id) {
        return no_such_node(&id).into_response();
    }
    let own = ironic_for(&p, &caller);
    let api = own.as_ref().unwrap_or(&p.api);
    let r = call(&p, "the node", async {
        let node = match api.get(&format!("/v1/nodes/{id}?fields={}", nova::NODE_FIELDS)).await {
            Ok(n) => n,
            // 404, or 400 for an id Ironic cannot parse: no such node either way
            Err(e) if matches!(e.status(), Some(404 | 400)) => return Err(no_such_node(&id)),
            Err(e) => return Err(from_ironic(e, "the node")),
        };
        let uuid = node["uuid"].as_str().unwrap_or_default().to_string();
        let ports = api
            .list_all(
                &format!("/v1/ports?node_uuid={uuid}&fields=uuid,address"),
                "ports",
                crate::core::ironic::api::nodes::PAGE,
            )
            .await
            .map_err(|e| from_ironic(e, "the node's ports"))?;
        let macs: Vec<String> = ports.iter().filter_map(|p| p["address"].as_str().map(String::from)).collect();
        Ok(nova::show(&node, &macs))
    })
    .await;
    match r {
        Ok(body) => ok(body),
        Err(r) => r.into_response(),
    }
}

fn refuse(p: &Proxy, m: Mutation) -> Response {
    Reply::fault(p.cfg.mutations_status, m.message()).into_response()
}

async fn create(State(p): State<Arc<Proxy>>) -> Response {
    refuse(&p, Mutation::Create)
}

async fn delete(State(p): State<Arc<Proxy>>) -> Response {
    refuse(&p, Mutation::Delete)
}

async fn action(State(p): State<Arc<Proxy>>, body: Body) -> Response {
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return Reply::fault(413, "The request body is too large.").into_response(),
    };
    refuse(&p, Mutation::of_action(&bytes))
}
