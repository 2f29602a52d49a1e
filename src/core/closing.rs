//! Connections closed once, whatever happens: `using` runs a piece of work with something that
//! holds connections (a database pool, the nova_bm source, a run store) and closes it after, early
//! returns included. Each holder says how it closes (`Closes`, beside its type).

/// What holds connections that are closed by an async call (a database pool, a run store, ...):
/// closing them tells the server goodbye instead of dropping the sockets (which MariaDB logs as
/// aborted connections, and which a pooled server counts until it times them out).
pub trait Closes: Sized {
    fn close_now(self) -> impl std::future::Future<Output = ()>;
}

/// Runs `f` with `held`, then closes it whatever `f` returned: an early return (`?`) inside `f`
/// closes it too. The faces hold connections this way instead of closing them by hand on every
/// exit path.
pub async fn using<R: Closes, T>(held: R, f: impl AsyncFnOnce(&R) -> T) -> T {
    let r = f(&held).await;
    held.close_now().await;
    r
}

/// Nothing held closes nothing.
impl<R: Closes> Closes for Option<R> {
    async fn close_now(self) {
        if let Some(r) = self {
            r.close_now().await
        }
    }
}
