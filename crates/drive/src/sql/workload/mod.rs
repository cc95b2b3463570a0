//! SQL workloads: units of work (single statements or transactions) with
//! weights, and the parameter generators that fill their placeholders.
//!
//! A statement names its parameters as `{name}`; the driver turns them into
//! `$1, $2, …` (PostgreSQL) or `?` (MySQL) for prepared statements, or into
//! literals for `--no-prepare`. Parameters are drawn once per unit, so one
//! value can be used by several statements of a transaction.

mod file;
mod gen;

pub use file::{compile, parse_workload_file, placeholders, WorkloadFileError};
pub use gen::{Gen, GenState, PickValue, Rng, Value};

/// One unit of work: a statement, or a transaction of several.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Unit {
    /// Name shown in the workload description.
    pub name: String,
    /// Relative share of the traffic.
    pub weight: u32,
    /// Wrapped in BEGIN … COMMIT (counted as statements).
    pub transaction: bool,
    /// Statements with `{name}` placeholders.
    pub statements: Vec<String>,
    /// Generators by parameter name, drawn in this order once per unit.
    pub params: Vec<(String, Gen)>,
}

/// A named mix of units (serialized as is: a coordinator sends it to its agents).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Workload {
    /// The built-in name or the file name.
    pub name: String,
    /// The units with their weights.
    pub units: Vec<Unit>,
}

impl Workload {
    /// A one-line description for the run record.
    pub fn describe(&self) -> String {
        let stmts: usize = self.units.iter().map(|u| u.statements.len()).max().unwrap_or(0);
        let tx = self.units.iter().any(|u| u.transaction);
        format!(
            "{} ({} unit{}, {}{} statement{} per unit)",
            self.name,
            self.units.len(),
            if self.units.len() == 1 { "" } else { "s" },
            if self.units.len() > 1 { "up to " } else { "" },
            stmts + if tx { 2 } else { 0 },
            if stmts + usize::from(tx) * 2 == 1 { "" } else { "s" }
        )
    }
}

/// What the built-in workloads need to know about the prepared tables.
#[derive(Clone, Copy, Debug, Default)]
pub struct DatasetShape {
    /// sbtest tables present (sbtest1..N).
    pub sbtest_tables: u32,
    /// Rows per sbtest table (max id of sbtest1).
    pub sbtest_rows: i64,
    /// pgbench scale (rows of pgbench_branches).
    pub pgbench_scale: i64,
    /// Rows of pgbench_accounts.
    pub pgbench_accounts: i64,
    /// Rows of news_articles (0: no news dataset).
    pub news_articles: i64,
    /// Rows of news_authors.
    pub news_authors: i64,
    /// Rows of news_categories.
    pub news_categories: i64,
}

/// The built-in workloads: name, dataset they need, one-line description.
pub const BUILTIN: [(&str, &str, &str); 7] = [
    ("point-select", "sbtest", "sysbench oltp_point_select: SELECT c FROM sbtestN WHERE id = ?"),
    ("read-only", "sbtest", "sysbench oltp_read_only's transaction: 10 point selects, simple, sum, order and distinct ranges"),
    ("hot-row", "sbtest", "UPDATE sbtest1 SET k = k + 1 on 10 hot rows: a lock-contention workload"),
    ("write", "sbtest", "sysbench oltp_write_only's transaction: index and non-index updates, delete + insert, spread evenly"),
    ("pgbench-select", "pgbench", "pgbench -S: SELECT abalance FROM pgbench_accounts WHERE aid = ?"),
    ("pgbench-tpcb", "pgbench", "pgbench's default TPC-B-like transaction (3 updates, a select, an insert)"),
    ("news-read", "news", "read-intensive web site: select by key, join, GROUP BY with COUNT, ORDER BY date LIMIT 20, LIKE search"),
];

/// Title words of the news dataset (also the LIKE search terms of news-read).
pub const NEWS_WORDS: [&str; 24] = [
    "market", "election", "storm", "league", "science", "health", "city", "budget", "court", "music", "film", "travel", "energy", "school",
    "police", "rail", "harbour", "festival", "museum", "tennis", "weather", "bank", "farm", "startup",
];

