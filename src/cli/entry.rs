//! The entry point of the scriptable face: the clap command list ([`Cli`], [`Command`]), `main`
//! (parse, start the audit log, run, map the outcome to an exit code) and the dispatch to the
//! commands in `cmd/`. Nothing in `cmd/` imports it.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use super::args::{GlobalArgs, MigrateArgs, PlanArgs, VERSION};
use super::cmd;
use super::failure::{exit, Failure};
use crate::audit;
use crate::cli::output::note;
use crate::core::db::url::redact_url;
use crate::core::redact::redact;

#[derive(Parser, Debug)]
#[command(
    name = "bm2ironic",
    version = VERSION,
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
    #[command(mut_arg("json", |a| a.hide(true)))]
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
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell
    Completions(cmd::completions::CompletionsArgs),
    /// Print the bm2ironic.1 man page (roff: `bm2ironic man-page | man -l -`), or write every page
    #[command(hide = true)]
    ManPage(cmd::completions::ManPageArgs),
}

/// The commands generated from the command list itself (completions, the man page): they print
/// only, with no audit log. None for every other command.
fn printed_only(cli: &Cli) -> Option<ExitCode> {
    use clap::CommandFactory;
    let printed = match &cli.command {
        Some(Command::Completions(a)) => cmd::completions::completions(a, Cli::command()),
        Some(Command::ManPage(a)) => cmd::completions::man_page(a, Cli::command()),
        _ => return None,
    };
    Some(match printed {
        Ok(()) => ExitCode::from(exit::OK),
        Err(f) => {
            note(&format!("bm2ironic: {}", f.message()));
            ExitCode::from(f.code())
        }
    })
}

