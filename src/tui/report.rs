//! The run report of this wizard's load (`s` on the summary): the core's report of the outcome the
//! core decided (the plan it loaded, how it ended, its verification), with what only the wizard saw
//! added: the takeover errors of the followed logs, the flavor change, where the decisions went.

use crate::core::migrate::report::{Report, ReportInput, TakeoverNote};
use crate::core::settings::ConnectionSettings;

use super::app::App;
use super::work::Finished;

/// The report of this wizard's load (None before a load ended with an outcome).
pub fn build(app: &App) -> Option<Report> {
    let Some(Ok(f)) = &app.progress.finished else { return None };
    let settings = app.connections.connections().settings().ok()?;
    let mut takeover = Vec::new();
    for e in &app.logs.pinned {
        if e.nodes.is_empty() {
            takeover.push(TakeoverNote { node_uuid: None, text: e.text.clone() });
        }
        for n in &e.nodes {
            takeover.push(TakeoverNote { node_uuid: Some(n.clone()), text: e.text.clone() });
        }
    }
    let watched = !app.logs.files.is_empty();
    Some(report_of(&settings, f, |input| {
        let input = input
            .phases(app.phases())
            .flavors(app.flavors.result.as_ref().and_then(|r| r.as_ref().ok()).and_then(|v| v.applied.clone()))
            .resolutions(app.summary.saved_to.clone());
        if watched {
            input.takeover(takeover)
        } else {
            input
        }
    }))
}

/// The report of a finished load: the core's report of its outcome and the plan it loaded, with
/// `extra` adding what the wizard saw (what `build` adds; the tests add nothing).
pub fn report_of(
    settings: &ConnectionSettings,
    f: &Finished,
    extra: impl FnOnce(ReportInput<'_>) -> ReportInput<'_>,
) -> Report {
    let input = ReportInput::new(settings, f.planned.plan(), f.planned.prepared.source.clone(), &f.outcome);
    Report::new(&extra(input))
}

/// The report's file name: `bm2ironic-report-<run>.md` (the run id's first 8 characters).
pub fn file_name(app: &App) -> String {
    let run = app.progress.outcome().and_then(|o| o.reported_run()).map_or("plan", |r| r.short());
    format!("bm2ironic-report-{run}.md")
}
