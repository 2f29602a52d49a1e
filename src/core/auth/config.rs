//! Where the Keystone credentials come from, the way openstacksdk users expect: a cloud of
//! `clouds.yaml` (+ `secure.yaml`) found on the usual search path, named by `--os-cloud` / `OS_CLOUD`,
//! or the `OS_*` variables. The result is one `AuthConfig`; passwords and secrets are `Secret`s.

use std::path::{Path, PathBuf};

use serde_norway::Value as Yaml;

use super::error::AuthError;
use crate::core::db::secret::Secret;

/// How to prove who we are.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    Password {
        username: Option<String>,
        user_id: Option<String>,
        user_domain: Domain,
        password: Secret,
    },
    /// An application credential (bound to the project it was made in: never system-scoped).
    AppCredential {
        id: Option<String>,
        name: Option<String>,
        /// the owner, needed with `name`
        username: Option<String>,
        user_domain: Domain,
        secret: Secret,
    },
}

/// A domain by id or by name (`Default` by id `default` when neither is given).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Domain {
    pub id: Option<String>,
    pub name: Option<String>,
}

/// What the token should be scoped to, as configured.
#[derive(Debug, Clone, PartialEq)]
pub enum ScopeWanted {
    /// `system_scope: all` / `OS_SYSTEM_SCOPE=all`
    System,
    Project {
        id: Option<String>,
        name: Option<String>,
        domain: Domain,
    },
    Domain(Domain),
    /// nothing configured: system scope is tried
    None,
}

/// Everything needed to ask Keystone for a token and to find Ironic in the catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthConfig {
    /// the identity v3 URL (ending in /v3)
    pub auth_url: String,
    pub method: Method,
    pub scope: ScopeWanted,
    pub region: Option<String>,
    /// public (default), internal or admin
    pub interface: String,
    pub cacert: Option<PathBuf>,
    /// `verify: false` / `OS_INSECURE`: no TLS certificate check
    pub insecure: bool,
    /// where this came from, for messages: "cloud 'prod' of /etc/openstack/clouds.yaml" or "the OS_* variables"
    pub origin: String,
}

impl AuthConfig {
    /// Who authenticates, for messages (never the secret).
    pub fn who(&self) -> String {
        match &self.method {
            Method::Password { username, user_id, .. } => {
                format!("user {}", username.as_deref().or(user_id.as_deref()).unwrap_or("?"))
            }
            Method::AppCredential { id, name, .. } => {
                format!("application credential {}", name.as_deref().or(id.as_deref()).unwrap_or("?"))
            }
        }
    }

    /// The secret that proves it (scrubbed from any text that reaches the operator).
    pub fn secret(&self) -> &Secret {
        match &self.method {
            Method::Password { password, .. } => password,
            Method::AppCredential { secret, .. } => secret,
        }
    }
}

/// The clouds.yaml candidates in openstacksdk's order: `OS_CLIENT_CONFIG_FILE`, the current
/// directory, `~/.config/openstack/`, `/etc/openstack/`.
pub fn search_path(env: &dyn Fn(&str) -> Option<String>, stem: &str) -> Vec<PathBuf> {
    let var = if stem == "clouds" { "OS_CLIENT_CONFIG_FILE" } else { "OS_CLIENT_SECURE_FILE" };
    let mut out = Vec::new();
    if let Some(f) = env(var).filter(|f| !f.is_empty()) {
        out.push(PathBuf::from(f));
    }
    let mut dirs = vec![PathBuf::from(".")];
    if let Some(h) = env("HOME").filter(|h| !h.is_empty()).map(PathBuf::from).or_else(dirs::home_dir) {
        dirs.push(h.join(".config/openstack"));
    }
    dirs.push(PathBuf::from("/etc/openstack"));
    for d in dirs {
        for ext in ["yaml", "yml"] {
            out.push(d.join(format!("{stem}.{ext}")));
        }
    }
    out
}

