//! The paths, the policy and the calls to Ironic.
//!
//! Every request: a request id, a path check (`..`, `.`, encoded slashes, backslashes or dots, NUL:
//! 400), then for the API paths the checks of `policy.rs` (token, microversion, tenant id, role),
//! then the handler. A node is asked for by its uuid (or Ironic name), or by its nova_bm id (an
//! integer: `index.rs` finds the node). `/healthz` probes Ironic's root document. The calls to
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
use super::policy::policy;
use super::reply::{Caller, Logged, Reply, Served};
use super::state::{AuthMode, Proxy, TokenMode};
use super::version;
use crate::core::ironic::api::nodes::PAGE;
use crate::core::ironic::api::{ApiError, IronicApi};
use crate::core::text::visible_line;
/// The longest path and node id accepted.
const MAX_PATH: usize = 2048;
const MAX_ID: usize = 255;
/// The largest `action` body read.
const MAX_BODY: usize = 64 * 1024;

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

/// How long a probe's answer is reused: a load balancer probing every second costs Ironic one
/// request a second at most, whatever the number of probes.
const HEALTH_REUSE: std::time::Duration = std::time::Duration::from_secs(1);

/// `200 {"status": "ok", "ironic": "reachable"}` when Ironic's root document answers within
/// `health_timeout` (2 s), else `503 {"status": "degraded", "ironic": "unreachable: ..."}`.
async fn healthz(State(p): State<Arc<Proxy>>) -> Response {
    let found = {
        let mut last = p.health.lock().await;
        match &*last {
            Some((at, r)) if at.elapsed() < HEALTH_REUSE => r.clone(),
            _ => {
                let r = match tokio::time::timeout(p.cfg.health_timeout, p.api.get("/")).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!(
                        "Ironic at {} did not answer within {} s",
                        crate::core::db::url::redact_url(p.api.base()),
                        p.cfg.health_timeout.as_secs_f64()
                    )),
                };
                *last = Some((std::time::Instant::now(), r.clone()));
                r
            }
        }
    };
    match found {
        Ok(()) => Json(json!({"status": "ok", "ironic": "reachable"})).into_response(),
        Err(e) => {
            let e: String = visible_line(&e).chars().take(300).collect();
            (
                StatusCode::SERVICE_UNAVAILABLE,
                Json(json!({"status": "degraded", "ironic": format!("unreachable: {e}")})),
            )
                .into_response()
        }
    }
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
    let served = version::show(resp.extensions().get::<Served>().map(|s| s.0).unwrap_or(version::MIN));
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        h.insert("X-Compute-Request-Id", v.clone());
        h.insert("X-OpenStack-Request-Id", v);
    }
    if let (Ok(legacy), Ok(standard)) =
        (HeaderValue::from_str(&served), HeaderValue::from_str(&format!("compute {served}")))
    {
        h.insert("X-OpenStack-Nova-API-Version", legacy);
        h.insert("OpenStack-API-Version", standard);
    }
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
    let path = if fields(&p) { format!("/v1/nodes?fields={}", nova::NODE_FIELDS) } else { "/v1/nodes/detail".into() };
    let r = call(&p, "the node list", async {
        api.list_all(&path, "nodes", PAGE).await.map_err(|e| from_ironic(e, "the node list"))
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

/// `?fields=` came with Ironic API 1.8: below it (Juno has no API versions at all, and answers 400
/// "Unknown argument" to it) the proxy reads the detail lists and whole nodes instead.
fn fields(p: &Proxy) -> bool {
    !matches!(p.api.version(), Some(v) if v < (1, 8))
}

/// The node `id` names (a uuid or an Ironic name), or None when Ironic has none it shows this caller.
/// `fields`: the fields to ask for, or "" for the whole node (APIs before 1.8).
async fn node(api: &IronicApi, id: &str, fields: &str) -> Result<Option<Value>, Reply> {
    let path = if fields.is_empty() { format!("/v1/nodes/{id}") } else { format!("/v1/nodes/{id}?fields={fields}") };
    match api.get(&path).await {
        Ok(n) => Ok(Some(n)),
        // 404, or 400 for an id Ironic cannot parse: no such node either way
        Err(e) if matches!(e.status(), Some(404 | 400)) => Ok(None),
        Err(e) => Err(from_ironic(e, "the node")),
    }
}

/// The nodes among `uuids` that Ironic shows this caller and whose marker still says `n`.
async fn confirmed(api: &IronicApi, uuids: &[String], n: i64, with_fields: bool) -> Result<Vec<Value>, Reply> {
    let mut out = Vec::new();
    for u in uuids {
        if let Some(node) = node(api, u, if with_fields { nova::NODE_FIELDS_EXTRA } else { "" }).await? {
            if nova::nova_bm_id(&node["extra"]) == Some(n) {
                out.push(node);
            }
        }
    }
    Ok(out)
}

/// The node whose nova_bm id is `n`: from the index, confirmed by the node itself; on a miss the
/// view is rescanned (at most once per `index_rescan_after`). None when no node carries it.
async fn by_nova_bm_id(p: &Arc<Proxy>, caller: &Caller, api: &IronicApi, n: i64) -> Result<Option<Value>, Reply> {
    let with_fields = fields(p);
    let mut found = confirmed(api, &p.index.known(&caller.view, n).await, n, with_fields).await?;
    if found.is_empty() {
        let scan = {
            let (p, own) = (p.clone(), ironic_for(p, caller));
            async move {
                let api = own.as_ref().unwrap_or(&p.api);
                let path = if with_fields { "/v1/nodes?fields=uuid,extra" } else { "/v1/nodes/detail" };
                api.list_all(path, "nodes", PAGE).await
            }
        };
        let uuids = p.index.rescan(&caller.view, n, scan).await.map_err(|e| from_ironic(e, "the node list"))?;
        found = confirmed(api, &uuids, n, with_fields).await?;
    }
    if found.len() > 1 {
        let uuids: Vec<&str> = found.iter().filter_map(|x| x["uuid"].as_str()).collect();
        return Err(Reply::fault(
            409,
            format!(
                "Nova baremetal node {n} is {} Ironic nodes ({}): ask for one by its uuid.",
                found.len(),
                uuids.join(", ")
            ),
        ));
    }
    Ok(found.pop())
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
    let (node_fields, port_fields) = if fields(&p) { (nova::NODE_FIELDS, "&fields=uuid,address") } else { ("", "") };
    let r = call(&p, "the node", async {
        // an integer is a nova_bm id first, as scripts written against nova baremetal use them; an
        // Ironic node named by digits is still found by its name when no node carries that id
        let (found, nova_bm_id) = match nova::integer_id(&id) {
            Some(n) => match by_nova_bm_id(&p, &caller, api, n).await? {
                Some(node) => (Some(node), Some(n)),
                None => (node(api, &id, node_fields).await?, None),
            },
            None => (node(api, &id, node_fields).await?, None),
        };
        let Some(found) = found else { return Err(no_such_node(&id)) };
        let uuid = found["uuid"].as_str().unwrap_or_default().to_string();
        let ports = api
            .list_all(&format!("/v1/ports?node_uuid={uuid}{port_fields}"), "ports", PAGE)
            .await
            .map_err(|e| from_ironic(e, "the node's ports"))?;
        let macs: Vec<String> = ports.iter().filter_map(|p| p["address"].as_str().map(String::from)).collect();
        Ok(nova::show(&found, &macs, nova_bm_id))
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
