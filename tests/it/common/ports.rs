//! Loopback ports for the servers a test starts (Ironic, a proxy, a fake Glance, a relay): the kernel
//! picks a free one, and a port handed out once is never handed out again in the same run, so two
//! tests running at once (or one test's two servers) never get the same port, whatever the kernel
//! would pick next. Tests name no port numbers of their own.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::Mutex;

static HANDED_OUT: Mutex<Option<HashSet<u16>>> = Mutex::new(None);

/// A loopback TCP port that is free now and was not handed out before in this run.
pub fn port() -> u16 {
    let mut handed = HANDED_OUT.lock().unwrap();
    let handed = handed.get_or_insert_with(HashSet::new);
    for _ in 0..1000 {
        let p = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port");
        if handed.insert(p) {
            return p;
        }
    }
    panic!("no free loopback port that was not handed out already");
}