fn read_yaml(path: &Path) -> Result<Yaml, AuthError> {
    // a leading byte order mark is YAML's own (openstacksdk's PyYAML skips it, and so does libyaml)
    let text = crate::core::settings::file::read_text(path, crate::core::settings::file::MAX_CONFIG_FILE)
        .map_err(|e| AuthError::CloudsFile { path: path.display().to_string(), reason: e.to_string() })?;
    serde_norway::from_str(&text)
        .map_err(|e| AuthError::CloudsFile { path: path.display().to_string(), reason: e.to_string() })
}

/// `secure` merged into `base`, maps recursively (secure.yaml's values win).
fn merge(base: &mut Yaml, secure: &Yaml) {
    match (base, secure) {
        (Yaml::Mapping(b), Yaml::Mapping(s)) => {
            for (k, v) in s {
                match b.get_mut(k) {
                    Some(bv) if bv.is_mapping() && v.is_mapping() => merge(bv, v),
                    _ => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, s) => *b = s.clone(),
    }
}

/// A scalar as text (clouds.yaml values may be numbers or booleans).
fn text(v: Option<&Yaml>) -> Option<String> {
    match v? {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Number(n) => Some(n.to_string()),
        Yaml::Bool(b) => Some(b.to_string()),
        _ => None,
    }
    .filter(|s| !s.trim().is_empty())
}

/// The cloud `name` of the first clouds.yaml on the search path, merged with secure.yaml.
pub fn from_cloud(name: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<AuthConfig, AuthError> {
    let searched = search_path(env, "clouds");
    let Some(path) = searched.iter().find(|p| p.is_file()) else {
        return Err(AuthError::NoCloudsFile {
            cloud: name.into(),
            searched: searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        });
    };
    let doc = read_yaml(path)?;
    let clouds = doc.get("clouds").and_then(|c| c.as_mapping());
    let mut cloud = match clouds.and_then(|c| c.get(name)) {
        Some(c) => c.clone(),
        None => {
            let known: Vec<String> =
                clouds.map(|c| c.keys().filter_map(|k| k.as_str().map(String::from)).collect()).unwrap_or_default();
            return Err(AuthError::UnknownCloud {
                cloud: name.into(),
                path: path.display().to_string(),
                known: if known.is_empty() { "none".into() } else { known.join(", ") },
            });
        }
    };
    if let Some(sp) = search_path(env, "secure").iter().find(|p| p.is_file()) {
        if let Some(s) = read_yaml(sp)?.get("clouds").and_then(|c| c.get(name)) {
            merge(&mut cloud, s);
        }
    }
    let origin = format!("cloud '{name}' of {}", path.display());
    let empty = Yaml::Null;
    let auth = cloud.get("auth").unwrap_or(&empty);
    let a = |k: &str| text(auth.get(k));
    let c = |k: &str| text(cloud.get(k));
    let auth_type = c("auth_type").unwrap_or_else(|| {
        if a("application_credential_secret").is_some() {
            "v3applicationcredential".into()
        } else {
            "password".into()
        }
    });
    let fields = Fields {
        auth_url: a("auth_url"),
        auth_type,
        username: a("username"),
        user_id: a("user_id"),
        password: a("password"),
        user_domain: Domain {
            id: a("user_domain_id").or_else(|| a("domain_id")),
            name: a("user_domain_name").or_else(|| a("domain_name")),
        },
        project_id: a("project_id").or_else(|| a("tenant_id")),
        project_name: a("project_name").or_else(|| a("tenant_name")),
        project_domain: Domain {
            id: a("project_domain_id").or_else(|| a("domain_id")),
            name: a("project_domain_name").or_else(|| a("domain_name")),
        },
        system_scope: a("system_scope"),
        app_id: a("application_credential_id"),
        app_name: a("application_credential_name"),
        app_secret: a("application_credential_secret"),
        region: c("region_name"),
        interface: c("interface"),
        cacert: c("cacert"),
        insecure: cloud.get("verify").and_then(|v| v.as_bool()).map(|v| !v).unwrap_or(false)
            || c("insecure").is_some_and(|v| v == "true"),
    };
    fields.build(origin)
}

/// The `OS_*` variables (None when `OS_AUTH_URL` is not set).
pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<AuthConfig>, AuthError> {
    let v = |k: &str| env(k).filter(|s| !s.trim().is_empty());
    if v("OS_AUTH_URL").is_none() {
        return Ok(None);
    }
    let auth_type = v("OS_AUTH_TYPE").unwrap_or_else(|| {
        if v("OS_APPLICATION_CREDENTIAL_SECRET").is_some() {
            "v3applicationcredential".into()
        } else {
            "password".into()
        }
    });
    let fields = Fields {
        auth_url: v("OS_AUTH_URL"),
        auth_type,
        username: v("OS_USERNAME"),
        user_id: v("OS_USER_ID"),
        password: v("OS_PASSWORD"),
        user_domain: Domain {
            id: v("OS_USER_DOMAIN_ID").or_else(|| v("OS_DEFAULT_DOMAIN_ID")),
            name: v("OS_USER_DOMAIN_NAME").or_else(|| v("OS_DEFAULT_DOMAIN_NAME")),
        },
        project_id: v("OS_PROJECT_ID").or_else(|| v("OS_TENANT_ID")),
        project_name: v("OS_PROJECT_NAME").or_else(|| v("OS_TENANT_NAME")),
        project_domain: Domain {
            id: v("OS_PROJECT_DOMAIN_ID").or_else(|| v("OS_DEFAULT_DOMAIN_ID")),
            name: v("OS_PROJECT_DOMAIN_NAME").or_else(|| v("OS_DEFAULT_DOMAIN_NAME")),
        },
        system_scope: v("OS_SYSTEM_SCOPE"),
        app_id: v("OS_APPLICATION_CREDENTIAL_ID"),
        app_name: v("OS_APPLICATION_CREDENTIAL_NAME"),
        app_secret: v("OS_APPLICATION_CREDENTIAL_SECRET"),
        region: v("OS_REGION_NAME"),
        interface: v("OS_INTERFACE").or_else(|| v("OS_ENDPOINT_TYPE")),
        cacert: v("OS_CACERT"),
        insecure: v("OS_INSECURE").is_some_and(|s| s.eq_ignore_ascii_case("true") || s == "1"),
    };
    fields.build("the OS_* variables".into()).map(Some)
}

/// Resolves the credentials: `--os-cloud` > `OS_CLOUD` > the `OS_*` variables; None when none is set.
pub fn resolve(os_cloud: Option<&str>, env: &dyn Fn(&str) -> Option<String>) -> Result<Option<AuthConfig>, AuthError> {
    let cloud = os_cloud.map(String::from).or_else(|| env("OS_CLOUD")).filter(|c| !c.trim().is_empty());
    match cloud {
        Some(c) => from_cloud(c.trim(), env).map(Some),
        None => from_env(env),
    }
}

/// The cloud names of the first clouds.yaml on the search path (the wizard's picker).
pub fn cloud_names(env: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let Some(path) = search_path(env, "clouds").into_iter().find(|p| p.is_file()) else { return Vec::new() };
    read_yaml(&path)
        .ok()
        .and_then(|d| {
            d.get("clouds")
                .and_then(|c| c.as_mapping())
                .map(|m| m.keys().filter_map(|k| k.as_str().map(String::from)).collect())
        })
        .unwrap_or_default()
}

struct Fields {
    auth_url: Option<String>,
    auth_type: String,
    username: Option<String>,
    user_id: Option<String>,
    password: Option<String>,
    user_domain: Domain,
    project_id: Option<String>,
    project_name: Option<String>,
    project_domain: Domain,
    system_scope: Option<String>,
    app_id: Option<String>,
    app_name: Option<String>,
    app_secret: Option<String>,
    region: Option<String>,
    interface: Option<String>,
    cacert: Option<String>,
    insecure: bool,
}

fn default_domain(d: Domain) -> Domain {
    if d.id.is_none() && d.name.is_none() {
        Domain { id: Some("default".into()), name: None }
    } else {
        d
    }
}

/// The identity v3 URL: `http://host:5000` and `http://host:5000/v3/` both give `.../v3`.
pub fn v3_url(url: &str) -> String {
    let u = url.trim().trim_end_matches('/');
    if u.ends_with("/v3") {
        u.to_string()
    } else {
        format!("{}/v3", u.trim_end_matches("/v2.0"))
    }
}

impl Fields {
    fn build(self, origin: String) -> Result<AuthConfig, AuthError> {
        let missing = |what: &str| AuthError::Incomplete { origin: origin.clone(), missing: what.into() };
        let auth_url = self.auth_url.ok_or_else(|| missing("auth_url (OS_AUTH_URL)"))?;
        let method = match self.auth_type.as_str() {
            "password" | "v3password" => {
                if self.username.is_none() && self.user_id.is_none() {
                    return Err(missing("a user name or id (username / OS_USERNAME)"));
                }
                Method::Password {
                    username: self.username,
                    user_id: self.user_id,
                    user_domain: default_domain(self.user_domain),
                    password: Secret::new(self.password.ok_or_else(|| missing("a password (password / OS_PASSWORD)"))?),
                }
            }
            "v3applicationcredential" | "applicationcredential" | "application_credential" => {
                if self.app_id.is_none() && (self.app_name.is_none() || self.username.is_none()) {
                    return Err(missing(
                        "an application credential id (OS_APPLICATION_CREDENTIAL_ID), or its name with the user name",
                    ));
                }
                Method::AppCredential {
                    id: self.app_id,
                    name: self.app_name,
                    username: self.username,
                    user_domain: default_domain(self.user_domain),
                    secret: Secret::new(self.app_secret.ok_or_else(|| {
                        missing("the application credential secret (OS_APPLICATION_CREDENTIAL_SECRET)")
                    })?),
                }
            }
            other => {
                return Err(AuthError::Unsupported {
                    origin,
                    what: format!("auth_type {other} (password and v3applicationcredential are supported)"),
                })
            }
        };
        let scope = if matches!(method, Method::AppCredential { .. }) {
            ScopeWanted::None // an application credential carries its own scope
        } else if self.system_scope.as_deref().is_some_and(|s| !s.is_empty()) {
            if self.system_scope.as_deref() != Some("all") {
                return Err(AuthError::Unsupported { origin, what: "system_scope other than 'all'".into() });
            }
            ScopeWanted::System
        } else if self.project_id.is_some() || self.project_name.is_some() {
            ScopeWanted::Project {
                id: self.project_id,
                name: self.project_name,
                domain: default_domain(self.project_domain),
            }
        } else if self.project_domain.id.is_some() || self.project_domain.name.is_some() {
            ScopeWanted::Domain(self.project_domain)
        } else {
            ScopeWanted::None
        };
        let interface = self.interface.unwrap_or_else(|| "public".into()).trim_end_matches("URL").to_string();
        Ok(AuthConfig {
            auth_url: v3_url(&auth_url),
            method,
            scope,
            region: self.region,
            interface,
            cacert: self.cacert.map(PathBuf::from),
            insecure: self.insecure,
            origin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn os_variables_password_project() {
        let env = env_of(&[
            ("OS_AUTH_URL", "http://127.0.0.1:5000"),
            ("OS_USERNAME", "admin"),
            ("OS_PASSWORD", "s3cret-pw"),
            ("OS_PROJECT_NAME", "admin"),
            ("OS_USER_DOMAIN_NAME", "Default"),
            ("OS_REGION_NAME", "RegionTwo"),
            ("OS_INTERFACE", "internalURL"),
        ]);
        let c = resolve(None, &env).unwrap().unwrap();
        assert_eq!(c.auth_url, "http://127.0.0.1:5000/v3");
        assert_eq!(c.region.as_deref(), Some("RegionTwo"));
        assert_eq!(c.interface, "internal");
        assert!(
            matches!(&c.scope, ScopeWanted::Project { name: Some(n), domain, .. } if n == "admin" && domain.id.as_deref() == Some("default"))
        );
        assert!(!format!("{c:?}").contains("s3cret-pw"), "Debug hides the password");
        assert_eq!(c.secret().expose(), "s3cret-pw");
    }

    #[test]
    fn system_scope_and_application_credentials() {
        let env = env_of(&[
            ("OS_AUTH_URL", "http://k/v3/"),
            ("OS_USERNAME", "admin"),
            ("OS_PASSWORD", "pw"),
            ("OS_SYSTEM_SCOPE", "all"),
        ]);
        assert_eq!(resolve(None, &env).unwrap().unwrap().scope, ScopeWanted::System);
        let env = env_of(&[
            ("OS_AUTH_URL", "http://k/v3"),
            ("OS_APPLICATION_CREDENTIAL_ID", "abc"),
            ("OS_APPLICATION_CREDENTIAL_SECRET", "xyz"),
        ]);
        let c = resolve(None, &env).unwrap().unwrap();
        assert!(matches!(c.method, Method::AppCredential { .. }));
        assert_eq!(c.scope, ScopeWanted::None);
        assert!(resolve(None, &env_of(&[])).unwrap().is_none(), "nothing set: no Keystone");
        let e = resolve(None, &env_of(&[("OS_AUTH_URL", "http://k"), ("OS_USERNAME", "u")])).unwrap_err();
        assert!(e.to_string().contains("password"), "{e}");
    }

    #[test]
    fn clouds_yaml_with_secure_yaml_and_unknown_cloud() {
        let dir = tempfile::tempdir().unwrap();
        let clouds = dir.path().join("clouds.yaml");
        std::fs::write(
            &clouds,
            "clouds:\n  prod:\n    auth:\n      auth_url: http://ks:5000/v3\n      username: admin\n      user_domain_name: Default\n      system_scope: all\n    region_name: R1\n  other:\n    auth: {}\n",
        )
        .unwrap();
        let secure = dir.path().join("secure.yaml");
        std::fs::write(&secure, "clouds:\n  prod:\n    auth:\n      password: from-secure\n").unwrap();
        let (c, s) = (clouds.display().to_string(), secure.display().to_string());
        let env = env_of(&[("OS_CLIENT_CONFIG_FILE", &c), ("OS_CLIENT_SECURE_FILE", &s), ("HOME", "/nonexistent")]);
        let cfg = resolve(Some("prod"), &env).unwrap().unwrap();
        assert_eq!(cfg.secret().expose(), "from-secure");
        assert_eq!(cfg.scope, ScopeWanted::System);
        assert_eq!(cfg.region.as_deref(), Some("R1"));
        assert!(cfg.origin.contains("cloud 'prod'"), "{}", cfg.origin);
        let e = resolve(Some("nope"), &env).unwrap_err().to_string();
        assert!(e.contains("no cloud 'nope'") && e.contains("other, prod") || e.contains("prod, other"), "{e}");
        assert_eq!(cloud_names(&env), vec!["prod".to_string(), "other".to_string()]);
        let env = env_of(&[("HOME", "/nonexistent"), ("OS_CLIENT_CONFIG_FILE", "/nonexistent/clouds.yaml")]);
        let e = resolve(Some("prod"), &env).unwrap_err().to_string();
        assert!(e.contains("no clouds.yaml") && e.contains("/nonexistent/clouds.yaml"), "{e}");
    }
}
