//! Rules about the client and the requests themselves: a client that was
//! the bottleneck, and errors.

use super::*;

pub(super) fn client_bound(ctx: &Ctx) -> Option<Verdict> {
    // A busy-polling client's idle polls are already taken out (`as_if_asleep`).
    let pct = ctx.step.client_cpu_pct();
    let lag = ctx.step.client_lag_ms;
    // By CPU only: `client_saturated` also holds for late sends, judged below.
    let by_cpu = pct.is_some_and(|p| p > CLIENT_SATURATED_PCT);
    // A client starved of CPU (a busy neighbour, a taskset to a shared core)
    // can stay under 90 % of its cores yet answer its timers late.
    let by_lag = lag.is_some_and(|l| l >= CLIENT_LAG_MS);
    let wait = ctx.step.client_runq_wait_pct;
    // The client queued for a CPU while the server's threads did not: the
    // client is starved by something else (a neighbour, a taskset). When
    // both queue, the machine is simply CPU-bound (that verdict says so).
    // A server that itself fills most of the cores makes the client queue as
    // a matter of course on a shared machine: that is cpu-bound, not a starved client.
    let server_runnable = ctx.step.telemetry.as_ref().and_then(|t| t.thread_states_pct).map(|s| s.runnable);
    let server_share = match (ctx.t().and_then(|t| t.server_cpu_pct), ctx.env.logical_cores.filter(|c| *c > 0)) {
        (Some(p), Some(c)) => Some(p / (100.0 * f64::from(c))),
        _ => None,
    };
    let by_wait = match (wait, server_runnable, server_share) {
        (Some(w), Some(r), Some(share)) => w >= CLIENT_RUNQ_WAIT_PCT && r < w / 2.0 && share < SERVER_CPU_SHARE,
        _ => false,
    };
    // Open loop: the client must prove it kept the schedule.
    let late = ctx.step.late_sends_pct();
    let by_late = late.is_some_and(|p| p >= CLIENT_LATE_SENDS_PCT);
    if !by_cpu && !by_lag && !by_wait && !by_late {
        return None;
    }
    let headline = if by_cpu {
        "THE LOAD GENERATOR WAS SATURATED: this result measures the client, not the server"
    } else if by_wait {
        "THE LOAD GENERATOR WAS STARVED OF CPU (its threads waited to run): this result measures the client, not the server"
    } else if by_lag {
        "THE LOAD GENERATOR FELL BEHIND (its event loop ran late): this result measures the client, not the server"
    } else {
        "THE LOAD GENERATOR DID NOT KEEP ITS SCHEDULE (requests sent late with connections free): this result measures the client, not the server"
    };
    let mut d = Draft::new(
        VerdictKind::ClientBound,
        ctx,
        headline,
        "give the client more cores or another machine (more client threads, no busy neighbours, `taskset` it away from the server) and re-run; do not compare servers on this run",
    );
    if let Some(p) = pct {
        let busy_poll = ctx.step.client_poll_idle_s.is_some();
        d.ev(if busy_poll { "client CPU doing work (its idle busy polls left out)" } else { "client CPU" }, Some(p), "% of its cores");
    }
    if let Some(l) = lag {
        d.ev("client event-loop lag", Some(l), "ms");
    }
    if let Some(w) = wait {
        d.ev("client run-queue wait", Some(w), "% of the window");
    }
    if let (Some(p), Some(n)) = (late, ctx.step.late_sends) {
        d.ev("late sends", Some(p), "% of requests sent");
        d.ev("late sends", Some(n as f64 / ctx.step.window_s.max(1e-9)), "/s");
    }
    d.ev("client cores", Some(f64::from(ctx.step.client_cores)), "cores");
    d.ev("throughput", Some(ctx.step.throughput_per_s()), "req/s");
    Some(d.done())
}

