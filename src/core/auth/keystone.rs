//! A Keystone v3 session: asks for a token (system scope first where the configuration allows it),
//! reads its scope, expiry and catalog, finds the `baremetal` endpoint (region and interface
//! honoured), and renews the token once when it is about to expire or was refused with 401.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use tokio::sync::Mutex;

use super::config::{AuthConfig, Domain, Method, ScopeWanted};
use super::error::AuthError;
use crate::core::db::secret::Secret;

/// A token this close to its expiry is renewed before it is used.
pub const RENEW_BEFORE: Duration = Duration::from_secs(120);

/// What a token may see.
#[derive(Debug, Clone, PartialEq)]
pub enum Scope {
    System,
    Project { id: String, name: String, domain: String },
    Domain { name: String },
    Unscoped,
}

impl Scope {
    pub fn describe(&self) -> String {
        match self {
            Scope::System => "system scope (all)".into(),
            Scope::Project { name, domain, .. } => format!("project {name} (domain {domain})"),
            Scope::Domain { name } => format!("domain {name}"),
            Scope::Unscoped => "no scope".into(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub service_type: String,
    pub interface: String,
    pub region: Option<String>,
    pub url: String,
}

/// A token and what came with it.
#[derive(Debug, Clone)]
pub struct Token {
    pub value: Secret,
    pub expires_at: Option<DateTime<Utc>>,
    pub scope: Scope,
    pub roles: Vec<String>,
    pub catalog: Vec<Endpoint>,
    /// the user's name and id (for logs; never a secret)
    pub user: String,
    pub user_id: String,
}

impl Token {
    fn fresh(&self) -> bool {
        match self.expires_at {
            Some(t) => t - Utc::now() > chrono::Duration::from_std(RENEW_BEFORE).unwrap_or_default(),
            None => true,
        }
    }
}

/// An authenticated session with Keystone; share it (`Arc`) between the callers of one run.
pub struct Session {
    cfg: AuthConfig,
    client: reqwest::Client,
    token: Mutex<Token>,
    renewals: AtomicUsize,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Session {{ {} at {} }}", self.cfg.who(), self.cfg.auth_url)
    }
}

/// How long a pooled connection may sit idle and still be reused. Servers close idle keep-alive
/// connections on their own clock (gunicorn after 2 s, Apache after 5 s); a request written on a
/// connection the server is closing at that moment fails with "connection reset by peer". Below
/// the shortest of those clocks, reuse does not race the server's close.
pub(crate) const POOL_IDLE: Duration = Duration::from_millis(1500);

/// The client settings every OpenStack call uses: timeouts and [`POOL_IDLE`].
pub(crate) fn client_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(POOL_IDLE)
}

/// Sends a request that may safely be sent twice (a GET, or asking Keystone for a token) and sends
/// it once more, on a new connection, when the first try failed at the connection (refused, or
/// reset while the request was written): a server restarting a worker or closing a keep-alive
/// connection at the wrong moment is not a reason to fail a migration or refuse a caller.
/// A timeout is not retried (the server may be working on it), nor is any HTTP answer.
pub(crate) async fn send_safe_twice(
    make: impl Fn() -> reqwest::RequestBuilder,
) -> Result<reqwest::Response, reqwest::Error> {
    match make().send().await {
        Err(e) if !e.is_timeout() && (e.is_connect() || e.is_request()) => {
            tracing::info!(url = e.url().map(|u| u.as_str()).unwrap_or("-"), "connection failed; sending once more");
            tokio::time::sleep(Duration::from_millis(200)).await;
            make().send().await
        }
        r => r,
    }
}

/// An HTTP client honouring `cacert` / `insecure`.
pub fn http_client(cfg: &AuthConfig) -> Result<reqwest::Client, AuthError> {
    let mut b = client_builder();
    if let Some(ca) = &cfg.cacert {
        let bad = |reason: String| AuthError::CaCert { path: ca.display().to_string(), reason };
        let pem = crate::core::settings::file::read_bytes(ca, crate::core::settings::file::MAX_CONFIG_FILE)
            .map_err(|e| bad(e.to_string()))?;
        for c in reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))? {
            b = b.add_root_certificate(c);
        }
    }
    if cfg.insecure {
        tracing::warn!(origin = %cfg.origin, "TLS certificates are not verified (verify: false / OS_INSECURE)");
        b = b.danger_accept_invalid_certs(true);
    }
    b.build().map_err(|e| AuthError::Unreachable { url: cfg.auth_url.clone(), reason: e.to_string() })
}

