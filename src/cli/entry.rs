//! The entry point of the scriptable face: the clap command list ([`Cli`], [`Command`]), `main`
//! (parse, start the audit log, run, map the outcome to an exit code) and the dispatch to the
//! commands in `cmd/`. Nothing in `cmd/` imports it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use super::args::{GlobalArgs, MigrateArgs, PlanArgs};
use super::cmd;
use super::failure::{exit, Failure};
use crate::audit;
use crate::core::db::url::redact_url;

#[derive(Parser, Debug)]
#[command(
    name = "bm2ironic",
    version,
    about = "Move a nova baremetal (nova_bm) inventory to Ironic in one maintenance window, without losing a running instance",
    after_help = "Connections: flag > environment (BM2IRONIC_NOVA_BM_DB, BM2IRONIC_IRONIC_DB, BM2IRONIC_NOVA_DB, BM2IRONIC_NOVA_API_DB, BM2IRONIC_IRONIC_URL) > --nova-conf/--ironic-conf.\nPasswords on the command line are visible in `ps`: prefer the environment or a config file.\nExit codes: 0 ok, 1 runtime error, 2 usage error, 3 blocking conflicts, 4 verification differences."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// The interactive wizard (full-screen terminal UI); also what runs without a command
    Wizard(cmd::wizard::WizardArgs),
    /// Build a rehearsal sandbox on embedded SQLite and open it
    Demo(cmd::demo::DemoArgs),
    /// Read-only browse of the nova_bm inventory (a table, or --json)
    Inventory(cmd::inventory::InventoryArgs),
    /// Compute what would be written and every conflict; writes nothing (exit 3: blocking conflicts)
    Plan(PlanArgs),
    /// Perform the migration (one transaction on the Ironic database; --rehearse rolls it back)
    Migrate(MigrateArgs),
    /// Compare what a run wrote with the Ironic database, nova_bm and (--ironic-url) the API (exit 4: differences)
    Verify(cmd::verify::VerifyArgs),
    /// Remove from Ironic what a migration run wrote
    Rollback(cmd::rollback::RollbackArgs),
    /// Follow the Ironic and nova-compute logs and report takeover errors (exit 4 when any)
    Watch(cmd::watch::WatchArgs),
    /// Show, and with --apply make, the flavor metadata changes (--restore undoes them)
    Flavors(cmd::flavors::FlavorsArgs),
    /// Move the migrated nodes' instances to the Ironic driver's compute host (--apply; --restore undoes it)
    Hosts(cmd::hosts::HostsArgs),
    /// nova.conf and ironic.conf for the Ironic driver: the changes (passwords masked), or --write-nova/--write-ironic
    Config(cmd::config::ConfigArgs),
    /// Serve Nova's old os-baremetal-nodes API read-only from Ironic (nova baremetal-node-list ...)
    Proxy(cmd::proxy::ProxyArgs),
    /// Juno conductor host, after its takeover: PXE configs back to `default boot` with the root uuid (--apply)
    JunoBoot(cmd::juno_boot::JunoBootArgs),
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
    // the proxy is a service: its access log goes to stderr too (the journal)
    let to_stderr = !runs_tui && (cli.global.verbose > 0 || matches!(cli.command, Some(Command::Proxy(_))));
    let log = audit::init(log_dir.as_deref(), to_stderr, cli.global.verbose);
    if let Some(w) = &log.warning {
        eprintln!("{}", crate::core::text::visible(w));
    }
    let argv: Vec<String> = std::env::args().map(|a| redact_words(&a)).collect();
    // who really runs it (the uid), not what $USER claims
    // SAFETY: getuid has no preconditions
    let uid = unsafe { libc::getuid() };
    let claimed = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| "?".into());
    let user = format!("uid {uid} (USER={claimed})");
    tracing::info!(argv = ?argv, user = %user, pid = std::process::id(), version = env!("CARGO_PKG_VERSION"), "command started");

    // a command that changes a database runs only with its audit trail
    let changes = match &cli.command {
        Some(Command::Migrate(a)) => !a.rehearse,
        Some(Command::Rollback(a)) => !a.list,
        Some(Command::Flavors(a)) => a.apply || a.restore,
        Some(Command::Hosts(a)) => a.apply || a.restore,
        Some(Command::JunoBoot(a)) => a.apply,
        _ => false,
    };
    if let (true, Some(why)) = (changes, &log.disabled) {
        let message = format!("the audit log cannot be written: {why}; a command that changes a database runs only with its audit trail: nothing was done");
        eprintln!("bm2ironic: {}", crate::core::text::visible(&message));
        return ExitCode::from(exit::RUNTIME);
    }

    let outcome = run_command(cli);
    let code = match outcome {
        Ok(()) => exit::OK,
        Err(f) => {
            tracing::error!(code = f.code, message = %f.message, "command failed");
            eprintln!("bm2ironic: {}", crate::core::text::visible(&f.message));
            f.code
        }
    };
    tracing::info!(code, "command finished");
    drop(log);
    if let Some(f) = audit::write_failure() {
        eprintln!(
            "bm2ironic: warning: the audit log stopped being written {}: the records after that are missing from it",
            crate::core::text::visible(f)
        );
    }
    ExitCode::from(code)
}

fn redact_words(text: &str) -> String {
    text.split_inclusive(char::is_whitespace).map(redact_url).collect()
}

fn run_command(cli: Cli) -> Result<(), Failure> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start the async runtime: {e}")))?;
    match cli.command {
        None => rt.block_on(cmd::wizard::run(&cli.global, Default::default())),
        Some(Command::Wizard(args)) => rt.block_on(cmd::wizard::run(&cli.global, args)),
        Some(Command::Demo(args)) => rt.block_on(cmd::demo::run(&cli.global, args)),
        Some(Command::Inventory(args)) => rt.block_on(cmd::inventory::run(&cli.global, args)),
        Some(Command::Plan(args)) => rt.block_on(cmd::plan::run(&cli.global, args)),
        Some(Command::Migrate(args)) => rt.block_on(cmd::migrate::run(&cli.global, args)),
        Some(Command::Verify(args)) => rt.block_on(cmd::verify::run(&cli.global, args)),
        Some(Command::Rollback(args)) => rt.block_on(cmd::rollback::run(&cli.global, args)),
        Some(Command::Watch(args)) => rt.block_on(cmd::watch::run(&cli.global, args)),
        Some(Command::Flavors(args)) => rt.block_on(cmd::flavors::run(&cli.global, args)),
        Some(Command::Proxy(args)) => rt.block_on(cmd::proxy::run(&cli.global, args)),
        Some(Command::Config(args)) => rt.block_on(cmd::config::run(&cli.global, args)),
        Some(Command::Hosts(args)) => rt.block_on(cmd::hosts::run(&cli.global, args)),
        Some(Command::JunoBoot(args)) => rt.block_on(cmd::juno_boot::run(&cli.global, args)),
    }
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