pub(super) fn errors(ctx: &Ctx) -> Option<Verdict> {
    let s = ctx.step;
    let total = s.errors.total();
    let attempts = s.requests + total;
    if total == 0 || attempts == 0 {
        return None;
    }
    let share = total as f64 / attempts as f64;
    // A request left unanswered is notable at any share: the server (or
    // some of its connections) stopped answering.
    let unfinished = s.errors.get(ErrorClass::Unfinished);
    // Unless they are the requests of clients the server never served
    // while it served the others (a pool, a listen queue): the
    // starved-clients verdict says that, and "stopped answering" would not be true.
    let starved = s.starved_clients();
    if unfinished == total && starved.is_some_and(|c| unfinished <= u64::from(c.served_nothing)) {
        return None;
    }
    if share < ERRORS_NOTABLE_SHARE && unfinished == 0 {
        return None;
    }
    let (top, top_n) = s.errors.counts.iter().max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c))).map(|(c, n)| (*c, *n))?;
    let message = s.errors.first_message.get(&top).map(|m| format!(" ({m})")).unwrap_or_default();
    let next = match top {
        ErrorClass::ConnectRefused | ErrorClass::ConnectTimeout => {
            "connections are refused or time out: check the listen backlog and accept rate (nstat ListenOverflows/ListenDrops, ss -lnt), file-descriptor limits and the server's connection limit"
        }
        ErrorClass::Reset | ErrorClass::ConnectionLost => {
            "the server closes connections mid-request: read its error log, its connection and keep-alive limits, and dmesg for OOM kills"
        }
        ErrorClass::StreamReset => {
            "the server resets HTTP/2 streams: the first message names the code (REFUSED_STREAM: more streams than its SETTINGS_MAX_CONCURRENT_STREAMS, use fewer --streams; others: read its error log)"
        }
        ErrorClass::GoAway => {
            "the server closes HTTP/2 connections with GOAWAY while requests are out: raise its per-connection request limit (nginx `keepalive_requests`, `http2_max_requests` before 1.19.7) or look for reloads and errors in its log"
        }
        ErrorClass::ReadTimeout => {
            "responses time out: the server queues beyond the timeout; look at its worker/pool limits and the latency histogram of this step"
        }
        ErrorClass::Http4xx => "the server rejects requests: check the workload's URLs and the server's rate limits",
        ErrorClass::Http5xx => "the server fails requests: read its error log at this load (upstream timeouts, pool exhaustion)",
        ErrorClass::Deadlock | ErrorClass::LockWaitTimeout | ErrorClass::SerializationFailure => {
            "transactions collide on the same rows: look at the database's lock waits (SHOW ENGINE INNODB STATUS, pg_locks) and the workload's hot rows"
        }
        ErrorClass::TooManyConnections => "the database refuses clients: raise max_connections or put a pool in front",
        ErrorClass::Unfinished => {
            "the server stopped answering (hung, stopped, deadlocked or overloaded past the window): look at its state (`top -H -p PID`, a stack dump, `ps -o stat`) and its log; the requests are counted as unfinished, not as completions"
        }
        ErrorClass::FdLimit => {
            "the client ran out of file descriptors: raise the hard limit (`ulimit -Hn`, LimitNOFILE= in a unit, /etc/security/limits.conf) or use fewer clients"
        }
        ErrorClass::Dropped => {
            "the server did not keep up with the offered rate: requests waited --latency-budget for one of the --max-in-flight connections, all busy, and were never sent; the rate is past what it sustains (see the other verdicts for why)"
        }
        ErrorClass::OutOfMemory => {
            "Redis refuses writes at its maxmemory: raise `maxmemory`, choose an eviction policy (`maxmemory-policy`), or shrink the keyspace (`INFO memory`)"
        }
        ErrorClass::Busy => {
            "Redis is busy (a long script, or loading its dataset): look at `SLOWLOG GET`, `LATENCY LATEST` and `INFO persistence`"
        }
        ErrorClass::SqlError | ErrorClass::ServerError | ErrorClass::Other => {
            "read the first error message of each class and the server's log at this load"
        }
    };
    let mut d = Draft::new(VerdictKind::Errors, ctx, format!("requests fail, mostly {}{message}", top.name()), next);
    d.cap = if share >= ERRORS_HIGH_SHARE || unfinished > 0 { Confidence::High } else { Confidence::Medium };
    d.ev("failed", Some(100.0 * share), "% of requests");
    d.ev("errors", Some(total as f64 / s.window_s), "/s");
    d.ev(top.name(), Some(top_n as f64 / s.window_s), "/s");
    if unfinished > 0 && top != ErrorClass::Unfinished {
        d.ev("unfinished", Some(unfinished as f64), "requests at the window's end");
    }
    Some(d.done())
}