fn domain_json(d: &Domain) -> Value {
    match (&d.id, &d.name) {
        (Some(id), _) => json!({"id": id}),
        (None, Some(n)) => json!({"name": n}),
        (None, None) => json!({"id": "default"}),
    }
}

fn identity(m: &Method) -> Value {
    match m {
        Method::Password { username, user_id, user_domain, password } => {
            let mut user = json!({"password": password.expose()});
            match (user_id, username) {
                (Some(id), _) => user["id"] = json!(id),
                (None, Some(n)) => {
                    user["name"] = json!(n);
                    user["domain"] = domain_json(user_domain);
                }
                (None, None) => {}
            }
            json!({"methods": ["password"], "password": {"user": user}})
        }
        Method::AppCredential { id, name, username, user_domain, secret } => {
            let mut ac = json!({"secret": secret.expose()});
            match (id, name) {
                (Some(id), _) => ac["id"] = json!(id),
                (None, Some(n)) => {
                    ac["name"] = json!(n);
                    ac["user"] = json!({"name": username, "domain": domain_json(user_domain)});
                }
                (None, None) => {}
            }
            json!({"methods": ["application_credential"], "application_credential": ac})
        }
    }
}

fn scope_json(s: &ScopeWanted) -> Option<Value> {
    match s {
        ScopeWanted::System => Some(json!({"system": {"all": true}})),
        ScopeWanted::Project { id: Some(id), .. } => Some(json!({"project": {"id": id}})),
        ScopeWanted::Project { name, domain, .. } => {
            Some(json!({"project": {"name": name, "domain": domain_json(domain)}}))
        }
        ScopeWanted::Domain(d) => Some(json!({"domain": domain_json(d)})),
        ScopeWanted::None => None,
    }
}

fn parse_token(value: Secret, body: &Value) -> Token {
    let t = &body["token"];
    let s = |v: &Value| v.as_str().unwrap_or("").to_string();
    let scope = if t["system"]["all"].as_bool() == Some(true) {
        Scope::System
    } else if t["project"].is_object() {
        Scope::Project {
            id: s(&t["project"]["id"]),
            name: s(&t["project"]["name"]),
            domain: s(&t["project"]["domain"]["name"]),
        }
    } else if t["domain"].is_object() {
        Scope::Domain { name: s(&t["domain"]["name"]) }
    } else {
        Scope::Unscoped
    };
    let mut catalog = Vec::new();
    for svc in t["catalog"].as_array().into_iter().flatten() {
        for e in svc["endpoints"].as_array().into_iter().flatten() {
            catalog.push(Endpoint {
                service_type: s(&svc["type"]),
                interface: s(&e["interface"]),
                region: e["region_id"].as_str().or(e["region"].as_str()).map(String::from),
                url: s(&e["url"]),
            });
        }
    }
    Token {
        value,
        expires_at: t["expires_at"].as_str().and_then(|x| DateTime::parse_from_rfc3339(x).ok()).map(|d| d.into()),
        scope,
        roles: t["roles"].as_array().into_iter().flatten().map(|r| s(&r["name"])).collect(),
        catalog,
        user: s(&t["user"]["name"]),
        user_id: s(&t["user"]["id"]),
    }
}

/// One POST /v3/auth/tokens. `Ok(None)`: Keystone answered 401 (wrong secret, or a scope refused).
async fn issue(client: &reqwest::Client, cfg: &AuthConfig, scope: &ScopeWanted) -> Result<Option<Token>, AuthError> {
    let mut auth = json!({"identity": identity(&cfg.method)});
    if let Some(s) = scope_json(scope) {
        auth["scope"] = s;
    }
    let url = format!("{}/auth/tokens", cfg.auth_url);
    let body = json!({ "auth": auth });
    let resp = send_safe_twice(|| client.post(&url).json(&body))
        .await
        .map_err(|e| AuthError::Unreachable { url: cfg.auth_url.clone(), reason: cfg.secret().scrub(&reason(&e)) })?;
    let status = resp.status().as_u16();
    let header = resp.headers().get("x-subject-token").and_then(|h| h.to_str().ok()).map(Secret::new);
    let body = resp.text().await.unwrap_or_default();
    match status {
        201 | 200 => {
            let value = header.ok_or_else(|| AuthError::Keystone {
                url: url.clone(),
                status,
                message: "no X-Subject-Token in the answer".into(),
            })?;
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            Ok(Some(parse_token(value, &v)))
        }
        401 => Ok(None),
        _ => {
            let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let message =
                v["error"]["message"].as_str().map(String::from).unwrap_or_else(|| body.chars().take(200).collect());
            Err(AuthError::Keystone { url, status, message: cfg.secret().scrub(&message) })
        }
    }
}

