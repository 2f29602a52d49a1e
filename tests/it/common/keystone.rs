//! The test Keystone (scripts/keystone.sh start; its URL in BM2IRONIC_TEST_KEYSTONE_URL): tokens, a
//! revocation, a region's `baremetal` endpoint (or any service's, in any Keystone with v3), and a
//! command without the caller's OS_* variables.

use serde_json::{json, Value};

/// The test Keystone's URL (scripts/keystone.sh start).
pub const KEYSTONE_URL: &str = "BM2IRONIC_TEST_KEYSTONE_URL";
/// The password of `admin` (and of Ironic's service user's seeding) in the test Keystone.
pub const ADMIN_PASSWORD: &str = "adminpass";

/// A Keystone token (the X-Subject-Token) for `user` with `scope`.
pub async fn token(keystone: &str, user: &str, password: &str, scope: Value) -> String {
    let body = json!({"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": user, "domain": {"id": "default"}, "password": password}}}, "scope": scope}});
    let r = reqwest::Client::new().post(format!("{keystone}/auth/tokens")).json(&body).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 201, "token for {user}");
    r.headers()["x-subject-token"].to_str().unwrap().to_string()
}

/// A system-scoped token of `admin`.
pub async fn admin_token(keystone: &str) -> String {
    token(keystone, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await
}

/// Registers `url` as the public `baremetal` endpoint of `region` (created if missing).
pub async fn register_baremetal(keystone: &str, region: &str, url: &str) {
    register_endpoint(keystone, &admin_token(keystone).await, region, ("baremetal", "ironic"), url).await;
}

/// Registers `url` as the public endpoint of the service of type `kind` (named `name` when it has
/// to be created) in `region` (created if missing), with an admin's `token`, through Keystone's v3
/// API at `keystone`.
pub async fn register_endpoint(keystone: &str, token: &str, region: &str, (kind, name): (&str, &str), url: &str) {
    let c = reqwest::Client::new();
    let call = |m: reqwest::Method, p: &str| c.request(m, format!("{keystone}{p}")).header("X-Auth-Token", token);
    let _ = call(reqwest::Method::POST, "/regions").json(&json!({"region": {"id": region}})).send().await.unwrap();
    let svcs: Value =
        call(reqwest::Method::GET, &format!("/services?type={kind}")).send().await.unwrap().json().await.unwrap();
    let sid = match svcs["services"].as_array().and_then(|a| a.first()) {
        Some(s) => s["id"].as_str().unwrap().to_string(),
        None => {
            let v: Value = call(reqwest::Method::POST, "/services")
                .json(&json!({"service": {"name": name, "type": kind}}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            v["service"]["id"].as_str().unwrap().to_string()
        }
    };
    let r = call(reqwest::Method::POST, "/endpoints")
        .json(&json!({"endpoint": {"service_id": sid, "interface": "public", "url": url, "region_id": region}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201, "{kind} endpoint in {region}");
}

/// Revokes `token` in Keystone.
pub async fn revoke(keystone: &str, token: &str) {
    let admin = admin_token(keystone).await;
    let r = reqwest::Client::new()
        .delete(format!("{keystone}/auth/tokens"))
        .header("X-Auth-Token", admin)
        .header("X-Subject-Token", token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 204, "revoke");
}

/// `dir`/clouds.yaml with one cloud, `proxy`: the test Keystone's admin at `auth_url`, system-scoped
/// (what a proxy with `--os-cloud proxy` authenticates as); its path.
pub fn proxy_clouds_yaml(dir: &std::path::Path, auth_url: &str) -> std::path::PathBuf {
    let clouds = dir.join("clouds.yaml");
    std::fs::write(
        &clouds,
        format!("clouds:\n  proxy:\n    auth:\n      auth_url: {auth_url}\n      username: admin\n      password: {ADMIN_PASSWORD}\n      user_domain_name: Default\n      system_scope: all\n"),
    )
    .unwrap();
    clouds
}

/// Every OS_* variable of the caller removed (the tests give their own).
pub fn clear_os(c: &mut assert_cmd::Command) -> &mut assert_cmd::Command {
    for (k, _) in std::env::vars() {
        if k.starts_with("OS_") {
            c.env_remove(k);
        }
    }
    c
}
