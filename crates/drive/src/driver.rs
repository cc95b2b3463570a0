//! The traits a protocol implements to be driven by the engine.

use scalelab_core::result::Failure;
use std::future::Future;

/// A protocol's factory of virtual clients, shared by all worker threads.
pub trait Driver: Send + Sync + 'static {
    /// One virtual client: owns its connection, lives on one worker thread.
    type Client: Client;

    /// Makes client number `id` (no I/O yet; [`Client::connect`] opens it).
    fn client(&self, id: u32) -> Self::Client;

    /// Names of the statements whose latency clients report on their own
    /// (see [`Client::statement_times`]); empty for protocols without them.
    fn statement_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One virtual client with at most one request in flight.
pub trait Client: 'static {
    /// Opens the connection before the window starts, so connection set-up
    /// is not mixed into request latency.
    fn connect(&mut self) -> impl Future<Output = Result<(), Failure>>;

    /// Sends one unit of work (a request, a transaction) and waits for its
    /// whole response; returns the number of statements it carried (1 for
    /// HTTP). Reconnects by itself when the connection was lost.
    fn call(&mut self) -> impl Future<Output = Result<u32, Failure>>;

    /// Connections this client re-opened after the first.
    fn reconnects(&self) -> u64;

    /// Latencies of the statements of the last [`Client::call`], as (index
    /// into [`Driver::statement_names`], latency); the engine records them
    /// when the unit counted and clears the list. None: not measured.
    fn statement_times(&mut self) -> Option<&mut Vec<(u32, std::time::Duration)>> {
        None
    }
}
