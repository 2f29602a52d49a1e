//! `bm2ironic completions SHELL` and `bm2ironic man-page`: the shell completion script and the man
//! pages (`bm2ironic.1`, and `bm2ironic-COMMAND.1` for each command), all generated from the clap
//! definition (so never out of date). They print or write files only: no audit log, no connection
//! (`cli/entry.rs` runs them before either).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;

use crate::cli::failure::Failure;

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for: source the output (bash: `source <(bm2ironic completions bash)`)
    /// or install it where the shell looks (README "Install")
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script of `cli` (the whole command list) for one shell.
pub fn completions(args: &CompletionsArgs, mut cli: clap::Command) -> Result<(), Failure> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cli, "bm2ironic", &mut out);
    write_stdout(&out)
}

#[derive(Args, Debug)]
pub struct ManPageArgs {
    /// Write bm2ironic.1 and one bm2ironic-COMMAND.1 per command into DIR (default: print
    /// bm2ironic.1 alone)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// Prints `bm2ironic.1` (roff: `bm2ironic man-page | man -l -`), or writes every page into `--dir`.
pub fn man_page(args: &ManPageArgs, cli: clap::Command) -> Result<(), Failure> {
    let pages = man_pages(cli)?;
    let Some(dir) = &args.dir else { return write_stdout(&pages[0].1) };
    for (name, page) in &pages {
        let path = dir.join(name);
        std::fs::write(&path, page).map_err(|e| Failure::runtime(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(())
}

/// The page of the whole command, then one per visible command (each with its own flags and the
/// global ones), as (file name, roff). The pages' footer names the crate's version; the top page's
/// VERSION section the whole `--version` line.
fn man_pages(mut cli: clap::Command) -> Result<Vec<(String, Vec<u8>)>, Failure> {
    cli.build();
    let source = format!("bm2ironic {}", env!("CARGO_PKG_VERSION"));
    let render = |cmd: clap::Command| {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd)
            .source(source.clone())
            .render(&mut out)
            .map_err(|e| Failure::runtime(format!("cannot render the man page: {e}")))?;
        Ok::<_, Failure>(out)
    };
    let mut pages = vec![("bm2ironic.1".to_string(), render(cli.clone())?)];
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = format!("bm2ironic-{}", sub.get_name());
        pages.push((format!("{name}.1"), render(sub.clone().name(name.clone()).bin_name(name))?));
    }
    Ok(pages)
}

fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(bytes)
        .and_then(|()| stdout.flush())
        .map_err(|e| Failure::runtime(format!("cannot write to stdout: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli() -> clap::Command {
        clap::Command::new("bm2ironic")
            .version("1.2.3")
            .about("about it")
            .subcommand(clap::Command::new("plan").about("plan it").arg(clap::Arg::new("json").long("json")))
    }

    #[test]
    fn every_shell_gets_a_script_that_names_the_commands() {
        for shell in [clap_complete::Shell::Bash, clap_complete::Shell::Zsh, clap_complete::Shell::Fish] {
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut cli(), "bm2ironic", &mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(text.contains("bm2ironic") && text.contains("plan") && text.contains("json"), "{shell}: {text}");
        }
    }

    #[test]
    fn a_man_page_for_the_tool_and_one_per_command() {
        let pages = man_pages(cli()).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["bm2ironic.1", "bm2ironic-plan.1"]);
        let top = String::from_utf8(pages[0].1.clone()).unwrap();
        assert!(top.contains(".TH bm2ironic 1") && top.contains("bm2ironic\\-plan(1)"), "{top}");
        let plan = String::from_utf8(pages[1].1.clone()).unwrap();
        assert!(plan.contains(".TH bm2ironic-plan 1") && plan.contains("json"), "{plan}");
    }
}
