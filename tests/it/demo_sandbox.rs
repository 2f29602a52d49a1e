//! Where `demo` builds its sandbox (issue #50 item 7). Before: the default was the predictable
//! `/tmp/bm2ironic-demo-<pid>`, any directory holding a `.bm2ironic-demo` file was taken for an
//! earlier sandbox whoever owned it, and its files were written through whatever links were there:
//! as root, `demo --dir` on a 0777 directory of nobody's with that file and a dangling
//! `deploy.kernel -> <elsewhere>/victim-created` exited 0 and created a root-owned `victim-created`.
//! Now: a new directory by `mkdtemp` (0700); an existing one only when it is the user's own and no
//! one else can write it; every file created new, never through a link.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::common::{bm, skip, Outcome};

const MARKER: &str = ".bm2ironic-demo";
const NOBODY: u32 = 65534;

/// `dir` made to look like an earlier sandbox, with `deploy.kernel` a dangling link to
/// `<victim_dir>/victim-created`: the victim's path.
fn plant(dir: &Path, victim_dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::create_dir_all(victim_dir).unwrap();
    std::fs::write(dir.join(MARKER), "planted\n").unwrap();
    let victim = victim_dir.join("victim-created");
    std::os::unix::fs::symlink(&victim, dir.join("deploy.kernel")).unwrap();
    victim
}

fn demo(dir: &Path) -> Outcome {
    bm(["demo", "--no-tui", "--dir"]).arg(dir).run()
}

fn me() -> u32 {
    // SAFETY: geteuid has no preconditions
    unsafe { libc::geteuid() }
}

#[test]
fn a_planted_sandbox_of_another_user_is_refused_and_its_link_not_followed() {
    if me() != 0 {
        skip("planting a directory of nobody's (uid 65534) needs root to chown it");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let planted = tmp.path().join("planted");
    let victim = plant(&planted, &tmp.path().join("elsewhere"));
    for p in [planted.join(MARKER), planted.join("deploy.kernel"), planted.clone()] {
        std::os::unix::fs::lchown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = demo(&planted);
    assert!(!victim.exists(), "the planted link was followed:\n{}", out.text());
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.stderr.contains("not to you") && out.stderr.contains("--dir"), "{}", out.text());
    // nothing written in it either
    let names: Vec<_> = std::fs::read_dir(&planted).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_sandbox_others_can_write_is_refused_with_the_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let shared = tmp.path().join("shared");
    let victim = plant(&shared, &tmp.path().join("elsewhere"));
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let out = demo(&shared);
    assert!(!victim.exists(), "the planted link was followed:\n{}", out.text());
    assert_eq!(out.code, 1, "{}", out.text());
    assert!(out.stderr.contains(&format!("chmod 700 {}", shared.display())), "{}", out.text());
    // made private, it is an earlier sandbox of ours: rebuilt, the link replaced, never followed
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o700)).unwrap();
    let out = demo(&shared);
    assert!(out.success(), "{}", out.text());
    assert!(!victim.exists(), "the planted link was followed:\n{}", out.text());
    assert!(std::fs::symlink_metadata(shared.join("deploy.kernel")).unwrap().is_file());
}

#[test]
fn an_earlier_sandbox_is_rebuilt_without_following_a_link_left_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = tmp.path().join("sb");
    let out = demo(&sb);
    assert!(out.success(), "{}", out.text());
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    // every kind of file the demo writes: a database, its journal, the deploy image, a log (dangling
    // links), and the marker (a link to a file that must stay as it is)
    let names = ["ironic.sqlite", "nova.sqlite-journal", "deploy.initramfs", "logs/nova-compute.log"];
    for (i, name) in names.iter().enumerate() {
        let p = sb.join(name);
        std::fs::remove_file(&p).ok();
        std::os::unix::fs::symlink(elsewhere.join(format!("victim-{i}")), &p).unwrap();
    }
    let kept = elsewhere.join("kept");
    std::fs::write(&kept, "untouched").unwrap();
    std::fs::remove_file(sb.join(MARKER)).unwrap();
    std::os::unix::fs::symlink(&kept, sb.join(MARKER)).unwrap();
    let out = demo(&sb);
    let mut created: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().flatten().map(|e| e.file_name()).collect();
    created.retain(|n| n != "kept");
    assert!(created.is_empty(), "links followed: {created:?}\n{}", out.text());
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "untouched", "the marker's link was followed");
    assert!(out.success(), "{}", out.text());
    for name in ["ironic.sqlite", "deploy.initramfs", "logs/nova-compute.log", MARKER] {
        assert!(std::fs::symlink_metadata(sb.join(name)).unwrap().is_file(), "{name}");
    }
}

