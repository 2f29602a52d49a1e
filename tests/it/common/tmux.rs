//! A real terminal for the binary: a tmux session on a server of its own (`Session::start`), its
//! screen read as text, keys sent, the shell's exit status after the program; the server is killed
//! when the `Session` is dropped.

use std::process::Command;
use std::time::{Duration, Instant};

pub fn tmux(args: &[&str]) -> String {
    let out = Command::new("tmux").args(args).output().expect("tmux");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn have_tmux() -> bool {
    if Command::new("tmux").arg("-V").output().is_ok() {
        return true;
    }
    super::env::skip("tmux is not installed (scripts/test.sh installs it)");
    false
}

pub struct Session {
    name: String,
    socket: String,
}

impl Session {
    pub fn start(name: &str, cmd: &str) -> Session {
        let socket = format!("bm2ironic-test-{}-{name}", std::process::id());
        let s = Session { name: name.into(), socket };
        let out = Command::new("tmux")
            .args(["-L", &s.socket, "new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmd])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        tmux(&["-L", &s.socket, "set-option", "-t", name, "remain-on-exit", "on"]);
        s
    }
    pub fn screen(&self) -> String {
        tmux(&["-L", &self.socket, "capture-pane", "-p", "-t", &self.name])
    }
    /// The screen with its colours (`capture-pane -e`), for scripts/ansi2png.py.
    pub fn screen_ansi(&self) -> String {
        tmux(&["-L", &self.socket, "capture-pane", "-p", "-e", "-t", &self.name])
    }
    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            tmux(&["-L", &self.socket, "send-keys", "-t", &self.name, k]);
            std::thread::sleep(Duration::from_millis(60));
        }
    }
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_within(text, 30)
    }
    /// Waits until `text` shows, `secs` seconds at most: the screen then.
    pub fn wait_for_within(&self, text: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.screen();
            if s.contains(text) {
                return s;
            }
            assert!(Instant::now() < deadline, "'{text}' never appeared:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    /// Waits until `text` shows `n` times.
    pub fn wait_for_count(&self, text: &str, n: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.screen();
            if s.matches(text).count() >= n {
                return s;
            }
            assert!(Instant::now() < deadline, "'{text}' never appeared {n} times:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    pub fn format(&self, f: &str) -> String {
        tmux(&["-L", &self.socket, "display-message", "-p", "-t", &self.name, f]).trim().to_string()
    }
    /// The exit status the shell printed after the program ended.
    pub fn wait_exit(&self) -> String {
        let s = self.wait_for("EXIT=");
        s.split("EXIT=").nth(1).unwrap_or("").split_whitespace().next().unwrap_or("").to_string()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}
