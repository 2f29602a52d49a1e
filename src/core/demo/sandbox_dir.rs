//! Where the demo sandbox may be built, and how its files are written: a new directory is made with
//! `mkdtemp` (a name no one can guess, 0700); an existing one is used only when it is the user's
//! own, not writable by group or others, on a path only the user or root can change; every file is
//! created new (`O_EXCL|O_NOFOLLOW`), so a name planted beforehand is never followed.

use std::ffi::OsString;
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A new directory `<parent>/<prefix>XXXXXX` by `mkdtemp(3)`: created 0700 under a random name,
/// never an existing one (a fixed name like `bm2ironic-demo-<pid>` can be planted in /tmp first).
pub fn make_fresh(parent: &Path, prefix: &str) -> std::io::Result<PathBuf> {
    let mut template = parent.join(format!("{prefix}XXXXXX")).into_os_string().into_vec();
    template.push(0);
    // SAFETY: `template` is a writable, NUL-terminated buffer that mkdtemp fills in place
    let made = unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) };
    if made.is_null() {
        return Err(std::io::Error::last_os_error());
    }
    template.pop();
    Ok(PathBuf::from(OsString::from_vec(template)))
}

/// Makes sure `dir` is a directory of the current user that no one else can change or plant a link
/// in: it is created 0700 when missing; an existing one must be owned by the user and not writable
/// by group or others, and so must be every directory above it unless sticky (like /tmp), or owned
/// by the user or root. Returns its path with no symlinks left, which is then used throughout.
pub fn claim(dir: &Path) -> Result<PathBuf, String> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
    }
    let real = dir.canonicalize().map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    // SAFETY: geteuid has no preconditions
    let me = unsafe { libc::geteuid() };
    let meta = std::fs::symlink_metadata(&real).map_err(|e| format!("cannot read {}: {e}", real.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory: choose another --dir", real.display()));
    }
    let mode = meta.mode() & 0o7777;
    if meta.uid() != me {
        return Err(format!(
            "{} belongs to uid {}, not to you (uid {me}): its owner could have planted links in it; \
             choose a directory of your own with --dir (or leave --dir out for a new private one)",
            real.display(),
            meta.uid()
        ));
    }
    if mode & 0o022 != 0 {
        return Err(format!(
            "{} is writable by group or others (mode {:o}): they could have planted links in it; \
             make it private first (chmod 700 {}) or choose another --dir",
            real.display(),
            mode & 0o777,
            real.display()
        ));
    }
    for above in real.ancestors().skip(1) {
        let m = std::fs::metadata(above).map_err(|e| format!("cannot read {}: {e}", above.display()))?;
        let sticky = m.mode() & libc::S_ISVTX != 0;
        let shared = m.mode() & 0o022 != 0 && !sticky;
        if (m.uid() != me && m.uid() != 0) || shared {
            return Err(format!(
                "{} is above the sandbox and {} (uid {}, mode {:o}): someone else could swap the sandbox \
                 for a link; choose a --dir under a directory only you or root can change (or leave --dir out)",
                above.display(),
                if shared { "writable by group or others" } else { "belongs to another user" },
                m.uid(),
                m.mode() & 0o7777
            ));
        }
    }
    Ok(real)
}

/// Creates `path`, which must not exist: `O_CREAT|O_EXCL|O_NOFOLLOW`, so neither a planted file nor
/// a planted link (dangling or not) is ever opened.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

/// Writes `bytes` to a new file `path` (see [`create_new`]).
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    create_new(path)?.write_all(bytes)
}

/// Removes `path` if it is there, whatever it is (a link itself, never what it points to).
pub fn remove(path: &Path) -> std::io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if meta.is_dir() {
        // std's remove_dir_all never follows a link inside the tree (CVE-2022-21658)
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_fresh_directory_is_private_and_new_each_time() {
        let tmp = tempfile::tempdir().unwrap();
        let a = make_fresh(tmp.path(), "bm2ironic-demo-").unwrap();
        let b = make_fresh(tmp.path(), "bm2ironic-demo-").unwrap();
        assert_ne!(a, b);
        for d in [&a, &b] {
            assert!(d.file_name().unwrap().to_str().unwrap().starts_with("bm2ironic-demo-"));
            assert_eq!(std::fs::metadata(d).unwrap().permissions().mode() & 0o777, 0o700);
        }
    }

    #[test]
    fn a_directory_others_can_write_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("sb");
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = claim(&d).unwrap_err();
        assert!(e.contains("writable by group or others") && e.contains("chmod 700"), "{e}");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(claim(&d).unwrap(), d.canonicalize().unwrap());
        // a new one is made private
        let n = tmp.path().join("new/sb");
        claim(&n).unwrap();
        assert_eq!(std::fs::metadata(&n).unwrap().permissions().mode() & 0o777, 0o700);
        // a directory above that others may change
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = claim(&shared.join("sb")).unwrap_err();
        assert!(e.contains("above the sandbox"), "{e}");
    }

    #[test]
    fn a_planted_link_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim-created");
        let link = tmp.path().join("deploy.kernel");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(write_new(&link, b"x").is_err());
        assert!(!victim.exists());
        remove(&link).unwrap();
        write_new(&link, b"x").unwrap();
        assert!(!victim.exists() && std::fs::symlink_metadata(&link).unwrap().is_file());
    }
}
