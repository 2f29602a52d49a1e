//! The test harness (README.md beside this file), one module a concern: test databases (db), the
//! machine's servers and skips (env), running the binary (cli), processes stopped when dropped
//! (process), ports (ports), Ironic (ironic), fake BMCs (bmc), Keystone (keystone), the Juno releases
//! (juno), a real Glance (glance), the Juno Nova control plane (nova), the proxy (proxy), the API-load
//! tests' world (api_load), nova baremetal's own compute host and API (baremetal), its deploys (deploys), the headless wizard (wizard), a real terminal (tmux), a machine's network
//! boot (netboot), the upgrade rehearsal's cloud (rehearsal), schemas compared (schema).
//! This file only declares them, re-exports what most tests use, and holds the macros.
#![allow(dead_code)]

pub mod api_load;
pub mod baremetal;
pub mod bmc;
pub mod cli;
pub mod db;
pub mod deploys;
pub mod env;
pub mod glance;
pub mod ironic;
pub mod juno;
pub mod keystone;
pub mod netboot;
pub mod nova;
pub mod ports;
pub mod process;
pub mod proxy;
pub mod rehearsal;
pub mod schema;
pub mod tmux;
pub mod wizard;

pub use cli::{bm, bm2ironic, read_logs, Outcome, STANDARD_RESOLUTIONS};
pub use db::{Backend, TestDb, IRONIC_MYSQL_SCHEMA, MYSQL_ADMIN, MYSQL_READER, PG_READER, READER_PASSWORD};
pub use env::{in_ci, server_env, skip, Tmpfs};
pub use ironic::IRONIC_VENV;

/// Declares each test once per backend it runs on, in a module named after the backend:
/// `sqlite::name`, `mysql::name`, `postgres::name`. A test that applies to some backends only is
/// declared only there, never as a copy that returns at once and counts as passed:
///
/// ```ignore
/// per_backend! {
///     runs_everywhere => super::runs_everywhere;              // sqlite::, mysql::, postgres::
///     [sqlite] needs_no_server => super::needs_no_server;      // sqlite:: only
///     [servers] needs_a_login => super::needs_a_login;         // mysql::, postgres::
/// }
/// ```
#[macro_export]
macro_rules! per_backend {
    ($($([$only:ident])? $name:ident => $body:path;)*) => {
        mod sqlite { $( $crate::per_backend!(@on Sqlite [$($only)?] $name => $body); )* }
        mod mysql { $( $crate::per_backend!(@on MySql [$($only)?] $name => $body); )* }
        mod postgres { $( $crate::per_backend!(@on Postgres [$($only)?] $name => $body); )* }
    };
    // which backends a tag runs on
    (@on $b:ident [] $name:ident => $body:path) => { $crate::per_backend!(@test $b $name => $body); };
    (@on Sqlite [sqlite] $name:ident => $body:path) => { $crate::per_backend!(@test Sqlite $name => $body); };
    (@on $b:ident [sqlite] $name:ident => $body:path) => {};
    (@on Sqlite [servers] $name:ident => $body:path) => {};
    (@on $b:ident [servers] $name:ident => $body:path) => { $crate::per_backend!(@test $b $name => $body); };
    (@on $b:ident [$other:ident] $name:ident => $body:path) => {
        compile_error!(concat!("per_backend!: [", stringify!($other), "] is not a tag; [sqlite] or [servers]"));
    };
    (@test $b:ident $name:ident => $body:path) => {
        #[tokio::test(flavor = "multi_thread")]
        async fn $name() {
            $body($crate::common::Backend::$b).await
        }
    };
}

/// Where a property test of this crate keeps its failures: `proptest-regressions/tests/it/<file>.txt`
/// at the top of the repository, beside the library's (proptest's default would put them in
/// `tests/proptest-regressions/`, as tests/it has a main.rs). Saved seeds are replayed before any new
/// case. `$file` is the test file's name without `.rs`.
#[macro_export]
macro_rules! regressions {
    ($file:literal) => {
        Some(Box::new(::proptest::test_runner::FileFailurePersistence::Direct(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/proptest-regressions/tests/it/",
            $file,
            ".txt"
        ))))
    };
}
