//! `bm2ironic migrate`: the migrate use case (`core::migrate::steps::migrate`), asked through this
//! face: confirmation unless `--yes`, the events shown as they come (`cli/progress.rs`), then the
//! outcome the core decided, printed, written to `--report FILE`, and turned into the exit code.

use tokio_util::sync::CancellationToken;

use crate::cli::args::{options, plan_request, GlobalArgs, MigrateArgs};
use crate::cli::failure::Failure;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{check_report_path, write_report, Prompt};
use crate::cli::progress::{print_ended, print_failed, show_events, Show};
use crate::core::migrate::steps::{self, Ended, MigrateRequest, StepError};

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    check_report_path(args.report.as_deref())?;
    let (mode, settings) = (args.mode()?, global.settings()?);
    let decided = options(&args.plan, &settings)?;
    let show = Show { json: args.plan.json, verbose: global.verbose > 0, kind: mode.kind() };
    let (api, state_dir) = (global.api_target(&settings)?, global.state_dir());
    let plan = plan_request(&args.plan, &settings, &decided);
    let req =
        MigrateRequest { plan, mode, api, state_dir: state_dir.clone(), verify: args.report.is_some(), reviewed: None };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let interrupt = Interrupt::on_signals(&cancel);
    let mut face = Prompt { yes: args.yes, word: "migrate", refused: None };
    let (m, ()) = tokio::join!(steps::migrate(req, &mut face, tx, &cancel), show_events(rx, show));
    let (planned, o) = m.map_err(|e| face.failure(e))?;
    print_ended(&o, show, planned.plan());
    // after a commit (or nodes left through the API) a report that cannot be written is a warning;
    // one of a run that did not start says why (for the ticket), and its line says it did not start
    write_report(&args, &settings, &planned, &o, o.left_something().then_some(state_dir.as_path()))?;
    let Some((kind, message)) = o.failure() else { return Ok(()) };
    let f = match (&o.ended, face.refused.take()) {
        (Ended::NotStarted(StepError::Refused(_)), Some(refused)) => refused,
        _ => Failure::of(kind, interrupt.explain(&message)),
    };
    print_failed(&o, show, &f);
    Err(f)
}
