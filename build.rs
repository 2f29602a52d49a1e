//! What `bm2ironic --version` says beyond the crate's version: the commit it was built from, whether
//! the work tree was clean, and the glibc the binary was built against (a change ticket names the exact
//! build). Without git (a source tarball) it says so instead of failing: BM2IRONIC_BUILD_COMMIT may name
//! the commit then. scripts/release.sh sets BM2IRONIC_BUILD_GLIBC to the glibc it links against.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    for var in ["BM2IRONIC_BUILD_COMMIT", "BM2IRONIC_BUILD_GLIBC"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    // the work tree's state changes with the sources, a commit or a checkout; never on `git status`
    // alone (it runs with --no-optional-locks, so it does not rewrite the index)
    for path in ["build.rs", "Cargo.toml", "Cargo.lock", "src", "assets"] {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) => {
            for watched in ["HEAD", "packed-refs"].into_iter().chain(git(&["symbolic-ref", "-q", "HEAD"]).as_deref()) {
                if let Some(path) = git(&["rev-parse", "--git-path", watched]) {
                    if Path::new(&path).exists() {
                        println!("cargo:rerun-if-changed={path}");
                    }
                }
            }
            let tree = match git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"]) {
                Some(changes) if changes.is_empty() => "clean tree",
                Some(_) => "dirty tree",
                None => "tree state unknown",
            };
            format!("commit {commit}, {tree}")
        }
        None => match std::env::var("BM2IRONIC_BUILD_COMMIT") {
            Ok(c) if !c.trim().is_empty() => format!("commit {}, not built from a git tree", c.trim()),
            _ => "commit unknown (built without git), tree state unknown".to_string(),
        },
    };
    let libc = if target.ends_with("-musl") {
        "static, musl".to_string()
    } else if !target.contains("-linux-gnu") {
        "no glibc".to_string()
    } else if let Ok(v) = std::env::var("BM2IRONIC_BUILD_GLIBC") {
        format!("glibc {} or newer", v.trim())
    } else if target == host {
        match getconf_glibc() {
            Some(v) => format!("glibc {v} (the build host's) or newer"),
            None => "the build host's glibc or newer".to_string(),
        }
    } else {
        "glibc unknown".to_string()
    };
    println!("cargo:rustc-env=BM2_BUILD_VERSION={version} ({commit}; {target}, {libc})");
}

/// One git command's trimmed output, or None when git is missing, this is no git tree, or it failed.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The build host's glibc version (`getconf GNU_LIBC_VERSION` prints `glibc 2.36`).
fn getconf_glibc() -> Option<String> {
    let out = Command::new("getconf").arg("GNU_LIBC_VERSION").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    Some(text.trim().strip_prefix("glibc ")?.to_string()).filter(|_| out.status.success())
}