fn news_read(shape: &DatasetShape) -> Vec<Unit> {
    let unit = |name: &str, weight: u32, sql: &str, params: Vec<(String, Gen)>| Unit {
        name: name.to_string(),
        weight,
        transaction: false,
        statements: vec![sql.to_string()],
        params,
    };
    let article = || vec![("id".to_string(), Gen::Uniform { min: 1, max: shape.news_articles })];
    let cat = || vec![("cat".to_string(), Gen::Uniform { min: 1, max: shape.news_categories })];
    vec![
        unit("article by key", 40, "SELECT title, body, published, views FROM news_articles WHERE id = {id}", article()),
        unit(
            "article with author and category",
            20,
            "SELECT a.title, u.name, c.name FROM news_articles a JOIN news_authors u ON u.id = a.author_id \
             JOIN news_categories c ON c.id = a.category_id WHERE a.id = {id}",
            article(),
        ),
        unit("comments of an article", 15, "SELECT author, body, posted FROM news_comments WHERE article_id = {id} ORDER BY posted", article()),
        unit("latest in category", 15, "SELECT id, title, published FROM news_articles WHERE category_id = {cat} ORDER BY published DESC LIMIT 20", cat()),
        unit(
            "top authors of a category",
            5,
            "SELECT author_id, COUNT(*) AS n FROM news_articles WHERE category_id = {cat} GROUP BY author_id ORDER BY n DESC, author_id LIMIT 10",
            cat(),
        ),
        unit(
            "title search",
            5,
            "SELECT id, title FROM news_articles WHERE title LIKE {pattern} ORDER BY id LIMIT 20",
            vec![("pattern".to_string(), Gen::Pick { values: NEWS_WORDS.iter().map(|w| PickValue::Text(format!("%{w}%"))).collect() })],
        ),
    ]
}

