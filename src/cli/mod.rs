//! The scriptable face: argument parsing, exit codes (INTERFACE.md), and one module per command.

mod demo;
mod engine;
mod flavors;
mod inventory;
pub mod table;
pub(crate) mod watch;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::audit;
use crate::core::db::conf::{ConnectionFlags, ConnectionSettings, SettingsError};
use crate::core::db::url::redact_url;
use crate::core::source::nova_bm::SourceError;

/// Exit codes of the command-line contract.
pub mod exit {
    pub const OK: u8 = 0;
    pub const RUNTIME: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const CONFLICTS: u8 = 3;
    pub const DIFFERENCES: u8 = 4;
}

/// A command's failure: the exit code and one line for the operator (already redacted).
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn runtime(message: impl Into<String>) -> Failure {
        Failure { code: exit::RUNTIME, message: message.into() }
    }
    pub fn usage(message: impl Into<String>) -> Failure {
        Failure { code: exit::USAGE, message: message.into() }
    }
}

impl From<SettingsError> for Failure {
    fn from(e: SettingsError) -> Failure {
        let code = if e.is_usage() { exit::USAGE } else { exit::RUNTIME };
        Failure { code, message: e.to_string() }
    }
}

impl From<SourceError> for Failure {
    fn from(e: SourceError) -> Failure {
        Failure::runtime(e.to_string())
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "bm2ironic",
    version,
    about = "Move a nova baremetal (nova_bm) inventory to Ironic in one maintenance window, without losing a running instance",
    after_help = "Connections: flag > environment (BM2IRONIC_NOVA_BM_DB, BM2IRONIC_IRONIC_DB, BM2IRONIC_NOVA_DB, BM2IRONIC_IRONIC_URL) > --nova-conf/--ironic-conf.\nPasswords on the command line are visible in `ps`: prefer the environment or a config file.\nExit codes: 0 ok, 1 runtime error, 2 usage error, 3 blocking conflicts, 4 verification differences."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Args, Debug, Clone, Default)]
pub struct GlobalArgs {
    /// nova_bm database URL (SQLAlchemy or sqlx form)
    #[arg(long, global = true, value_name = "URL")]
    pub nova_bm_db: Option<String>,
    /// Ironic database URL
    #[arg(long, global = true, value_name = "URL")]
    pub ironic_db: Option<String>,
    /// Nova database URL (optional: instances, flavors, services)
    #[arg(long, global = true, value_name = "URL")]
    pub nova_db: Option<String>,
    /// Ironic API endpoint (optional)
    #[arg(long, global = true, value_name = "URL")]
    pub ironic_url: Option<String>,
    /// nova.conf of a baremetal nova-compute host ([baremetal] sql_connection, power manager, ...)
    #[arg(long, global = true, value_name = "FILE")]
    pub nova_conf: Option<PathBuf>,
    /// ironic.conf ([database] connection)
    #[arg(long, global = true, value_name = "FILE")]
    pub ironic_conf: Option<PathBuf>,
    /// Directory of the audit log (default: ~/.local/state/bm2ironic; env BM2IRONIC_LOG_DIR)
    #[arg(long, global = true, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Mirror the audit log to stderr (-v, -vv, -vvv; CLI commands only)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl GlobalArgs {
    fn connection_flags(&self) -> ConnectionFlags {
        ConnectionFlags {
            nova_bm_db: self.nova_bm_db.clone(),
            ironic_db: self.ironic_db.clone(),
            nova_db: self.nova_db.clone(),
            ironic_url: self.ironic_url.clone(),
            nova_conf: self.nova_conf.clone(),
            ironic_conf: self.ironic_conf.clone(),
        }
    }

    /// Resolves every connection (flag > environment > config file) and prints the `ps` warnings.
    pub fn settings(&self) -> Result<ConnectionSettings, Failure> {
        let s = ConnectionSettings::resolve(&self.connection_flags(), &|k| std::env::var(k).ok())?;
        for w in s.warnings() {
            eprintln!("{w}");
            tracing::warn!("{w}");
        }
        Ok(s)
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The interactive wizard (full-screen terminal UI); also what runs without a command
    Wizard(WizardArgs),
    /// Build a rehearsal sandbox on embedded SQLite and open it
    Demo(demo::DemoArgs),
    /// Read-only browse of the nova_bm inventory (a table, or --json)
    Inventory(inventory::InventoryArgs),
    /// Compute what would be written and every conflict; writes nothing (exit 3: blocking conflicts)
    Plan(engine::PlanArgs),
    /// Perform the migration (one transaction on the Ironic database; --rehearse rolls it back)
    Migrate(engine::MigrateArgs),
    /// Compare what a run wrote with the Ironic database, nova_bm and (--ironic-url) the API (exit 4: differences)
    Verify(engine::VerifyArgs),
    /// Remove from Ironic what a migration run wrote
    Rollback(engine::RollbackArgs),
    /// Follow the Ironic and nova-compute logs and report takeover errors (exit 4 when any)
    Watch(watch::WatchArgs),
    /// Show, and with --apply make, the flavor metadata changes (--restore undoes them)
    Flavors(flavors::FlavorsArgs),
}

/// Entry point: parse, start the audit log, run, map the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // clap may echo a misplaced argument: redact URLs before printing
            let code = e.exit_code();
            let text = e.render().to_string();
            let text: String = text.split_inclusive('\n').map(redact_words).collect();
            if code == 0 {
                print!("{text}");
            } else {
                eprint!("{text}");
            }
            return ExitCode::from(code as u8);
        }
    };
    let runs_tui = match &cli.command {
        None | Some(Command::Wizard(_)) => true,
        Some(Command::Demo(a)) => !a.no_tui,
        Some(Command::Inventory(a)) => !a.json && crate::tui::have_terminal(),
        _ => false,
    };
    let log_dir = cli.global.log_dir.clone().or_else(|| std::env::var_os(audit::ENV_LOG_DIR).map(PathBuf::from));
    let log = audit::init(log_dir.as_deref(), !runs_tui && cli.global.verbose > 0, cli.global.verbose);
    if let Some(w) = &log.warning {
        eprintln!("{w}");
    }
    let argv: Vec<String> = std::env::args().map(|a| redact_words(&a)).collect();
    let user = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| "?".into());
    tracing::info!(argv = ?argv, user = %user, pid = std::process::id(), version = env!("CARGO_PKG_VERSION"), "command started");

    let outcome = run(cli);
    let code = match outcome {
        Ok(()) => exit::OK,
        Err(f) => {
            tracing::error!(code = f.code, message = %f.message, "command failed");
            eprintln!("bm2ironic: {}", f.message);
            f.code
        }
    };
    tracing::info!(code, "command finished");
    drop(log);
    ExitCode::from(code)
}

