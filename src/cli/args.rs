//! The arguments the commands share: the global connection flags, the plan flags (`plan`, `migrate`
//! and the wizard), and small parsers and defaults.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::Failure;
use crate::audit;
use crate::core::auth;
use crate::core::bmc::{CheckOptions, Progress};
use crate::core::ironic::api::ApiTarget;
use crate::core::ironic::target;
use crate::core::migrate::conflict::{self, Action, ConflictCode, ResolutionError, Resolutions};
use crate::core::migrate::load_api::ApiLoadOptions;
use crate::core::migrate::plan::{FreeState, PlanOptions};
use crate::core::migrate::steps::{self, PlanRequest};
use crate::core::settings::project::ProjectOptions;
use crate::core::settings::{self, ConnectionFlags, ConnectionSettings};

/// The process environment, as the core's resolvers take it.
fn env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// `--version`: the crate's version, the commit, whether the tree was clean, the target and its glibc
/// (build.rs).
pub const VERSION: &str = env!("BM2_BUILD_VERSION");

pub const DEFAULT_CONDUCTOR_LOG: &str = "/var/log/ironic/ironic-conductor.log";
pub const DEFAULT_COMPUTE_LOG: &str = "/var/log/nova/nova-compute.log";

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Global options (every command)")]
pub struct GlobalArgs {
    /// Project file of plan options (default: ./bm2ironic.toml when there is one; no passwords)
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// nova_bm database URL (SQLAlchemy or sqlx form)
    #[arg(long, global = true, value_name = "URL")]
    pub nova_bm_db: Option<String>,
    /// Ironic database URL
    #[arg(long, global = true, value_name = "URL")]
    pub ironic_db: Option<String>,
    /// Nova database URL (optional: instances, services; the flavors of Juno/Kilo Nova)
    #[arg(long, global = true, value_name = "URL")]
    pub nova_db: Option<String>,
    /// Nova API database URL (optional: modern Nova's flavors; env BM2IRONIC_NOVA_API_DB)
    #[arg(long, global = true, value_name = "URL")]
    pub nova_api_db: Option<String>,
    /// Ironic API endpoint (optional; with Keystone credentials it comes from the catalog)
    #[arg(long, global = true, value_name = "URL")]
    pub ironic_url: Option<String>,
    /// Keystone credentials: a cloud of clouds.yaml (env OS_CLOUD; without it the OS_* variables)
    #[arg(long, global = true, value_name = "NAME")]
    pub os_cloud: Option<String>,
    /// Where API runs are recorded without --ironic-db (default: ~/.local/state/bm2ironic/runs;
    /// env BM2IRONIC_STATE_DIR)
    #[arg(long, global = true, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// nova.conf of a baremetal nova-compute host ([baremetal] sql_connection, power manager, ...)
    #[arg(long, global = true, value_name = "FILE")]
    pub nova_conf: Option<PathBuf>,
    /// A copy of nova baremetal's TFTP tree (each instance's PXE config: its next boot):
    /// HOST=DIR for one compute host's copy, DIR for every host (repeatable; env
    /// BM2IRONIC_TFTP_ROOT; default nova.conf [baremetal] tftp_root)
    #[arg(long, global = true, value_name = "[HOST=]DIR")]
    pub tftp_root: Vec<String>,
    /// ironic.conf ([database] connection)
    #[arg(long, global = true, value_name = "FILE")]
    pub ironic_conf: Option<PathBuf>,
    /// Directory of the audit log (default: ~/.local/state/bm2ironic; env BM2IRONIC_LOG_DIR)
    #[arg(long, global = true, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Mirror the audit log to stderr (-v, -vv, -vvv; CLI commands only)
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl GlobalArgs {
    fn connection_flags(&self) -> ConnectionFlags {
        ConnectionFlags {
            nova_bm_db: self.nova_bm_db.clone(),
            ironic_db: self.ironic_db.clone(),
            nova_db: self.nova_db.clone(),
            nova_api_db: self.nova_api_db.clone(),
            ironic_url: self.ironic_url.clone(),
            nova_conf: self.nova_conf.clone(),
            ironic_conf: self.ironic_conf.clone(),
            tftp_root: self.tftp_root.clone(),
        }
    }

    /// How to reach the Ironic API (resolved in the core: [`ConnectionSettings::api_target`]).
    pub fn api_target(&self, settings: &ConnectionSettings) -> Result<ApiTarget, Failure> {
        Ok(settings.api_target(self.os_cloud.as_deref(), &env)?)
    }

    /// The audit log's directory, when given ([`settings::log_dir`]).
    pub fn log_dir(&self) -> Option<PathBuf> {
        settings::log_dir(self.log_dir.clone(), &env)
    }

    /// The Keystone cloud named for the Ironic API ([`settings::os_cloud`]).
    pub fn os_cloud(&self) -> Option<String> {
        settings::os_cloud(self.os_cloud.as_deref(), &env)
    }

    /// Where API runs are kept without an Ironic database ([`settings::state_dir`]).
    pub fn state_dir(&self) -> PathBuf {
        settings::state_dir(self.state_dir.clone(), &env)
    }

    /// `BM2IRONIC_IRONIC_SERVICE_PASSWORD`, for `config --ironic-username`.
    pub fn ironic_service_password(&self) -> Option<crate::core::db::secret::Secret> {
        settings::ironic_service_password(&env)
    }

    /// Resolves every connection (flag > environment > config file) and prints the `ps` warnings.
    pub fn settings(&self) -> Result<ConnectionSettings, Failure> {
        let s = ConnectionSettings::resolve(&self.connection_flags(), &env)?;
        for w in s.warnings() {
            eprintln!("{}", crate::core::text::shown(&w));
            tracing::warn!("{w}");
        }
        Ok(s)
    }
}

#[derive(Args, Debug, Default, Clone)]
pub struct PlanArgs {
    /// Ironic deploy kernel (Glance id, or file:// for standalone Ironic)
    #[arg(long, value_name = "REF")]
    pub deploy_kernel: Option<String>,
    /// Ironic deploy ramdisk (Glance id, or file://)
    #[arg(long, value_name = "REF")]
    pub deploy_ramdisk: Option<String>,
    /// cpu_arch for nodes whose host has none (e.g. x86_64)
    #[arg(long, value_name = "ARCH")]
    pub default_arch: Option<String>,
    /// cpu_arch of one nova-compute host's nodes (repeatable)
    #[arg(long = "arch", value_name = "HOST=ARCH", value_parser = parse_host_arch)]
    pub arch: Vec<HostArch>,
    /// resource_class of the new nodes (modern Ironic; Nova schedules by it)
    #[arg(long, value_name = "NAME")]
    pub resource_class: Option<String>,
    /// State of free nodes in modern Ironic [default: available]
    #[arg(long, value_name = "available|manageable|enroll")]
    pub free_state: Option<FreeState>,
    /// Load path: one SQL transaction (db) or Ironic's REST adopt flow (api) [default: db]
    #[arg(long, value_enum, value_name = "db|api")]
    pub via: Option<Via>,
    /// Decisions saved by the wizard (TOML)
    #[arg(long, value_name = "FILE")]
    pub resolutions: Option<PathBuf>,
    /// A decision for every conflict of a code (repeatable), e.g. duplicate-mac=skip-port
    #[arg(long = "resolve", value_name = "CODE=ACTION", value_parser = parse_resolve)]
    pub resolve: Vec<(ConflictCode, Action)>,
    /// Object versions to write when the target has no nodes and an unknown schema head
    #[arg(long, value_name = "NODE,PORT", value_parser = parse_object_version)]
    pub object_version: Option<(String, String)>,
    /// Machine-readable output
    #[arg(long)]
    pub json: bool,
    /// Read every live node's BMC once first (ipmitool `power status`, read only): findings become
    /// conflicts (bmc-no-answer, bmc-refused, power-mismatch, duplicate-bmc)
    #[arg(long)]
    pub check_bmc: bool,
    /// --check-bmc: BMCs read at once at most
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub bmc_concurrency: u16,
    /// --check-bmc: how long one BMC may take to answer
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_positive_duration)]
    pub bmc_timeout: Duration,
}

