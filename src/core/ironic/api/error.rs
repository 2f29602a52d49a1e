//! What a call to Ironic's API can fail with, and Ironic's JSON error bodies
//! (`{"error_message": "{\"faultstring\": ...}"}`) turned into one line an operator can act on.

use serde_json::Value;

use crate::core::auth::AuthError;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the Ironic API at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Ironic API {url}: HTTP {status}: {body}")]
    Status { url: String, status: u16, body: String },
    #[error("the Ironic API at {url} asks for authentication (HTTP 401) and no credentials were given: use --os-cloud NAME (clouds.yaml) or the OS_* variables (OS_AUTH_URL, OS_USERNAME, OS_PASSWORD, ...)")]
    NoCredentials { url: String },
    #[error("the Ironic API at {url} refused the token (HTTP 401){}: check the credentials (--os-cloud / OS_*) or BM2IRONIC_IRONIC_TOKEN", if *renewed { " even after a new one was asked for" } else { "" })]
    TokenRefused { url: String, renewed: bool },
    #[error("the Ironic API at {url} refused {what} (HTTP 403: {message}): the token's role or scope does not allow it; an admin token with system scope (system_scope: all / OS_SYSTEM_SCOPE=all) is needed")]
    Forbidden { url: String, what: String, message: String },
    #[error("the Ironic API at {url} speaks API versions {min} to {max}; {needed}")]
    TooOld { url: String, min: String, max: String, needed: String },
    #[error("the Ironic API at {url} has no API versions (its root document names only v1: Ironic Juno, 2014.2, or older); {needed}. A Juno Ironic is loaded through its database: --via db")]
    Unversioned { url: String, needed: String },
    #[error("the Ironic API URL {url} {reason}: give the endpoint alone, as in http://ironic.example:6385")]
    BadUrl { url: String, reason: String },
    #[error(transparent)]
    Auth(#[from] AuthError),
}

impl ApiError {
    /// The HTTP status Ironic answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            ApiError::Status { status, .. } => Some(*status),
            ApiError::NoCredentials { .. } | ApiError::TokenRefused { .. } => Some(401),
            ApiError::Forbidden { .. } => Some(403),
            _ => None,
        }
    }
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }
    /// Ironic's own words (the faultstring) for a status error, else the whole message.
    pub fn message(&self) -> String {
        match self {
            ApiError::Status { body, .. } => body.clone(),
            e => e.to_string(),
        }
    }
}

/// Ironic's faultstring from an error body (the body itself, shortened, when it has none).
pub fn fault(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let inner = v.get("error_message").cloned().unwrap_or(Value::Null);
    // error_message is a JSON document inside a string (or, in some releases, an object)
    let inner = match inner {
        Value::String(s) => serde_json::from_str::<Value>(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    let text = inner
        .get("faultstring")
        .and_then(|f| f.as_str())
        .map(String::from)
        .or_else(|| inner.as_str().map(String::from))
        .or_else(|| v.get("title").and_then(|t| t.as_str()).map(String::from))
        .unwrap_or_else(|| body.chars().take(300).collect());
    text.trim().to_string()
}

impl crate::core::kind::HasKind for ApiError {
    /// An Ironic URL that is not an endpoint is the operator's; the rest (unreachable, refused,
    /// an answer that is not Ironic's) is the world's.
    fn kind(&self) -> crate::core::kind::Kind {
        match self {
            ApiError::BadUrl { .. } => crate::core::kind::Kind::Usage,
            _ => crate::core::kind::Kind::Runtime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faultstrings() {
        let body = r#"{"error_message": "{\"faultstring\": \"Node 123 is locked by host c1, please retry after the current operation is completed.\", \"debuginfo\": null}"}"#;
        assert_eq!(
            fault(body),
            "Node 123 is locked by host c1, please retry after the current operation is completed."
        );
        assert_eq!(fault(r#"{"error_message": {"faultstring": "x"}}"#), "x");
        assert_eq!(fault("<html>502</html>"), "<html>502</html>");
        let e = ApiError::Status { url: "u".into(), status: 404, body: "Node x could not be found.".into() };
        assert!(e.is_not_found());
        assert_eq!(e.message(), "Node x could not be found.");
    }
}
