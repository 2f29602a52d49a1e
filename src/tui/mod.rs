//! The wizard (full-screen TUI). It renders the core's inventory, plan and progress events; it adds
//! no migration logic of its own. The screens arrive with the wizard issue; for now this module owns
//! the terminal check every TUI entry point makes first.

use std::io::IsTerminal;

/// True when both stdin and stdout are terminals (a TUI needs both: keys in, screen out).
pub fn have_terminal() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}
