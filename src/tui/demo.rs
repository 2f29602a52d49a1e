//! The demo's simulated Ironic takeover: after a load, writes what a conductor and nova-compute
//! would log into the sandbox's log files (oslo.log format), with one takeover error for one node,
//! so the log pane has something real to follow.

use std::io::Write;
use std::path::PathBuf;

use crate::core::migrate::plan::Plan;

pub fn simulate_takeover(plan: &Plan, logs: &[(String, PathBuf)]) {
    let now = chrono::Utc::now().naive_utc();
    let ts = |ms: i64| (now + chrono::Duration::milliseconds(ms)).format("%Y-%m-%d %H:%M:%S%.3f").to_string();
    let nodes: Vec<_> = plan.rows_to_write().map(|(_, r)| r.node).collect();
    let failing =
        nodes.iter().find(|n| n.provision_state.as_deref() == Some("active") && !n.maintenance).map(|n| n.uuid.clone());
    for (name, path) in logs {
        let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) else { continue };
        let mut out = String::new();
        if name.contains("ironic") {
            out.push_str(&format!("{} 4242 INFO ironic.conductor.manager [-] Conductor bm2ironic-demo registered with drivers ipmi, manual-management\n", ts(0)));
            for (i, n) in nodes.iter().enumerate() {
                let t = ts(10 * i as i64 + 20);
                if Some(&n.uuid) == failing.as_ref() {
                    out.push_str(&format!("{t} 4242 ERROR ironic.conductor.manager [req-5b1d demo] Failed to take over node {}: Failed to prepare to deploy: deploy image file:///k not found\n", n.uuid));
                    out.push_str(&format!(
                        "{t} 4242 ERROR ironic.conductor.manager Traceback (most recent call last):\n"
                    ));
                    out.push_str(&format!("{t} 4242 ERROR ironic.conductor.manager   File \"ironic/conductor/manager.py\", line 3542, in _do_takeover\n"));
                    out.push_str(&format!("{t} 4242 ERROR ironic.conductor.manager ironic.common.exception.ImageNotFound: Image file:///k could not be found.\n"));
                } else {
                    out.push_str(&format!("{t} 4242 INFO ironic.conductor.manager [req-5b1d demo] Successfully took over node {} (provision state {})\n", n.uuid, n.provision_state.as_deref().unwrap_or("none")));
                }
            }
        } else {
            out.push_str(&format!(
                "{} 3131 INFO nova.virt.ironic.driver [-] Connected to Ironic API at http://127.0.0.1:6385\n",
                ts(500)
            ));
            out.push_str(&format!("{} 3131 WARNING nova.compute.resource_tracker [-] No compute node record for host bm-compute-1: creating\n", ts(520)));
            out.push_str(&format!("{} 3131 INFO nova.compute.resource_tracker [-] Total usable vcpus: 0, total allocated vcpus: 0; {} bare metal nodes reported\n", ts(600), nodes.len()));
        }
        let _ = f.write_all(out.as_bytes());
    }
}
