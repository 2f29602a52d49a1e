//! `IronicApi`, the HTTP client of Ironic's REST API: how a request authenticates (`ApiAuth`),
//! version negotiation from the root document, Ironic's error bodies turned into operator messages
//! (`error.rs`), timeouts, bounded retries with backoff on 409 (node locked) and 503 (`Retry`), and
//! pagination.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::Value;

use super::error::{fault, ApiError};
use super::timings::{request_kind, Timings};
use crate::core::auth::keystone::{self, Session};
use crate::core::auth::{AuthConfig, Scope};
use crate::core::db::secret::Secret;
use crate::core::ironic::target::TargetKind;

/// The newest API version this client was written and tested against (Ironic 39.0.0).
pub const NEWEST_KNOWN: (u32, u32) = (1, 115);
/// The API version header.
pub const VERSION_HEADER: &str = "X-OpenStack-Ironic-API-Version";

/// How a request proves who sends it.
#[derive(Clone, Default)]
pub enum ApiAuth {
    /// no token (`auth_strategy = noauth`)
    #[default]
    None,
    /// a fixed token (`BM2IRONIC_IRONIC_TOKEN`)
    Token(Secret),
    /// a Keystone session: the token is renewed when about to expire and once after a 401
    Keystone(Arc<Session>),
}

/// Retries on 409 (node locked) and 503: `attempts` in all, waits doubling from `first` to `max`.
#[derive(Debug, Clone, Copy)]
pub struct Retry {
    pub attempts: u32,
    pub first: Duration,
    pub max: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Retry { attempts: 6, first: Duration::from_millis(500), max: Duration::from_secs(8) }
    }
}

pub struct IronicApi {
    base: String,
    client: reqwest::Client,
    auth: ApiAuth,
    kind: TargetKind,
    version: Mutex<Option<(u32, u32)>>,
    range: Mutex<Option<(String, String)>>,
    retry: Retry,
    /// every request's time by kind, and the loader's waits (`timings.rs`)
    timings: Timings,
}

