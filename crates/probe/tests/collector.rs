//! The collector on a real process: a `sleep` child spawned here is the
//! server; typed samples of the machine, the process and its threads come on
//! the channel, and the child's exit is reported as a note. The database
//! probes, on a private Redis and PostgreSQL, take a closing reading when
//! stopped.

use scalelab_probe::db::DbSample;
use scalelab_probe::{Collector, CollectorConfig, Record, Sample, Source};
use scalelab_testkit::mariadb::MariaDb;
use scalelab_testkit::postgres::Postgres;
use scalelab_testkit::redis::Redis;
use scalelab_wire::resp::RedisUrl;
use scalelab_wire::url::SqlUrl;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Drains `c` until `done` holds over what came so far, or `limit` passes.
fn collect_until(c: &Collector, got: &mut Vec<Record>, limit: Duration, done: impl Fn(&[Record]) -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        got.extend(c.drain());
        if done(got) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_collector_sends_typed_system_process_and_thread_samples_of_a_child_and_notes_its_exit() {
    let mut child = Command::new("sleep").arg("30").stdin(Stdio::null()).spawn().expect("spawning sleep");
    let pid = child.id();
    let c = Collector::start(CollectorConfig {
        server_pid: Some(pid),
        interval: Duration::from_millis(200),
        thread_hz: 20.0,
        db: None,
        specimen: None,
        redis: None,
    });
    let mut got = Vec::new();
    let two_of_each = |r: &[Record]| {
        let system = r.iter().filter(|r| matches!(r, Record::Sample(Sample::System(_)))).count();
        let process = r.iter().filter(|r| matches!(r, Record::Sample(Sample::Process(_)))).count();
        let threads = r.iter().filter(|r| matches!(r, Record::Sample(Sample::Threads(_)))).count();
        system >= 2 && process >= 2 && threads >= 2
    };
    let arrived = collect_until(&c, &mut got, Duration::from_secs(10), two_of_each);
    assert!(arrived, "two system, process and thread samples within 10 s; got {} records", got.len());

    let system: Vec<_> = got.iter().filter_map(|r| if let Record::Sample(Sample::System(s)) = r { Some(s) } else { None }).collect();
    assert!(system[0].at.unix_ms > 0 && system[1].at.monotonic_ns > system[0].at.monotonic_ns, "timestamped, in order");
    assert!(system[0].cpu.is_some(), "/proc/stat read");
    let process: Vec<_> = got.iter().filter_map(|r| if let Record::Sample(Sample::Process(p)) = r { Some(p) } else { None }).collect();
    assert!(process.iter().all(|p| p.pid == pid && p.alive), "the child's samples");
    assert_eq!(process[0].threads, Some(1), "sleep has one thread");
    assert!(process[0].rss_kib.is_some_and(|k| k > 0));

    // The server goes away: the thread sampler says so once, process samples go on (not alive).
    child.kill().unwrap();
    child.wait().unwrap();
    let exited = |r: &[Record]| {
        r.iter().any(|r| matches!(r, Record::Unavailable(Source::Threads, why) if why == "the server process exited"))
            && r.iter().any(|r| matches!(r, Record::Sample(Sample::Process(p)) if !p.alive))
    };
    let noted = collect_until(&c, &mut got, Duration::from_secs(10), exited);
    assert!(noted, "the exit noted within 10 s: {:?}", got.iter().filter(|r| matches!(r, Record::Unavailable(..))).collect::<Vec<_>>());

    // stop() joins the threads and hands back what was left; nothing comes after.
    let last = c.stop();
    assert!(last.len() < 100, "what was left is the last few readings, not a backlog: {}", last.len());
}

/// The database readings of `records` from `engine`'s probe.
fn db_readings<'a>(records: &'a [Record], engine: &'a str) -> impl Iterator<Item = &'a DbSample> + 'a {
    records.iter().filter_map(move |r| match r {
        Record::Sample(Sample::Db(d)) if d.engine == engine => Some(&**d),
        _ => None,
    })
}

/// Starts a collector of the databases at `db` and `redis` alone.
fn db_collector(db: Option<String>, redis: Option<String>) -> Collector {
    Collector::start(CollectorConfig {
        server_pid: None,
        interval: Duration::from_secs(1),
        thread_hz: 0.0,
        db: db.map(|u| SqlUrl::parse(&u).unwrap()),
        specimen: None,
        redis: redis.map(|u| RedisUrl::parse(&u).unwrap()),
    })
}

/// A step that ends between two of the once-a-second readings still has a
/// reading at its end: stopping the collector makes each database probe
/// (Redis, PostgreSQL, MariaDB) read once more, and close its PostgreSQL
/// wait chunk, before it ends. Without it a short last step could have no
/// reading within its window's half-second slack, and show no database
/// figures at all.
#[test]
fn stopped_database_probes_take_a_closing_reading() {
    let (redis, pg, maria) = (Redis::start(), Postgres::start(), MariaDb::start());
    let pg_redis = db_collector(Some(pg.url()), Some(redis.url()));
    let mysql = db_collector(Some(maria.url()), None);
    let mut got = Vec::new();
    let all = |r: &[Record]| {
        db_readings(r, "redis").count() >= 1
            && db_readings(r, "postgres").any(|d| d.pg_database.is_some())
            && db_readings(r, "mysql").count() >= 1
    };
    let end = Instant::now() + Duration::from_secs(15);
    while !all(&got) && Instant::now() < end {
        got.extend(pg_redis.drain());
        got.extend(mysql.drain());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(all(&got), "a first reading of each within 15 s: {got:?}");
    // Stopped well before the next once-a-second reading.
    std::thread::sleep(Duration::from_millis(300));
    let stopped = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    got.extend(pg_redis.stop());
    got.extend(mysql.stop());
    let last = |engine: &str, has: &dyn Fn(&DbSample) -> bool| {
        let d = db_readings(&got, engine).filter(|d| has(d)).last().unwrap();
        assert!(d.unix_ms >= stopped, "{engine}: a reading at the stop ({stopped}): {d:?}");
    };
    last("redis", &|d| d.redis.is_some());
    last("postgres", &|d| d.pg_database.is_some());
    last("postgres", &|d| d.pg_waits.is_some());
    last("mysql", &|d| d.status.is_some());
    assert!(!got.iter().any(|r| matches!(r, Record::Unavailable(Source::Db, _))), "no database probe failed: {got:?}");
}