/// Entry point: parse, start the audit log, run, map the outcome to an exit code.
pub fn main() -> ExitCode {
    // an argument that is not UTF-8 is shown lossily, never a panic
    let args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    register_given_secrets(&args);
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            // clap may echo a misplaced argument: its text goes through the one redactor
            let code = e.exit_code();
            let text = e.render().to_string();
            if code == 0 {
                print!("{}", redact(&text));
            } else {
                eprint!("{}", crate::core::text::shown(&text));
            }
            return ExitCode::from(code as u8);
        }
    };
    if let Some(code) = printed_only(&cli) {
        return code;
    }
    let runs_tui = match &cli.command {
        None | Some(Command::Wizard(_)) => true,
        Some(Command::Demo(a)) => !a.no_tui,
        Some(Command::Inventory(a)) => !a.json && crate::tui::have_terminal(),
        _ => false,
    };
    let log_dir = cli.global.log_dir();
    // the proxy is a service: its access log goes to stderr too (the journal)
    let to_stderr = !runs_tui && (cli.global.verbose > 0 || matches!(cli.command, Some(Command::Proxy(_))));
    let log = audit::init(log_dir.as_deref(), to_stderr, cli.global.verbose);
    if let Some(w) = &log.warning {
        note(w);
    }
    // each argument redacted whole: a password holding a space is one argument, not two words
    let argv: Vec<String> = args.iter().map(|a| redact_url(a)).collect();
    // who really runs it (the uid), not what $USER claims
    // SAFETY: getuid has no preconditions
    let uid = unsafe { libc::getuid() };
    let claimed = std::env::var("USER").or_else(|_| std::env::var("LOGNAME")).unwrap_or_else(|_| "?".into());
    let user = format!("uid {uid} (USER={claimed})");
    tracing::info!(argv = ?argv, user = %user, pid = std::process::id(), version = VERSION, "command started");

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
        note(&format!("bm2ironic: {message}"));
        return ExitCode::from(exit::RUNTIME);
    }

    let outcome = run_command(cli);
    let code = match outcome {
        Ok(()) => exit::OK,
        Err(f) => {
            // the audit log's record of it; the operator reads the line below (not mirrored twice)
            tracing::error!(target: "bm2ironic::outcome", code = f.code(), message = %f.message(), "command failed");
            note(&format!("bm2ironic: {}", f.message()));
            f.code()
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

/// The environment variables that may hold a URL with a password, or a password or token itself.
const SECRET_ENV: [&str; 11] = [
    "BM2IRONIC_NOVA_BM_DB",
    "BM2IRONIC_IRONIC_DB",
    "BM2IRONIC_NOVA_DB",
    "BM2IRONIC_NOVA_API_DB",
    "BM2IRONIC_IRONIC_URL",
    "BM2IRONIC_IRONIC_PASSWORD",
    "OS_PASSWORD",
    "OS_TOKEN",
    "OS_AUTH_TOKEN",
    "OS_APPLICATION_CREDENTIAL_SECRET",
    "OS_AUTH_URL",
];

/// Registers, before anything can be shown, the secrets the command line and the environment hold
/// (core/redact.rs): a clap error, a driver's message or a panic that echoes one then shows `***`.
fn register_given_secrets(args: &[String]) {
    use crate::core::redact::{register_secret, register_url_secrets};
    for a in args {
        register_url_secrets(a);
    }
    // a value given as its own argument after a password flag (`--ironic-password PW`)
    for pair in args.windows(2) {
        if pair[0].starts_with("--") && pair[0].contains("password") {
            register_secret(&pair[1]);
        }
    }
    for a in args {
        if let Some((flag, value)) = a.split_once('=') {
            if flag.starts_with("--") && flag.contains("password") {
                register_secret(value);
            }
        }
    }
    for var in SECRET_ENV {
        if let Some(v) = std::env::var_os(var) {
            let v = v.to_string_lossy();
            if var.contains("PASSWORD") || var.contains("TOKEN") || var.contains("SECRET") {
                register_secret(&v);
            } else {
                register_url_secrets(&v);
            }
        }
    }
}

/// The project file's plan options, into the commands that take them (a flag wins): `plan`,
/// `migrate`, the wizard, `flavors` (and the architectures to `inventory`). Says which file gave which options (a file left over from a
/// rehearsal is seen, not silently used). docs/config.md "The project file".
pub(crate) fn with_project(cli: &mut Cli) -> Result<(), Failure> {
    use crate::core::settings::project::Project;
    let command = cli.command.get_or_insert_with(|| Command::Wizard(Default::default()));
    if !matches!(
        command,
        Command::Plan(_) | Command::Migrate(_) | Command::Wizard(_) | Command::Flavors(_) | Command::Inventory(_)
    ) {
        return Ok(());
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let Some(project) = Project::find(cli.global.config.as_deref(), &cwd)? else { return Ok(()) };
    let given = format!("options from project file {}: {}", project.path.display(), project.keys().join(", "));
    tracing::info!("{given}");
    let on_screen = matches!(command, Command::Wizard(_))
        || matches!(command, Command::Inventory(a) if !a.json && crate::tui::have_terminal());
    if !on_screen {
        note(&format!("bm2ironic: {}", crate::core::text::visible(&given)));
    }
    match command {
        Command::Plan(a) => a.with_project(&project.options),
        Command::Migrate(a) => a.plan.with_project(&project.options),
        Command::Wizard(a) => a.plan.with_project(&project.options),
        Command::Flavors(a) => {
            a.project = project.options;
            Ok(())
        }
        // the browse takes the architectures only: the rest are a migration's options
        Command::Inventory(a) => {
            if a.default_arch.is_none() {
                a.default_arch = project.options.default_arch;
            }
            a.arch = project.options.arch;
            Ok(())
        }
        _ => Ok(()),
    }
}

fn run_command(mut cli: Cli) -> Result<(), Failure> {
    with_project(&mut cli)?;
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
        Some(Command::Completions(_) | Command::ManPage(_)) => Ok(()), // printed in `main`, before the audit log
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modes and the duration are typed at the edge: a bad value is clap's usage error (exit 2)
    /// before anything connects, and a good one arrives parsed.
    #[test]
    fn modes_and_durations_are_parsed_by_clap() {
        use crate::cli::args::Via;
        use crate::core::migrate::plan::FreeState;
        use std::time::Duration;
        let parse = |args: &[&str]| Cli::try_parse_from([&["bm2ironic"], args].concat());
        for bad in [
            &["migrate", "--via", "rest"][..],
            &["migrate", "--free-state", "active"],
            &["migrate", "--step-timeout", "5d"],
            &["plan", "--via", "API "],
            // the typed flags (#47): a bad value is clap's usage error, never met inside a command
            &["plan", "--arch", "bm-compute-1"],
            &["plan", "--arch", "=x86_64"],
            &["plan", "--resolve", "duplicate-mac=skipp"],
            &["plan", "--resolve", "no-such-code=skip"],
            &["plan", "--object-version", "1.44"],
            &["watch", "--since", "yesterday"],
        ] {
            let e = parse(bad).expect_err(&format!("{bad:?}"));
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        let cli = parse(&["migrate", "--via", "api", "--free-state", "manageable", "--step-timeout", "90s"]).unwrap();
        let Some(Command::Migrate(m)) = cli.command else { panic!("not migrate") };
        assert_eq!(
            (m.plan.via(), m.plan.free_state, m.step_timeout),
            (Via::Api, Some(FreeState::Manageable), Duration::from_secs(90))
        );
        let cli = parse(&[
            "plan",
            "--arch",
            " h1 = x86_64",
            "--resolve",
            "duplicate-mac=skip-port",
            "--object-version",
            "1.44,1.16",
        ])
        .unwrap();
        let Some(Command::Plan(p)) = cli.command else { panic!("not plan") };
        assert_eq!(p.arch, [crate::cli::args::HostArch { host: "h1".into(), arch: "x86_64".into() }]);
        use crate::core::migrate::conflict::{Action, ConflictCode};
        assert_eq!(p.resolve, [(ConflictCode::DuplicateMac, Action::SkipPort)]);
        assert_eq!(p.object_version, Some(("1.44".into(), "1.16".into())));
        let cli = parse(&["migrate"]).unwrap();
        let Some(Command::Migrate(m)) = cli.command else { panic!("not migrate") };
        assert_eq!((m.plan.via(), m.plan.free_state, m.step_timeout), (Via::Db, None, Duration::from_secs(600)));
    }

    #[test]
    fn arguments_are_redacted_whole_and_their_secrets_registered() {
        assert_eq!(redact_url("--nova-bm-db=mysql://u:pw@h/db"), "--nova-bm-db=mysql://u:***@h/db");
        assert_eq!(redact_url("--nova-bm-db=mysql://nova:PW 123x@h/db"), "--nova-bm-db=mysql://nova:***@h/db");
        register_given_secrets(&["bm2ironic".into(), "--ironic-url=http://a:Tab\tPw99@h".into()]);
        assert_eq!(
            redact("error: unexpected 'http://a:Tab\tPw99@h' (Tab\tPw99)"),
            "error: unexpected 'http://a:***@h' (***)"
        );
    }

    /// Every flag of every command says what it is (before: `rollback --json`, `flavors --json`,
    /// `--change-set` had no words), and the global flags stand under their own heading, apart from
    /// the command's own (#48 item 8).
    #[test]
    fn every_flag_is_described_and_global_flags_have_their_heading() {
        use clap::CommandFactory;
        let mut cli = Cli::command();
        cli.build();
        let mut undescribed = vec![];
        for sub in cli.get_subcommands() {
            for a in sub.get_arguments().filter(|a| !a.is_hide_set() && a.get_id() != "help" && a.get_id() != "version")
            {
                if a.get_help().is_none() && a.get_long_help().is_none() {
                    undescribed.push(format!("{} --{}", sub.get_name(), a.get_id()));
                }
                let heading = a.get_help_heading();
                assert_eq!(
                    heading == Some("Global options (every command)"),
                    a.is_global_set(),
                    "{} --{}: heading {heading:?}",
                    sub.get_name(),
                    a.get_id()
                );
            }
        }
        assert!(undescribed.is_empty(), "flags without a description: {undescribed:?}");
    }

    /// `inventory` takes the project file's architectures (its notes then say none is missing);
    /// `verify` takes nothing from it and does not read it.
    #[test]
    fn inventory_takes_the_project_files_architectures() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "default-arch = \"x86_64\"\narch = { h1 = \"aarch64\" }\n").unwrap();
        let mut cli = Cli::try_parse_from(["bm2ironic", "--config", file.to_str().unwrap(), "inventory"]).unwrap();
        with_project(&mut cli).unwrap();
        let Some(Command::Inventory(a)) = cli.command else { panic!("not inventory") };
        assert_eq!(a.default_arch.as_deref(), Some("x86_64"));
        assert_eq!(a.arch.get("h1").map(String::as_str), Some("aarch64"));
        let missing = dir.path().join("none.toml");
        let mut cli = Cli::try_parse_from(["bm2ironic", "--config", missing.to_str().unwrap(), "verify"]).unwrap();
        assert!(with_project(&mut cli).is_ok(), "verify reads no project file");
    }

    #[test]
    fn cli_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