/// "1.46" as (1, 46).
pub fn parse_version(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.trim().split_once('.')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

impl IronicApi {
    /// A client of `base` (with or without `/v1`) with a fixed token or none. Until
    /// [`IronicApi::negotiate`] runs, a modern target is asked with version `latest`.
    pub fn new(base: &str, token: Option<Secret>, kind: TargetKind) -> Result<IronicApi, ApiError> {
        let auth = token.map(ApiAuth::Token).unwrap_or_default();
        IronicApi::with_auth(base, auth, kind, None)
    }

    /// A client with any kind of authentication; `tls` (a Keystone configuration) gives the CA
    /// bundle and `insecure` for an https endpoint.
    pub fn with_auth(
        base: &str,
        auth: ApiAuth,
        kind: TargetKind,
        tls: Option<&AuthConfig>,
    ) -> Result<IronicApi, ApiError> {
        let client = match tls {
            Some(cfg) => keystone::http_client(cfg)?,
            None => keystone::client_builder()
                .build()
                .map_err(|e| ApiError::Unreachable { url: base.into(), reason: e.to_string() })?,
        };
        let base = base.trim().trim_end_matches('/').trim_end_matches("/v1").to_string();
        // a query or fragment would be glued before every path (and a `?token=` sent on every call)
        let bad =
            |reason: &str| ApiError::BadUrl { url: crate::core::redact::redact_url(&base), reason: reason.into() };
        match reqwest::Url::parse(&base) {
            Err(e) => return Err(bad(&format!("is not a URL ({e})"))),
            Ok(u) if !matches!(u.scheme(), "http" | "https") => return Err(bad("is neither http:// nor https://")),
            Ok(u) if u.query().is_some() || u.fragment().is_some() => {
                return Err(bad("holds a query or a fragment (?..., #...)"))
            }
            Ok(_) => {}
        }
        Ok(IronicApi {
            base,
            client,
            auth,
            kind,
            version: Mutex::new(None),
            range: Mutex::new(None),
            retry: Retry::default(),
            timings: Timings::default(),
        })
    }

    /// The same client (connection pool, base, negotiated version, retries) speaking with another
    /// token: the caller's, forwarded by the proxy.
    pub fn as_caller(&self, token: Secret) -> IronicApi {
        IronicApi {
            base: self.base.clone(),
            client: self.client.clone(),
            auth: ApiAuth::Token(token),
            kind: self.kind,
            version: Mutex::new(self.version()),
            range: Mutex::new(self.range.lock().unwrap_or_else(|e| e.into_inner()).clone()),
            retry: self.retry,
            timings: Timings::default(),
        }
    }

    pub fn with_retry(mut self, retry: Retry) -> IronicApi {
        self.retry = retry;
        self
    }

    /// The time of every request so far by kind, and the waits the loader added.
    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// The Keystone session, when there is one.
    pub fn session(&self) -> Option<&Arc<Session>> {
        match &self.auth {
            ApiAuth::Keystone(s) => Some(s),
            _ => None,
        }
    }

    /// The token's scope (None without Keystone).
    pub async fn scope(&self) -> Option<Scope> {
        match &self.auth {
            ApiAuth::Keystone(s) => Some(s.scope().await),
            _ => None,
        }
    }

    /// Reads the root document (public, no token needed) and settles on the newest version both
    /// sides know. Returns it ("1.115"). `needed` (e.g. (1, 17) for adopt) is checked.
    pub async fn negotiate(&self, needed: Option<((u32, u32), &str)>) -> Result<String, ApiError> {
        let url = format!("{}/", self.base);
        let resp = self
            .client
            .get(&url)
            .send()
            .await
            .map_err(|e| ApiError::Unreachable { url: url.clone(), reason: keystone::reason(&e) })?;
        let status = resp.status().as_u16();
        let hdr = |n: &str| resp.headers().get(n).and_then(|h| h.to_str().ok()).map(String::from);
        let (hmin, hmax) =
            (hdr("x-openstack-ironic-api-minimum-version"), hdr("x-openstack-ironic-api-maximum-version"));
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !(200..300).contains(&status) {
            return Err(ApiError::Status { url, status, body: "the root document is not readable".into() });
        }
        let dv = body.get("default_version").cloned().unwrap_or(Value::Null);
        // Juno's root document: `default_version` {id: v1, links} without a version, and no headers
        let unversioned = dv.get("version").is_none() && hmax.is_none();
        let max = dv["version"].as_str().map(String::from).or(hmax).unwrap_or_else(|| "1.1".into());
        let min = dv["min_version"].as_str().map(String::from).or(hmin).unwrap_or_else(|| "1.1".into());
        let server_max = parse_version(&max).unwrap_or((1, 1));
        let chosen = server_max.min(NEWEST_KNOWN);
        *self.range.lock().unwrap_or_else(|e| e.into_inner()) = Some((min.clone(), max.clone()));
        if let Some((need, what)) = needed {
            if server_max < need && unversioned {
                return Err(ApiError::Unversioned {
                    url: self.base.clone(),
                    needed: format!("{what} needs API {}.{} or newer", need.0, need.1),
                });
            }
            if server_max < need {
                return Err(ApiError::TooOld {
                    url: self.base.clone(),
                    min,
                    max,
                    needed: format!("{what} needs {}.{} or newer", need.0, need.1),
                });
            }
        }
        *self.version.lock().unwrap_or_else(|e| e.into_inner()) = Some(chosen);
        let v = format!("{}.{}", chosen.0, chosen.1);
        tracing::info!(url = %self.base, server_min = %min, server_max = %max, chosen = %v, "Ironic API version negotiated");
        Ok(v)
    }

    /// The negotiated version (None before [`IronicApi::negotiate`]).
    pub fn version(&self) -> Option<(u32, u32)> {
        *self.version.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn version_header(&self) -> Option<String> {
        match self.version() {
            Some((a, b)) => Some(format!("{a}.{b}")),
            None if self.kind == TargetKind::Modern => Some("latest".into()),
            None => None,
        }
    }

    async fn token(&self) -> Result<Option<Secret>, ApiError> {
        Ok(match &self.auth {
            ApiAuth::None => None,
            ApiAuth::Token(t) => Some(t.clone()),
            ApiAuth::Keystone(s) => Some(s.token().await?),
        })
    }

    /// One request with the retries, the 401 renewal and the error mapping; `Ok(None)` for an
    /// empty body (202/204).
    pub async fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Option<Value>, ApiError> {
        let t0 = Instant::now();
        let r = self.request_once(&method, path, body).await;
        self.timings.add(request_kind(method.as_str(), path), t0.elapsed());
        r
    }

    async fn request_once(&self, method: &Method, path: &str, body: Option<&Value>) -> Result<Option<Value>, ApiError> {
        let url = format!("{}{path}", self.base);
        let mut token = self.token().await?;
        let mut renewed = false;
        let mut attempt = 1u32;
        let mut wait = self.retry.first;
        loop {
            let make = || {
                let mut rq = self.client.request(method.clone(), &url);
                if let Some(v) = self.version_header() {
                    rq = rq.header(VERSION_HEADER, v);
                }
                if let Some(t) = &token {
                    rq = rq.header("X-Auth-Token", t.expose());
                }
                if let Some(b) = body {
                    rq = rq.json(b);
                }
                rq
            };
            let scrub = |s: String| match &token {
                Some(t) => t.scrub(&s),
                None => s,
            };
            // a GET is sent again after a reset connection; a write is not (Ironic may have done it)
            let sent = if *method == Method::GET { keystone::send_safe_twice(make).await } else { make().send().await };
            let resp =
                sent.map_err(|e| ApiError::Unreachable { url: url.clone(), reason: scrub(keystone::reason(&e)) })?;
            let status = resp.status().as_u16();
            let text = resp
                .text()
                .await
                .map_err(|e| ApiError::Unreachable { url: url.clone(), reason: scrub(keystone::reason(&e)) })?;
            if (200..300).contains(&status) {
                if text.trim().is_empty() {
                    return Ok(None);
                }
                return serde_json::from_str(&text).map(Some).map_err(|e| ApiError::Status {
                    url,
                    status,
                    body: format!("not JSON: {e}"),
                });
            }
            let message = scrub(fault(&text));
            match status {
                401 => match (&self.auth, renewed) {
                    (ApiAuth::None, _) => return Err(ApiError::NoCredentials { url: self.base.clone() }),
                    (ApiAuth::Keystone(s), false) => {
                        let stale = token.clone().unwrap_or_default();
                        token = Some(s.renew(&stale).await?);
                        renewed = true;
                        continue;
                    }
                    _ => return Err(ApiError::TokenRefused { url: self.base.clone(), renewed }),
                },
                403 => {
                    return Err(ApiError::Forbidden {
                        url: self.base.clone(),
                        what: format!("{method} {path}"),
                        message,
                    })
                }
                409 | 503 if attempt < self.retry.attempts && (status == 503 || message.contains("locked")) => {
                    tracing::info!(%url, status, attempt, wait_ms = wait.as_millis() as u64, "Ironic busy: retrying ({message})");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(self.retry.max);
                    attempt += 1;
                }
                _ => return Err(ApiError::Status { url, status, body: message }),
            }
        }
    }

    pub async fn get(&self, path: &str) -> Result<Value, ApiError> {
        Ok(self.request(Method::GET, path, None).await?.unwrap_or(Value::Null))
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, ApiError> {
        Ok(self.request(Method::POST, path, Some(body)).await?.unwrap_or(Value::Null))
    }

    pub async fn put(&self, path: &str, body: &Value) -> Result<(), ApiError> {
        self.request(Method::PUT, path, Some(body)).await.map(|_| ())
    }

    /// A JSON patch (RFC 6902 operations).
    pub async fn patch(&self, path: &str, ops: &Value) -> Result<Value, ApiError> {
        Ok(self.request(Method::PATCH, path, Some(ops)).await?.unwrap_or(Value::Null))
    }

    pub async fn delete(&self, path: &str) -> Result<(), ApiError> {
        self.request(Method::DELETE, path, None).await.map(|_| ())
    }

    /// Every item of a collection (`/v1/nodes/detail`, key `nodes`), page by page (`limit`, `marker`).
    pub async fn list_all(&self, path: &str, key: &str, page: usize) -> Result<Vec<Value>, ApiError> {
        let mut out: Vec<Value> = Vec::new();
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut marker: Option<String> = None;
        loop {
            let mut p = format!("{path}{sep}limit={page}");
            if let Some(m) = &marker {
                p.push_str(&format!("&marker={m}"));
            }
            let v = self.get(&p).await?;
            let items = v[key].as_array().cloned().unwrap_or_default();
            let n = items.len();
            marker = items.last().and_then(|i| i["uuid"].as_str()).map(String::from);
            out.extend(items);
            if n < page || marker.is_none() || v.get("next").is_none_or(|n| n.is_null()) {
                return Ok(out);
            }
        }
    }

    pub async fn node(&self, uuid: &str) -> Result<Value, ApiError> {
        self.get(&format!("/v1/nodes/{uuid}")).await
    }

    pub async fn node_port_addresses(&self, uuid: &str) -> Result<Vec<String>, ApiError> {
        let v = self.get(&format!("/v1/ports/detail?node_uuid={uuid}")).await?;
        Ok(v["ports"]
            .as_array()
            .map(|a| a.iter().filter_map(|p| p["address"].as_str().map(String::from)).collect())
            .unwrap_or_default())
    }

    /// With a project-scoped token: the `uuids` this token cannot see (Ironic answers 404 for nodes
    /// its project neither owns nor leases). Empty with system scope, a fixed token or none.
    pub async fn not_visible(&self, uuids: &[String]) -> Vec<String> {
        if !matches!(self.scope().await, Some(Scope::Project { .. } | Scope::Domain { .. })) {
            return Vec::new();
        }
        let mut out = Vec::new();
        for u in uuids {
            if self.node(u).await.is_err_and(|e| e.is_not_found()) {
                out.push(u.clone());
            }
        }
        out
    }
}

/// What a project-scoped token means for the operator, or None for a system-scoped one.
pub fn scope_warning(scope: &Scope, hidden: &[String]) -> Option<String> {
    let Scope::Project { name, .. } = scope else { return None };
    let mut w = format!(
        "the Keystone token is scoped to project {name}, not to the system: under Ironic's default policy it sees only the nodes project {name} owns or leases (others answer 404) and cannot list drivers or conductors; use a system-scoped cloud (system_scope: all, or OS_SYSTEM_SCOPE=all without OS_PROJECT_*)"
    );
    if !hidden.is_empty() {
        let shown: Vec<&str> = hidden.iter().take(20).map(String::as_str).collect();
        w.push_str(&format!(
            "; it cannot see {} node(s) of this run: {}{}",
            hidden.len(),
            shown.join(", "),
            if hidden.len() > shown.len() { ", ..." } else { "" }
        ));
    }
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback HTTP server answering each connection with the next canned (status, body);
    /// status 0: read the request, then reset the connection (RST, as a server dropping it does).
    async fn canned(answers: Vec<(u16, &'static str)>) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", l.local_addr().unwrap());
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let s2 = seen.clone();
        tokio::spawn(async move {
            for (status, body) in answers {
                let Ok((mut c, _)) = l.accept().await else { return };
                let mut buf = vec![0u8; 8192];
                let _ = c.read(&mut buf).await;
                s2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if status == 0 {
                    let _ = c.set_zero_linger();
                    drop(c);
                    continue;
                }
                let r = format!("HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                let _ = c.write_all(r.as_bytes()).await;
            }
        });
        (url, seen)
    }

    const LOCKED: &str = r#"{"error_message": "{\"faultstring\": \"Node n1 is locked by host c1, please retry after the current operation is completed.\"}"}"#;

    #[tokio::test]
    async fn locked_and_unavailable_are_retried_other_conflicts_are_not() {
        let quick = Retry { attempts: 4, first: Duration::from_millis(10), max: Duration::from_millis(20) };
        let (url, seen) = canned(vec![(409, LOCKED), (503, "{}"), (200, r#"{"uuid": "n1"}"#)]).await;
        let api = IronicApi::new(&url, None, TargetKind::Modern).unwrap().with_retry(quick);
        assert_eq!(api.node("n1").await.unwrap()["uuid"], "n1");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 3);

        let dup =
            r#"{"error_message": "{\"faultstring\": \"A port with MAC address 52:54:00:00:00:01 already exists.\"}"}"#;
        let (url, seen) = canned(vec![(409, dup), (200, "{}")]).await;
        let api = IronicApi::new(&url, None, TargetKind::Modern).unwrap().with_retry(quick);
        let e = api.post("/v1/ports", &serde_json::json!({})).await.unwrap_err();
        assert_eq!(e.message(), "A port with MAC address 52:54:00:00:00:01 already exists.");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1, "no retry");

        let (url, seen) = canned(vec![(409, LOCKED); 4]).await;
        let api = IronicApi::new(&url, None, TargetKind::Modern).unwrap().with_retry(quick);
        let e = api.node("n1").await.unwrap_err();
        assert!(e.to_string().contains("HTTP 409") && e.to_string().contains("locked"), "{e}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 4, "bounded: {} attempts", quick.attempts);

        let (url, _) = canned(vec![(401, "{}")]).await;
        let e = IronicApi::new(&url, None, TargetKind::Modern).unwrap().node("n1").await.unwrap_err();
        assert!(e.to_string().contains("asks for authentication (HTTP 401)"), "{e}");
    }

    #[tokio::test]
    async fn a_reset_connection_is_retried_for_a_read_never_for_a_write() {
        let (url, seen) = canned(vec![(0, ""), (200, r#"{"uuid": "n1"}"#)]).await;
        let api = IronicApi::new(&url, None, TargetKind::Modern).unwrap();
        assert_eq!(api.node("n1").await.unwrap()["uuid"], "n1", "a GET is sent again on a new connection");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);

        let (url, seen) = canned(vec![(0, ""), (201, "{}")]).await;
        let api = IronicApi::new(&url, None, TargetKind::Modern).unwrap();
        let e = api.post("/v1/ports", &serde_json::json!({})).await.unwrap_err();
        assert!(matches!(e, ApiError::Unreachable { .. }), "{e}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 1, "a write is not sent twice");

        // only once: a server that keeps resetting is unreachable
        let (url, seen) = canned(vec![(0, ""), (0, ""), (200, "{}")]).await;
        let e = IronicApi::new(&url, None, TargetKind::Modern).unwrap().node("n1").await.unwrap_err();
        assert!(matches!(e, ApiError::Unreachable { .. }), "{e}");
        assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_version_less_api_is_named_as_such() {
        let adopt = Some(((1, 17), "the adopt flow"));
        // Juno's root document: no versions, no version headers
        let juno = r#"{"default_version": {"id": "v1", "links": []}, "versions": [{"id": "v1", "links": []}]}"#;
        let (url, _) = canned(vec![(200, juno)]).await;
        let e = IronicApi::new(&url, None, TargetKind::Juno).unwrap().negotiate(adopt).await.unwrap_err();
        assert!(matches!(e, ApiError::Unversioned { .. }) && e.to_string().contains("--via db"), "{e}");
        // a versioned API that is too old says its range
        let kilo = r#"{"default_version": {"id": "v1", "version": "1.6", "min_version": "1.1"}}"#;
        let (url, _) = canned(vec![(200, kilo)]).await;
        let e = IronicApi::new(&url, None, TargetKind::Modern).unwrap().negotiate(adopt).await.unwrap_err();
        assert!(e.to_string().contains("speaks API versions 1.1 to 1.6"), "{e}");
    }

    #[test]
    fn versions_and_scope_warning() {
        assert_eq!(parse_version("1.115"), Some((1, 115)));
        assert!(parse_version("1.9") < parse_version("1.10"));
        assert_eq!(parse_version("latest"), None);
        let p = Scope::Project { id: "p".into(), name: "admin".into(), domain: "Default".into() };
        let w = scope_warning(&p, &["u1".into(), "u2".into()]).unwrap();
        assert!(w.contains("project admin") && w.contains("cannot see 2 node(s) of this run: u1, u2"), "{w}");
        assert!(scope_warning(&Scope::System, &[]).is_none());
    }
}