#[derive(Args, Debug, Default)]
pub struct MigrateArgs {
    #[command(flatten)]
    pub plan: PlanArgs,
    /// Do everything, then roll the transaction back: nothing stays
    #[arg(long)]
    pub rehearse: bool,
    /// Do not ask for confirmation (required without a terminal)
    #[arg(long)]
    pub yes: bool,
    /// Write the run report to FILE (Markdown; JSON when FILE ends in .json); a committed load is
    /// verified for it
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// --via api: nodes in flight at once
    #[arg(long, value_name = "N", default_value_t = crate::core::migrate::load_api::DEFAULT_CONCURRENCY)]
    pub concurrency: usize,
    /// --via api: how long one step of a node (manage, adopt, provide) may take
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub step_timeout: Duration,
}

impl MigrateArgs {
    /// Where the load writes: `--via`, with `--rehearse` (the database path only) or the API
    /// path's `--concurrency` and `--step-timeout`.
    pub fn mode(&self) -> Result<steps::Mode, Failure> {
        Ok(match (self.plan.via(), self.rehearse) {
            (Via::Api, true) => return Err(Failure::usage("--rehearse needs --via db: the API has no transaction to roll back (rehearse on a copy, or use `plan --via api`)")),
            (Via::Api, false) => steps::Mode::Api(ApiLoadOptions {
                concurrency: self.concurrency.max(1),
                step_timeout: self.step_timeout,
                ..Default::default()
            }),
            (Via::Db, rehearse) => steps::Mode::Db { rehearse },
        })
    }
}