/// The error text with its source chain (reqwest's own text is terse: "error sending request").
pub(crate) fn reason(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        out.push_str(": ");
        out.push_str(&s.to_string());
        src = s.source();
    }
    out
}

/// Asks for a token: the configured scope; with a password and no system scope configured, system
/// scope first, and the configured project (if any) when Keystone refuses it.
async fn authenticate(client: &reqwest::Client, cfg: &AuthConfig) -> Result<Token, AuthError> {
    let mut tries: Vec<ScopeWanted> = Vec::new();
    match (&cfg.method, &cfg.scope) {
        (Method::Password { .. }, ScopeWanted::System) => tries.push(ScopeWanted::System),
        (Method::Password { .. }, other) => {
            tries.push(ScopeWanted::System);
            if *other != ScopeWanted::None {
                tries.push(other.clone());
            }
        }
        (Method::AppCredential { .. }, _) => tries.push(ScopeWanted::None),
    }
    for scope in &tries {
        if let Some(t) = issue(client, cfg, scope).await? {
            tracing::info!(origin = %cfg.origin, who = %cfg.who(), scope = %t.scope.describe(), expires_at = ?t.expires_at, "keystone token issued");
            return Ok(t);
        }
        tracing::info!(origin = %cfg.origin, who = %cfg.who(), scope = ?scope_json(scope), "keystone refused this scope (401)");
    }
    Err(AuthError::Refused {
        who: cfg.who(),
        origin: cfg.origin.clone(),
        url: cfg.auth_url.clone(),
        system_only: cfg.scope == ScopeWanted::System,
    })
}

impl Session {
    /// Authenticates (see the module doc for the scope order).
    pub async fn connect(cfg: AuthConfig) -> Result<Session, AuthError> {
        let client = http_client(&cfg)?;
        let token = authenticate(&client, &cfg).await?;
        Ok(Session { cfg, client, token: Mutex::new(token), renewals: AtomicUsize::new(0) })
    }

    pub fn config(&self) -> &AuthConfig {
        &self.cfg
    }

    /// A valid token: the current one, or a new one when it expires within [`RENEW_BEFORE`].
    pub async fn token(&self) -> Result<Secret, AuthError> {
        let mut t = self.token.lock().await;
        if !t.fresh() {
            tracing::info!(expires_at = ?t.expires_at, "keystone token about to expire: renewing");
            *t = authenticate(&self.client, &self.cfg).await?;
            self.renewals.fetch_add(1, Ordering::SeqCst);
        }
        Ok(t.value.clone())
    }

    /// After a 401 with `stale`: a new token (once per stale token; callers sharing the session
    /// that saw the same 401 get the one already renewed).
    pub async fn renew(&self, stale: &Secret) -> Result<Secret, AuthError> {
        let mut t = self.token.lock().await;
        if t.value == *stale {
            tracing::warn!("the Ironic API refused the token (401): asking Keystone for a new one");
            *t = authenticate(&self.client, &self.cfg).await?;
            self.renewals.fetch_add(1, Ordering::SeqCst);
        }
        Ok(t.value.clone())
    }

    /// How many times the token was renewed.
    pub fn renewals(&self) -> usize {
        self.renewals.load(Ordering::SeqCst)
    }

    pub async fn scope(&self) -> Scope {
        self.token.lock().await.scope.clone()
    }

    /// Validates someone else's token (`GET /v3/auth/tokens?nocatalog` with this session's token
    /// and `X-Subject-Token`): what it is (user, scope, roles), or None when Keystone does not
    /// know it (invalid, expired or revoked: 404, or 401 for a malformed one). This session's own
    /// token is renewed once when Keystone refuses it.
    pub async fn validate(&self, subject: &Secret) -> Result<Option<Token>, AuthError> {
        let url = format!("{}/auth/tokens?nocatalog", self.cfg.auth_url);
        let mut own = self.token().await?;
        let mut renewed = false;
        loop {
            let resp = send_safe_twice(|| {
                self.client.get(&url).header("X-Auth-Token", own.expose()).header("X-Subject-Token", subject.expose())
            })
            .await
            .map_err(|e| AuthError::Unreachable {
                url: self.cfg.auth_url.clone(),
                reason: subject.scrub(&own.scrub(&reason(&e))),
            })?;
            let status = resp.status().as_u16();
            let body = resp.text().await.unwrap_or_default();
            match status {
                200 => {
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    return Ok(Some(parse_token(subject.clone(), &v)));
                }
                404 => return Ok(None),
                // 401 is Keystone refusing our own token, or (keystone 30) the subject itself
                401 if !renewed => {
                    own = self.renew(&own).await?;
                    renewed = true;
                }
                401 => return Ok(None),
                _ => {
                    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                    let message = v["error"]["message"]
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| body.chars().take(200).collect());
                    return Err(AuthError::Keystone { url, status, message: subject.scrub(&own.scrub(&message)) });
                }
            }
        }
    }

    /// The URL of `service_type` in the token's catalog, for the configured interface and region.
    pub async fn endpoint(&self, service_type: &str) -> Result<String, AuthError> {
        let t = self.token.lock().await;
        find_endpoint(&t.catalog, service_type, &self.cfg.interface, self.cfg.region.as_deref())
    }
}

