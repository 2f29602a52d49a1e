//! What nova.conf's `[keystone_authtoken]` says about Keystone and Nova's service user, in both
//! spellings: Juno's (`identity_uri` or `auth_host`/`auth_port`/`auth_protocol`, `auth_uri`,
//! `admin_user`, `admin_password`, `admin_tenant_name`) and keystoneauth's (`auth_url`,
//! `www_authenticate_uri`, `username`, `password`, `project_name`, domains, `region_name`).

use crate::core::config_gen::model::ServiceUser;
use crate::core::db::secret::Secret;
use crate::core::settings::conf_file::IniFile;

const SECTION: &str = "keystone_authtoken";

/// Keystone as nova.conf knows it.
#[derive(Debug, Clone, Default)]
pub struct Identity {
    /// the admin (identity) endpoint without a version: `http://keystone:35357`
    pub admin_base: Option<String>,
    /// the public endpoint users are sent to (`auth_uri` / `www_authenticate_uri`)
    pub public_uri: Option<String>,
    pub user: Option<String>,
    pub password: Option<Secret>,
    pub project: Option<String>,
    pub user_domain: Option<String>,
    pub project_domain: Option<String>,
    pub region: Option<String>,
}

/// `http://k:5000/v2.0/` -> `http://k:5000`.
fn unversioned(url: &str) -> String {
    let u = url.trim().trim_end_matches('/');
    for v in ["/v2.0", "/v3", "/v3.0", "/v2"] {
        if let Some(b) = u.strip_suffix(v) {
            return b.to_string();
        }
    }
    u.to_string()
}

impl Identity {
    pub fn of(nova: &IniFile) -> Identity {
        let g = |k: &str| nova.get_exact(SECTION, k).map(str::trim).filter(|v| !v.is_empty()).map(str::to_string);
        let from_parts = g("auth_host").map(|h| {
            let proto = g("auth_protocol").unwrap_or_else(|| "https".into());
            let port = g("auth_port").unwrap_or_else(|| "35357".into());
            format!("{proto}://{h}:{port}")
        });
        let public = g("www_authenticate_uri").or_else(|| g("auth_uri"));
        let admin_base = g("identity_uri")
            .or_else(|| g("auth_url"))
            .or(from_parts)
            .or_else(|| public.clone())
            .map(|u| unversioned(&u));
        Identity {
            admin_base,
            public_uri: public.map(|u| unversioned(&u)),
            user: g("username").or_else(|| g("admin_user")),
            password: g("password").or_else(|| g("admin_password")).map(Secret::new),
            project: g("project_name").or_else(|| g("admin_tenant_name")),
            user_domain: g("user_domain_name"),
            project_domain: g("project_domain_name"),
            region: g("region_name"),
        }
    }

    /// The service user Ironic's clients use: the one given, else Nova's own.
    pub fn service_user(&self, given: Option<&ServiceUser>) -> Option<ServiceUser> {
        given.cloned().or_else(|| match (&self.user, &self.password) {
            (Some(u), Some(p)) => Some(ServiceUser { username: u.clone(), password: p.clone() }),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn juno_and_keystoneauth_spellings() {
        let juno = "[keystone_authtoken]\nauth_host = 10.0.0.5\nauth_port = 35357\nauth_protocol = http\nauth_uri = http://10.0.0.5:5000/v2.0\nadmin_user = nova\nadmin_password = pw\nadmin_tenant_name = service\n";
        let i = Identity::of(&IniFile::parse(Path::new("n"), juno).unwrap());
        assert_eq!(i.admin_base.as_deref(), Some("http://10.0.0.5:35357"));
        assert_eq!(i.public_uri.as_deref(), Some("http://10.0.0.5:5000"));
        assert_eq!(i.user.as_deref(), Some("nova"));
        assert_eq!(i.project.as_deref(), Some("service"));
        let modern = "[keystone_authtoken]\nauth_url = http://k:5000/v3/\nusername = nova\npassword = pw\nproject_name = service\nuser_domain_name = Default\nregion_name = R1\n";
        let i = Identity::of(&IniFile::parse(Path::new("n"), modern).unwrap());
        assert_eq!(i.admin_base.as_deref(), Some("http://k:5000"));
        assert_eq!(i.region.as_deref(), Some("R1"));
        assert_eq!(i.service_user(None).unwrap().password.expose(), "pw");
    }
}
