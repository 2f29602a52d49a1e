//! `bm2ironic proxy` against real parts: a real Ironic (PyPI, scripts/ironic.sh) holding nodes that
//! `migrate` wrote, the real test Keystone (scripts/keystone.sh), and the real client
//! python-novaclient 7.1.2 (scripts/novaclient.sh, venv in BM2IRONIC_TEST_NOVACLIENT_VENV).
//!
//! `proxy_noauth_bodies_mutations_and_robustness`: Ironic with noauth. The list and
//! every show match DOMAIN.md section 8 field by field, computed here from Ironic's own answers;
//! missing properties are 0; an unknown node is a Nova 404; mutations are 404 naming the Ironic
//! command (400 with `--mutations-status 400`), and Ironic is unchanged; every node by its nova_bm
//! integer id (the nested marker and Juno's flat one), an unknown integer a Nova 404, digits that
//! are a node's name that node, a stale index entry not answered, a duplicated id 409;
//! microversions 2.1 to 2.35 answer, 2.36 and later (and `latest`) get Nova's 404, a malformed
//! version 400 and one out of range 406, `/v2/{tenant_id}` ignores them; `/healthz` says whether
//! Ironic answers (503 for a closed port and, within its 2 s bound, a hung one); path tricks, a
//! malformed request line and oversized headers are 4xx; a slow client gets 408 while others are served;
//! Ironic refusing connections is 502 at once; a hung Ironic is 504 at the deadline and the bound
//! on concurrent calls answers 503 beyond it (the hung Ironic is a loopback socket that accepts and
//! never answers: the one stand-in here, since a real Ironic cannot be made to hang on purpose);
//! SIGTERM stops the proxy cleanly.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::ironic::{start_ironic, IronicOptions};
use crate::common::proxy::{
    call, call_with, expected, get, get_at, gone, ironic_view, migrated, raw, sorted_interfaces, start_proxy,
};
use crate::common::{server_env, IRONIC_VENV};

