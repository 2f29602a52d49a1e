//! `bm2ironic demo`: builds the rehearsal sandbox on embedded SQLite (no servers) and opens the
//! wizard on it in REHEARSAL; `--no-tui` only builds it and prints the connection settings.

use std::path::PathBuf;

use clap::Args;

use crate::cli::args::{audit_dir, GlobalArgs};
use crate::cli::failure::Failure;
use crate::core::demo::sandbox;

#[derive(Args, Debug, Default)]
pub struct DemoArgs {
    /// Where to build the sandbox: a directory of your own that no one else can write, empty or an
    /// earlier sandbox (default: a new private directory under the system temp dir)
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Only build the sandbox and print its connection settings (no terminal needed)
    #[arg(long)]
    pub no_tui: bool,
}

pub async fn run(global: &GlobalArgs, args: DemoArgs) -> Result<(), Failure> {
    if !args.no_tui && !crate::tui::have_terminal() {
        return Err(Failure::usage("demo opens the wizard, which needs an interactive terminal: run it in one, or add --no-tui to only build the sandbox"));
    }
    // no --dir: a new private directory of a name no one can guess (mkdtemp), never a fixed one
    let sb = match &args.dir {
        Some(dir) => sandbox::build(dir).await?,
        None => sandbox::build_fresh().await?,
    };
    if args.no_tui {
        println!("Demo sandbox in {}", sb.dir.display());
        println!("  export BM2IRONIC_NOVA_BM_DB='{}'", sb.nova_bm_url);
        println!("  export BM2IRONIC_IRONIC_DB='{}'", sb.ironic_url);
        println!("  export BM2IRONIC_NOVA_DB='{}'", sb.nova_url);
        println!("  export BM2IRONIC_NOVA_API_DB='{}'", sb.nova_api_url);
        println!("  export BM2IRONIC_TFTP_ROOT='{}'", sb.tftp_root.display());
        println!("  logs: {} {}", sb.conductor_log.display(), sb.compute_log.display());
        println!(
            "  plan options: {} (deploy images, arch, resource class)",
            sb.dir.join(crate::core::settings::project::FILE_NAME).display()
        );
        println!("Then, with the exports above: cd {} && bm2ironic plan", sb.dir.display());
        return Ok(());
    }
    let mut app =
        crate::tui::App::new(crate::tui::Mode::Rehearsal, sb.prefill(), sb.plan_options(), Default::default());
    app.audit_log = audit_dir(global);
    app.confirm.multiplexer = crate::tui::in_multiplexer();
    super::wizard::ended(crate::tui::run_wizard(app, sb.context()).await)
}
