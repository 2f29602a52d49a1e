//! The summary's next steps pasted into a shell on the demo sandbox (#48 item 2): each command is
//! the binary's own and runs with the flags the wizard knew (exit 0, or a refusal it is right to
//! give there), after a LIVE load and after a rehearsal.

use bm2ironic::core::demo::sandbox::Sandbox;
use bm2ironic::core::migrate::next_steps::NO_API;
use bm2ironic::tui::app::Screen;
use bm2ironic::tui::Mode;
use ratatui::crossterm::event::{KeyCode, KeyModifiers};

use crate::common::bm;
use crate::common::wizard::{decide_all, runner, screen_text, through_flavors, WAIT};

const NONE: KeyModifiers = KeyModifiers::NONE;

/// A baremetal nova-compute's nova.conf, for the next steps' `config`.
const NEXT_STEPS_NOVA_CONF: &str = "[DEFAULT]\nhost = bm-compute-1\nmy_ip = 10.0.0.2\n\
compute_driver = nova.virt.baremetal.driver.BareMetalDriver\nrpc_backend = fake\n\n[database]\n\
connection = sqlite:////tmp/nova.sqlite\n\n[keystone_authtoken]\nauth_uri = http://127.0.0.1:5000/v2.0\n\
admin_user = nova\nadmin_password = KsPassw0rd\nadmin_tenant_name = service\n\n[baremetal]\n\
sql_connection = sqlite:////tmp/nova_bm.sqlite\ntftp_root = /srv/tftp\npower_manager = nova.virt.baremetal.ipmi.IPMI\n";

/// Each command of the summary's next steps, pasted into a shell in the sandbox with the wizard's
/// connections: 0, or a refusal it is right to give there (no Keystone for the proxy); a command
/// that asks on a terminal gets the operator's yes (`--yes`); `watch` still watching is fine.
fn run_next_steps(sb: &Sandbox, steps: &[bm2ironic::core::migrate::next_steps::Step]) -> Vec<String> {
    let bin = env!("CARGO_BIN_EXE_bm2ironic");
    let mut ran = vec![];
    for c in steps.iter().filter_map(|s| s.command.as_deref()) {
        let rest = c.strip_prefix("bm2ironic ").unwrap_or_else(|| panic!("not the binary's own command: {c}"));
        let asks = rest.contains("--apply") || rest.starts_with("migrate ") || rest.starts_with("rollback ");
        let line = format!("timeout 5 {bin} {rest}{}", if asks { " --yes" } else { "" });
        let out = std::process::Command::new("bash")
            .args(["-c", &line])
            .current_dir(&sb.dir)
            .env("BM2IRONIC_NOVA_BM_DB", &sb.nova_bm_url)
            .env("BM2IRONIC_IRONIC_DB", &sb.ironic_url)
            .env("BM2IRONIC_NOVA_DB", &sb.nova_url)
            .env("BM2IRONIC_NOVA_API_DB", &sb.nova_api_url)
            .env("BM2IRONIC_LOG_DIR", sb.dir.join("audit"))
            .env("BM2IRONIC_STATE_DIR", sb.dir.join("state"))
            .env_remove("OS_CLOUD")
            .output()
            .unwrap();
        let (code, err) = (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).to_string());
        let fine = code == 0
            || (rest.starts_with("watch ") && code == 124)
            || (rest.starts_with("proxy ") && code == 2 && err.contains("Keystone credentials"))
            // no Ironic API was given to the wizard: the step names the word to replace, and pasted
            // as is it is refused, naming it, with nothing written
            || (rest.contains(NO_API) && code == 2 && err.contains(NO_API) && err.contains("not an http(s) URL"));
        assert!(fine, "`{c}` exited {code}:\n{}\n{err}", String::from_utf8_lossy(&out.stdout));
        ran.push(rest.split(' ').next().unwrap_or_default().to_string());
    }
    ran
}

