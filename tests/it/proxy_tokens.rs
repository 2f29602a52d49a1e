//! The proxy's validations of callers' tokens under a flood, against the real test Keystone
//! (scripts/keystone.sh) and a real Ironic behind it. Between the proxy and Keystone
//! runs a counting TCP relay (a real network hop, on 127.0.0.1: every byte is passed on as it
//! came), which notes each validation (`GET /v3/auth/tokens` with its `X-Subject-Token`) and how
//! many are in flight at once.
//!
//! - 200 connections repeating one bogus token for a few seconds: Keystone sees a handful of
//!   validations of it (it saw 7,016 in 5 s before: refused tokens were not cached, and the same
//!   token was validated by every request at once), every one of them gets 401, and 20 legitimate
//!   callers, each with a fresh token validated meanwhile, all get their list;
//! - 24 different bogus tokens at once: Keystone never sees more than the proxy's bound (8)
//!   validations at a time, and every request waits its turn and gets its 401 (none is 503); asked
//!   again, none of them reaches Keystone.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::ironic::{start_ironic, IronicOptions};
use crate::common::keystone::{self, ADMIN_PASSWORD, KEYSTONE_URL};
use crate::common::proxy::{migrated, start_proxy};
use crate::common::{server_env, IRONIC_VENV};

/// What the relay saw going to Keystone.
#[derive(Default)]
struct Seen {
    /// the X-Subject-Token of every validation, in order
    subjects: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
}

impl Seen {
    fn validations_of(&self, token: &str) -> usize {
        self.subjects.lock().unwrap().iter().filter(|s| *s == token).count()
    }
    fn total(&self) -> usize {
        self.subjects.lock().unwrap().len()
    }
}

/// A relay on 127.0.0.1 (an ephemeral port) to `upstream`; its `/v3` URL.
async fn relay(upstream: SocketAddr, seen: Arc<Seen>) -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v3", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(server) = TcpStream::connect(upstream).await else { return };
                let (mut cr, mut cw) = client.into_split();
                let (mut sr, mut sw) = server.into_split();
                // one request at a time on a connection (HTTP/1.1 without pipelining): a validation
                // is in flight from its request head until the first byte of the answer
                let waiting = Arc::new(AtomicBool::new(false));
                let (seen2, waiting2) = (seen.clone(), waiting.clone());
                let up = async move {
                    let mut buf = vec![0u8; 16384];
                    let mut pending: Vec<u8> = Vec::new();
                    let mut body_left = 0usize;
                    loop {
                        let n = match cr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        note_requests(&buf[..n], &mut pending, &mut body_left, &seen2, &waiting2);
                        if sw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = sw.shutdown().await;
                };
                let down = async move {
                    let mut buf = vec![0u8; 16384];
                    loop {
                        let n = match sr.read(&mut buf).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        if waiting.swap(false, Ordering::SeqCst) {
                            seen.in_flight.fetch_sub(1, Ordering::SeqCst);
                        }
                        if cw.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                    let _ = cw.shutdown().await;
                };
                tokio::join!(up, down);
            });
        }
    });
    (url, task)
}

/// Finds the request heads in the bytes going up (skipping bodies by their Content-Length) and
/// notes each validation. `pending`: bytes not yet taken; `body_left`: body bytes still to skip.
fn note_requests(chunk: &[u8], pending: &mut Vec<u8>, body_left: &mut usize, seen: &Seen, waiting: &AtomicBool) {
    pending.extend_from_slice(chunk);
    loop {
        let skip = (*body_left).min(pending.len());
        pending.drain(..skip);
        *body_left -= skip;
        if *body_left > 0 {
            return;
        }
        let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") else { return };
        let head = String::from_utf8_lossy(&pending[..end]).to_string();
        pending.drain(..end + 4);
        let header = |name: &str| {
            head.lines().find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim().eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
        };
        *body_left = header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        if head.starts_with("GET ") && head.lines().next().is_some_and(|l| l.contains("/auth/tokens")) {
            seen.subjects.lock().unwrap().push(header("x-subject-token").unwrap_or_default());
            let now = seen.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most_in_flight.fetch_max(now, Ordering::SeqCst);
            waiting.store(true, Ordering::SeqCst);
        }
    }
}