pub(crate) fn find_endpoint(
    catalog: &[Endpoint],
    service_type: &str,
    interface: &str,
    region: Option<&str>,
) -> Result<String, AuthError> {
    let hit = catalog.iter().find(|e| {
        e.service_type == service_type
            && e.interface == interface
            && region.is_none_or(|r| e.region.as_deref() == Some(r))
    });
    if let Some(e) = hit {
        return Ok(e.url.trim_end_matches('/').to_string());
    }
    let mut services: Vec<String> = catalog
        .iter()
        .map(|e| format!("{} ({} {})", e.service_type, e.interface, e.region.as_deref().unwrap_or("-")))
        .collect();
    services.dedup();
    Err(AuthError::NoEndpoint {
        service_type: service_type.into(),
        interface: interface.into(),
        region: region.unwrap_or("any").into(),
        found: if services.is_empty() { "none".into() } else { services.join(", ") },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_body_scope_and_catalog() {
        let body = json!({"token": {"expires_at": "2099-01-01T00:00:00.000000Z", "system": {"all": true},
            "roles": [{"name": "admin"}, {"name": "reader"}],
            "catalog": [{"type": "baremetal", "endpoints": [
                {"interface": "public", "region_id": "R1", "url": "http://ironic-r1:6385/"},
                {"interface": "internal", "region_id": "R1", "url": "http://ironic-int:6385"},
                {"interface": "public", "region_id": "R2", "url": "http://ironic-r2:6385"}]},
                {"type": "identity", "endpoints": [{"interface": "public", "region_id": "R1", "url": "http://ks"}]}]}});
        let t = parse_token(Secret::new("tok"), &body);
        assert_eq!(t.scope, Scope::System);
        assert!(t.fresh());
        assert_eq!(t.roles, vec!["admin", "reader"]);
        assert_eq!(find_endpoint(&t.catalog, "baremetal", "public", Some("R2")).unwrap(), "http://ironic-r2:6385");
        assert_eq!(find_endpoint(&t.catalog, "baremetal", "internal", None).unwrap(), "http://ironic-int:6385");
        assert_eq!(find_endpoint(&t.catalog, "baremetal", "public", Some("R1")).unwrap(), "http://ironic-r1:6385");
        let e = find_endpoint(&t.catalog, "baremetal", "admin", Some("R1")).unwrap_err().to_string();
        assert!(e.contains("no baremetal endpoint") && e.contains("identity (public R1)"), "{e}");
        let p = parse_token(
            Secret::new("t"),
            &json!({"token": {"expires_at": "2000-01-01T00:00:00Z", "project": {"id": "p1", "name": "admin", "domain": {"name": "Default"}}}}),
        );
        assert_eq!(p.scope.describe(), "project admin (domain Default)");
        assert!(!p.fresh(), "an expired token is renewed before use");
    }

    #[test]
    fn request_bodies() {
        let m = Method::Password {
            username: Some("admin".into()),
            user_id: None,
            user_domain: Domain { id: None, name: Some("Default".into()) },
            password: Secret::new("pw"),
        };
        assert_eq!(
            identity(&m),
            json!({"methods": ["password"], "password": {"user": {"name": "admin", "domain": {"name": "Default"}, "password": "pw"}}})
        );
        assert_eq!(scope_json(&ScopeWanted::System), Some(json!({"system": {"all": true}})));
        let p = ScopeWanted::Project { id: None, name: Some("demo".into()), domain: Domain::default() };
        assert_eq!(scope_json(&p), Some(json!({"project": {"name": "demo", "domain": {"id": "default"}}})));
    }
}