impl PlanArgs {
    /// Where a plan is made against (the API's view, or the database's rows): nothing is loaded.
    pub fn mode(&self) -> steps::Mode {
        match self.via() {
            Via::Api => steps::Mode::Api(ApiLoadOptions::default()),
            Via::Db => steps::Mode::Db { rehearse: false },
        }
    }
}

/// What the plan flags decide.
pub struct Decided {
    pub options: PlanOptions,
    /// the operator's decisions (`--resolutions`, `--resolve`)
    pub resolutions: Resolutions,
    /// `--object-version NODE,PORT`
    pub object_version: Option<(String, String)>,
}

pub fn options(args: &PlanArgs, settings: &ConnectionSettings) -> Result<Decided, Failure> {
    // `--deploy-kernel "$UNSET"` must not become a node's deploy kernel
    let blank = |name: &str| {
        Failure::usage(format!("{name} is empty (an unset shell variable?): give a value, or leave the option out"))
    };
    for (name, v) in [
        ("--deploy-kernel", &args.deploy_kernel),
        ("--deploy-ramdisk", &args.deploy_ramdisk),
        ("--default-arch", &args.default_arch),
        ("--resource-class", &args.resource_class),
    ] {
        if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(blank(name));
        }
    }
    let arch_by_host = args.arch.iter().map(|a| (a.host.clone(), a.arch.clone())).collect();
    let mut resolutions = match &args.resolutions {
        Some(p) => Resolutions::load(p)?,
        None => Resolutions::default(),
    };
    for (code, action) in &args.resolve {
        resolutions.add_code_wide(*code, *action);
    }
    let conf = settings.nova_conf.as_ref();
    let trimmed = |v: &Option<String>| v.as_deref().map(|v| v.trim().to_string());
    let opts = PlanOptions {
        deploy_kernel: trimmed(&args.deploy_kernel),
        deploy_ramdisk: trimmed(&args.deploy_ramdisk),
        default_arch: trimmed(&args.default_arch),
        arch_by_host,
        resource_class: trimmed(&args.resource_class),
        free_state: args.free_state.unwrap_or_default(),
        baremetal: conf.map(|c| c.baremetal.clone()).unwrap_or_default(),
        conf_host: conf.and_then(|c| c.host.clone()),
        tftp_roots: settings.tftp_roots.clone(),
        boots: Default::default(),
        check_bmc: None,
        bmc: Default::default(),
    };
    let opts = PlanOptions { check_bmc: check_bmc(args, &opts), ..opts };
    Ok(Decided { options: opts, resolutions, object_version: args.object_version.clone() })
}

