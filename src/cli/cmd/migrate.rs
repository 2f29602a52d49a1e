//! `bm2ironic migrate`: the migrate use case (`core::migrate::steps::migrate`: one transaction on
//! the Ironic database, `--rehearse` rolled back, or `--via api` node by node), asked through this
//! face: confirmation unless `--yes`, the events printed (`cli/progress.rs`), and `--report FILE`
//! written for the change ticket whatever the ending.

use tokio_util::sync::CancellationToken;

use crate::cli::args::{options, plan_request, GlobalArgs, MigrateArgs};
use crate::cli::failure::Failure;
use crate::cli::interrupt::Interrupt;
use crate::cli::output::{check_report_path, print_blocking, write_report, Prompt, ReportFallback};
use crate::cli::progress::{print_failed, print_summary, show_events, unfinished, Show};
use crate::core::migrate::report::Outcome;
use crate::core::migrate::steps::{self, Ending, MigrateRequest, StepError, Via};

pub async fn run(global: &GlobalArgs, args: MigrateArgs) -> Result<(), Failure> {
    check_report_path(args.report.as_deref())?;
    let via = args.via()?;
    let settings = global.settings()?;
    let decided = options(&args.plan, &settings)?;
    let show = Show { json: args.plan.json, verbose: global.verbose > 0, via_api: matches!(via, Via::Api(_)) };
    let req = MigrateRequest {
        plan: plan_request(&args.plan, &settings, &decided),
        via,
        api: global.api_target(&settings)?,
        state_dir: global.state_dir(),
        verify: args.report.is_some(),
        reviewed: None,
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancellationToken::new();
    let interrupt = Interrupt::on_signals(&cancel);
    let mut face = Prompt { yes: args.yes, word: "migrate", refused: None };
    let (m, ()) = tokio::join!(steps::migrate(req, &mut face, tx, &cancel), show_events(rx, show));
    let m = m?;
    let (p, state_dir) = (&m.planned.prepared, global.state_dir());
    let explain = |f: Failure| Failure { message: interrupt.explain(&f.message), ..f };
    let report =
        |outcome, phases, verify, fallback| write_report(&args, &settings, p, outcome, phases, verify, fallback);
    // the failure, and whether the JSON stream ends with it (and with which `started`)
    let (f, json_end) = match m.ending {
        Ending::NotStarted(e) => {
            if matches!(e, StepError::Blocking { .. }) {
                print_blocking(m.planned.plan(), show.json);
            }
            let f = explain(face.failure(e));
            report(Outcome::NotStarted(f.message.clone()), p.timings, None, ReportFallback::None)?;
            (f, show.via_api.then_some(false))
        }
        Ending::Failed { error, started } => {
            let f = explain(Failure::from(error));
            // through the API nothing rolls back: what was done stays, a rerun resumes
            let outcome = match (show.via_api, started) {
                (true, true) => Outcome::Stopped(f.message.clone()),
                (true, false) => Outcome::NotStarted(f.message.clone()),
                (false, _) => Outcome::Failed(f.message.clone()),
            };
            report(outcome, p.timings, None, ReportFallback::None)?;
            (f, Some(started))
        }
        Ending::Loaded { summary: s, failed } => {
            print_summary(&s, &m.phases, show, m.planned.plan());
            // after a commit (or nodes done through the API), a report that cannot be written is a
            // warning, never a failed exit
            let done = if show.via_api { s.created > 0 } else { s.committed };
            let fallback = if done { ReportFallback::Into(&state_dir) } else { ReportFallback::None };
            let api = Outcome::ThroughApi { summary: &s, failed: &failed };
            report(if show.via_api { api } else { Outcome::Loaded(&s) }, m.phases, m.verify, fallback)?;
            match unfinished(&s, failed.len(), m.planned.plan(), cancel.is_cancelled()).filter(|_| show.via_api) {
                None => return Ok(()),
                Some(why) => (explain(Failure::runtime(why)), Some(true)),
            }
        }
    };
    if let Some(started) = json_end.filter(|_| show.json) {
        print_failed(show, &f, started);
    }
    Err(f)
}
