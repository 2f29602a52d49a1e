//! The wizard's runtime: runs `update`'s effects as tokio tasks that report back as messages,
//! coalesces renders (many progress events per frame never block input), and is generic over the
//! ratatui backend so tests drive the real app on a `TestBackend`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use ratatui::backend::Backend;
use ratatui::crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::Terminal;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::app::{App, Effect, FieldKind, Mode, Msg, F_API, F_IRONIC, F_NOVA, F_NOVA_BM};
use super::view::{view, Theme};
use crate::core::db::conf::{ConnectionSettings, Origin, Setting};
use crate::core::db::url::DbUrl;
use crate::core::db::{Access, Db};
use crate::core::ironic::api::IronicApi;
use crate::core::ironic::target::TargetKind;
use crate::core::migrate::load_sql::{self, LoadRequest};
use crate::core::migrate::prepare;
use crate::core::migrate::rollback;
use crate::core::migrate::verify;

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
    load_started: Option<Instant>,
    stop: CancellationToken,
    dirty: bool,
}

const FRAME: Duration = Duration::from_millis(33);
const TICK: Duration = Duration::from_millis(120);

impl<B: Backend> Runner<B> {
    pub fn new(mut app: App, terminal: Terminal<B>, theme: Theme, ctx: impl Into<Context>) -> Runner<B> {
        let ctx = ctx.into();
        let (tx, rx) = unbounded_channel();
        app.logs.files = ctx.logs.iter().map(|(n, p)| (n.clone(), p.display().to_string())).collect();
        if let Some(d) = &ctx.resolutions_dir {
            app.resolutions_path = d.join("bm2ironic-resolutions.toml").display().to_string();
        }
        Runner {
            app,
            terminal,
            theme,
            ctx,
            tx,
            rx,
            cancel_load: None,
            load_started: None,
            stop: CancellationToken::new(),
            dirty: true,
        }
    }

