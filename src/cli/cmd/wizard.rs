//! `bm2ironic wizard` (and no command at all): the interactive wizard, its fields prefilled from
//! the flags, the environment and the config files.

use std::path::PathBuf;

use clap::Args;

use crate::cli::args::{audit_dir, options, prefill, GlobalArgs, PlanArgs, DEFAULT_COMPUTE_LOG, DEFAULT_CONDUCTOR_LOG};
use crate::cli::failure::Failure;

#[derive(Args, Debug, Default)]
pub struct WizardArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
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

fn no_terminal(what: &str) -> Failure {
    Failure::usage(format!(
        "{what} needs an interactive terminal (stdin and stdout): run it in one, or use the scriptable commands (inventory --json, plan, migrate ...)"
    ))
}

pub async fn run(global: &GlobalArgs, args: WizardArgs) -> Result<(), Failure> {
    if args.plan.json {
        return Err(Failure::usage(
            "--json is for the scriptable commands (plan, migrate, verify, ...): the wizard draws a terminal",
        ));
    }
    if !crate::tui::have_terminal() {
        return Err(no_terminal("the wizard"));
    }
    let (app, ctx) = wizard_of(global, args)?;
    ended(crate::tui::run_wizard(app, ctx).await)
}

/// The wizard as these flags set it up (its fields prefilled, `--via` the confirm screen's load
/// path), before it takes the terminal.
fn wizard_of(global: &GlobalArgs, args: WizardArgs) -> Result<(crate::tui::App, crate::tui::Context), Failure> {
    let settings = global.settings()?;
    let crate::cli::args::Decided { options: opts, resolutions, .. } = options(&args.plan, &settings)?;
    let mode = if args.rehearse { crate::tui::Mode::Rehearsal } else { crate::tui::Mode::Live };
    let mut pre = prefill(&settings, &args.plan);
    // --os-cloud / OS_CLOUD: the Ironic API through Keystone (the field takes a cloud name)
    if pre.ironic_url.is_none() {
        pre.ironic_url = global.os_cloud();
    }
    let via_api = args.plan.via() == crate::cli::args::Via::Api;
    if via_api && args.rehearse {
        return Err(Failure::usage(
            "--rehearse needs --via db: the API has no transaction to roll back (rehearse on a copy)",
        ));
    }
    let mut app = crate::tui::App::new(mode, pre, opts, resolutions);
    // the load path chosen on the command line is the confirm screen's default (Tab changes it there)
    app.confirm.via_api = via_api;
    app.audit_log = audit_dir(global);
    app.state_dir = Some(global.state_dir());
    app.nova_conf = global.nova_conf.as_ref().map(|p| p.display().to_string());
    // the decisions read at start: the next steps name the file, an existing one is not offered
    app.session.loaded_from = args.plan.resolutions.as_ref().map(|p| p.display().to_string());
    app.confirm.multiplexer = crate::tui::in_multiplexer();
    let ctx = crate::tui::Context {
        logs: vec![
            ("ironic".into(), args.conductor_log.unwrap_or_else(|| DEFAULT_CONDUCTOR_LOG.into())),
            ("nova-compute".into(), args.compute_log.unwrap_or_else(|| DEFAULT_COMPUTE_LOG.into())),
        ],
        ..Default::default()
    };
    Ok((app, ctx))
}

/// The exit of a wizard session (wizard, demo, the read-only browse): 0 when the operator quit,
/// 1 when the quit cancelled a running load (its error says what became of it).
pub(crate) fn ended(r: Result<crate::tui::Ending, crate::tui::WizardError>) -> Result<(), Failure> {
    use crate::tui::Ending;
    match r.map_err(Failure::from)? {
        Ending::Quit => Ok(()),
        Ending::LoadFinished(line) => {
            eprintln!("bm2ironic: the load had finished when the quit reached it: {line}");
            Ok(())
        }
        Ending::LoadStopped(why) => Err(Failure::runtime(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn wizard(args: &[&str]) -> Result<crate::tui::App, Failure> {
        let cli = crate::cli::entry::Cli::try_parse_from(args).unwrap();
        let Some(crate::cli::entry::Command::Wizard(w)) = cli.command else { panic!("not the wizard") };
        wizard_of(&cli.global, w).map(|(app, _)| app)
    }

    /// The project file reaches the wizard's fields and its options: the deploy images prefilled,
    /// the arch of a host and the load path taken from it (#48 item 9), a flag still winning.
    #[test]
    fn the_project_file_fills_the_wizard() {
        use crate::tui::field::Field;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.toml");
        std::fs::write(&file, "deploy-kernel = \"file:///k\"\ndeploy-ramdisk = \"file:///r\"\nvia = \"api\"\narch = { h1 = \"aarch64\" }\n").unwrap();
        let parse = |extra: &[&str]| {
            let args =
                [&["bm2ironic", "--config", file.to_str().unwrap(), "--nova-bm-db", "sqlite:///tmp/n.sqlite"], extra]
                    .concat();
            let mut cli = crate::cli::entry::Cli::try_parse_from(args).unwrap();
            crate::cli::entry::with_project(&mut cli).unwrap();
            let Some(crate::cli::entry::Command::Wizard(w)) = cli.command else { panic!("not the wizard") };
            wizard_of(&cli.global, w).map(|(app, _)| app).unwrap()
        };
        let app = parse(&["wizard"]);
        assert_eq!(app.connections.value(Field::DeployKernel), "file:///k");
        assert_eq!(app.session.plan_options.arch_by_host.get("h1").map(String::as_str), Some("aarch64"));
        assert!(app.confirm.via_api, "via = \"api\" from the file");
        let app = parse(&["wizard", "--deploy-kernel", "file:///flag", "--via", "db"]);
        assert_eq!(app.connections.value(Field::DeployKernel), "file:///flag", "a flag wins");
        assert!(!app.confirm.via_api);
        // no command at all is the wizard too, and reads the file
        let app = parse(&[]);
        assert_eq!(app.connections.value(Field::DeployKernel), "file:///k");
    }

    /// `wizard --via api` makes the API the confirm screen's load path (before: ignored, the
    /// screen said "SQL, one transaction" and `migrate` typed there wrote by SQL into the database of
    /// a running Ironic); `--via api --rehearse` is refused as `migrate` refuses it.
    #[test]
    fn via_api_is_the_confirm_screens_load_path() {
        let db = ["--nova-bm-db", "sqlite:///tmp/n.sqlite", "--ironic-db", "sqlite:///tmp/i.sqlite"];
        let app = wizard(&[&["bm2ironic"], &db[..], &["wizard", "--via", "api"]].concat()).unwrap();
        assert!(app.confirm.via_api);
        let app = wizard(&[&["bm2ironic"], &db[..], &["wizard"]].concat()).unwrap();
        assert!(!app.confirm.via_api);
        let e = wizard(&[&["bm2ironic"], &db[..], &["wizard", "--via", "api", "--rehearse"]].concat()).unwrap_err();
        assert!(e.message().contains("--rehearse needs --via db"), "{}", e.message());
    }
}
