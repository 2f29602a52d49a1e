//! The run report from what the wizard knows (`s` on the summary): the plan and its decisions, the
//! load's outcome and timings, the verification, the takeover errors seen in the followed logs.

use crate::core::db::url::redact_url;
use crate::core::migrate::report::{Outcome, Report, ReportInput, TakeoverNote, Who};

use super::app::App;
use super::field::Field;

/// The report of this wizard's run (None before a plan exists).
pub fn build(app: &App) -> Option<Report> {
    let plan = app.session.plan.as_ref()?;
    let c = &app.connections;
    let given = |f: Field| Some(redact_url(c.value(f))).filter(|v| !v.is_empty());
    let outcome = match &app.progress.finished {
        Some(Ok(s)) => Outcome::Loaded(s),
        Some(Err(e)) => Outcome::Failed(e.clone()),
        None => Outcome::NotStarted("no load ran in this wizard".into()),
    };
    let mut takeover = Vec::new();
    for e in &app.logs.pinned {
        if e.nodes.is_empty() {
            takeover.push(TakeoverNote { node_uuid: None, text: e.text.clone() });
        }
        for n in &e.nodes {
            takeover.push(TakeoverNote { node_uuid: Some(n.clone()), text: e.text.clone() });
        }
    }
    let input = ReportInput {
        who: Who::current(),
        plan,
        source: app
            .session
            .prepared
            .as_ref()
            .map(|p| p.source.clone())
            .unwrap_or_else(|| redact_url(c.value(Field::NovaBmDb))),
        target: redact_url(c.value(Field::IronicDb)),
        nova: given(Field::NovaDb),
        nova_api: given(Field::NovaApiDb),
        ironic_api: given(Field::IronicApi),
        outcome,
        phases: app.phases(),
        verify: app.summary.verify.clone(),
        takeover: (!app.logs.files.is_empty()).then_some(takeover),
        flavors_change_set: app.flavors.result.as_ref().and_then(|r| r.as_ref().ok()).and_then(|v| v.applied.clone()),
        resolutions_file: app.summary.saved_to.clone(),
    };
    Some(Report::new(&input))
}

/// The report's file name: `bm2ironic-report-<run>.md` (the run id's first 8 characters).
pub fn file_name(app: &App) -> String {
    let run = match &app.progress.finished {
        Some(Ok(s)) => s.run_id.chars().take(8).collect(),
        _ => "plan".to_string(),
    };
    format!("bm2ironic-report-{run}.md")
}
