//! `bm2ironic proxy` behind Keystone, against real parts: a real Ironic (PyPI, scripts/ironic.sh) holding nodes that
//! `migrate` wrote, the real test Keystone (scripts/keystone.sh), and the real client
//! python-novaclient 7.1.2 (scripts/novaclient.sh, venv in BM2IRONIC_TEST_NOVACLIENT_VENV).
//!
//! `proxy_keystone_policy_forwarding_and_novaclient`: Ironic behind Keystone. An admin
//! passes, a member gets 403, a bad, missing or revoked token 401; the caller's token reaches
//! Ironic (a project-scoped admin sees only its project's node, a system-scoped admin all of
//! them), and so does the nova_bm id index (a scope's own); a tenant id in the path other than the
//! token's project is Nova's 400 (a system token's project is None), checked in Nova's order;
//! `--ironic-token-mode service` shows all nodes to the project-scoped admin; a token revoked at
//! Keystone is refused at once with `--token-cache-time 0`, accepted from the cache within
//! `--token-cache-time 3` and refused after it; novaclient 7.1.2 lists, shows and lists interfaces
//! (by uuid and by nova_bm id), and `baremetal-node-create` gets the 404; no token reaches the
//! proxy's output or the audit log.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::ironic::{start_ironic, IronicOptions};
use crate::common::keystone::{self, ADMIN_PASSWORD, KEYSTONE_URL};
use crate::common::proxy::{
    call, demo_tok_for, get, get_at, gone, ironic_view, migrated, novaclient, start_proxy, NOVACLIENT_VENV,
};
use crate::common::{read_logs, server_env, IRONIC_VENV};

