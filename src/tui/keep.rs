//! What the wizard prints on quit, to the normal shell after it left the alternate screen (#48
//! item 4): what an operator must keep of the session (the run id and how it ended, the run
//! report or that it was not written, the decisions file, the next steps' checklist; the demo's
//! sandbox). Pure: the runtime prints the lines.

use super::app::App;
use super::session::Mode;
use crate::core::text::visible_line;

impl App {
    /// The lines printed on quit (none for the read-only browse: it leaves nothing).
    pub fn keep_lines(&self) -> Vec<String> {
        if self.session.mode == Mode::ReadOnly {
            return vec![];
        }
        let row = |k: &str, v: &str| format!("  {k:<11} {}", visible_line(v));
        let mut out = vec!["bm2ironic: what to keep of this session".to_string()];
        match (self.progress.outcome(), &self.progress.finished) {
            (Some(o), _) => {
                let run = o.reported_run().map_or_else(|| "-".to_string(), |r| r.to_string());
                out.push(row("run", &run));
                out.push(row("outcome", &o.line()));
                out.push(row(
                    "report",
                    self.summary.report.as_deref().unwrap_or("not written: s on the summary writes it"),
                ));
            }
            (None, Some(Err(e))) => out.push(row("run", &format!("none: the load did not start ({e})"))),
            (None, _) => out.push(row("run", "none: no load ran")),
        }
        let decisions = match (&self.summary.saved_to, &self.session.loaded_from) {
            (Some(p), _) => p.clone(),
            _ if self.session.unsaved() => {
                format!("not saved: the journal {} keeps them for the next wizard", self.session.journal_path())
            }
            (None, Some(p)) => format!("{p} (read at start)"),
            (None, None) => "none made".into(),
        };
        out.push(row("decisions", &decisions));
        if let Some(c) = &self.summary.checklist {
            out.push(row("next steps", c));
        }
        if let Some(s) = &self.sandbox {
            out.push(row("sandbox", &format!("{s} (its databases, logs and deploy images)")));
            out.push(row("", &format!("bm2ironic demo --no-tui --dir {s} rebuilds it and prints its settings")));
        }
        if let Some(a) = &self.audit_log {
            out.push(row("audit log", a));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::core::migrate::events::LoadSummary;
    use crate::core::migrate::run::RunId;
    use crate::core::migrate::steps::Ended;
    use crate::tui::app::{App, Msg, Prefill};
    use crate::tui::screens::fixture;
    use crate::tui::session::Mode;

    fn committed(mode: Mode) -> (App, String) {
        let mut a = App::new(mode, Prefill::default(), fixture::options(), Default::default());
        a.session = fixture::session(mode);
        let run = RunId::new();
        let f = fixture::finished_with(LoadSummary::begin(a.session.plan.as_ref().unwrap(), &run, false));
        let mut f = std::sync::Arc::into_inner(f).unwrap();
        f.outcome.ended = if mode == Mode::Live { Ended::Committed } else { Ended::Rehearsed };
        a.update(Msg::LoadDone(Ok(std::sync::Arc::new(f))));
        (a, run.to_string())
    }

    /// After a LIVE committed load, `q` left a blank shell (#48 item 4): the lines name the run, how
    /// it ended, that the report was not written (and how to), the decisions and the checklist.
    #[test]
    fn quitting_after_a_committed_load_says_what_to_keep() {
        let (mut a, run) = committed(Mode::Live);
        a.summary.checklist = Some("/var/lib/bm2ironic/next-steps-R.md".into());
        a.summary.saved_to = Some("/root/bm2ironic-resolutions.toml".into());
        let text = a.keep_lines().join("\n");
        assert!(text.contains(&format!("  run         {run}")), "{text}");
        assert!(text.contains("  outcome     committed: "), "{text}");
        assert!(text.contains("  report      not written: s on the summary writes it"), "{text}");
        assert!(text.contains("  decisions   /root/bm2ironic-resolutions.toml"), "{text}");
        assert!(text.contains("  next steps  /var/lib/bm2ironic/next-steps-R.md"), "{text}");
        a.summary.report = Some("/root/bm2ironic-report-1234.md".into());
        assert!(a.keep_lines().join("\n").contains("  report      /root/bm2ironic-report-1234.md"));
    }

    /// The demo says where its sandbox is (and the report and decisions in it); unsaved decisions
    /// are said to be in the journal; the read-only browse prints nothing.
    #[test]
    fn the_demo_says_where_its_sandbox_is_and_unsaved_decisions_where_they_are() {
        let (mut a, _) = committed(Mode::Rehearsal);
        a.sandbox = Some("/tmp/bm2ironic-demo.x1".into());
        a.session.resolutions_path = "/tmp/bm2ironic-demo.x1/bm2ironic-resolutions.toml".into();
        a.session.resolutions.defaults.insert(
            crate::core::migrate::conflict::ConflictCode::DuplicateMac,
            crate::core::migrate::conflict::Action::SkipPort,
        );
        let text = a.keep_lines().join("\n");
        assert!(text.contains("  outcome     rehearsal: "), "{text}");
        assert!(text.contains("  sandbox     /tmp/bm2ironic-demo.x1 "), "{text}");
        assert!(text.contains("demo --no-tui --dir /tmp/bm2ironic-demo.x1"), "{text}");
        assert!(
            text.contains("not saved: the journal /tmp/bm2ironic-demo.x1/bm2ironic-resolutions.toml.journal"),
            "{text}"
        );
        let ro = App::new(Mode::ReadOnly, Prefill::default(), fixture::options(), Default::default());
        assert!(ro.keep_lines().is_empty());
        let none = App::new(Mode::Live, Prefill::default(), fixture::options(), Default::default());
        assert!(none.keep_lines().join("\n").contains("none: no load ran"));
    }
}
