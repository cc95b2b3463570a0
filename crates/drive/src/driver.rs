//! The traits a protocol implements to be driven by the engine.

use scalelab_core::result::Failure;
use std::future::Future;

/// A protocol's factory of virtual clients, shared by all worker threads.
pub trait Driver: Send + Sync + 'static {
    /// One virtual client: owns its connection, lives on one worker thread.
    type Client: Client;

    /// Makes the client `ctx` describes (no I/O yet; [`Client::connect`]
    /// opens it).
    fn client(&self, ctx: ClientCtx) -> Self::Client;

    /// How many clients share one connection: 1 (each client owns its
    /// connection) but for HTTP/2, whose connections carry `--streams`
    /// clients at once, one stream each. The engine places the clients of
    /// one connection on one worker thread ([`ClientCtx::connection`]).
    fn clients_per_connection(&self) -> u32 {
        1
    }

    /// The clients of one worker thread, made together (no I/O yet): a
    /// protocol whose clients share a connection (HTTP/2) ties the clients
    /// of one [`ClientCtx::connection`] together here; the others make
    /// each on its own with [`Driver::client`].
    fn clients(&self, ctxs: &[ClientCtx]) -> Vec<Self::Client> {
        ctxs.iter().map(|c| self.client(*c)).collect()
    }

    /// Names of the statements whose latency clients report on their own
    /// (see [`Client::statement_times`]); empty for protocols without them.
    fn statement_names(&self) -> Vec<String> {
        Vec::new()
    }
}

/// What the engine tells a driver about a client it makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCtx {
    /// The client's number in the step, 0-based (seeds its random draws).
    pub id: u32,
    /// The client's worker thread runs this client alone: it has nothing
    /// else to do while a request is out, so the driver may wait for the
    /// reply in a blocking `recv` rather than the event loop's
    /// `epoll_wait` (the kernel's sync wake-up hint reaches socket waiters,
    /// not epoll waiters; see `scalelab_wire::stream::Stream::settle`). False outside
    /// the engine's worker threads.
    pub owns_one_connection: bool,
    /// The connection the client sends on, 0-based in the step: its own
    /// (`id`) unless the driver shares connections
    /// ([`Driver::clients_per_connection`]), when it is
    /// `id / clients_per_connection`; every client of one connection is on
    /// one worker thread.
    pub connection: u32,
}

impl ClientCtx {
    /// Client `id` on a thread that may run other work too (a preflight, a
    /// check, or a worker thread with several clients), on a connection of
    /// its own.
    pub fn new(id: u32) -> ClientCtx {
        ClientCtx { id, owns_one_connection: false, connection: id }
    }

    /// The same client, on connection `connection` (shared with others).
    pub fn on_connection(self, connection: u32) -> ClientCtx {
        ClientCtx { connection, ..self }
    }

    /// The same client, on a thread whose only connection is its own (`sole`).
    pub fn with_sole_connection(self, sole: bool) -> ClientCtx {
        ClientCtx { owns_one_connection: sole, ..self }
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

    /// Connect times of the connections the last [`Client::call`] opened
    /// (none with a kept-alive connection); the engine records them on
    /// their own (the request latency includes them) and clears the list.
    /// None: not measured.
    fn connect_times(&mut self) -> Option<&mut Vec<std::time::Duration>> {
        None
    }

    /// How long the last [`Client::call`] waited on flow control before
    /// its request was all sent (HTTP/2: the send window for its body), and
    /// clears it: zero when it did not wait. None: the protocol has no flow
    /// control of its own, nothing measured.
    fn take_flow_wait(&mut self) -> Option<std::time::Duration> {
        None
    }

    /// Latencies of the statements of the last [`Client::call`], as (index
    /// into [`Driver::statement_names`], latency); the engine records them
    /// when the unit counted and clears the list. None: not measured.
    fn statement_times(&mut self) -> Option<&mut Vec<(u32, std::time::Duration)>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::ClientCtx;
    use scalelab_wire::stream::Stream;

    /// A client made outside the engine (prepare, preflight) keeps its
    /// socket on the event loop; the engine's sole clients block.
    #[test]
    fn only_client_threads_with_one_connection_block() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let (_ours, theirs) = tokio::net::UnixStream::pair().unwrap();
            let stream = Stream::Unix(theirs).settle(ClientCtx::new(0).owns_one_connection).unwrap();
            assert!(matches!(stream, Stream::Unix(_)), "a thread outside the engine (prepare, preflight) keeps the event loop");
            let (_ours, theirs) = tokio::net::UnixStream::pair().unwrap();
            let stream = Stream::Unix(theirs).settle(ClientCtx::new(0).with_sole_connection(true).owns_one_connection).unwrap();
            assert!(matches!(stream, Stream::Blocking(_)));
        });
    }
}
