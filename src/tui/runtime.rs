//! The wizard's runtime: runs `update`'s effects as jobs (`jobs.rs`) on tokio tasks that report back as messages,
//! coalesces renders (many progress events per frame never block input), and is generic over the
//! ratatui backend so tests drive the real app on a `TestBackend`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::error::WizardError;
use super::field::Field;
use super::jobs;
use super::msg::{Effect, Msg};
use super::session::Mode;
use super::terminal::{self, RESTORED, TERMINAL_LOCK};
use super::theme::Theme;
use super::view::view;
use crate::core::ironic::target::TargetKind;
use crate::core::logs::watch::WatchedLog;
use crate::core::migrate::steps::Planned;

/// What the runtime needs besides the app state.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Log files to follow (name, path).
    pub logs: Vec<(String, PathBuf)>,
    /// Demo: a simulated Ironic takeover writes into these files when a load finishes.
    pub simulate_takeover: bool,
    /// Where decisions are saved.
    pub resolutions_dir: Option<PathBuf>,
    /// Read nova_bm (and plan) at once, without the connections screen (read-only browse, demo).
    pub auto_prepare: bool,
}

impl From<crate::core::demo::sandbox::SandboxRun> for Context {
    fn from(s: crate::core::demo::sandbox::SandboxRun) -> Context {
        Context {
            logs: s.logs,
            simulate_takeover: s.simulate_takeover,
            resolutions_dir: Some(s.resolutions_dir),
            auto_prepare: false,
        }
    }
}

pub struct Runner<B: Backend> {
    pub app: App,
    pub terminal: Terminal<B>,
    pub theme: Theme,
    ctx: Context,
    tx: UnboundedSender<Msg>,
    rx: UnboundedReceiver<Msg>,
    cancel_load: Option<CancellationToken>,
    /// a BMC check is running (`b`: one at a time)
    bmc_running: std::sync::Arc<std::sync::atomic::AtomicBool>,
    load_started: Option<Instant>,
    /// the operator quit (or a signal came) while a load ran: it was cancelled
    quit_cancelled_load: bool,
    stop: CancellationToken,
    dirty: bool,
}

/// How long the wizard waits, after a quit that cancelled a load, for the load to say how it ended.
const LOAD_STOP_WAIT: Duration = Duration::from_secs(60);

/// How a wizard session ended, for the exit code: a quit that cancelled a running load is not a
/// success (exit 1), unless the load had already committed when the cancel reached it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// the operator quit with no load running
    Quit,
    /// a load ran at the quit and finished anyway (it was past its last batch): run id, rehearsal
    /// how it ended (the outcome's line)
    LoadFinished(String),
    /// a load ran at the quit and stopped: what it said (nothing of an SQL load was written)
    LoadStopped(String),
}

/// Decisions an earlier wizard journalled and never saved (it ended, was killed, or `q` was pressed)
/// come back, unless decisions were given at start (`--resolutions`, `--resolve`).
fn reload_journal(app: &mut App) {
    let journal = app.session.journal_path();
    if app.session.resolutions != Default::default() || !std::path::Path::new(&journal).is_file() {
        return;
    }
    match crate::core::migrate::conflict::Resolutions::load(std::path::Path::new(&journal)) {
        Ok(r) if r != Default::default() => {
            let n = r.defaults.len() + r.decisions.len();
            app.session.resolutions = r;
            app.status.toast = Some(format!(
                "{n} decision(s) of an earlier session reloaded from {journal} (not saved: w saves them)"
            ));
        }
        Ok(_) => {}
        Err(e) => app.status.toast = Some(format!("the decisions journal {journal} was not reloaded: {e}")),
    }
}

const FRAME: Duration = Duration::from_millis(33);
const TICK: Duration = Duration::from_millis(120);

impl<B: Backend> Runner<B> {
    pub fn new(mut app: App, terminal: Terminal<B>, theme: Theme, ctx: impl Into<Context>) -> Runner<B> {
        let ctx = ctx.into();
        let (tx, rx) = unbounded_channel();
        app.logs.files = ctx.logs.iter().map(|(n, p)| (n.clone(), p.display().to_string())).collect();
        if let Some(d) = &ctx.resolutions_dir {
            app.session.resolutions_path = d.join("bm2ironic-resolutions.toml").display().to_string();
            if ctx.simulate_takeover {
                app.sandbox = Some(d.display().to_string());
            }
        }
        reload_journal(&mut app);
        super::decisions_file::look_at_start(&mut app);
        Runner {
            app,
            terminal,
            theme,
            ctx,
            tx,
            rx,
            cancel_load: None,
            bmc_running: Default::default(),
            load_started: None,
            quit_cancelled_load: false,
            stop: CancellationToken::new(),
            dirty: true,
        }
    }