#[tokio::test(flavor = "multi_thread")]
async fn proxy_noauth_bodies_mutations_and_robustness() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some((_src, tgt)) = migrated("pxn", 6).await else { return };
    let uuids: Vec<String> =
        tgt.rows("SELECT uuid FROM nodes ORDER BY id").await.into_iter().map(|r| r[0].clone()).collect();
    assert_eq!(uuids.len(), 6);
    // hostile-but-legal data: one node without any properties, one with only some (upstream: 500)
    tgt.exec(&format!("UPDATE nodes SET properties = '{{}}' WHERE uuid = '{}'", uuids[0])).await;
    tgt.exec(&format!("UPDATE nodes SET properties = '{{\"cpus\": 4}}' WHERE uuid = '{}'", uuids[1])).await;
    // the 5th node carries the flat marker of a Juno target (and nova_bm id 77); the 2nd an Ironic
    // name made of digits
    tgt.exec(&format!(
        "UPDATE nodes SET extra = '{{\"bm2ironic_nova_bm_id\": 77, \"bm2ironic_run\": \"r\"}}' WHERE uuid = '{}'",
        uuids[4]
    ))
    .await;
    tgt.exec(&format!("UPDATE nodes SET name = '4242' WHERE uuid = '{}'", uuids[1])).await;
    let ironic = start_ironic(IronicOptions {
        sync_interval: Some(3600),
        ..IronicOptions::new(Path::new(&venv), &tgt.admin_url)
    })
    .await;
    let proxy = start_proxy(&["--auth", "noauth", "--ironic-url", &ironic.base, "--header-timeout", "2s"], &[]).await;
    let (inodes, macs) = ironic_view(&ironic.base, None).await;
    assert_eq!(inodes.len(), 6);

    // the list, under both prefixes, field by field
    for prefix in ["/v2/some-tenant", "/v2.1"] {
        let (s, body) = get(&format!("{}{prefix}/os-baremetal-nodes", proxy.base), None).await;
        assert_eq!(s, 200, "{body}");
        let want: Vec<Value> = inodes.iter().map(|n| expected(n, None)).collect();
        assert_eq!(body, json!({ "nodes": want }), "{prefix}");
    }
    // every show, with the ports' MACs and the instance
    let mut with_instance = 0;
    for n in &inodes {
        let u = n["uuid"].as_str().unwrap();
        let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{u}", proxy.base), None).await;
        assert_eq!(s, 200, "{body}");
        let mut m = macs.get(u).cloned().unwrap_or_default();
        m.sort();
        assert_eq!(m.len(), 2, "two ports each");
        assert_eq!(sorted_interfaces(body.clone()), json!({ "node": expected(n, Some(&m)) }), "{u}");
        with_instance += body["node"]["instance_uuid"].is_string() as usize;
    }
    assert_eq!(with_instance, 2, "nodes 3 and 6 hold an instance");

    // nova baremetal's integer ids: every node by the nova_bm id its marker carries (either form),
    // with its interfaces, that id as `id` and the Ironic uuid beside it
    let mut nova_bm_ids = Vec::new();
    for n in &inodes {
        let u = n["uuid"].as_str().unwrap();
        let nb =
            n["extra"]["bm2ironic"]["nova_bm_id"].as_i64().or(n["extra"]["bm2ironic_nova_bm_id"].as_i64()).unwrap();
        nova_bm_ids.push(nb);
        let (s, body) = get(&format!("{}/v2/t/os-baremetal-nodes/{nb}", proxy.base), None).await;
        assert_eq!(s, 200, "{nb}: {body}");
        let mut m = macs[u].clone();
        m.sort();
        let mut want = expected(n, Some(&m));
        want["id"] = json!(nb);
        assert_eq!(sorted_interfaces(body), json!({ "node": want }), "nova_bm id {nb}");
    }
    assert_eq!(nova_bm_ids, vec![1, 2, 3, 4, 77, 6], "the 5th node by its flat marker");
    // an integer no node carries: Nova's 404 (5 is now 77)
    for nb in ["5", "999", "0"] {
        let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{nb}", proxy.base), None).await;
        assert_eq!(
            (s, body),
            (404, json!({"itemNotFound": {"code": 404, "message": format!("Node {nb} could not be found.")}}))
        );
    }
    // digits that are an Ironic node's name and no nova_bm id: that node, by its name
    let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/4242", proxy.base), None).await;
    assert_eq!((s, &body["node"]["id"], &body["node"]["uuid"]), (200, &json!(uuids[1]), &json!(uuids[1])), "{body}");

    // microversions: 2.1 to 2.35 answer, and say which; 2.36 and later (latest too) are Nova's 404
    let l = format!("{}/v2.1/os-baremetal-nodes", proxy.base);
    let sh = format!("{l}/{}", uuids[2]);
    let (s, _, v) = get_at(&l, None, ("X-OpenStack-Nova-API-Version", "2.35")).await;
    assert_eq!((s, v.as_str()), (200, "2.35"));
    let (s, b, v) = get_at(&format!("{l}/3"), None, ("OpenStack-API-Version", "compute 2.20")).await;
    assert_eq!((s, v.as_str(), &b["node"]["id"]), (200, "2.20", &json!(3)), "{b}");
    let (s, _, v) = call_with(reqwest::Method::GET, &l, None, None, &[]).await;
    assert_eq!((s, v.as_str()), (200, "2.1"), "no header: 2.1");
    for (h, val, served) in [
        ("X-OpenStack-Nova-API-Version", "2.36", "2.36"),
        ("OpenStack-API-Version", "compute 2.36", "2.36"),
        ("X-OpenStack-Nova-API-Version", "latest", "2.104"),
        ("OpenStack-API-Version", "volume 3.0, compute 2.104", "2.104"),
    ] {
        for url in [&l, &sh, &format!("{l}/3"), &format!("{}/v2.1/t/os-baremetal-nodes", proxy.base)] {
            let (s, b, v) = get_at(url, None, (h, val)).await;
            assert_eq!((s, b, v.as_str()), (404, gone(), served), "{h}: {val} {url}");
        }
    }
    let (s, b, _) = call_with(
        reqwest::Method::POST,
        &l,
        None,
        Some(json!({"node": {}})),
        &[("X-OpenStack-Nova-API-Version", "2.36")],
    )
    .await;
    assert_eq!((s, b), (404, gone()), "a mutation at 2.36: the API is gone, not refused");
    // the standard header wins over the legacy one; /v2/{tenant_id} ignores both (legacy v2)
    let (s, _, v) = call_with(
        reqwest::Method::GET,
        &l,
        None,
        None,
        &[("OpenStack-API-Version", "compute 2.1"), ("X-OpenStack-Nova-API-Version", "2.36")],
    )
    .await;
    assert_eq!((s, v.as_str()), (200, "2.1"));
    let (s, _, _) =
        get_at(&format!("{}/v2/t/os-baremetal-nodes", proxy.base), None, ("OpenStack-API-Version", "compute 2.50"))
            .await;
    assert_eq!(s, 200, "legacy v2 ignores the version headers");
    // malformed: 400; out of Nova's range: 406 (Nova's words)
    for (h, val) in [("X-OpenStack-Nova-API-Version", "2.x"), ("OpenStack-API-Version", "compute 2.01")] {
        let (s, b, _) = get_at(&l, None, (h, val)).await;
        let bad = val.trim_start_matches("compute ");
        assert_eq!(
            (s, b),
            (
                400,
                json!({"badRequest": {"code": 400, "message": format!("API Version String {bad} is of invalid format. Must be of format MajorNum.MinorNum.")}})
            )
        );
    }
    for val in ["3.0", "2.0", "2.105"] {
        let (s, b, _) = get_at(&sh, None, ("X-OpenStack-Nova-API-Version", val)).await;
        assert_eq!(
            (s, b),
            (
                406,
                json!({"computeFault": {"code": 406, "message": format!("Version {val} is not supported by the API. Minimum is 2.1 and maximum is 2.104.")}})
            )
        );
    }
    // the version document offers the microversions that have the API
    let (s, b) = get(&format!("{}/v2.1", proxy.base), None).await;
    assert_eq!((s, &b["version"]["version"], &b["version"]["min_version"]), (200, &json!("2.35"), &json!("2.1")));

    // /healthz: Ironic reachable
    let (s, b) = get(&format!("{}/healthz", proxy.base), None).await;
    assert_eq!((s, b), (200, json!({"status": "ok", "ironic": "reachable"})));
    let (_, b0) = get(&format!("{}/v2/t/os-baremetal-nodes/{}", proxy.base, uuids[0]), None).await;
    assert_eq!(
        (&b0["node"]["cpus"], &b0["node"]["memory_mb"], &b0["node"]["disk_gb"]),
        (&json!(0), &json!(0), &json!(0))
    );
    let (_, b1) = get(&format!("{}/v2.1/os-baremetal-nodes/{}", proxy.base, uuids[1]), None).await;
    assert_eq!((&b1["node"]["cpus"], &b1["node"]["memory_mb"]), (&json!(4), &json!(0)));

    // an unknown node
    let unknown = "00000000-0000-4000-8000-00000000beef";
    let (s, body) = get(&format!("{}/v2.1/os-baremetal-nodes/{unknown}", proxy.base), None).await;
    assert_eq!(
        (s, body),
        (404, json!({"itemNotFound": {"code": 404, "message": format!("Node {unknown} could not be found.")}}))
    );

    // mutations: 404 naming the Ironic command, nothing changed in Ironic
    let u = &uuids[2];
    let cases = [
        (
            reqwest::Method::POST,
            "/v2.1/os-baremetal-nodes".to_string(),
            Some(json!({"node": {"cpus": 1}})),
            "openstack baremetal node create",
        ),
        (reqwest::Method::DELETE, format!("/v2.1/os-baremetal-nodes/{u}"), None, "openstack baremetal node delete"),
        (
            reqwest::Method::POST,
            format!("/v2/t/os-baremetal-nodes/{u}/action"),
            Some(json!({"add_interface": {"address": "52:54:00:00:00:99"}})),
            "openstack baremetal port create",
        ),
        (
            reqwest::Method::POST,
            format!("/v2.1/os-baremetal-nodes/{u}/action"),
            Some(json!({"remove_interface": {"address": "52:54:00:00:00:99"}})),
            "openstack baremetal port delete",
        ),
    ];
    for (m, path, body, command) in &cases {
        let (s, b) = call(m.clone(), &format!("{}{path}", proxy.base), None, body.clone()).await;
        assert_eq!(s, 404, "{m} {path}: {b}");
        assert!(b["itemNotFound"]["message"].as_str().unwrap().contains(command), "{b}");
    }
    let (after, after_macs) = ironic_view(&ironic.base, None).await;
    assert_eq!(after.len(), 6, "no node created or deleted");
    assert_eq!(after_macs.values().map(Vec::len).sum::<usize>(), 12, "no port created or deleted");

    // path tricks, wrong methods, garbage, oversized heads: 4xx, never 5xx
    let addr = proxy.addr.clone();
    for path in [
        "/v2.1/os-baremetal-nodes/..%2F..%2Fv1%2Fnodes".to_string(),
        format!("/v2.1/os-baremetal-nodes/{u}%2Fstates"),
        "/v2.1/os-baremetal-nodes/../../healthz".to_string(),
        "/v2.1/os-baremetal-nodes/%2e%2e".to_string(),
        "/v2.1//os-baremetal-nodes".to_string(),
    ] {
        let r = raw(&addr, format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes());
        assert!(r.starts_with("HTTP/1.1 400"), "{path}: {r}");
        assert!(r.contains("badRequest"), "{r}");
    }
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes/a%20b", proxy.base), None).await;
    assert_eq!(s, 404, "an id Ironic could not hold");
    let (s, b) = call(reqwest::Method::PUT, &format!("{}/v2.1/os-baremetal-nodes/{u}", proxy.base), None, None).await;
    assert_eq!(s, 405, "{b}");
    let (s, _) = get(&format!("{}/v2.1/servers", proxy.base), None).await;
    assert_eq!(s, 404);
    let r = raw(&addr, b"GARBAGE\r\n\r\n");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    let big = format!("GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(70 * 1024));
    let r = raw(&addr, big.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431"), "{}", &r[..r.len().min(200)]);
    let started = Instant::now();
    let huge =
        format!("GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\nX-Big: {}\r\n\r\n", "a".repeat(1024 * 1024));
    let r = raw(&addr, huge.as_bytes());
    assert!(r.starts_with("HTTP/1.1 431") || r.starts_with("[read error"), "{}", &r[..r.len().min(200)]);
    assert!(!r.contains(" 500 ") && started.elapsed() < Duration::from_secs(10));

    // a slow client (slowloris): 408 after the header deadline (2 s), others served meanwhile
    let slow = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let started = Instant::now();
        s.write_all(b"GET /v2.1/os-baremetal-nodes HTTP/1.1\r\nHost: x\r\n").unwrap();
        let mut out = Vec::new();
        for _ in 0..10 {
            if s.write_all(b"X-A: b\r\n").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
            let mut buf = [0u8; 512];
            s.set_nonblocking(true).unwrap();
            if let Ok(n) = s.read(&mut buf) {
                out.extend_from_slice(&buf[..n]);
                if n == 0 || !out.is_empty() {
                    break;
                }
            }
            s.set_nonblocking(false).unwrap();
        }
        s.set_nonblocking(false).unwrap();
        let _ = s.read_to_end(&mut out);
        (String::from_utf8_lossy(&out).to_string(), started.elapsed())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes", proxy.base), None).await;
    assert_eq!(s, 200, "served while a slow client dribbles");
    let (r, took) = slow.join().unwrap();
    assert!(r.starts_with("HTTP/1.1 408") && r.contains("requestTimeout"), "{r}");
    assert!(took < Duration::from_secs(5), "{took:?}");

    // the 6th node now also says nova_bm id 77: a proxy whose index is new finds both and does
    // not choose (409); the first proxy, whose index still says 6 is the 6th node, checks the node
    // and does not answer it for 6 any more
    tgt.exec(&format!(
        "UPDATE nodes SET extra = '{{\"bm2ironic\": {{\"nova_bm_id\": 77}}}}' WHERE uuid = '{}'",
        uuids[5]
    ))
    .await;
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes/6", proxy.base), None).await;
    assert_eq!(s, 404, "a stale index entry is not answered: {b}");

    // --mutations-status 400 (later Nova's answer)
    let p400 = start_proxy(&["--auth", "noauth", "--ironic-url", &ironic.base, "--mutations-status", "400"], &[]).await;
    let (s, b) =
        call(reqwest::Method::POST, &format!("{}/v2.1/os-baremetal-nodes", p400.base), None, Some(json!({}))).await;
    assert_eq!(s, 400, "{b}");
    assert!(b["badRequest"]["message"].as_str().unwrap().contains("openstack baremetal node create"), "{b}");
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes", p400.base), None).await;
    assert_eq!(s, 200);
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes/77", p400.base), None).await;
    assert_eq!(s, 409, "{b}");
    let m = b["conflictingRequest"]["message"].as_str().unwrap();
    assert!(m.contains(&uuids[4]) && m.contains(&uuids[5]), "{m}");

    // Ironic refusing connections: 502 at once
    // (port 1, tcpmux: nothing listens there, and no server of another test binding port 0 can
    // be given it, as an ephemeral port freed here could be)
    let closed_url = "http://127.0.0.1:1".to_string();
    let down = start_proxy(&["--auth", "noauth", "--ironic-url", &closed_url], &[]).await;
    let started = Instant::now();
    let (s, b) = get(&format!("{}/v2.1/os-baremetal-nodes", down.base), None).await;
    assert_eq!(s, 502, "{b}");
    assert!(b["computeFault"]["message"].as_str().unwrap().contains("not reachable"), "{b}");
    let (s, _) = get(&format!("{}/v2.1/os-baremetal-nodes/{u}", down.base), None).await;
    assert_eq!(s, 502);
    // /healthz says so (a load balancer takes the proxy out of rotation)
    let (s, b) = get(&format!("{}/healthz", down.base), None).await;
    assert_eq!((s, &b["status"]), (503, &json!("degraded")), "{b}");
    assert!(b["ironic"].as_str().unwrap().starts_with("unreachable: "), "{b}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());

    // a hung Ironic (stand-in: a loopback socket that accepts and never answers): 504 at the
    // deadline; with 2 calls allowed at once, the 3rd and 4th wait and get 503 at the same deadline
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let hung_url = format!("http://{}", hung.local_addr().unwrap());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = accepted.clone();
    let held = tokio::spawn(async move {
        let mut conns = Vec::new();
        while let Ok((c, _)) = hung.accept().await {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            conns.push(c);
        }
    });
    let slow_p = start_proxy(
        &["--auth", "noauth", "--ironic-url", &hung_url, "--ironic-timeout", "2s", "--max-concurrent", "2"],
        &[],
    )
    .await;
    let before = accepted.load(std::sync::atomic::Ordering::SeqCst);
    let started = Instant::now();
    let url = format!("{}/v2.1/os-baremetal-nodes", slow_p.base);
    let calls: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn({
                let u = url.clone();
                async move { get(&u, None).await }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let probe = Instant::now();
    let (s, b) = get(&format!("{}/healthz", slow_p.base), None).await;
    assert_eq!((s, &b["status"]), (503, &json!("degraded")), "the proxy itself answers while Ironic hangs: {b}");
    assert!(b["ironic"].as_str().unwrap().contains("did not answer within 2 s"), "{b}");
    assert!(probe.elapsed() < Duration::from_secs(4), "/healthz is bounded: {:?}", probe.elapsed());
    let mut statuses = Vec::new();
    for c in calls {
        let (s, b) = c.await.unwrap();
        if s == 504 {
            assert!(b["computeFault"]["message"].as_str().unwrap().contains("did not answer"), "{b}");
        }
        statuses.push(s);
    }
    statuses.sort();
    assert_eq!(statuses, vec![503, 503, 504, 504], "two slots: two calls hang until the deadline, two are turned away");
    // the two calls in their slots (and at most one /healthz probe): never more at once
    let opened = accepted.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert!(opened <= 3, "{opened} connections to Ironic");
    let took = started.elapsed();
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(6), "{took:?}");
    held.abort();

    // SIGTERM: a clean stop; the access log has the requests, never a 5xx from a path trick
    let mut proxy = proxy;
    let (code, took) = proxy.terminate();
    assert_eq!(code, Some(0), "{}", proxy.output());
    assert!(took < Duration::from_secs(5), "{took:?}");
    let out = proxy.output();
    assert!(out.contains("stopped"), "{out}");
    assert!(out.contains("status=404") && out.contains("status=408") && out.contains("status=200"), "{out}");
    let _ = &proxy.logs;
}