/// Some clients completed nothing in the window while the others were
/// served: a server that serves fewer connections at once than there are
/// clients (a worker pool, a connection limit, keep-alive holding workers),
/// the rest waiting in its listen queue. The step's throughput and latency
/// then describe only the served clients.
pub(super) fn starved_clients(ctx: &Ctx) -> Option<Verdict> {
    let s = ctx.step;
    let c = s.starved_clients()?;
    let served = c.clients - c.served_nothing;
    let waiting = c
        .oldest_outstanding_ms
        .map(|ms| format!("; requests were still waiting at its end, the oldest for {:.1} s", ms / 1e3))
        .unwrap_or_default();
    let headline = format!(
        "{} of {} clients completed nothing in the window{waiting}: the throughput and the latency percentiles come from the {served} others only",
        c.served_nothing, c.clients
    );
    let mut d = Draft::new(
        VerdictKind::StarvedClients,
        ctx,
        headline,
        "the server answers fewer connections at once than there are clients: look at its worker or thread pool and connection limits (Apache MaxRequestWorkers/ServerLimit, a thread pool size, max_connections) and its listen queue (`ss -ltn`: Recv-Q of the listener); on a prefork server keep-alive holds a worker per idle connection (KeepAliveTimeout)",
    );
    d.ev("clients served nothing", Some(f64::from(c.served_nothing)), &format!("of {}", c.clients));
    d.ev("fewest completions of a client", Some(c.min as f64), "requests");
    d.ev("most completions of a client", Some(c.max as f64), "requests");
    d.ev("Jain's fairness", c.jain(), "(1 = all alike)");
    d.ev("out at the window's end", Some(f64::from(c.outstanding_at_end)), "requests");
    d.ev("oldest of them", c.oldest_outstanding_ms, "ms");
    // Corroboration: the starved clients were waiting (a request out), not
    // idle or failing.
    d.check(Some(c.outstanding_at_end >= c.served_nothing), String::new);
    // And the load generator ran: a client thread that waited for a CPU
    // much of the window (a neighbour on its cores) may have starved its
    // own clients. Beside `stress-ng --cpu 2` one of 3 PostgreSQL clients
    // got nothing in a 0.3 s window while the client waited 53 % of it.
    let runq = s.client_runq_wait_pct;
    d.ev("load generator waiting for a CPU", runq, "% of the window");
    if runq.is_some_and(|w| w >= CLIENT_RUNQ_WAIT_PCT) {
        d.v.headline.push_str(" (but the load generator itself waited for a CPU much of the window: some clients may have starved on it)");
    }
    if let Some(w) = runq {
        d.check(Some(w < CLIENT_RUNQ_WAIT_PCT), String::new);
    }
    Some(d.done())
}

/// How close the requests in service must come to the estimated number of
/// workers (a share of it, at least one request) to be taken as "at" it.
pub const POOL_MATCH_SHARE: f64 = 0.25;
/// Share of the server's thread-time asleep (idle, %) from which its
/// workers are taken to be mostly waiting on idle connections.
pub const POOL_IDLE_PCT: f64 = 50.0;