    /// Starts the background work the wizard always has: the connection tests (or the read-only
    /// browse's prepare) and the log following.
    pub fn start(&mut self) {
        if self.ctx.auto_prepare {
            self.app.status.busy = Some("reading nova_bm and planning".into());
            self.app.preparing = true;
            self.effect(Effect::Prepare);
        } else {
            for e in self.app.open_connections() {
                self.effect(e);
            }
        }
        if !self.ctx.logs.is_empty() {
            let (ltx, mut lrx) = unbounded_channel();
            crate::core::logs::follow::follow(self.ctx.logs.clone(), ltx, self.stop.clone());
            let tx = self.tx.clone();
            tokio::spawn(async move {
                while let Some(batch) = lrx.recv().await {
                    if tx.send(Msg::Logs(batch)).is_err() {
                        return;
                    }
                }
            });
        }
        if std::env::var_os("BM2IRONIC_TEST_PANIC_IN_TASK").is_some() {
            // test hook: a task that panics (the panic hook must restore the terminal and exit)
            tokio::spawn(async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                panic!("test panic inside a task");
            });
        }
    }

    pub fn draw(&mut self) -> std::io::Result<()> {
        let _lock = TERMINAL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if RESTORED.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(());
        }
        let app = &self.app;
        let theme = self.theme;
        self.terminal.draw(|f| view(app, f, theme)).map_err(|e| std::io::Error::other(e.to_string()))?;
        self.dirty = false;
        Ok(())
    }

    /// One message through `update`, its effects started.
    pub fn handle(&mut self, msg: Msg) {
        let effects = self.app.update(msg);
        for e in effects {
            self.effect(e);
        }
        self.dirty = true;
    }

    /// Feeds a key (tests and the event loop).
    pub fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) {
        self.handle(Msg::Key(KeyEvent::new(code, modifiers)));
    }

    pub fn type_text(&mut self, s: &str) {
        for c in s.chars() {
            self.key(KeyCode::Char(c), KeyModifiers::NONE);
        }
    }

    /// Processes messages from tasks until `pred` holds (tests); false on timeout.
    /// Ticks come every [`TICK`] as in [`Runner::run`], busy or not.
    pub async fn pump_until(&mut self, pred: impl Fn(&App) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut next_tick = Instant::now() + TICK;
        while !pred(&self.app) {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            if now >= next_tick {
                next_tick = now + TICK;
                self.tick();
                continue;
            }
            match tokio::time::timeout((deadline - now).min(next_tick - now), self.rx.recv()).await {
                Ok(Some(m)) => self.handle(m),
                Ok(None) => return pred(&self.app),
                Err(_) => {}
            }
        }
        true
    }

    fn tick(&mut self) {
        let elapsed = self.load_started.map(|s| s.elapsed()).unwrap_or_default();
        self.handle(Msg::Tick(elapsed));
    }

    /// The event loop: terminal events, task messages, ticks; renders at most every frame.
    pub async fn run<S>(&mut self, mut events: S, mut signals: impl Stream<Item = ()> + Unpin) -> std::io::Result<()>
    where
        S: Stream<Item = std::io::Result<Event>> + Unpin,
    {
        self.start();
        self.draw()?;
        let mut tick = tokio::time::interval(TICK);
        let mut frame = tokio::time::interval(FRAME);
        while !self.app.status.quit {
            tokio::select! {
                ev = events.next() => match ev {
                    Some(Ok(Event::Key(k))) if k.kind == KeyEventKind::Press || k.kind == KeyEventKind::Repeat => self.handle(Msg::Key(k)),
                    Some(Ok(Event::Resize(..))) => self.dirty = true,
                    Some(Ok(_)) => {}
                    Some(Err(e)) => return Err(e),
                    None => break,
                },
                Some(m) = self.rx.recv() => {
                    self.handle(m);
                    // drain what else is queued: one render for many events
                    while let Ok(m) = self.rx.try_recv() {
                        self.handle(m);
                    }
                }
                Some(()) = signals.next() => {
                    // SIGTERM / SIGHUP: quits at once; a running load is cancelled (rolled back)
                    self.app.status.quit = true;
                    if self.app.work_running() {
                        self.effect(Effect::Cancel);
                    }
                }
                _ = tick.tick() => self.tick(),
                _ = frame.tick() => {
                    if self.dirty {
                        self.draw()?;
                    }
                }
            }
        }
        if let Some(c) = &self.cancel_load {
            c.cancel();
        }
        self.stop.cancel();
        Ok(())
    }

    /// After the quit: when it cancelled a running load, waits (at most [`LOAD_STOP_WAIT`]) for the
    /// load to end and says how, so the exit code and the last line tell the truth about the target.
    pub async fn ending(&mut self) -> Ending {
        if !self.quit_cancelled_load {
            return Ending::Quit;
        }
        let waited = tokio::time::timeout(LOAD_STOP_WAIT, async {
            while let Some(m) = self.rx.recv().await {
                if let Msg::LoadDone(r) = m {
                    return Some(r);
                }
            }
            None
        })
        .await;
        match waited {
            Ok(Some(Ok(f))) => match f.outcome.failure() {
                None => Ending::LoadFinished(f.outcome.line()),
                Some(_) => Ending::LoadStopped(format!("the wizard was quit while the load ran: {}", f.outcome.line())),
            },
            Ok(Some(Err(e))) => Ending::LoadStopped(format!("the wizard was quit while the load ran: {e}")),
            Ok(None) | Err(_) => Ending::LoadStopped(format!(
                "the wizard was quit while the load ran and the load had not stopped {} s later: the server rolls \
                 back what was not committed when this process's connection closes; `bm2ironic rollback --list` \
                 shows whether a run committed",
                LOAD_STOP_WAIT.as_secs()
            )),
        }
    }

    /// Runs a job in the background; what it returns goes through `update`.
    fn spawn(&self, job: impl std::future::Future<Output = Msg> + Send + 'static) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let _ = tx.send(job.await);
        });
    }

    /// The inventory read and planned (`Effect::Prepare`), with the form's connections and options.
    fn prepare(&self) {
        let s = &self.app.session;
        let read_only = s.mode == Mode::ReadOnly;
        let job = jobs::prepare(
            self.connections(),
            s.plan_options.clone(),
            s.resolutions.clone(),
            read_only,
            self.app.confirm.via_api,
            self.tx.clone(),
        );
        self.spawn(job);
    }

    /// `b` on Inventory: the BMC check on the prepared inventory, once at a time (a second `b`
    /// while one runs does nothing: one session per BMC), with `--bmc-concurrency`/`--bmc-timeout`.
    fn check_bmc(&self) {
        use crate::core::migrate::plan::PowerManager;
        use std::sync::atomic::Ordering;
        let Some(prepared) = self.app.session.prepared.clone() else { return };
        if self.bmc_running.swap(true, Ordering::SeqCst) {
            return;
        }
        let opts = &self.app.session.plan_options;
        let check = crate::core::bmc::CheckOptions {
            ipmi: PowerManager::from_class(opts.baremetal.power_manager()) == PowerManager::Ipmi,
            ..opts.check_bmc.clone().unwrap_or_default()
        };
        let (running, tx) = (std::sync::Arc::clone(&self.bmc_running), self.tx.clone());
        self.spawn(async move {
            let msg = jobs::check_bmc(std::sync::Arc::clone(&prepared.inventory), check, tx).await;
            running.store(false, Ordering::SeqCst);
            msg
        });
    }

    /// The form's connections, with where API runs are kept (`--state-dir`).
    pub fn connections(&self) -> jobs::Connections {
        jobs::Connections { state_dir: self.app.state_dir.clone(), ..self.app.connections.connections() }
    }

    fn flavor_target(&self) -> Option<crate::core::migrate::flavors::FlavorTarget> {
        let kind = self.app.session.prepared.as_ref().map(|p| p.target.schema.kind).unwrap_or(TargetKind::Modern);
        self.app.connections.flavor_target(kind)
    }

    fn effect(&mut self, e: Effect) {
        match e {
            Effect::Quit => self.app.status.quit = true,
            Effect::TestConnection { field } => {
                let f = &self.app.connections[field];
                self.spawn(jobs::test_connection(field, f.generation, f.kind, f.value().to_string()));
            }
            Effect::Prepare => self.prepare(),
            Effect::StartLoad { rehearse } => {
                let (Some(prepared), Some(plan)) = (self.app.session.prepared.clone(), self.app.session.plan.clone())
                else {
                    return;
                };
                let cancel = CancellationToken::new();
                self.cancel_load = Some(cancel.clone());
                self.load_started = Some(Instant::now());
                let order = jobs::LoadOrder {
                    opts: self.app.connections.plan_options(&self.app.session.plan_options),
                    resolutions: self.app.session.resolutions.clone(),
                    reviewed: Some(Planned { prepared, redecided: Some(plan) }),
                    rehearse,
                    via_api: self.app.confirm.via_api && !rehearse,
                };
                let simulate = self.ctx.simulate_takeover.then(|| self.ctx.logs.clone());
                self.spawn(jobs::load(self.connections(), order, cancel, self.tx.clone(), simulate));
            }
            Effect::Replan { generation } => {
                let Some(prepared) = self.app.session.prepared.clone() else { return };
                let opts = self.app.connections.plan_options(&self.app.session.plan_options);
                let res = self.app.session.resolutions.clone();
                self.spawn(async move {
                    let job = tokio::task::spawn_blocking(move || jobs::replan(generation, &prepared, &opts, &res));
                    job.await.unwrap_or_else(|e| Msg::Replanned { generation, plan: Err(e.to_string()), ms: 0.0 })
                });
            }
            Effect::Cancel => {
                if let Some(c) = &self.cancel_load {
                    self.quit_cancelled_load |= self.app.status.quit; // a quit's cancel: see `ending`
                    c.cancel();
                }
            }
            Effect::Journal { path, text } => {
                // written whole, then renamed: a crash mid-write leaves the previous journal
                let tmp = format!("{path}.tmp");
                if let Err(e) = std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &path)) {
                    self.app.status.toast = Some(format!("could not journal the decisions in {path}: {e}"));
                }
            }
            Effect::WriteChecklist { run_id, text } => {
                let Some(dir) = self.app.state_dir.clone() else { return };
                let path = dir.join(format!("next-steps-{run_id}.md"));
                let written = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, text));
                match written {
                    Ok(()) => self.app.summary.checklist = Some(path.display().to_string()),
                    Err(e) => {
                        self.app.status.toast =
                            Some(format!("could not keep the next steps in {}: {e}", path.display()))
                    }
                }
            }
            Effect::SaveResolutions => {
                let msg = jobs::save_resolutions(
                    self.app.session.resolutions_path.clone(),
                    self.app.session.resolutions.to_toml(),
                    self.app.session.journal_path(),
                );
                let _ = self.tx.send(msg);
            }
            Effect::WriteReport => {
                let Some(report) = super::report::build(&self.app) else { return };
                let name = super::report::file_name(&self.app);
                let path = match &self.ctx.resolutions_dir {
                    Some(d) => d.join(name),
                    None => PathBuf::from(name),
                };
                let _ = self.tx.send(jobs::write_report(path.display().to_string(), report));
            }
            Effect::CheckBmc => self.check_bmc(),
            Effect::PlanFlavors => {
                let c = &self.app.connections;
                let api = !c.value(Field::NovaApiDb).is_empty();
                self.spawn(jobs::plan_flavors(c.flavors_db().to_string(), api, self.flavor_target()))
            }
            Effect::ApplyFlavors => {
                let changes = match &self.app.flavors.result {
                    Some(Ok(v)) => v.changes.clone(),
                    _ => vec![],
                };
                self.spawn(jobs::apply_flavors(self.app.connections.flavors_db().to_string(), changes))
            }
            Effect::CheckTakeover => {
                let Some(run) = self.app.progress.outcome().and_then(|o| o.run_id()).cloned() else {
                    return;
                };
                let logs = self.ctx.logs.iter().map(|(n, p)| WatchedLog { name: n.clone(), path: p.clone() }).collect();
                let job = jobs::takeover(self.connections(), run.to_string(), logs, self.tx.clone(), self.stop.clone());
                self.spawn(job);
            }
        }
    }
}

/// Runs the wizard until the operator quits. Must be called inside a tokio runtime.
/// The terminal is given back before the wait for a cancelled load (see [`Runner::ending`]).
pub async fn run_wizard(app: App, ctx: impl Into<Context>) -> Result<Ending, WizardError> {
    terminal::set_panic_hook();
    let guard = terminal::enter()?;
    let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout())).map_err(WizardError::Start)?;
    let mut runner = Runner::new(app, terminal, Theme::from_env(), ctx);
    let signals = terminal::signal_stream();
    let r = runner.run(EventStream::new(), signals).await;
    drop(guard);
    let _ = std::panic::take_hook();
    r.map_err(WizardError::Terminal)?;
    if runner.quit_cancelled_load {
        eprintln!("bm2ironic: the wizard was quit while a load ran: stopping it ...");
    }
    let ending = runner.ending().await;
    // on the normal screen, what the operator must keep of the session
    for line in runner.app.keep_lines() {
        eprintln!("{line}");
    }
    Ok(ending)
}
