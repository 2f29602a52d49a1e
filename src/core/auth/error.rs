//! What reading the Keystone credentials (`config`) or opening a session (`keystone`) can fail
//! with, in words an operator can act on.

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("no clouds.yaml found for cloud '{cloud}' (searched {searched}): create one, set OS_CLIENT_CONFIG_FILE, or use the OS_* variables")]
    NoCloudsFile { cloud: String, searched: String },
    #[error("no cloud '{cloud}' in {path} (clouds there: {known}): check --os-cloud / OS_CLOUD")]
    UnknownCloud { cloud: String, path: String, known: String },
    #[error("cannot read {path}: {reason}")]
    CloudsFile { path: String, reason: String },
    #[error("{origin}: missing {missing}")]
    Incomplete { origin: String, missing: String },
    #[error("{origin}: unsupported {what}")]
    Unsupported { origin: String, what: String },
    #[error("OS_CACERT / cacert {path}: {reason}")]
    CaCert { path: String, reason: String },
    #[error("cannot reach Keystone at {url}: {reason}: check auth_url (OS_AUTH_URL) and that Keystone is running")]
    Unreachable { url: String, reason: String },
    #[error("Keystone at {url} refused the credentials of {who} from {origin}{}: check the password or secret (OS_PASSWORD, secure.yaml) and the user's role assignments", if *system_only { " for system scope" } else { "" })]
    Refused { who: String, origin: String, url: String, system_only: bool },
    #[error("Keystone {url}: HTTP {status}: {message}")]
    Keystone { url: String, status: u16, message: String },
    #[error("the Keystone catalog has no {service_type} endpoint for interface {interface} in region {region} (catalog: {found}): register Ironic in Keystone, set region_name / OS_REGION_NAME and interface / OS_INTERFACE, or give --ironic-url")]
    NoEndpoint { service_type: String, interface: String, region: String, found: String },
}