/// Builds a built-in workload for the tables found on the server.
pub fn builtin(name: &str, shape: &DatasetShape) -> Result<Workload, String> {
    let (_, dataset, _) = BUILTIN
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| format!("unknown workload '{name}': built-in workloads are {}", BUILTIN.map(|b| b.0).join(", ")))?;
    let missing = || format!("workload '{name}' needs the {dataset} dataset: run `scalelab prepare URL --dataset {dataset}` first");
    let id = |max: i64| Gen::Uniform { min: 1, max };
    let mut units = Vec::new();
    if *dataset == "sbtest" {
        if shape.sbtest_tables == 0 || shape.sbtest_rows < 1 {
            return Err(missing());
        }
        let rows = shape.sbtest_rows;
        let tables = if name == "hot-row" { 1 } else { shape.sbtest_tables };
        for t in 1..=tables {
            let unit = |statements: Vec<String>, params: Vec<(String, Gen)>, transaction: bool| Unit {
                name: format!("{name}@sbtest{t}"),
                weight: 1,
                transaction,
                statements,
                params,
            };
            units.push(match name {
                "point-select" => unit(vec![format!("SELECT c FROM sbtest{t} WHERE id = {{id}}")], vec![("id".into(), id(rows))], false),
                "read-only" => {
                    let mut s: Vec<String> = (1..=10).map(|i| format!("SELECT c FROM sbtest{t} WHERE id = {{id{i}}}")).collect();
                    let mut p: Vec<(String, Gen)> = (1..=10).map(|i| (format!("id{i}"), id(rows))).collect();
                    let hi = (rows - 99).max(1);
                    for (i, q) in [
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN {r1} AND {r1} + 99",
                        "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN {r2} AND {r2} + 99",
                        "SELECT c FROM sbtest{t} WHERE id BETWEEN {r3} AND {r3} + 99 ORDER BY c",
                        "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN {r4} AND {r4} + 99 ORDER BY c",
                    ]
                    .iter()
                    .enumerate()
                    {
                        s.push(q.replace("{t}", &t.to_string()));
                        let start = Gen::Uniform { min: 1, max: hi };
                        p.push((format!("r{}", i + 1), start));
                    }
                    unit(s, p, true)
                }
                "hot-row" => {
                    unit(vec!["UPDATE sbtest1 SET k = k + 1 WHERE id = {id}".into()], vec![("id".into(), id(rows.min(10)))], false)
                }
                "write" => unit(
                    vec![
                        format!("UPDATE sbtest{t} SET k = k + 1 WHERE id = {{id1}}"),
                        format!("UPDATE sbtest{t} SET c = {{c}} WHERE id = {{id2}}"),
                        format!("DELETE FROM sbtest{t} WHERE id = {{id3}}"),
                        format!("INSERT INTO sbtest{t} (id, k, c, pad) VALUES ({{id3}}, {{k}}, {{c2}}, {{pad}})"),
                    ],
                    vec![
                        ("id1".into(), id(rows)),
                        ("id2".into(), id(rows)),
                        ("id3".into(), id(rows)),
                        ("k".into(), id(rows)),
                        ("c".into(), Gen::String { min_len: 119, max_len: 119 }),
                        ("c2".into(), Gen::String { min_len: 119, max_len: 119 }),
                        ("pad".into(), Gen::String { min_len: 59, max_len: 59 }),
                    ],
                    true,
                ),
                _ => unreachable!("listed in BUILTIN"),
            });
        }
    } else if *dataset == "news" {
        if shape.news_articles < 1 || shape.news_authors < 1 || shape.news_categories < 1 {
            return Err(missing());
        }
        units = news_read(shape);
    } else {
        if shape.pgbench_scale < 1 || shape.pgbench_accounts < 1 {
            return Err(missing());
        }
        let aid = id(shape.pgbench_accounts);
        units.push(match name {
            "pgbench-select" => Unit {
                name: name.into(),
                weight: 1,
                transaction: false,
                statements: vec!["SELECT abalance FROM pgbench_accounts WHERE aid = {aid}".into()],
                params: vec![("aid".into(), aid)],
            },
            "pgbench-tpcb" => Unit {
                name: name.into(),
                weight: 1,
                transaction: true,
                statements: vec![
                    "UPDATE pgbench_accounts SET abalance = abalance + {delta} WHERE aid = {aid}".into(),
                    "SELECT abalance FROM pgbench_accounts WHERE aid = {aid}".into(),
                    "UPDATE pgbench_tellers SET tbalance = tbalance + {delta} WHERE tid = {tid}".into(),
                    "UPDATE pgbench_branches SET bbalance = bbalance + {delta} WHERE bid = {bid}".into(),
                    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ({tid}, {bid}, {aid}, {delta}, CURRENT_TIMESTAMP)"
                        .into(),
                ],
                params: vec![
                    ("aid".into(), aid),
                    ("bid".into(), id(shape.pgbench_scale)),
                    ("tid".into(), id(shape.pgbench_scale * 10)),
                    ("delta".into(), Gen::Uniform { min: -5000, max: 5000 }),
                ],
            },
            _ => unreachable!("listed in BUILTIN"),
        });
    }
    Ok(Workload { name: name.to_string(), units })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_file_and_compiles_placeholders() {
        let text = r#"
name = "mix"
[[unit]]
weight = 3
sql = "SELECT c FROM t WHERE id = {id} AND k = {id}"
params.id = { kind = "uniform", min = 1, max = 10 }

[[unit]]
transaction = true
sql = ["UPDATE t SET c = {s} WHERE id = {z}", "SELECT 1"]
[unit.params]
s = { kind = "string", min_len = 3, max_len = 5 }
z = { kind = "zipfian", min = 1, max = 1000 }
"#;
        let w = parse_workload_file("mix.toml", text).unwrap();
        assert_eq!(w.units.len(), 2);
        assert_eq!(w.units[0].weight, 3);
        let (sql, order) = compile(&w.units[0].statements[0], &w.units[0].params, |i| format!("${i}"));
        assert_eq!(sql, "SELECT c FROM t WHERE id = $1 AND k = $2");
        assert_eq!(order, vec![0, 0]);
        let mut rng = Rng::new(1);
        let mut z = GenState::new(&w.units[1].params[1].1, 0);
        let mut ones = 0;
        for _ in 0..10_000 {
            let Value::Int(v) = z.draw(&mut rng) else { panic!() };
            assert!((1..=1000).contains(&v));
            ones += usize::from(v == 1);
        }
        assert!(ones > 500, "zipfian is skewed toward min: {ones}");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_workload_file("w.toml", "[[unit]]\nsql = \"SELECT {x}\"\nparams.x = { kind = \"bogus\" }\n").unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = parse_workload_file("w.toml", "[[unit]]\nsql = \"SELECT 1\nx").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        let e = parse_workload_file("w.toml", "[[unit]]\nsql = \"SELECT {y}\"\n").unwrap_err();
        assert!(e.to_string().contains("{y} has no generator"), "{e}");
    }

    #[test]
    fn literals_are_quoted_per_engine() {
        assert_eq!(Value::Text("it's a\\b".into()).literal(false), "'it''s a\\b'");
        assert_eq!(Value::Text("it's a\\b".into()).literal(true), "'it''s a\\\\b'");
        assert_eq!(Value::Int(-5).literal(true), "-5");
    }

    #[test]
    fn builtins_need_their_dataset() {
        assert!(builtin("point-select", &DatasetShape::default()).unwrap_err().contains("--dataset sbtest"));
        let shape = DatasetShape {
            sbtest_tables: 2,
            sbtest_rows: 1000,
            pgbench_scale: 1,
            pgbench_accounts: 100_000,
            news_articles: 100,
            news_authors: 10,
            news_categories: 20,
        };
        for (name, _, _) in BUILTIN {
            let w = builtin(name, &shape).unwrap();
            assert!(!w.units.is_empty());
        }
        assert_eq!(builtin("read-only", &shape).unwrap().units[0].statements.len(), 14);
    }
}