impl PlanArgs {
    /// `--via`, or its default (the database).
    pub fn via(&self) -> Via {
        self.via.unwrap_or_default()
    }

    /// The project file's options where no flag gave one (a flag wins; `[arch]` per host).
    pub fn with_project(&mut self, p: &ProjectOptions) -> Result<(), Failure> {
        let bad = |key: &str, why: String| Failure::usage(format!("project file: `{key}`: {why}"));
        fill(&mut self.deploy_kernel, &p.deploy_kernel);
        fill(&mut self.deploy_ramdisk, &p.deploy_ramdisk);
        fill(&mut self.default_arch, &p.default_arch);
        fill(&mut self.resource_class, &p.resource_class);
        fill(&mut self.resolutions, &p.resolutions);
        for (host, arch) in &p.arch {
            if !self.arch.iter().any(|a| a.host == host.trim()) {
                self.arch.push(HostArch { host: host.trim().to_string(), arch: arch.trim().to_string() });
            }
        }
        if let (None, Some(v)) = (self.free_state, &p.free_state) {
            self.free_state = Some(v.trim().parse().map_err(|e| bad("free-state", e))?);
        }
        if let (None, Some(v)) = (self.via, &p.via) {
            use clap::ValueEnum;
            self.via = Some(Via::from_str(v.trim(), false).map_err(|_| bad("via", format!("'{v}' is not db or api")))?);
        }
        if let (None, Some(v)) = (&self.object_version, &p.object_version) {
            self.object_version = Some(parse_object_version(v).map_err(|e| bad("object-version", e))?);
        }
        Ok(())
    }
}

/// `slot` from the project file when no flag filled it.
fn fill<T: Clone>(slot: &mut Option<T>, from_file: &Option<T>) {
    if slot.is_none() {
        slot.clone_from(from_file);
    }
}

/// `--arch HOST=ARCH`: one compute host's cpu_arch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostArch {
    pub host: String,
    pub arch: String,
}

/// `--arch`, parsed by clap: a malformed one is a usage error before anything connects.
pub fn parse_host_arch(s: &str) -> Result<HostArch, String> {
    let (h, v) = s.split_once('=').ok_or("expected HOST=ARCH, e.g. bm-compute-1=x86_64")?;
    if h.trim().is_empty() || v.trim().is_empty() {
        return Err("the host and the arch must both be given (HOST=ARCH)".into());
    }
    Ok(HostArch { host: h.trim().to_string(), arch: v.trim().to_string() })
}

/// `--resolve CODE=ACTION`, parsed by clap (a known code, one of its actions, decidable for the
/// whole code).
pub fn parse_resolve(s: &str) -> Result<(ConflictCode, Action), String> {
    conflict::parse_flag(s).map_err(|e| match e {
        ResolutionError::Flag { reason, .. } => reason,
        e => e.to_string(),
    })
}

/// `--object-version NODE,PORT`, parsed by clap.
pub fn parse_object_version(s: &str) -> Result<(String, String), String> {
    target::parse_object_version(s).map_err(|e| e.to_string())
}

