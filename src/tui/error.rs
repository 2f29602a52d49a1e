//! The wizard's errors: what can end `run_wizard` (the terminal), and what a background job can
//! report (typed here, turned into words only where the screen shows them).

use crate::core::auth::AuthError;
use crate::core::db::url::UrlError;
use crate::core::db::DbError;
use crate::core::ironic::api::ApiError;
use crate::core::migrate::flavors::FlavorError;
use crate::core::migrate::load_api::ApiLoadError;
use crate::core::migrate::load_sql::LoadError;
use crate::core::migrate::prepare::PrepareError;
use crate::core::migrate::rollback::RollbackError;
use crate::core::migrate::steps::StepError;
use crate::core::settings::SettingsError;

/// Why the wizard could not run (its terminal, not the migration: those are shown on its screens).
#[derive(Debug, thiserror::Error)]
pub enum WizardError {
    #[error("cannot switch the terminal to raw mode: {0}")]
    RawMode(std::io::Error),
    #[error("cannot open the alternate screen: {0}")]
    AlternateScreen(std::io::Error),
    #[error("cannot start the terminal: {0}")]
    Start(std::io::Error),
    #[error("terminal error: {0}")]
    Terminal(std::io::Error),
}

/// What a background job of the wizard (see `jobs`) can fail with.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error(transparent)]
    Url(#[from] UrlError),
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error(transparent)]
    Auth(#[from] AuthError),
    #[error(transparent)]
    ApiLoad(#[from] ApiLoadError),
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Flavors(#[from] FlavorError),
    #[error(transparent)]
    Run(#[from] RollbackError),
    #[error(transparent)]
    Step(#[from] StepError),
    #[error("{path}: {source}")]
    Save { path: String, source: std::io::Error },
}

crate::core::kind::always!(Runtime: WizardError);
