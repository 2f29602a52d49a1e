//! Juno's next boot after its takeover (docs/juno.md, "The next boot"): Juno Ironic 2014.2's
//! takeover of an ACTIVE node rewrites `<[pxe] tftp_root>/<node uuid>/config` with `default deploy`
//! and `root={{ ROOT }}` (LP#1421370), so the next reboot starts the deploy ramdisk. `bm2ironic
//! juno-boot` puts it back as Juno's own deploy does at its end (ironic 2014.2
//! `deploy_utils.switch_pxe_config`, BIOS PXE): every `default ...` line becomes `default boot`,
//! every `{{ ROOT }}` becomes `UUID=<root uuid>`, the uuid being the one bm2ironic learned from nova
//! baremetal's config and kept in the node's `extra.bm2ironic_root_uuid` ([`marker::JUNO_ROOT_UUID`]).
//!
//! The text transform ([`switch`]) and the choice of nodes ([`candidates`]) are pure; the files are
//! read and written by the command (`src/cli/cmd/juno_boot.rs`).

use serde_json::Value;

use super::marker;
use crate::core::db::{Db, DbError};

/// Juno's configs are a few hundred bytes; a bigger file is not one of them and is not read.
pub const MAX_CONFIG_BYTES: u64 = 64 * 1024;

/// What [`switch`] makes of one config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Switch {
    /// Juno's form (`default deploy`, `{{ ROOT }}` in the boot label): the switched text.
    Switched(String),
    /// Already `default boot` with no `{{ ROOT }}` left: nothing to do.
    AlreadyBoot,
    /// Not Juno's form: why (the file is left alone).
    NotJunoForm(String),
}

/// Juno's `switch_pxe_config` (BIOS, no iPXE) on `text`, for `root_uuid` (checked as a uuid).
/// Refused: a control character (other than the line ends; CRLF kept as it is), a `default` other
/// than `deploy` or `boot`, more than one `default` line, no `label boot`, a `{{ ROOT }}` count
/// other than one.
pub fn switch(text: &str, root_uuid: &str) -> Switch {
    let bad = |why: &str| Switch::NotJunoForm(why.to_string());
    if uuid::Uuid::parse_str(root_uuid).is_err() || root_uuid.len() != 36 {
        return bad("the node's root uuid is not a uuid");
    }
    for (i, l) in text.split('\n').enumerate() {
        let l = l.strip_suffix('\r').unwrap_or(l);
        if l.chars().any(|c| c.is_control() && c != '\t') {
            return Switch::NotJunoForm(format!("a control character on line {}", i + 1));
        }
    }
    let defaults: Vec<&str> = text.lines().filter(|l| l.starts_with("default ")).collect();
    if defaults.len() != 1 {
        return Switch::NotJunoForm(format!("{} `default` lines, expected one", defaults.len()));
    }
    if !text.lines().any(|l| l.trim_end() == "label boot") {
        return bad("no `label boot`");
    }
    let roots = text.matches("{{ ROOT }}").count();
    match (defaults[0].trim_end(), roots) {
        ("default boot", 0) => return Switch::AlreadyBoot,
        ("default deploy", 1) => {}
        ("default deploy" | "default boot", n) => {
            return Switch::NotJunoForm(format!("{n} `{{{{ ROOT }}}}` placeholders, expected one"))
        }
        _ => return bad("its `default` is neither `deploy` nor `boot`"),
    }
    let root = format!("UUID={root_uuid}");
    let out: String = text
        .split_inclusive('\n')
        .map(|l| {
            let l = l.replace("{{ ROOT }}", &root);
            if l.starts_with("default ") {
                let end = &l[l.trim_end_matches(['\r', '\n']).len()..];
                format!("default boot{end}")
            } else {
                l
            }
        })
        .collect();
    Switch::Switched(out)
}

/// A node whose config the command looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub uuid: String,
    /// `Ok(root uuid)`, or why the node is skipped (not active, no usable uuid).
    pub root: Result<String, String>,
}

/// The nodes of a bm2ironic run (the marker's `run`) with a root uuid, from `(uuid,
/// provision_state, extra)` rows: an active node with a well-formed node and root uuid is a
/// candidate; another is named with why it is skipped. Nodes without the marker are left out.
pub fn candidates(rows: &[(String, Option<String>, Option<String>)]) -> Vec<Candidate> {
    let mut out = Vec::new();
    for (uuid, state, extra) in rows {
        let extra: Value = extra.as_deref().and_then(|e| serde_json::from_str(e).ok()).unwrap_or(Value::Null);
        if marker::run(&extra).is_none() {
            continue;
        }
        let Some(root) = extra.get(marker::JUNO_ROOT_UUID) else { continue };
        let root = match (state.as_deref(), root.as_str()) {
            _ if !is_uuid(uuid) => Err("the node uuid is not a uuid".to_string()),
            (Some("active"), Some(r)) if is_uuid(r) => Ok(r.to_string()),
            (Some("active"), _) => Err(format!("{} is not a uuid", marker::JUNO_ROOT_UUID)),
            (s, _) => Err(format!("provision state {}, not active", s.unwrap_or("none"))),
        };
        out.push(Candidate { uuid: uuid.clone(), root });
    }
    out
}

