//! Writes the benchmark's nova_bm inventory (`Fixture::bench`: ~70% free nodes, ~25% with an
//! instance, ~5% soft-deleted, two interfaces each) into an existing, empty database.
//! Used by scripts/bench.sh: cargo run --release --example bench_fixture -- NODES URL

use bm2ironic::core::db::url::DbUrl;
use bm2ironic::core::db::{Access, Db};
use bm2ironic::core::demo::fixture::{self, Fixture};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(nodes), Some(url)) = (args.get(1).and_then(|n| n.parse::<usize>().ok()), args.get(2)) else {
        eprintln!("usage: bench_fixture NODES DB_URL");
        std::process::exit(2);
    };
    let url = DbUrl::parse(url).unwrap_or_else(|e| panic!("{e}"));
    let db = Db::connect(&url, Access::Create).await.unwrap_or_else(|e| panic!("{e}"));
    fixture::build(&db, &Fixture::bench(nodes, 40)).await.unwrap_or_else(|e| panic!("{e}"));
    db.close().await;
}
