//! What passes between the layers of a request: a refusal as Nova words it ([`Reply`]), who is
//! calling ([`Caller`], put in the request by the policy), and what the access log and the version
//! headers need ([`Logged`], [`Served`], put in the response).

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use super::nova;
use super::version::Version;
use crate::core::db::secret::Secret;

/// A refused or failed request: a status and a Nova fault body.
pub struct Reply {
    pub status: u16,
    pub body: Value,
    pub www_authenticate: Option<String>,
}

impl Reply {
    /// An error reply; its message goes through the one redactor (core/redact.rs): it may name the
    /// Ironic URL, and a caller must never read a password in it.
    pub fn fault(status: u16, message: impl AsRef<str>) -> Reply {
        let message = crate::core::redact::redact(message.as_ref());
        Reply { status, body: nova::fault(status, &message), www_authenticate: None }
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
pub struct Caller {
    /// the caller's token (`--auth keystone`), forwarded to Ironic in forward mode
    pub token: Option<Secret>,
    /// which nodes Ironic shows this caller, as a key of the nova_bm id index: `proxy` when Ironic
    /// sees the proxy's token, else the caller's scope (`system`, `project:<id>`, ...)
    pub view: String,
}

/// What the access log names (put in the response's extensions).
#[derive(Clone)]
pub struct Logged {
    pub user: String,
    pub scope: String,
}

/// The microversion a request was served at (put in the response's extensions; absent under
/// `/v2/{tenant_id}`, where Nova ignores the version headers, and before the version is read).
#[derive(Clone, Copy)]
pub struct Served(pub Version);
