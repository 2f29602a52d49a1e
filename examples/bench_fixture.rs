//! Writes the benchmark's nova_bm inventory (`Fixture::bench`: ~70% free nodes, ~25% with an
//! instance, ~5% soft-deleted, two interfaces each) into an existing, empty database, and, given a
//! directory, nova baremetal's TFTP tree for its instances (their next boot: without it every
//! instance's node is an `unknown-boot` conflict and `plan` exits 3).
//! Used by scripts/bench.sh: cargo run --release --example bench_fixture -- NODES URL [TFTP_DIR]

use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(nodes), Some(url)) = (args.get(1).and_then(|n| n.parse::<usize>().ok()), args.get(2)) else {
        eprintln!("usage: bench_fixture NODES DB_URL [TFTP_DIR]");
        std::process::exit(2);
    };
    let url = DbUrl::parse(url).unwrap_or_else(|e| panic!("{e}"));
    let db = Db::connect(&url, Access::Create).await.unwrap_or_else(|e| panic!("{e}"));
    let f = Fixture::bench(nodes, 40);
    fixture::build(&db, &f).await.unwrap_or_else(|e| panic!("{e}"));
    db.close().await;
    if let Some(dir) = args.get(3) {
        f.write_tftp_tree(std::path::Path::new(dir)).unwrap_or_else(|e| panic!("{dir}: {e}"));
    }
}