/// The status of a list with `token`.
async fn list_status(client: &reqwest::Client, base: &str, token: &str) -> u16 {
    match client.get(format!("{base}/v2.1/os-baremetal-nodes")).header("X-Auth-Token", token).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_bogus_token_repeated_costs_keystone_a_handful_of_validations() {
    let Some(venv) = server_env(IRONIC_VENV) else { return };
    let Some(ks) = server_env(KEYSTONE_URL) else { return };
    let Some((_src, tgt)) = migrated("pxt", 3).await else { return };
    let ironic = start_ironic(IronicOptions {
        keystone: Some(ks.clone()),
        sync_interval: Some(3600),
        ..IronicOptions::new(Path::new(&venv), &tgt.admin_url)
    })
    .await;
    let upstream: SocketAddr = ks.trim_start_matches("http://").trim_end_matches("/v3").parse().unwrap();
    let seen = Arc::new(Seen::default());
    let (relay_url, relay_task) = relay(upstream, seen.clone()).await;

    let dir = tempfile::tempdir().unwrap();
    let clouds = keystone::proxy_clouds_yaml(dir.path(), &relay_url);
    // service mode: Ironic sees the proxy's token, so only the proxy validates callers' tokens
    let proxy = start_proxy(
        &["--auth", "keystone", "--ironic-token-mode", "service", "--os-cloud", "proxy", "--ironic-url", &ironic.base],
        &[("OS_CLIENT_CONFIG_FILE", clouds.to_str().unwrap())],
    )
    .await;
    // fresh tokens of legitimate callers, each validated for the first time during the flood
    let mut legit = Vec::new();
    for _ in 0..20 {
        legit.push(keystone::token(&ks, "admin", ADMIN_PASSWORD, json!({"system": {"all": true}})).await);
    }
    let bogus = "gAAAAABbogus-token-repeated-by-every-connection-of-the-flood".to_string();

    // the flood: 200 connections (a client each), each repeating the bogus token, bounded in count and time
    let flood_for = Duration::from_secs(4);
    let started = Instant::now();
    let mut flood = Vec::new();
    for _ in 0..200 {
        let (base, bogus) = (proxy.base.clone(), bogus.clone());
        flood.push(tokio::spawn(async move {
            let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
            let mut statuses = Vec::new();
            while started.elapsed() < flood_for && statuses.len() < 400 {
                statuses.push(list_status(&client, &base, &bogus).await);
            }
            statuses
        }));
    }
    // meanwhile the legitimate callers, one after the other, from half a second in
    tokio::time::sleep(Duration::from_millis(500)).await;
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    let mut legit_statuses = Vec::new();
    for t in &legit {
        legit_statuses.push(list_status(&client, &proxy.base, t).await);
    }
    let mut bogus_statuses = Vec::new();
    for f in flood {
        bogus_statuses.extend(f.await.unwrap());
    }
    let requests = bogus_statuses.len();
    let refused = bogus_statuses.iter().filter(|s| **s == 401).count();
    let bogus_validations = seen.validations_of(&bogus);
    eprintln!(
        "flood: {requests} requests with the bogus token in {:?}, {refused} got 401; Keystone validated it {bogus_validations} time(s); legitimate: {legit_statuses:?}",
        started.elapsed()
    );
    assert!(requests >= 200, "every connection asked at least once: {requests}");
    assert_eq!(refused, requests, "every bogus request is 401 (none 503): {:?}", {
        let mut other: Vec<u16> = bogus_statuses.iter().copied().filter(|s| *s != 401).collect();
        other.dedup();
        other
    });
    assert!(bogus_validations <= 3, "Keystone validated the one bogus token {bogus_validations} times");
    assert_eq!(legit_statuses, vec![200; legit.len()], "every legitimate caller got its list during the flood");
    for t in &legit {
        assert_eq!(seen.validations_of(t), 1, "each fresh legitimate token was validated once");
    }

    // many different bogus tokens at once: at most 8 validations in flight at Keystone, every
    // request queued and answered 401; the same tokens again reach Keystone no more
    seen.most_in_flight.store(0, Ordering::SeqCst);
    let before = seen.total();
    let tokens: Vec<String> = (0..24).map(|k| format!("gAAAAABbogus-distinct-{k:03}")).collect();
    let ask_all = |tokens: Vec<String>| {
        let base = proxy.base.clone();
        async move {
            let asks = tokens.into_iter().map(|t| {
                let base = base.clone();
                tokio::spawn(async move {
                    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
                    list_status(&client, &base, &t).await
                })
            });
            let mut out = Vec::new();
            for a in asks.collect::<Vec<_>>() {
                out.push(a.await.unwrap());
            }
            out
        }
    };
    let statuses = ask_all(tokens.clone()).await;
    assert_eq!(statuses, vec![401; tokens.len()], "queued for Keystone, not refused with 503");
    let most = seen.most_in_flight.load(Ordering::SeqCst);
    assert!(most <= 8, "{most} validations in flight at Keystone at once (the bound is 8)");
    assert_eq!(seen.total() - before, tokens.len(), "one validation per distinct token");
    let statuses = ask_all(tokens.clone()).await;
    assert_eq!(statuses, vec![401; tokens.len()]);
    assert_eq!(seen.total() - before, tokens.len(), "refused tokens are remembered: asked again, Keystone is not");
    let out = proxy.output();
    for t in legit.iter().chain([&bogus]) {
        assert!(!out.contains(t.as_str()), "a token reached the proxy's output");
    }
    relay_task.abort();
}