/// #48 item 2: the summary's next steps run when pasted. After a LIVE load on the sandbox every
/// command runs (before: `flavors --apply` exited 2 for --resource-class, `config --target modern
/// --write-ironic` for --ironic-url), and the instance count is what `hosts` moves.
#[tokio::test(flavor = "multi_thread")]
async fn the_next_steps_of_a_live_load_run_when_pasted() {
    let (mut r, sb, _tmp) = runner(Mode::Live, 120, 40).await;
    let nova_conf = sb.dir.join("nova.conf");
    std::fs::write(&nova_conf, NEXT_STEPS_NOVA_CONF).unwrap();
    r.app.nova_conf = Some(nova_conf.display().to_string());
    r.key(KeyCode::Enter, NONE);
    assert!(r.pump_until(|a| a.screen == Screen::Inventory, WAIT).await);
    r.key(KeyCode::Char('n'), NONE);
    decide_all(&mut r);
    through_flavors(&mut r).await;
    r.type_text("migrate");
    r.key(KeyCode::Enter, NONE);
    assert!(r.pump_until(|a| a.summary.verify.is_some(), WAIT).await, "{:?}", r.app.progress.finished);
    let facts = r.app.summary.facts.clone().expect("facts of the load");
    let steps = bm2ironic::core::migrate::next_steps::next_steps(&facts);
    let text: String = steps.iter().map(|s| format!("{} {:?}\n", s.what, s.command)).collect();
    let run = facts.run_id.clone().unwrap();
    let ran = run_next_steps(&sb, &steps);
    for c in ["flavors", "config", "verify", "hosts", "watch", "proxy", "rollback"] {
        assert!(ran.iter().any(|r| r.ends_with(c) || r == c) || text.contains(c), "{c} missing:\n{text}");
    }
    assert!(text.contains(&format!("rollback --run {run}")), "{text}");
    // the instance count is what `hosts` moved (its own plan)
    let moved = bm(["hosts", "--to", "ironic-compute", "--json"])
        .env("BM2IRONIC_NOVA_BM_DB", &sb.nova_bm_url)
        .env("BM2IRONIC_IRONIC_DB", &sb.ironic_url)
        .env("BM2IRONIC_NOVA_DB", &sb.nova_url)
        .run();
    let v: serde_json::Value = serde_json::from_str(&moved.stdout).unwrap_or_default();
    let n = v["moves"].as_array().map_or(0, Vec::len) + v["unchanged"].as_u64().unwrap_or(0) as usize;
    assert_eq!(facts.instances, n, "{text}\n{}", moved.text());
}

/// #48 item 2: after a rehearsal with unsaved decisions, "Save the decisions (w)" is true on the
/// summary (w there writes them), and the real load it names runs when pasted: the file the wizard
/// wrote, the deploy images, the arch and the resource class.
#[tokio::test(flavor = "multi_thread")]
async fn the_next_steps_of_a_rehearsal_run_when_pasted() {
    let (mut r, sb, _tmp) = runner(Mode::Rehearsal, 120, 40).await;
    r.key(KeyCode::Enter, NONE);
    assert!(r.pump_until(|a| a.screen == Screen::Inventory, WAIT).await);
    r.key(KeyCode::Char('n'), NONE);
    decide_all(&mut r);
    through_flavors(&mut r).await;
    r.key(KeyCode::Enter, NONE);
    assert!(r.pump_until(|a| a.progress.finished.is_some(), WAIT).await);
    r.key(KeyCode::Enter, NONE);
    assert_eq!(r.app.screen, Screen::Summary);
    assert!(screen_text(&mut r).contains("Save the decisions (w, on this screen too)"));
    r.key(KeyCode::Char('w'), NONE);
    assert!(r.pump_until(|a| a.summary.saved_to.is_some(), WAIT).await, "{:?}", r.app.status.toast);
    let saved = r.app.summary.saved_to.clone().unwrap();
    assert!(saved.ends_with("bm2ironic-resolutions.toml") && std::path::Path::new(&saved).is_file(), "{saved}");
    let facts = r.app.summary.facts.clone().unwrap();
    let steps = bm2ironic::core::migrate::next_steps::next_steps(&facts);
    let text: String = steps.iter().map(|s| format!("{} {:?}\n", s.what, s.command)).collect();
    assert!(!text.contains("Save the decisions") && text.contains(&format!("--resolutions {saved}")), "{text}");
    assert!(!text.contains("scripts/"), "{text}");
    let ran = run_next_steps(&sb, &steps);
    assert_eq!(ran, ["migrate", "flavors"], "{text}");
}
