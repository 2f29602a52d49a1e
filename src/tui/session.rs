//! What the wizard knows about this migration, shared by its screens: the mode, the prepared
//! inventory and target, the operator's decisions, and the plan made from them (re-made, pure and
//! fast, after every decision).

use std::collections::HashMap;
use std::sync::Arc;

use crate::core::migrate::conflict::{ConflictCode, Resolutions, Subject};
use crate::core::migrate::plan::{self, NodeAction, Plan, PlanOptions};
use crate::core::migrate::prepare::Prepared;
use crate::core::source::model::InventorySummary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Live,
    Rehearsal,
    ReadOnly,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Live => "LIVE",
            Mode::Rehearsal => "REHEARSAL",
            Mode::ReadOnly => "READ-ONLY",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Session {
    pub mode: Mode,
    pub prepared: Option<Arc<Prepared>>,
    /// counts of the inventory, computed once (the title must not walk 100,000 nodes per frame)
    pub inv_summary: InventorySummary,
    /// the options given on the command line (the connections screen's fields override them)
    pub plan_options: PlanOptions,
    pub resolutions: Resolutions,
    /// where `w` saves the decisions
    pub resolutions_path: String,
    /// the decisions file read at start (`--resolutions`, or `./bm2ironic-resolutions.toml` taken
    /// at the start's question), for the next steps' `migrate --resolutions`
    pub loaded_from: Option<String>,
    /// the decisions as last saved (or given at start): `q` asks while they differ
    pub saved: Resolutions,
    /// the decisions before the last one made with a key (`u` on Conflicts puts them back)
    pub before_last: Option<Resolutions>,
    pub plan: Option<Plan>,
    /// how long the last plan took to compute (ms)
    pub plan_ms: Option<f64>,
    /// nova_bm id -> (conflicts, any blocking unresolved), computed once per plan
    markers: HashMap<i64, (usize, bool)>,
}

impl Session {
    pub fn new(mode: Mode, plan_options: PlanOptions, resolutions: Resolutions) -> Session {
        Session {
            mode,
            prepared: None,
            inv_summary: Default::default(),
            plan_options,
            saved: resolutions.clone(),
            before_last: None,
            resolutions,
            resolutions_path: "bm2ironic-resolutions.toml".into(),
            loaded_from: None,
            plan: None,
            plan_ms: None,
            markers: HashMap::new(),
        }
    }

    /// A prepared inventory arrived: keep it and plan.
    pub fn set_prepared(&mut self, p: Arc<Prepared>, opts: &PlanOptions) {
        self.inv_summary = p.inventory.summary();
        self.prepared = Some(p);
        self.replan(opts);
    }

    /// Recomputes the plan with `opts` and the decisions (pure: no I/O).
    pub fn replan(&mut self, opts: &PlanOptions) {
        let Some(p) = &self.prepared else { return };
        let started = std::time::Instant::now();
        let plan = plan_for(p, opts, &self.resolutions);
        self.install_plan(plan, crate::core::migrate::timing::ms(started.elapsed()));
    }

    /// Takes a plan made by [`plan_for`] (here or on a worker thread), and how long it took (ms).
    pub fn install_plan(&mut self, plan: Plan, ms: f64) {
        self.plan_ms = Some(ms);
        self.markers.clear();
        let notes: Vec<ConflictCode> = ConflictCode::ALL.iter().copied().filter(|c| self.read_only_note(*c)).collect();
        for c in plan.conflicts.iter().filter(|c| !notes.contains(&c.code)) {
            if let Subject::Node { nova_bm_id } | Subject::Interface { nova_bm_id, .. } = &c.subject {
                let m = self.markers.entry(*nova_bm_id).or_default();
                m.0 += 1;
                m.1 |= c.is_unresolved_blocking();
            }
        }
        self.plan = Some(plan);
    }