/// The canonical 36-character form (the node uuid becomes a directory name: nothing else passes).
fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::parse_str(s).is_ok_and(|u| u.hyphenated().to_string() == s.to_ascii_lowercase())
}

/// `(uuid, provision_state, extra)` of the Juno nodes whose `extra` names the root uuid key.
pub async fn read_nodes(db: &Db) -> Result<Vec<(String, Option<String>, Option<String>)>, DbError> {
    db.fetch_map(
        "SELECT uuid, provision_state, extra FROM nodes WHERE extra LIKE ? ORDER BY id",
        vec![format!("%{}%", marker::JUNO_ROOT_UUID).into()],
        |r| Ok((r.string(0)?, r.opt_string(1)?, r.opt_string(2)?)),
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";

    /// Juno 2014.2's pxe_config.template as its takeover renders it (shortened append lines).
    fn juno(nl: &str) -> String {
        [
            "default deploy",
            "",
            "label deploy",
            "kernel /t/n/deploy_kernel",
            "append initrd=/t/n/deploy_ramdisk rootfstype=ramfs selinux=0 text ",
            "ipappend 3",
            "",
            "",
            "label boot",
            "kernel /t/n/kernel",
            "append initrd=/t/n/ramdisk root={{ ROOT }} ro text ",
            "",
        ]
        .join(nl)
    }

    #[test]
    fn switches_as_juno_does_and_only_once() {
        for nl in ["\n", "\r\n"] {
            let Switch::Switched(s) = switch(&juno(nl), ROOT) else { panic!("{nl:?}") };
            let want = juno(nl)
                .replacen("default deploy", "default boot", 1)
                .replace("root={{ ROOT }}", &format!("root=UUID={ROOT}"));
            assert_eq!(s, want);
            assert!(s.starts_with(&format!("default boot{nl}")));
            assert_eq!(switch(&s, ROOT), Switch::AlreadyBoot, "a second run changes nothing");
        }
    }

    #[test]
    fn other_forms_are_named_not_touched() {
        let j = juno("\n");
        let cases = [
            (j.replace("default deploy", "default local"), "neither"),
            (j.replace("default deploy\n", ""), "0 `default` lines"),
            (format!("default deploy\n{j}"), "2 `default` lines"),
            (j.replace("label boot", "label other"), "no `label boot`"),
            (j.replace("root={{ ROOT }}", "root=/dev/sda1"), "0 `{{ ROOT }}`"),
            (j.replace(" ro text", " ro {{ ROOT }}"), "2 `{{ ROOT }}`"),
            (j.replace("selinux=0", "selinux=0 \x1b]0;x\x07"), "control character on line 5"),
            (j.replace("default deploy", "default boot"), "1 `{{ ROOT }}`"),
            (String::new(), "0 `default` lines"),
        ];
        for (text, why) in cases {
            match switch(&text, ROOT) {
                Switch::NotJunoForm(w) => assert!(w.contains(why), "{w} / {why}"),
                other => panic!("{why}: {other:?}"),
            }
        }
        for bad in ["", "not-a-uuid", "{{ ROOT }}", &format!("{ROOT} x")] {
            assert!(matches!(switch(&j, bad), Switch::NotJunoForm(_)), "{bad:?}");
        }
    }

    #[test]
    fn only_active_marked_nodes_with_uuids() {
        let n = |i: u8| format!("bbbbbbbb-0000-4000-8000-0000000000{i:02}");
        let marked = |root: &str| Some(format!(r#"{{"bm2ironic_run": "r1", "bm2ironic_root_uuid": "{root}"}}"#));
        let rows = vec![
            (n(1), Some("active".to_string()), marked(ROOT)),
            (n(2), None, marked(ROOT)),
            (n(3), Some("active".to_string()), marked("../../etc")),
            (n(4), Some("active".to_string()), Some(format!(r#"{{"bm2ironic_root_uuid": "{ROOT}"}}"#))),
            (n(5), Some("active".to_string()), Some(r#"{"bm2ironic_run": "r1"}"#.to_string())),
            ("../x".to_string(), Some("active".to_string()), marked(ROOT)),
            (n(7), Some("active".to_string()), Some("not json".to_string())),
        ];
        let c = candidates(&rows);
        assert_eq!(c.iter().map(|c| c.uuid.as_str()).collect::<Vec<_>>(), [&n(1), &n(2), &n(3), "../x"]);
        assert_eq!(c[0].root, Ok(ROOT.to_string()));
        assert_eq!(c[1].root, Err("provision state none, not active".to_string()));
        assert!(c[2].root.as_ref().unwrap_err().contains("not a uuid"));
        assert!(c[3].root.as_ref().unwrap_err().contains("node uuid"));
    }
}