fn redact_words(text: &str) -> String {
    text.split_inclusive(char::is_whitespace).map(redact_url).collect()
}

fn run(cli: Cli) -> Result<(), Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    match cli.command {
        None => rt.block_on(wizard(&cli.global, WizardArgs::default())),
        Some(Command::Wizard(args)) => rt.block_on(wizard(&cli.global, args)),
        Some(Command::Demo(args)) => rt.block_on(demo::run(&cli.global, args)),
        Some(Command::Inventory(args)) => rt.block_on(inventory::run(&cli.global, args)),
        Some(Command::Plan(args)) => rt.block_on(engine::plan(&cli.global, args)),
        Some(Command::Migrate(args)) => rt.block_on(engine::migrate(&cli.global, args)),
        Some(Command::Verify(args)) => rt.block_on(engine::verify(&cli.global, args)),
        Some(Command::Rollback(args)) => rt.block_on(engine::rollback_cmd(&cli.global, args)),
        Some(Command::Watch(args)) => rt.block_on(watch::run(&cli.global, args)),
        Some(Command::Flavors(args)) => rt.block_on(flavors::run(&cli.global, args)),
    }
}

pub const DEFAULT_CONDUCTOR_LOG: &str = "/var/log/ironic/ironic-conductor.log";
pub const DEFAULT_COMPUTE_LOG: &str = "/var/log/nova/nova-compute.log";

#[derive(Args, Debug, Default)]
pub struct WizardArgs {
    #[command(flatten)]
    pub plan: engine::PlanArgs,
    /// A guided rehearsal: everything runs, then the transaction is rolled back
    #[arg(long)]
    pub rehearse: bool,
    /// Ironic conductor log to watch during the takeover
    #[arg(long, value_name = "PATH")]
    pub conductor_log: Option<PathBuf>,
    /// nova-compute log to watch
    #[arg(long, value_name = "PATH")]
    pub compute_log: Option<PathBuf>,
}

/// The wizard's fields, prefilled from flags, environment and config files.
pub(crate) fn prefill(settings: &ConnectionSettings, plan: &engine::PlanArgs) -> crate::tui::Prefill {
    crate::tui::Prefill {
        nova_bm_db: settings.nova_bm_db.as_ref().map(|s| s.value.expose_url().to_string()),
        ironic_db: settings.ironic_db.as_ref().map(|s| s.value.expose_url().to_string()),
        nova_db: settings.nova_db.as_ref().map(|s| s.value.expose_url().to_string()),
        ironic_url: settings.ironic_url.as_ref().map(|s| s.value.clone()),
        deploy_kernel: plan.deploy_kernel.clone(),
        deploy_ramdisk: plan.deploy_ramdisk.clone(),
        default_arch: plan.default_arch.clone(),
        resource_class: plan.resource_class.clone(),
    }
}

fn no_terminal(what: &str) -> Failure {
    Failure::usage(format!(
        "{what} needs an interactive terminal (stdin and stdout): run it in one, or use the scriptable commands (inventory --json, plan, migrate ...)"
    ))
}

async fn wizard(global: &GlobalArgs, args: WizardArgs) -> Result<(), Failure> {
    if !crate::tui::have_terminal() {
        return Err(no_terminal("the wizard"));
    }
    let settings = global.settings()?;
    let (opts, resolutions, _) = engine::options(&args.plan, &settings)?;
    let mode = if args.rehearse { crate::tui::Mode::Rehearsal } else { crate::tui::Mode::Live };
    let mut app = crate::tui::App::new(mode, prefill(&settings, &args.plan), opts, resolutions);
    app.audit_log = audit_dir(global);
    let ctx = crate::tui::Context {
        logs: vec![
            ("ironic".into(), args.conductor_log.unwrap_or_else(|| DEFAULT_CONDUCTOR_LOG.into())),
            ("nova-compute".into(), args.compute_log.unwrap_or_else(|| DEFAULT_COMPUTE_LOG.into())),
        ],
        ..Default::default()
    };
    crate::tui::run_wizard(app, ctx).await.map_err(Failure::runtime)
}

pub(crate) fn audit_dir(global: &GlobalArgs) -> Option<String> {
    global
        .log_dir
        .clone()
        .or_else(|| std::env::var_os(audit::ENV_LOG_DIR).map(PathBuf::from))
        .or_else(audit::default_dir)
        .map(|d| d.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_words_hides_passwords_in_argv() {
        assert_eq!(redact_words("--nova-bm-db=mysql://u:pw@h/db"), "--nova-bm-db=mysql://u:***@h/db");
        assert_eq!(redact_words("error: 'mysql://u:pw@h/db' unexpected"), "error: 'mysql://u:***@h/db' unexpected");
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