    /// In the read-only browse, a code that is about the options of a migration, not about what
    /// nova_bm holds (no arch given, no TFTP tree given, no deploy images): a note, never `!` or `~`.
    pub fn read_only_note(&self, code: ConflictCode) -> bool {
        self.mode == Mode::ReadOnly
            && matches!(code, ConflictCode::MissingArch | ConflictCode::UnknownBoot | ConflictCode::MissingDeployImages)
    }

    /// Records a decision: for every conflict of `code`, or for one subject.
    pub fn decide(
        &mut self,
        code: ConflictCode,
        subject: Option<&Subject>,
        action: crate::core::migrate::conflict::Action,
        all: bool,
    ) {
        self.before_last = Some(self.resolutions.clone());
        if all {
            self.resolutions.defaults.insert(code, action);
            self.resolutions.keyed_codes.insert(code);
            self.resolutions.decisions.retain(|d| d.code != code);
        } else if let Some(s) = subject {
            self.resolutions.decide_item(code, s, action);
        }
    }

    /// Takes back the last decision (`u` on Conflicts): true when there was one.
    pub fn undo(&mut self) -> bool {
        match self.before_last.take() {
            Some(r) => {
                self.resolutions = r;
                true
            }
            None => false,
        }
    }

    /// Decisions made since the last save (`w`): `q` asks before they would be lost.
    pub fn unsaved(&self) -> bool {
        self.resolutions != self.saved
    }

    /// Where every decision is journalled as it is made (beside the decisions file): reloaded by the
    /// next wizard when a session ended without `w`.
    pub fn journal_path(&self) -> String {
        format!("{}.journal", self.resolutions_path)
    }

    /// Node conflict marker: (number of conflicts, any unresolved blocking).
    pub fn node_marker(&self, nova_bm_id: i64) -> (usize, bool) {
        self.markers.get(&nova_bm_id).copied().unwrap_or((0, false))
    }

    /// Conflicts grouped by code, undecided codes first: (code, indices into plan.conflicts).
    pub fn conflict_groups(&self) -> Vec<(ConflictCode, Vec<usize>)> {
        let Some(plan) = &self.plan else { return vec![] };
        let mut groups: Vec<(ConflictCode, Vec<usize>)> = Vec::new();
        for (i, c) in plan.conflicts.iter().enumerate() {
            match groups.iter_mut().find(|(code, _)| *code == c.code) {
                Some((_, v)) => v.push(i),
                None => groups.push((c.code, vec![i])),
            }
        }
        groups.sort_by_key(|(c, v)| (!v.iter().any(|&i| plan.conflicts[i].is_unresolved_blocking()), *c));
        groups
    }

    /// Summary counts of the plan for the confirm screen: (create, skip, maintenance, ports).
    pub fn plan_counts(&self) -> (usize, usize, usize, usize) {
        self.plan
            .as_ref()
            .map(|p| {
                (p.summary.create, p.summary.skip + p.summary.already_migrated, p.summary.maintenance, p.summary.ports)
            })
            .unwrap_or_default()
    }

    pub fn write_count(&self) -> usize {
        self.plan
            .as_ref()
            .map(|p| p.nodes.iter().filter(|n| matches!(n.action, NodeAction::Create | NodeAction::Replace)).count())
            .unwrap_or(0)
    }
}

/// The plan of a prepared inventory with `opts` and the decisions `res` (pure: no I/O, so it may run
/// on a worker thread: at 100,000 nodes it takes a good part of a second).
pub fn plan_for(p: &Prepared, opts: &PlanOptions, res: &Resolutions) -> Plan {
    // the boots the prepare read from the TFTP trees (the plan does no I/O)
    let mut opts = opts.clone();
    if p.boots.given {
        opts.boots = Arc::clone(&p.boots);
    }
    // and what the BMC check read (`--check-bmc`, or `b` on Inventory), unless a newer check ran
    if p.bmc.given && !opts.bmc.given {
        opts.bmc = Arc::clone(&p.bmc);
    }
    plan::plan(&p.inventory, &p.target, p.nova.as_ref(), &opts, res)
}
