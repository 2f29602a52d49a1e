//! What the release archive carries besides the binary, checked on the test build (issue #49): the
//! commit in `--version`, the bash completion, the man page, the proxy's systemd unit. The release
//! build itself (glibc 2.17, the archive, its sum) is scripts/release.sh's, checked by
//! scripts/release-check.sh; the old userland by scripts/release-chroot.sh.

use std::path::Path;
use std::process::Command;

use crate::common::{bm2ironic, skip};

fn stdout_of(args: &[&str], home: &Path) -> String {
    let out = bm2ironic(&home.join("log")).env("HOME", home).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `--version` names the commit it was built from, whether the tree was clean, and the glibc.
#[test]
fn version_names_the_commit_the_tree_and_the_glibc() {
    let home = tempfile::tempdir().unwrap();
    let version = stdout_of(&["--version"], home.path());
    assert!(version.starts_with(&format!("bm2ironic {} (", env!("CARGO_PKG_VERSION"))), "{version}");
    assert!(version.contains("x86_64-unknown-linux-gnu, glibc ") || !cfg!(target_env = "gnu"), "{version}");
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success());
    match head {
        Some(o) => {
            let commit = String::from_utf8_lossy(&o.stdout).trim().to_string();
            assert!(version.contains(&format!("commit {commit}, ")), "HEAD is {commit}: {version}");
            assert!(version.contains("clean tree") || version.contains("dirty tree"), "{version}");
        }
        // a tree without git says so instead of failing the build
        None => {
            assert!(version.contains("commit unknown") || version.contains("not built from a git tree"), "{version}")
        }
    }
}

/// The bash completion, sourced into a bare bash, registers itself for `bm2ironic`; the zsh and fish
/// ones name the commands. Neither prints a word to the audit log.
#[test]
fn completions_load_in_bash() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("bm2ironic.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"], home.path())).unwrap();
    let out = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", "source \"$1\" && complete -p bm2ironic", "bash"])
        .arg(&script)
        .output()
        .unwrap();
    let registered = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && registered.contains("-F _bm2ironic") && registered.trim_end().ends_with(" bm2ironic"),
        "{registered} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for shell in ["zsh", "fish"] {
        let text = stdout_of(&["completions", shell], home.path());
        assert!(text.contains("migrate") && text.contains("juno-boot") && text.contains("nova-bm-db"), "{shell}");
    }
    assert!(!home.path().join("log").exists(), "completions wrote an audit log");
    assert!(!home.path().join(".local").exists(), "completions made a state directory");
}

/// The man pages render with `man -l` (man-db, groff) without a warning: bm2ironic.1 lists the
/// commands, and each command's page (`man-page --dir`) its flags.
#[test]
fn man_pages_render() {
    if Command::new("man").arg("--version").output().is_err() {
        return skip("no `man` here: scripts/packages.sh installs man-db");
    }
    let home = tempfile::tempdir().unwrap();
    let man = |page: &Path| {
        let out = Command::new("man").args(["--warnings", "-l"]).arg(page).env("MANWIDTH", "100").output().unwrap();
        let warnings = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && warnings.trim().is_empty(), "{}: {warnings}", page.display());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let page = home.path().join("printed.1");
    std::fs::write(&page, stdout_of(&["man-page"], home.path())).unwrap();
    let text = man(&page);
    for word in ["NAME", "SYNOPSIS", "bm2ironic-migrate(1)", "bm2ironic-completions(1)", "Exit codes", "commit "] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
    let dir = home.path().join("man1");
    std::fs::create_dir(&dir).unwrap();
    stdout_of(&["man-page", "--dir", dir.to_str().unwrap()], home.path());
    assert_eq!(std::fs::read(dir.join("bm2ironic.1")).unwrap(), std::fs::read(&page).unwrap());
    let migrate = man(&dir.join("bm2ironic-migrate.1"));
    assert!(migrate.contains("--rehearse") && migrate.contains("--nova-bm-db"), "{migrate}");
    assert!(dir.join("bm2ironic-completions.1").exists() && !dir.join("bm2ironic-man-page.1").exists());
}

/// The systemd unit the archive carries is the one docs/proxy.md shows (one of them cannot go stale).
#[test]
fn proxy_unit_is_the_one_the_docs_show() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let unit = std::fs::read_to_string(root.join("dist/systemd/bm2ironic-proxy.service")).unwrap();
    let doc = std::fs::read_to_string(root.join("docs/proxy.md")).unwrap();
    let shown = doc.split("```ini\n").nth(1).and_then(|s| s.split("```").next()).expect("docs/proxy.md's ini block");
    assert_eq!(shown, unit, "docs/proxy.md and dist/systemd/bm2ironic-proxy.service differ");
    assert!(unit.contains("ExecStart=/usr/local/bin/bm2ironic ") && unit.contains("WantedBy=multi-user.target"));
}