/// A fixed pool of workers is the limit: the requests in service (Little's
/// law: throughput x mean latency of the answered requests) sit at the
/// server's number of workers while more clients wait (in its listen queue,
/// or served nothing).
pub(super) fn worker_pool(ctx: &Ctx) -> Option<Verdict> {
    let s = ctx.step;
    if s.offered_rate_per_s.is_some() {
        return None;
    }
    let t = ctx.t()?;
    let mean_s = s.latency.summary()?.mean / 1e3;
    let in_service = s.throughput_per_s() * mean_s;
    let clients = f64::from(s.concurrency);
    // Clients beyond those in service, waiting somewhere.
    if clients < in_service + 1.0 {
        return None;
    }
    let waiting_in_queue = t.listen_queue_mean.filter(|q| *q >= 1.0);
    // Some clients served nothing (none at all would leave no latency above).
    let starved = s.starved_clients();
    if waiting_in_queue.is_none() && starved.is_none() {
        return None;
    }
    // A server that fills the machine itself, every client served, is
    // CPU-bound: more workers would not serve more, the connections would
    // wait in its run queue instead of its listen queue (the cpu-bound
    // verdict says so). With clients served nothing the pool still decides
    // who is served, CPU or not: the verdict stands, lowered below (the
    // specimen's pool of 4 on 2 cores fills 72-79 % of them). A machine
    // filled by others (the client, a neighbour) only lowers it.
    if starved.is_none() && server_fills_cpu(ctx, t) {
        return None;
    }
    // The server's threads (all its processes' in a tree), less the parent
    // or acceptor that serves no request: Apache prefork is a parent and
    // one process per worker, the specimen's pool a main thread and its
    // workers. A bound, not a count: Apache's worker MPM adds a listener and
    // a main thread per child (11 threads for 8 workers), so the measured
    // figure must only come within a quarter of it, and that figure, not
    // the thread count, is the pool the headline names.
    let threads = t.server_threads?;
    let bound = threads.saturating_sub(1).max(1) as f64;
    let at_workers = |x: f64| (x - bound).abs() <= (POOL_MATCH_SHARE * bound).max(1.0);
    // Either (keep-alive) the clients served fill the workers: each worker
    // holds one connection for its life, busy or idle, so the requests in
    // service can be fewer; an exact count, so it goes first. Or the
    // requests in service do.
    let served = starved.map(|c| c.clients - c.served_nothing);
    let (held, workers) = if let Some(n) = served.filter(|n| at_workers(f64::from(*n))) {
        let holding = if ctx.keepalive == Some(false) { "" } else { ", each holding a worker with its connection" };
        (format!("{n} clients served{holding} ({in_service:.1} requests in service)"), f64::from(n))
    } else if at_workers(in_service) {
        (format!("{in_service:.1} requests in service"), in_service.round().max(1.0))
    } else {
        return None;
    };
    let queue = waiting_in_queue.map(|q| format!("; {q:.0} connections waiting in its listen queue")).unwrap_or_default();
    let nothing = starved.map(|c| format!("; {} of {} clients served nothing", c.served_nothing, c.clients)).unwrap_or_default();
    let idle = t.thread_states_pct.map(|p| p.idle).filter(|i| *i >= POOL_IDLE_PCT);
    let kept = match (idle, ctx.keepalive) {
        (Some(i), Some(true)) => format!(
            "; its workers are {i:.0} % asleep, mostly waiting on keep-alive connections: idle clients hold them (KeepAliveTimeout, MaxKeepAliveRequests)"
        ),
        _ => String::new(),
    };
    let headline = format!(
        "the server's worker pool is the limit: {held} = about {workers:.0} workers (of its {threads} threads or processes in all, a parent and any listener threads among them){queue}{nothing}{kept}"
    );
    let mut d = Draft::new(
        VerdictKind::WorkerPool,
        ctx,
        headline,
        "raise the pool to the clients it must serve (Apache MaxRequestWorkers and ServerLimit, a thread pool size, a database's max_connections) or cap the clients in front of it; on a prefork server keep-alive holds a worker per connection, idle or not (lower KeepAliveTimeout, or an event-driven server or MPM)",
    );
    d.ev("in service (throughput x mean latency)", Some(in_service), "requests");
    d.ev("workers (as served)", Some(workers), "workers");
    d.ev("server threads less one (the bound)", Some(bound), "workers");
    d.ev("clients", Some(clients), "clients");
    if let Some(n) = served {
        d.ev("clients served", Some(f64::from(n)), "clients");
    }
    d.ev("listen queue, mean waiting", t.listen_queue_mean, "connections");
    if let Some(c) = starved {
        d.ev("clients served nothing", Some(f64::from(c.served_nothing)), &format!("of {}", c.clients));
    }
    // Corroboration: the CPU has room (else the machine, not the pool, may
    // be what holds the requests in service at that number).
    d.check(cpu_not_saturated(Some(t)), || ctx.why("CPU busy", CPU));
    if let Some(b) = t.cpu_busy_pct {
        d.ev("CPU busy", Some(b), "%");
    }
    Some(d.done())
}