/// The paths `demo --no-tui` printed (the sandbox, then every file or directory it names).
fn printed_paths(stdout: &str) -> (PathBuf, Vec<PathBuf>) {
    let dir = stdout.lines().find_map(|l| l.strip_prefix("Demo sandbox in ")).expect(stdout);
    let mut paths = vec![];
    for word in stdout.split_whitespace() {
        let w = word.trim_matches('\'');
        let w = w.split_once('=').map_or(w, |(_, v)| v.trim_matches('\''));
        if let Some(p) = w.strip_prefix("sqlite:///").or(w.strip_prefix("file://")) {
            paths.push(PathBuf::from(p));
        } else if w.starts_with('/') {
            paths.push(PathBuf::from(w));
        }
    }
    (PathBuf::from(dir), paths)
}

#[test]
fn the_default_sandbox_is_new_private_and_where_it_says() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dirs = vec![];
    for _ in 0..2 {
        let out = bm(["demo", "--no-tui"]).env("TMPDIR", tmp.path()).run();
        assert!(out.success(), "{}", out.text());
        let (dir, paths) = printed_paths(&out.stdout);
        assert_eq!(dir.parent(), Some(tmp.path().canonicalize().unwrap().as_path()), "{}", out.stdout);
        assert!(dir.file_name().unwrap().to_string_lossy().starts_with("bm2ironic-demo-"));
        let meta = std::fs::symlink_metadata(&dir).unwrap();
        assert!(meta.is_dir());
        assert_eq!((meta.uid(), meta.mode() & 0o777), (me(), 0o700), "{}", dir.display());
        assert!(paths.len() >= 8, "{paths:?}\n{}", out.stdout);
        for p in &paths {
            assert!(p.starts_with(&dir) && p.exists(), "printed but not there: {}\n{}", p.display(), out.stdout);
        }
        dirs.push(dir);
    }
    assert_ne!(dirs[0], dirs[1], "a new directory each time");
}

/// #48 item 7, piped: `bm2ironic inventory` on the demo sandbox has the conflict column (only what
/// nova_bm holds: no missing-arch, no unknown-boot with the TFTP tree given), and accepts
/// `--default-arch` as plan does.
#[test]
fn the_piped_inventory_has_the_conflict_column_and_takes_default_arch() {
    let tmp = tempfile::tempdir().unwrap();
    let sb = tmp.path().join("sb");
    assert!(demo(&sb).success());
    let nova_bm = format!("sqlite:///{}", sb.join("nova_bm.sqlite").display());
    let tftp = sb.join("tftpboot");
    let out = bm(["inventory", "--default-arch", "x86_64"])
        .env("BM2IRONIC_NOVA_BM_DB", &nova_bm)
        .env("BM2IRONIC_TFTP_ROOT", tftp.to_str().unwrap())
        .run();
    assert!(out.success(), "{}", out.text());
    let head = out.stdout.lines().next().unwrap_or_default();
    assert!(head.ends_with("CONFLICTS"), "{head}");
    assert!(out.stdout.lines().any(|l| l.starts_with(" 5 ") && l.ends_with("!failed-deploy")), "{}", out.stdout);
    assert!(!out.stdout.contains("missing-arch") && !out.stdout.contains("unknown-boot"), "{}", out.stdout);
    assert!(out.stdout.contains("~deleted-node"), "{}", out.stdout);
}