    /// Starts the background work the wizard always has (log following).
    pub fn start(&mut self) {
        if self.ctx.auto_prepare {
            self.app.busy = Some("reading nova_bm and planning".into());
            self.effect(Effect::Prepare);
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
        let _lock = super::TERMINAL_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        if super::RESTORED.load(std::sync::atomic::Ordering::SeqCst) {
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
    pub async fn pump_until(&mut self, pred: impl Fn(&App) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !pred(&self.app) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            match tokio::time::timeout(left.min(TICK), self.rx.recv()).await {
                Ok(Some(m)) => self.handle(m),
                Ok(None) => return pred(&self.app),
                Err(_) => self.tick(),
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
        while !self.app.quit {
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
                    // SIGTERM / SIGHUP: like q (asks while a load runs: then it cancels and quits)
                    if self.app.work_running() {
                        self.effect(Effect::Cancel);
                    }
                    self.app.quit = true;
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

    fn settings(&self) -> Result<ConnectionSettings, String> {
        let db = |i: usize| -> Result<Option<Setting<DbUrl>>, String> {
            let v = self.app.fields[i].value();
            if v.is_empty() {
                return Ok(None);
            }
            DbUrl::parse(v).map(|u| Some(Setting { value: u, origin: Origin::Flag })).map_err(|e| e.to_string())
        };
        let api = self.app.fields[F_API].value();
        Ok(ConnectionSettings {
            nova_bm_db: db(F_NOVA_BM)?,
            ironic_db: db(F_IRONIC)?,
            nova_db: db(F_NOVA)?,
            ironic_url: (!api.is_empty()).then(|| Setting { value: api.to_string(), origin: Origin::Flag }),
            nova_conf: None,
            ironic_conf: None,
        })
    }

    fn effect(&mut self, e: Effect) {
        let tx = self.tx.clone();
        match e {
            Effect::Quit => self.app.quit = true,
            Effect::TestConnection { field } => {
                let f = &self.app.fields[field];
                let value = f.value().to_string();
                let kind = f.kind;
                tokio::spawn(async move {
                    let result = if kind == FieldKind::Http {
                        match IronicApi::new(&value, None, TargetKind::Modern) {
                            Ok(api) => {
                                let started = Instant::now();
                                api.get("/v1")
                                    .await
                                    .map(|v| {
                                        format!(
                                            "Ironic API {} in {} ms",
                                            v["version"]["version"].as_str().unwrap_or("?"),
                                            started.elapsed().as_millis()
                                        )
                                    })
                                    .map_err(|e| e.to_string())
                            }
                            Err(e) => Err(e.to_string()),
                        }
                    } else {
                        match DbUrl::parse(&value) {
                            Err(e) => Err(e.to_string()),
                            Ok(u) => match Db::connect_with(&u, Access::ReadOnly, 1).await {
                                Ok(db) => {
                                    let s = format!("{} in {} ms", db.server_version, db.latency.as_millis());
                                    db.close().await;
                                    Ok(s)
                                }
                                Err(e) => Err(e.to_string()),
                            },
                        }
                    };
                    let _ = tx.send(Msg::Tested { field, result });
                });
            }
            Effect::Prepare => {
                let settings = match self.settings() {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Msg::Prepared(Err(e)));
                        return;
                    }
                };
                let opts = self.app.plan_options.clone();
                let res = self.app.resolutions.clone();
                let read_only = self.app.mode == Mode::ReadOnly;
                tokio::spawn(async move {
                    let r = if read_only {
                        prepare::browse(&settings, &opts, &res).await
                    } else {
                        prepare::prepare(&settings, &opts, &res, None).await
                    };
                    let _ = tx.send(Msg::Prepared(r.map(Arc::new).map_err(|e| e.to_string())));
                });
            }
            Effect::StartLoad { rehearse } => {
                let (Some(prepared), Some(plan)) = (self.app.prepared.clone(), self.app.plan.clone()) else { return };
                let Some(db) = prepared.target_db.clone() else { return };
                let cancel = CancellationToken::new();
                self.cancel_load = Some(cancel.clone());
                self.load_started = Some(Instant::now());
                let simulate = self.ctx.simulate_takeover.then(|| self.ctx.logs.clone());
                tokio::spawn(async move {
                    let (etx, mut erx) = unbounded_channel();
                    let fwd = {
                        let tx = tx.clone();
                        tokio::spawn(async move {
                            while let Some(ev) = erx.recv().await {
                                if tx.send(Msg::Load(ev)).is_err() {
                                    return;
                                }
                            }
                        })
                    };
                    let req = LoadRequest {
                        plan: &plan,
                        schema: &prepared.target.schema,
                        rehearse,
                        source: prepared.source.clone(),
                        run_id: uuid::Uuid::new_v4().to_string(),
                    };
                    let r = load_sql::load_db(&db, req, &etx, &cancel).await.map_err(|e| e.to_string());
                    drop(etx);
                    let _ = fwd.await;
                    if let (Ok(_), Some(logs)) = (&r, simulate) {
                        super::demo::simulate_takeover(&plan, &logs);
                    }
                    let _ = tx.send(Msg::LoadDone(r));
                });
            }
            Effect::Cancel => {
                if let Some(c) = &self.cancel_load {
                    c.cancel();
                }
            }
            Effect::SaveResolutions => {
                let path = self.app.resolutions_path.clone();
                let text = self.app.resolutions.to_toml();
                let r = std::fs::write(&path, text).map(|_| path.clone()).map_err(|e| format!("{path}: {e}"));
                let _ = tx.send(Msg::Saved(r));
            }
            Effect::PlanFlavors | Effect::ApplyFlavors => {
                let apply = e == Effect::ApplyFlavors;
                let nova = self.app.fields[F_NOVA].value().to_string();
                let kind = self.app.prepared.as_ref().map(|p| p.target.schema.kind).unwrap_or(TargetKind::Modern);
                let text = |i: usize| self.app.fields[i].value().to_string();
                let target = match kind {
                    TargetKind::Juno => Some(crate::core::migrate::flavors::FlavorTarget::DeployImages {
                        kernel: text(super::app::F_KERNEL),
                        ramdisk: text(super::app::F_RAMDISK),
                    }),
                    TargetKind::Modern => Some(text(super::app::F_RCLASS))
                        .filter(|c| !c.is_empty())
                        .map(crate::core::migrate::flavors::FlavorTarget::ResourceClass),
                };
                let changes = match &self.app.flavors {
                    Some(Ok(v)) => v.changes.clone(),
                    _ => vec![],
                };
                tokio::spawn(async move {
                    use crate::core::migrate::flavors;
                    let r: Result<Msg, String> = async {
                        let url = DbUrl::parse(&nova).map_err(|e| e.to_string())?;
                        let db = Db::connect(&url, if apply { Access::ReadWrite } else { Access::ReadOnly }).await.map_err(|e| e.to_string())?;
                        let schema = flavors::detect(&db).await.map_err(|e| e.to_string());
                        let out = match (schema, target) {
                            (Err(e), _) => Ok(Msg::Flavors(Err(e))),
                            (Ok(_), None) => Ok(Msg::Flavors(Ok(super::app::FlavorView { what: "no resource class given: modern Nova flavors need one (field Resource class)".into(), ..Default::default() }))),
                            (Ok(schema), Some(_)) if apply => {
                                let set = uuid::Uuid::new_v4().to_string();
                                flavors::apply(&db, schema, &changes, &set).await.map(|_| Msg::FlavorsApplied(Ok(set))).map_err(|e| e.to_string())
                            }
                            (Ok(schema), Some(t)) => {
                                let what = match &t {
                                    flavors::FlavorTarget::DeployImages { .. } => "Juno/Kilo Nova copies the deploy images from the flavor: point them at Ironic's".to_string(),
                                    flavors::FlavorTarget::ResourceClass(c) => format!("modern Nova schedules bare metal by resource class {}", flavors::custom_class(c)),
                                };
                                flavors::plan_changes(&db, schema, &t, &[]).await.map(|changes| Msg::Flavors(Ok(super::app::FlavorView { schema: format!("{schema:?}"), what, changes, applied: None }))).map_err(|e| e.to_string())
                            }
                        };
                        db.close().await;
                        out
                    }
                    .await;
                    let _ = tx.send(match r {
                        Ok(m) => m,
                        Err(e) if apply => Msg::FlavorsApplied(Err(e)),
                        Err(e) => Msg::Flavors(Err(e)),
                    });
                });
            }
            Effect::Verify => {
                let (Some(prepared), Some(Ok(summary))) =
                    (self.app.prepared.clone(), self.app.progress.finished.clone())
                else {
                    return;
                };
                let Some(db) = prepared.target_db.clone() else { return };
                let api_url = self.app.fields[F_API].value().to_string();
                tokio::spawn(async move {
                    let r = async {
                        let runs = load_sql::runs(&db).await.map_err(|e| e.to_string())?;
                        let run = rollback::pick_run(runs, Some(&summary.run_id)).map_err(|e| e.to_string())?;
                        let api = if api_url.is_empty() {
                            None
                        } else {
                            IronicApi::new(&api_url, None, prepared.target.schema.kind).ok()
                        };
                        let rep = verify::verify(&db, &run, &prepared.inventory, api.as_ref())
                            .await
                            .map_err(|e| e.to_string())?;
                        if rep.differences.is_empty() {
                            Ok(format!("{} nodes, {} ports: no differences", rep.nodes_checked, rep.ports_checked))
                        } else {
                            Err(format!(
                                "{} difference(s): run `bm2ironic verify --run {}`",
                                rep.differences.len(),
                                run.id
                            ))
                        }
                    }
                    .await;
                    let _ = tx.send(Msg::Verified(r));
                });
            }
        }
    }
}