/// `--check-bmc`'s options; its progress on stderr (a line per tenth, on a terminal one line
/// rewritten).
fn check_bmc(args: &PlanArgs, opts: &PlanOptions) -> Option<CheckOptions> {
    use crate::core::migrate::plan::PowerManager;
    use std::io::IsTerminal;
    if !args.check_bmc {
        return None;
    }
    use std::io::Write;
    let tty = std::io::stderr().is_terminal() && !args.json;
    // numbers only (nothing to redact); written here, not through cli::output (which names this file)
    let progress = move |p: Progress| {
        let step = (p.total / 10).max(1);
        if p.total > 0 && (p.done % step == 0 || p.done == p.total) {
            let mut err = std::io::stderr().lock();
            let end = if tty && p.done < p.total { "\r" } else { "\n" };
            let _ = write!(err, "BMC check: {}/{} BMCs read{end}", p.done, p.total).and_then(|_| err.flush());
        }
    };
    Some(CheckOptions {
        concurrency: args.bmc_concurrency as usize,
        timeout: args.bmc_timeout,
        ipmi: PowerManager::from_class(opts.baremetal.power_manager()) == PowerManager::Ipmi,
        progress: std::sync::Arc::new(progress),
        ..CheckOptions::default()
    })
}

/// `--via`: where a load writes (the flag's values; [`PlanArgs::mode`] makes the core's `Mode`).
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Via {
    /// the Ironic database, in one transaction
    #[default]
    Db,
    /// Ironic's REST API, node by node (enroll, manage, adopt or provide)
    Api,
}

/// The plan request of these flags and settings: how `plan` and `migrate` name what the core plans.
pub fn plan_request<'a>(args: &PlanArgs, settings: &'a ConnectionSettings, decided: &'a Decided) -> PlanRequest<'a> {
    PlanRequest {
        settings,
        options: &decided.options,
        resolutions: &decided.resolutions,
        resolutions_file: args.resolutions.as_ref().map(|p| p.display().to_string()),
        object_version: decided.object_version.as_ref(),
    }
}

/// A duration flag (`90s`, `10m`, `1h`, or bare seconds), parsed by clap: a bad one is a usage
/// error before the command starts.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().map_err(|_| format!("'{s}' is not a duration (e.g. 90s, 10m, 1h)"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        _ => return Err(format!("'{s}': unknown unit '{unit}' (s, m, h)")),
    };
    let secs = n.checked_mul(scale).ok_or_else(|| format!("'{s}' is longer than any wait could be"))?;
    Ok(Duration::from_secs(secs))
}

/// A duration that must not be zero (a deadline of 0 s would fail every request).
pub fn parse_positive_duration(s: &str) -> Result<Duration, String> {
    match parse_duration(s)? {
        d if d.is_zero() => Err("must be longer than 0 s".into()),
        d => Ok(d),
    }
}

/// The directory of the audit log, as the wizard shows it.
pub(crate) fn audit_dir(global: &GlobalArgs) -> Option<String> {
    global.log_dir().or_else(audit::default_dir).map(|d| d.display().to_string())
}

/// The wizard's fields, prefilled from flags, environment and config files.
pub fn prefill(settings: &ConnectionSettings, plan: &PlanArgs) -> crate::tui::Prefill {
    crate::tui::Prefill {
        nova_bm_db: settings.nova_bm_db.as_ref().map(|s| s.value.expose_url().to_string()),
        ironic_db: settings.ironic_db.as_ref().map(|s| s.value.expose_url().to_string()),
        nova_db: settings.nova_db.as_ref().map(|s| s.value.expose_url().to_string()),
        nova_api_db: settings.nova_api_db.as_ref().map(|s| s.value.expose_url().to_string()),
        ironic_url: settings.ironic_url.as_ref().map(|s| s.value.clone()),
        deploy_kernel: plan.deploy_kernel.clone(),
        deploy_ramdisk: plan.deploy_ramdisk.clone(),
        default_arch: plan.default_arch.clone(),
        resource_class: plan.resource_class.clone(),
        clouds: auth::config::cloud_names(&env),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("5d").is_err());
        // hostile: a number that overflows once scaled is refused, not wrapped or panicked on
        assert!(parse_duration("9999999999999999h").is_err());
        assert!(parse_positive_duration("0").is_err());
        assert_eq!(parse_positive_duration("2s").unwrap(), Duration::from_secs(2));
    }
}
