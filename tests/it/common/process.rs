//! The one guard for every process a test leaves running in the background (an Ironic, a fake BMC, a
//! proxy, a fake Glance, a nova-compute): each is spawned as the leader of a process group of its own,
//! and dropping its `Guard` (the test ending, passing or failing) stops the whole group: SIGTERM, a few
//! seconds for the leader to go, then SIGKILL for whatever of the group is left (workers hold ports).

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a group has, after SIGTERM, before it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// A running process group, stopped when dropped. The lines its stdout printed are collected when it
/// was spawned with `Guard::reading_stdout`.
pub struct Guard {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Guard {
    /// Spawns `cmd` as the leader of a new process group (stdin from /dev/null; stdout and stderr as
    /// `cmd` sets them).
    pub fn spawn(cmd: &mut Command) -> Guard {
        let child = cmd.stdin(Stdio::null()).process_group(0).spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
        Guard { child, lines: Arc::default() }
    }

    /// Spawns `cmd` (stderr as `cmd` sets it) and collects what it prints on stdout, line by line
    /// (`said`).
    pub fn reading_stdout(cmd: &mut Command) -> Guard {
        let mut g = Guard::spawn(cmd.stdout(Stdio::piped()));
        let out = g.child.stdout.take().unwrap();
        let lines = g.lines.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                lines.lock().unwrap().push(l);
            }
        });
        g
    }

    /// The lines the process printed on stdout so far (`reading_stdout` only).
    pub fn said(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// The leader's pid (the group's id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's exit status, if it has ended.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// Sends `signal` to the leader alone.
    pub fn signal(&self, signal: i32) {
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }

    /// Sends SIGTERM to the leader and waits up to `within` for it to end: its exit status, or None.
    pub fn terminate(&mut self, within: Duration) -> Option<ExitStatus> {
        self.signal(libc::SIGTERM);
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Its stdout, when spawned with `Stdio::piped()` (to read line by line).
    pub fn take_stdout(&mut self) -> std::process::ChildStdout {
        self.child.stdout.take().expect("spawned with stdout piped")
    }

    /// Its stderr, when spawned with `Stdio::piped()`.
    pub fn take_stderr(&mut self) -> std::process::ChildStderr {
        self.child.stderr.take().expect("spawned with stderr piped")
    }

    /// Waits for the leader to end: its exit status.
    pub fn wait(&mut self) -> ExitStatus {
        self.child.wait().unwrap()
    }

    /// SIGKILL to the leader alone (a crash at this very point), then waits for it.
    pub fn kill(&mut self) -> ExitStatus {
        let _ = self.child.kill();
        self.wait()
    }

    /// Waits for the leader to end, collecting what is left of its piped stdout and stderr (read at
    /// once on two threads, so neither pipe fills and blocks it).
    pub fn wait_with_output(mut self) -> std::process::Output {
        use std::io::Read;
        let out = self.child.stdout.take().map(|mut o| {
            std::thread::spawn(move || {
                let mut v = vec![];
                let _ = o.read_to_end(&mut v);
                v
            })
        });
        let err = self.child.stderr.take().map(|mut e| {
            std::thread::spawn(move || {
                let mut v = vec![];
                let _ = e.read_to_end(&mut v);
                v
            })
        });
        let status = self.wait();
        let join = |t: Option<std::thread::JoinHandle<Vec<u8>>>| t.map(|t| t.join().unwrap()).unwrap_or_default();
        std::process::Output { status, stdout: join(out), stderr: join(err) }
    }

    /// Stops the group now (what dropping it does).
    pub fn stop(self) {}
}

impl Drop for Guard {
    fn drop(&mut self) {
        let group = -(self.child.id() as i32);
        unsafe { libc::kill(group, libc::SIGTERM) };
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline && matches!(self.child.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        // the rest of the group too, even when the leader went first
        unsafe { libc::kill(group, libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

/// Waits until 127.0.0.1:`port` accepts TCP connections (30 s at most), naming `what` otherwise.
pub async fn wait_port(port: u16, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "{what} did not listen on 127.0.0.1:{port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
