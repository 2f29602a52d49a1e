//! The integration tests, one crate (linked once against the library instead of once per file).
//! Each module was a test crate of its own; `cargo test --test it <module>::` runs one of them, e.g.
//! `cargo test --test it wizard::`.

#[macro_use]
mod common;

mod api_load;
mod api_load_interrupted;
mod audit_concurrency;
mod bad_input;
mod bmc_check;
mod boot;
mod config;
mod console_cli;
mod demo_sandbox;
mod deploy;
mod e2e_tmux;
mod faults;
mod flavor_fit;
mod flavors;
mod fuzz;
mod galera;
mod hostile_outputs;
mod hostile_rows;
mod hostile_text;
mod hosts;
mod inventory;
mod juno;
mod juno_baremetal;
mod juno_compute;
mod juno_nova;
mod juno_takeover;
mod keystone;
mod migrate;
mod next_boot;
mod plan_then_load;
mod proxy;
mod proxy_auth;
mod proxy_tokens;
mod races;
mod real_ironic;
mod rehearsal;
mod release;
mod report;
mod runs;
mod scale;
mod secrets;
mod takeover;
mod upstream_2014_mistakes;
mod watch;
mod wizard;
mod wizard_next_steps;
mod wizard_quit;
