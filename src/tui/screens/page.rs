//! What every screen shares: which screen has focus ([`Screen`]), what a key asks of the rest of the
//! wizard ([`Out`]), what a screen may read when a key comes ([`Ctx`]) and when it draws
//! ([`DrawCtx`]), and the [`Page`] trait each screen implements. It imports no screen.

use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::Frame;

use crate::core::migrate::conflict::{Action, ConflictCode, Subject};
use crate::core::migrate::timing::Phases;
use crate::tui::keys::{self, Binding, Row};
use crate::tui::msg::Effect;
use crate::tui::session::Session;
use crate::tui::theme::Theme;
use crate::tui::work::{Logs, Progress};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    Connections,
    Inventory,
    Conflicts,
    Flavors,
    Confirm,
    Progress,
    Logs,
    Summary,
}

impl Screen {
    pub const STEPS: [Screen; 7] = [
        Screen::Connections,
        Screen::Inventory,
        Screen::Conflicts,
        Screen::Flavors,
        Screen::Confirm,
        Screen::Progress,
        Screen::Summary,
    ];
    pub fn title(self) -> &'static str {
        match self {
            Screen::Connections => "Connections",
            Screen::Inventory => "Inventory",
            Screen::Conflicts => "Conflicts",
            Screen::Flavors => "Flavors",
            Screen::Confirm => "Confirm",
            Screen::Progress => "Migration",
            Screen::Logs => "Logs",
            Screen::Summary => "Summary",
        }
    }
}

/// What a screen's key asks of the rest of the wizard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Out {
    Effect(Effect),
    Go(Screen),
    Toast(String),
    /// Work started that the operator waits for (the spinner line).
    Busy(String),
    /// A conflict decision: for every conflict of `code` (`all`), or for the one of `subject`.
    Decide {
        code: ConflictCode,
        subject: Option<Subject>,
        action: Action,
        all: bool,
    },
    /// Take back the last decision (`u` on Conflicts).
    Undo,
    /// Show the takeover's error records in the logs (or say there are none).
    ShowErrors,
    /// The load starts (the progress screen is set up from the plan).
    StartLoad {
        rehearse: bool,
    },
}

/// What a screen may know of the rest of the wizard when a key comes (read only).
pub struct Ctx<'a> {
    pub session: &'a Session,
    /// The connections screen has a database with the flavors, nova_api or nova (else the flavors
    /// step is skipped).
    pub nova_given: bool,
    /// The connections screen has an Ironic API (a URL or a cloud): the API load path is offered.
    pub api_given: bool,
    /// The flavors step was planned already (or is being planned).
    pub flavors_known: bool,
    /// A load runs.
    pub running: bool,
    /// Where Esc on the logs screen goes.
    pub logs_back: Screen,
    /// Work the operator waits for runs (the connections screen takes no keys then).
    pub busy: bool,
}

/// What a screen may read when it draws (read only; `App::draw_ctx` builds it every frame).
pub struct DrawCtx<'a> {
    pub theme: Theme,
    /// The mode is `session.mode`.
    pub session: &'a Session,
    /// The spinner's frame.
    pub tick: usize,
    /// Work the operator waits for runs (the connections screen shows no cursor then).
    pub busy: bool,
    /// The Ironic database as typed on the connections screen.
    pub target: &'a str,
    /// The connections screen has an Ironic API (a URL or a cloud).
    pub api_given: bool,
    /// The load (the summary shows how it ended).
    pub progress: &'a Progress,
    /// The followed logs (a pane beside the progress; the summary counts their errors).
    pub logs: &'a Logs,
    /// The wall time of each phase so far.
    pub phases: Phases,
    /// Where the audit log is written.
    pub audit_log: Option<&'a str>,
}

/// A screen: its keys (its table for the current state and what each action does) and its drawing.
pub trait Page {
    type Act: Copy + 'static;

    /// Draws the screen into `area` (the body between the header and the status line).
    fn draw(&self, f: &mut Frame, area: Rect, cx: &DrawCtx);

    fn table(&self, cx: &Ctx) -> Vec<&'static Binding<Self::Act>>;

    fn act(&mut self, act: Self::Act, cx: &Ctx) -> Vec<Out>;

    /// A key no row has: typed into a field, or ignored.
    fn other(&mut self, _key: KeyEvent, _cx: &Ctx) -> Vec<Out> {
        vec![]
    }

    fn on_key(&mut self, key: KeyEvent, cx: &Ctx) -> Vec<Out> {
        match keys::find(&self.table(cx), &key) {
            Some(a) => self.act(a, cx),
            None => self.other(key, cx),
        }
    }

    /// What the screen's marks mean, for the help (after its keys).
    fn legend(&self, _cx: &Ctx) -> Vec<&'static str> {
        vec![]
    }

    fn rows(&self, cx: &Ctx) -> Vec<Row> {
        self.table(cx).iter().map(|b| b.row()).collect()
    }
}