#[tokio::test(flavor = "multi_thread")]
async fn proxy_keystone_policy_forwarding_and_novaclient() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(ks) = server_env(KEYSTONE_URL) else { return };
    let Some(nova_venv) = server_env(NOVACLIENT_VENV) else { return };
    let Some((_src, tgt)) = migrated("pxk", 3).await else { return };
    let uuids: Vec<String> =
        tgt.rows("SELECT uuid FROM nodes ORDER BY id").await.into_iter().map(|r| r[0].clone()).collect();
    // project admin owns the first node: a project-scoped admin token sees that one only
    let proj_tok = keystone::token(
        &ks,
        "admin",
        ADMIN_PASSWORD,
        json!({"project": {"name": "admin", "domain": {"id": "default"}}}),
    )
    .await;
    let project_of = |tok: String| {
        let ks = ks.clone();
        async move {
            let r: Value = reqwest::Client::new()
                .get(format!("{ks}/auth/tokens"))
                .header("X-Auth-Token", &tok)
                .header("X-Subject-Token", &tok)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            r["token"]["project"]["id"].as_str().unwrap().to_string()
        }
    };
    let proj_id = project_of(proj_tok.clone()).await;
    tgt.exec(&format!("UPDATE nodes SET owner = '{proj_id}' WHERE uuid = '{}'", uuids[0])).await;
    let ironic = start_ironic(IronicOptions {
        keystone: Some(ks.clone()),
        sync_interval: Some(3600),
        ..IronicOptions::new(Path::new(&venv), &tgt.admin_url)
    })
    .await;

    let dir = tempfile::tempdir().unwrap();
    let clouds = keystone::proxy_clouds_yaml(dir.path(), &ks);
    let cl = clouds.to_str().unwrap();
    // forward mode, tokens not cached: a revoked token is refused at once
    let fwd = start_proxy(
        &["--auth", "keystone", "--os-cloud", "proxy", "--ironic-url", &ironic.base, "--token-cache-time", "0"],
        &[("OS_CLIENT_CONFIG_FILE", cl)],
    )
    .await;
    let list = |p: &str| format!("{p}/v2.1/os-baremetal-nodes");
    let ids = |b: &Value| -> Vec<String> {
        b["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap().to_string()).collect()
    };

    let sys_tok = keystone::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let demo_tok =
        keystone::token(&ks, "demo", "demopass", json!({"project": {"name": "demo", "domain": {"id": "default"}}}))
            .await;
    // system-scoped admin: every node
    let (s, b) = get(&list(&fwd.base), Some(&sys_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), uuids);
    // project-scoped admin: passes the policy, and Ironic, seeing ITS token, shows its node only
    let (s, b) = get(&list(&fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), vec![uuids[0].clone()], "the caller's token reached Ironic");
    let (s, b) = get(&format!("{}/{}", list(&fwd.base), uuids[1]), Some(&proj_tok)).await;
    assert_eq!(s, 404, "Ironic hides the other project's nodes from it: {b}");
    let (s, b) = get(&format!("{}/{}", list(&fwd.base), uuids[1]), Some(&sys_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["node"]["interfaces"].as_array().unwrap().len(), 2);
    // by nova_bm id: each scope has its own index, built with its own token (nova_bm ids 1 to 3)
    let (s, b) = get(&format!("{}/2", list(&fwd.base)), Some(&sys_tok)).await;
    assert_eq!((s, &b["node"]["id"], &b["node"]["uuid"]), (200, &json!(2), &json!(uuids[1])), "{b}");
    let (s, b) = get(&format!("{}/1", list(&fwd.base)), Some(&proj_tok)).await;
    assert_eq!((s, &b["node"]["uuid"]), (200, &json!(uuids[0])), "{b}");
    let (s, b) = get(&format!("{}/2", list(&fwd.base)), Some(&proj_tok)).await;
    assert_eq!(s, 404, "not the project's node: {b}");

    // a tenant id in the path must be the token's project (Nova's 400 and words); a system-scoped
    // token has no project (Nova compares with None); /v2.1 without a tenant id is not checked
    let demo_id = project_of(demo_tok_for(&ks).await).await;
    let (s, b) = get(&format!("{}/v2/{proj_id}/os-baremetal-nodes", fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = get(&format!("{}/v2.1/{proj_id}/os-baremetal-nodes/1", fwd.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    for (path, tok, ctx) in [
        (format!("/v2/{demo_id}/os-baremetal-nodes"), &proj_tok, proj_id.as_str()),
        (format!("/v2.1/{demo_id}/os-baremetal-nodes/{}", uuids[0]), &proj_tok, proj_id.as_str()),
        (format!("/v2/{proj_id}/os-baremetal-nodes"), &sys_tok, "None"),
    ] {
        let pid = path.split('/').nth(2).unwrap().to_string();
        let (s, b) = get(&format!("{}{path}", fwd.base), Some(tok)).await;
        assert_eq!(
            (s, b),
            (
                400,
                json!({"badRequest": {"code": 400, "message": format!("Malformed request URL: URL's project_id '{pid}' doesn't match Context's project_id '{ctx}'")}})
            ),
            "{path}"
        );
    }
    // a member: 403 (Nova's body), and no call reaches Ironic for it
    let (s, b) = get(&list(&fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 403, "{b}");
    assert_eq!(b["forbidden"]["code"], 403, "{b}");
    // Nova's order: the token (401), the version header (400/406), the tenant id (400), the
    // microversion's 404, then the role (403)
    let (s, _) = get(&format!("{}/v2/{demo_id}/os-baremetal-nodes", fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 403, "its own project: the role decides");
    let (s, _) = get(&format!("{}/v2/{proj_id}/os-baremetal-nodes", fwd.base), Some(&demo_tok)).await;
    assert_eq!(s, 400, "the tenant id before the role");
    let (s, b, _) = get_at(&list(&fwd.base), Some(&demo_tok), ("X-OpenStack-Nova-API-Version", "2.36")).await;
    assert_eq!((s, b), (404, gone()), "the microversion's 404 before the role");
    let (s, _, _) = get_at(&list(&fwd.base), Some("gAAAAABnot-a-token"), ("X-OpenStack-Nova-API-Version", "2.x")).await;
    assert_eq!(s, 401, "the token before the version header");
    let (s, _, _) = get_at(&list(&fwd.base), Some(&sys_tok), ("X-OpenStack-Nova-API-Version", "2.x")).await;
    assert_eq!(s, 400);
    let (s, _) = call(reqwest::Method::POST, &list(&fwd.base), Some(&demo_tok), Some(json!({}))).await;
    assert_eq!(s, 403, "the policy comes before the mutation's answer");
    // no token, a bad token, a revoked token: 401
    let (s, b) = get(&list(&fwd.base), None).await;
    assert_eq!(s, 401, "{b}");
    let (s, _) = get(&list(&fwd.base), Some("gAAAAABnot-a-token")).await;
    assert_eq!(s, 401);
    let revoked = keystone::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let (s, _) = get(&list(&fwd.base), Some(&revoked)).await;
    assert_eq!(s, 200, "valid before the revocation");
    keystone::revoke(&ks, &revoked).await;
    let (s, b) = get(&list(&fwd.base), Some(&revoked)).await;
    assert_eq!(s, 401, "revoked: {b}");

    // service mode: the proxy's own system token, so the project-scoped admin sees every node;
    // tokens cached 15 s (room for a loaded machine: 6 s was once too short in CI)
    let svc = start_proxy(
        &[
            "--auth",
            "keystone",
            "--ironic-token-mode",
            "service",
            "--os-cloud",
            "proxy",
            "--ironic-url",
            &ironic.base,
            "--token-cache-time",
            "15",
        ],
        &[("OS_CLIENT_CONFIG_FILE", cl)],
    )
    .await;
    let (s, b) = get(&list(&svc.base), Some(&proj_tok)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b), uuids);
    let (s, _) = get(&list(&svc.base), Some(&demo_tok)).await;
    assert_eq!(s, 403);

    // the token cache: a token revoked at Keystone is still accepted from the cache within the
    // cache time (15 s after its validation), and refused after it. (Service mode: the caller's
    // token goes nowhere else, so the proxy's cache alone decides.)
    let cached = keystone::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await;
    let (s, _) = get(&list(&svc.base), Some(&cached)).await;
    let validated = Instant::now();
    assert_eq!(s, 200, "valid: validated by Keystone, and cached");
    keystone::revoke(&ks, &cached).await;
    let (s, b) = get(&list(&fwd.base), Some(&cached)).await;
    assert_eq!(s, 401, "revoked: refused where tokens are not cached: {b}");
    let (s, b) = get(&list(&svc.base), Some(&cached)).await;
    assert!(
        validated.elapsed() < Duration::from_millis(14_500),
        "too slow to see the cache: {:?}",
        validated.elapsed()
    );
    assert_eq!(s, 200, "revoked, but accepted from the cache within its time: {b}");
    tokio::time::sleep(Duration::from_millis(15_200).saturating_sub(validated.elapsed())).await;
    let (s, b) = get(&list(&svc.base), Some(&cached)).await;
    assert_eq!(s, 401, "revoked, and refused once the cache time is over: {b}");

    // the real client: python-novaclient 7.1.2, project-scoped admin (as operators had it)
    let nova = |endpoint: &str, args: &[&str]| {
        let out = novaclient(Path::new(&nova_venv), &ks, endpoint, args);
        (Some(out.code), out.text())
    };
    let (code, o) = nova(&svc.base, &["baremetal-node-list"]);
    println!("$ nova baremetal-node-list\n{o}");
    assert_eq!(code, Some(0), "{o}");
    for u in &uuids {
        assert!(o.contains(u.as_str()), "{u} listed: {o}");
    }
    assert!(o.contains("IRONIC MANAGED"), "{o}");
    let (code, o) = nova(&svc.base, &["baremetal-node-show", &uuids[2]]);
    println!("$ nova baremetal-node-show {}\n{o}", uuids[2]);
    assert_eq!(code, Some(0), "{o}");
    let (_, macs) = ironic_view(&ironic.base, Some(&sys_tok)).await;
    assert!(o.contains(&uuids[2]) && o.contains("instance_uuid"), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    let (code, o) = nova(&svc.base, &["baremetal-interface-list", &uuids[2]]);
    println!("$ nova baremetal-interface-list {}\n{o}", uuids[2]);
    assert_eq!(code, Some(0), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    // the nova_bm integer id, as the scripts of nova baremetal used it: interface-list sends it as
    // is (GET .../os-baremetal-nodes/3); 7.1.2's node-show resolves a non-uuid in the client, so
    // its manager's get() stands for the show older clients sent
    let (code, o) = nova(&svc.base, &["baremetal-interface-list", "3"]);
    println!("$ nova baremetal-interface-list 3\n{o}");
    assert_eq!(code, Some(0), "{o}");
    for m in &macs[&uuids[2]] {
        assert!(o.contains(m.as_str()), "{m}: {o}");
    }
    // a script in the novaclient venv's Python, against the service proxy: (exit code, what it said)
    let python = |script: &str| {
        let out = Command::new(Path::new(&nova_venv).join("bin/python"))
            .args(["-c", script, &format!("{}/v2.1", svc.base)])
            .env("OS_AUTH_URL", &ks)
            .env("OS_PASSWORD", ADMIN_PASSWORD)
            .env("PYTHONWARNINGS", "ignore")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let show3 = r#"
import os, sys
from keystoneauth1 import loading, session
from novaclient import client
from novaclient.v2.contrib import baremetal
auth = loading.get_plugin_loader('password').load_from_options(auth_url=os.environ['OS_AUTH_URL'],
    username='admin', password=os.environ['OS_PASSWORD'], project_name='admin',
    user_domain_name='Default', project_domain_name='Default')
nc = client.Client('2.1', session=session.Session(auth=auth), endpoint_override=sys.argv[1])
n = baremetal.BareMetalNodeManager(nc).get(3)
print(n.id, n.uuid, sorted(i['address'] for i in n.interfaces))
"#;
    let (_, o) = python(show3);
    let mut m3 = macs[&uuids[2]].clone();
    m3.sort();
    assert_eq!(o.trim(), format!("3 {} ['{}', '{}']", uuids[2], m3[0], m3[1]), "{o}");
    // novaclient 7.1.2 no longer has `baremetal-node-create` (only list, show and interface-list
    // are left; the command is an "invalid choice"): its own HTTP client sends the
    // POST the old command sent, and gets the 404 as a NotFound naming the Ironic command
    let script = r#"
import os, sys
from keystoneauth1 import loading, session
from novaclient import client, exceptions
auth = loading.get_plugin_loader('password').load_from_options(auth_url=os.environ['OS_AUTH_URL'],
    username='admin', password=os.environ['OS_PASSWORD'], project_name='admin',
    user_domain_name='Default', project_domain_name='Default')
nc = client.Client('2.1', session=session.Session(auth=auth), endpoint_override=sys.argv[1])
try:
    nc.client.post('/os-baremetal-nodes', body={'node': {'service_host': 'h1', 'cpus': 1,
        'memory_mb': 512, 'local_gb': 10, 'prov_mac_address': '52:54:00:00:00:aa'}})
    print('created')
except exceptions.NotFound as e:
    print('NotFound:', e)
    sys.exit(3)
"#;
    let (code, o) = python(script);
    assert_eq!(code, Some(3), "{o}");
    assert!(o.contains("NotFound:") && o.contains("openstack baremetal node create") && o.contains("HTTP 404"), "{o}");
    let (code, o) = nova(&svc.base, &["baremetal-node-create", "h1", "1", "512", "10", "52:54:00:00:00:aa"]);
    assert!(
        code != Some(0) && (o.contains("invalid choice") || o.contains("not a valid subcommand")),
        "7.1.2 has no create command: {o}"
    );
    // and through the forwarding proxy the same client sees its project's node only
    let (code, o) = nova(&fwd.base, &["baremetal-node-list"]);
    assert_eq!(code, Some(0), "{o}");
    assert!(o.contains(&uuids[0]) && !o.contains(&uuids[1]), "{o}");

    // no token in the proxies' output or audit logs
    let mut seen = fwd.output() + &svc.output();
    for p in [&fwd, &svc] {
        seen += &read_logs(&p.logs);
    }
    assert!(seen.contains("status=403") && seen.contains("user=demo"), "{seen}");
    for t in [&sys_tok, &proj_tok, &demo_tok, &revoked, &cached] {
        assert!(!seen.contains(t.as_str()), "a token leaked into the proxy's log");
    }
    assert!(!seen.contains(ADMIN_PASSWORD), "the password leaked");
}
