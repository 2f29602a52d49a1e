//! What the load and the steps before it did, as the summary's next steps need it ([`RunFacts`]),
//! and what follows a save of the decisions: the values the pasted commands carry.

use super::app::{App, Field};
use super::msg::Effect;
use super::session::Mode;
use crate::core::migrate::conflict::Resolutions;
use crate::core::migrate::next_steps::{self, Flavors as F, RunFacts};

impl App {
    /// What the load and the steps before it did, for the summary's next steps.
    pub fn run_facts(&self) -> RunFacts {
        let plan = self.session.plan.as_ref();
        let opts = self.connections.plan_options(&self.session.plan_options);
        let (committed, failed, run_id, rehearsal) = match &self.progress.finished {
            Some(Ok(f)) => {
                let o = &f.outcome;
                let failed = o.failure().map(|(_, why)| why).filter(|_| !o.left_something());
                (o.left_something(), failed, o.run_id().map(|r| r.to_string()), o.rehearsal())
            }
            Some(Err(e)) => (false, Some(e.clone()), None, self.session.mode == Mode::Rehearsal),
            None => (false, None, None, self.session.mode == Mode::Rehearsal),
        };
        let flavors = match &self.flavors.result {
            Some(Ok(v)) if v.applied.is_some() => F::Applied(v.applied.clone().unwrap_or_default()),
            Some(Ok(v)) if v.changes.is_empty() => F::NoChange,
            Some(Ok(_)) => F::Pending,
            _ => F::Unknown,
        };
        let log = |name: &str| self.logs.files.iter().find(|(n, _)| n == name).map(|(_, p)| p.clone());
        let url = self.connections.value(Field::IronicApi);
        RunFacts {
            kind: plan.map(|p| p.target.kind),
            rehearsal,
            committed,
            failed,
            run_id,
            through_api: self
                .progress
                .outcome()
                .map_or(self.confirm.via_api, |o| o.kind == crate::core::migrate::run::RunKind::Api),
            resolutions: self.summary.saved_to.clone().or_else(|| self.session.loaded_from.clone()),
            unsaved_to: (self.session.unsaved() && self.session.resolutions != Resolutions::default())
                .then(|| self.session.resolutions_path.clone()),
            flavors,
            instances: self.instances_to_move(),
            ironic_url: (url.starts_with("http://") || url.starts_with("https://"))
                .then(|| crate::core::redact::redact_url(url)),
            conductor_log: log("ironic"),
            compute_log: log("nova-compute"),
            plan_args: next_steps::plan_args(&opts),
            flavor_args: next_steps::flavor_args(plan.map(|p| p.target.kind), &opts),
            nova_conf: self.nova_conf.clone(),
        }
    }

    /// The instances `hosts` moves (its own plan, on what the prepare read of Nova); without Nova's
    /// facts, the plan's active nodes.
    fn instances_to_move(&self) -> usize {
        let plan = self.session.plan.as_ref();
        let Some(p) = &self.session.prepared else { return plan.map_or(0, |p| p.summary.active) };
        let Some(nova) = &p.nova else { return plan.map_or(0, |p| p.summary.active) };
        let nodes: Vec<_> = p.inventory.nodes.iter().map(|n| n.node.clone()).collect();
        crate::core::migrate::hosts::plan_hosts(&nodes, nova, "ironic-compute").moves.len()
    }

    /// The decisions were saved at `p`: said, no longer unsaved, and the next steps (and the
    /// checklist kept) name the file now written; a quit waiting for the save goes on.
    pub(super) fn saved(&mut self, p: String) -> Vec<Effect> {
        self.status.toast = Some(format!("decisions saved: {p}"));
        self.session.saved = self.session.resolutions.clone();
        self.summary.saved_to = Some(p.clone());
        let mut out = vec![];
        if let Some(f) = &mut self.summary.facts {
            (f.resolutions, f.unsaved_to) = (Some(p), None);
            if let Some(run) = f.run_id.clone() {
                let steps = next_steps::next_steps(f);
                out.push(Effect::WriteChecklist { run_id: run, text: next_steps::checklist(f, &steps) });
            }
        }
        if std::mem::take(&mut self.status.quit_after_save) {
            self.status.quit = true;
            out.push(Effect::Quit);
        }
        out
    }
}
