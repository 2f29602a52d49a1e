//! A minimal read-only client of Ironic's REST API: what `verify` asks to prove that the API can
//! read every row we wrote (a row the database accepts can still break the API).

use std::time::Duration;

use serde_json::Value;

use crate::core::db::secret::Secret;
use crate::core::ironic::target::TargetKind;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("cannot reach the Ironic API at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    #[error("Ironic API {url}: HTTP {status}: {body}")]
    Status { url: String, status: u16, body: String },
}

pub struct IronicApi {
    base: String,
    client: reqwest::Client,
    token: Option<Secret>,
    kind: TargetKind,
}

impl IronicApi {
    pub fn new(base: &str, token: Option<Secret>, kind: TargetKind) -> Result<IronicApi, ApiError> {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ApiError::Unreachable { url: base.into(), reason: e.to_string() })?;
        let base = base.trim_end_matches('/').trim_end_matches("/v1").to_string();
        Ok(IronicApi { base, client, token, kind })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub async fn get(&self, path: &str) -> Result<Value, ApiError> {
        let url = format!("{}{path}", self.base);
        let mut rq = self.client.get(&url);
        if self.kind == TargetKind::Modern {
            rq = rq.header("X-OpenStack-Ironic-API-Version", "latest");
        }
        if let Some(t) = &self.token {
            rq = rq.header("X-Auth-Token", t.expose());
        }
        let resp = rq.send().await.map_err(|e| ApiError::Unreachable { url: url.clone(), reason: e.to_string() })?;
        let status = resp.status();
        let body = resp.text().await.map_err(|e| ApiError::Unreachable { url: url.clone(), reason: e.to_string() })?;
        if !status.is_success() {
            let msg: String = body.chars().take(300).collect();
            return Err(ApiError::Status { url, status: status.as_u16(), body: msg });
        }
        serde_json::from_str(&body).map_err(|e| ApiError::Status {
            url,
            status: status.as_u16(),
            body: format!("not JSON: {e}"),
        })
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
}
