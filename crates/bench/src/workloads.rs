//! The brief's workloads (§5), defined once as data: what each creates in its set-up
//! (databases, tablespaces, tables and their rows, a VACUUM) and what its timed part
//! does. Two harnesses interpret the same definition: [`crate::replay`] turns it into
//! engine calls, [`crate::seeds`] into SQL sent to Strata and PostgreSQL 15. Neither
//! harness decides a count or a name.
//!
//! | id | workload (scale 1) | measured |
//! |----|--------------------|----------|
//! | A | DROP DATABASE of a database with 1,000 tables in 1,000 tablespaces | primary, replay |
//! | B | 20,000 one-row tables; DROP TABLE each in its own transaction | primary, replay |
//! | C | 100,000 tables; one transaction drops 50 | primary, replay |
//! | D | 2,000 tables of 2,000 rows; DELETE all; VACUUM truncates every fork | primary, replay |
//! | E | 500 CREATE DATABASE ... FILE_COPY, then 500 ... WAL_LOG | primary, replay |
//! | F | CHECKPOINT with nothing dirty (median of 5) | primary |
//! | G | 200,000 inserts in transactions of 1,000 rows | primary, replay |
//! | M | 100,000 one-per-transaction drops: replay memory (engine harness only) | replay RSS |
//!
//! Rules:
//! 1. `--scale` multiplies every count of the table above, rounded, at least 1; C drops
//!    50 tables (fewer only when it has fewer), G inserts 1,000 rows per transaction at
//!    every scale.
//! 2. Names are the prefix and the index from 0: tables `b0`..., tablespaces `ts0`...;
//!    table `t{i}` of A lives in tablespace `ts{i}`. Everything but A's tables is in the
//!    `postgres` database.
//! 3. The definition is what both harnesses ran before it existed: the unit test below
//!    pins, per workload and scale, the engine calls and the SQL they produced then.

/// Every workload, in the order the harnesses run them.
pub const ALL: [&str; 8] = ["A", "B", "C", "D", "E", "F", "G", "M"];

/// The workloads run side by side with PostgreSQL (M measures Strata's replay memory).
pub const SIDE_BY_SIDE: [&str; 7] = ["A", "B", "C", "D", "E", "F", "G"];

/// Rows G inserts per transaction.
pub const ROWS_PER_INSERT: usize = 1000;

/// `base` at `scale`: rounded, at least 1 (rule 1).
pub fn count(base: usize, scale: f64) -> usize {
    ((base as f64 * scale).round() as usize).max(1)
}

/// One workload at one scale.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    pub id: &'static str,
    /// Untimed, in order; a CHECKPOINT follows it.
    pub setup: Vec<Setup>,
    /// Timed.
    pub work: Work,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Setup {
    /// A database created from template1 with the default strategy (WAL_LOG).
    Database {
        name: &'static str,
    },
    /// `count` tablespaces `{prefix}{i}`, each in its own empty directory.
    Tablespaces {
        prefix: &'static str,
        count: usize,
    },
    Tables(Tables),
    /// VACUUM of the whole `postgres` database (D: the maps exist, VM bits are set).
    Vacuum,
}

/// `count` tables `{prefix}{i}` of database `db`, each with `rows` rows.
#[derive(Clone, Debug, PartialEq)]
pub struct Tables {
    pub db: &'static str,
    pub prefix: &'static str,
    pub count: usize,
    pub rows: usize,
    /// Table `i` goes to tablespace `{prefix}{i}`; None: the database's.
    pub tablespace: Option<&'static str>,
    /// The columns of the SQL harness (the engine harness's tables always have
    /// `(id int4, v text)`, as they always had).
    pub columns: Columns,
    /// Tables per set-up transaction in the SQL harness (each batch one message);
    /// None: one message without a transaction block. The engine harness commits
    /// every [`crate::replay::TABLES_PER_TRANSACTION`].
    pub per_transaction: Option<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Columns {
    /// `(a int)`, filled with `VALUES (1)`: at most one row.
    Int,
    /// `(a int, b text)`, filled from `generate_series`.
    IntText,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// One transaction drops the database.
    DropDatabase { name: &'static str },
    /// `{prefix}0` .. `{prefix}{count-1}` dropped, each in its own transaction.
    DropEach { prefix: &'static str, count: usize },
    /// `{prefix}0` .. `{prefix}{count-1}` dropped in one transaction.
    DropTogether { prefix: &'static str, count: usize },
    /// Every row of each table deleted (one transaction per table), then VACUUM of the
    /// database: every fork truncated.
    DeleteEachThenVacuum { prefix: &'static str, count: usize },
    /// `count` databases `e_fc{i}` by FILE_COPY, then `count` `e_wl{i}` by WAL_LOG,
    /// each from template1 in its own transaction.
    CreateDatabases { count: usize },
    /// `runs` CHECKPOINTs; the figure is their median.
    Checkpoints { runs: usize },
    /// `transactions` inserts of [`ROWS_PER_INSERT`] rows into `table`, numbered on
    /// from 0 across them.
    Inserts {
        table: &'static str,
        transactions: usize,
    },
}

impl Workload {
    /// Workload `id` at `scale`; None for an unknown id.
    pub fn new(id: &str, scale: f64) -> Option<Workload> {
        let (id, setup, work) = match id {
            "A" => a(scale),
            "B" => {
                let n = count(20_000, scale);
                let t = tables("b", n, 1, Columns::Int, Some(500));
                (
                    "B",
                    vec![t],
                    Work::DropEach {
                        prefix: "b",
                        count: n,
                    },
                )
            }
            "C" => {
                let n = count(100_000, scale);
                let t = tables("c", n, 0, Columns::Int, Some(1000));
                let work = Work::DropTogether {
                    prefix: "c",
                    count: 50.min(n),
                };
                ("C", vec![t], work)
            }
            "D" => {
                let n = count(2000, scale);
                let t = tables("d", n, 2000, Columns::IntText, Some(50));
                let work = Work::DeleteEachThenVacuum {
                    prefix: "d",
                    count: n,
                };
                ("D", vec![t, Setup::Vacuum], work)
            }
            "E" => (
                "E",
                vec![],
                Work::CreateDatabases {
                    count: count(500, scale),
                },
            ),
            "F" => {
                let t = tables("f", 1, count(100_000, scale), Columns::IntText, None);
                ("F", vec![t], Work::Checkpoints { runs: 5 })
            }
            "G" => {
                let t = tables("g", 1, 0, Columns::IntText, None);
                let work = Work::Inserts {
                    table: "g0",
                    transactions: count(200, scale),
                };
                ("G", vec![t], work)
            }
            "M" => {
                let n = count(100_000, scale);
                let t = tables("m", n, 0, Columns::Int, Some(1000));
                (
                    "M",
                    vec![t],
                    Work::DropEach {
                        prefix: "m",
                        count: n,
                    },
                )
            }
            _ => return None,
        };
        Some(Workload { id, setup, work })
    }

    /// The set-up's tables (every [`Setup::Tables`], in order).
    pub fn tables(&self) -> impl Iterator<Item = &Tables> {
        self.setup.iter().filter_map(|s| match s {
            Setup::Tables(t) => Some(t),
            _ => None,
        })
    }

    /// Tables the set-up creates, in all.
    pub fn table_count(&self) -> usize {
        self.tables().map(|t| t.count).sum()
    }

    /// Tablespaces the set-up creates.
    pub fn tablespace_count(&self) -> usize {
        self.setup
            .iter()
            .map(|s| match s {
                Setup::Tablespaces { count, .. } => *count,
                _ => 0,
            })
            .sum()
    }
}

/// A: a database whose table `t{i}` lives in tablespace `ts{i}`, one row each.
fn a(scale: f64) -> (&'static str, Vec<Setup>, Work) {
    let n = count(1000, scale);
    let setup = vec![
        Setup::Database { name: "a_db" },
        Setup::Tablespaces {
            prefix: "ts",
            count: n,
        },
        Setup::Tables(Tables {
            db: "a_db",
            tablespace: Some("ts"),
            ..tables_of("t", n, 1, Columns::Int, Some(100))
        }),
    ];
    ("A", setup, Work::DropDatabase { name: "a_db" })
}

fn tables(
    prefix: &'static str,
    count: usize,
    rows: usize,
    columns: Columns,
    per_transaction: Option<usize>,
) -> Setup {
    Setup::Tables(tables_of(prefix, count, rows, columns, per_transaction))
}

fn tables_of(
    prefix: &'static str,
    count: usize,
    rows: usize,
    columns: Columns,
    per_transaction: Option<usize>,
) -> Tables {
    Tables {
        db: "postgres",
        prefix,
        count,
        rows,
        tablespace: None,
        columns,
        per_transaction,
    }
}

#[cfg(test)]
mod tests {
    //! Pins, for every workload at every scale, what the two harnesses did before this
    //! module existed: counts, and a digest (FNV-1a, 64 bits) of every engine call
    //! and every SQL message, all computed from the old code (`replay::primary` and
    //! `seeds::workload` of commit a822a1d) before it was replaced.
    use super::*;
    use crate::replay::{setup_steps, work_steps, Step};
    use std::path::Path;

    fn fnv(text: &str) -> u64 {
        text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    /// One line per engine call, as the old code's calls were recorded.
    fn engine_line(s: &Step) -> String {
        match s {
            Step::Begin => "begin".into(),
            Step::Commit => "commit".into(),
            Step::CreateDatabase { name, strategy } => {
                format!("create_database {name} template1 None {strategy:?}")
            }
            Step::CreateTablespace { name } => format!("create_tablespace {name} /spc/{name}"),
            Step::CreateTable {
                db,
                name,
                tablespace,
            } => format!("create_table {db} {name} {:?}", tablespace.as_deref()),
            Step::Insert {
                db,
                table,
                first,
                end,
            } => format!("insert {db} {table} {} {first} {}", end - first, end - 1),
            Step::DropTable { db, name } => format!("drop_table {db} {name}"),
            Step::DropDatabase { name } => format!("drop_database {name}"),
            Step::DeleteAll { db, table } => format!("delete_where {db} {table} true"),
            Step::Vacuum { db } => format!("vacuum {db} None"),
            Step::Checkpoint => "checkpoint".into(),
        }
    }

    /// [tablespaces, tables, rows of the set-up, transactions of the timed part, its
    /// calls other than begin and commit], and the digest of every call.
    fn engine_pin(w: &Workload) -> ([usize; 5], u64) {
        let (setup, work) = (setup_steps(w), work_steps(w));
        let count = |steps: &[Step], f: &dyn Fn(&Step) -> usize| steps.iter().map(f).sum();
        let counts = [
            count(&setup, &|s| {
                usize::from(matches!(s, Step::CreateTablespace { .. }))
            }),
            count(&setup, &|s| {
                usize::from(matches!(s, Step::CreateTable { .. }))
            }),
            count(&setup, &|s| match s {
                Step::Insert { first, end, .. } => (end - first) as usize,
                _ => 0,
            }),
            count(&work, &|s| usize::from(*s == Step::Begin)),
            count(&work, &|s| {
                usize::from(!matches!(s, Step::Begin | Step::Commit))
            }),
        ];
        let lines: Vec<String> = setup
            .iter()
            .map(engine_line)
            .chain(std::iter::once("WORK".to_string()))
            .chain(work.iter().map(engine_line))
            .collect();
        (counts, fnv(&lines.join("\n")))
    }

    /// [set-up messages, timed messages, tablespace directories, bytes of the text
    /// digested], and the digest. A message's trailing semicolon is left out: G's set-up
    /// gained one (`CREATE TABLE g0 (a int, b text);`), which the servers ignore.
    fn sql_pin(w: &Workload) -> ([usize; 4], u64) {
        let q = crate::seeds::sql(w, Path::new("/spc"));
        let bare = |m: &str| m.strip_suffix(';').unwrap_or(m).to_string();
        let mut text = String::new();
        for (db, m) in &q.setup {
            text += &format!("{db}\t{}\n--\n", bare(m));
        }
        text += "WORK\n";
        for m in &q.work {
            text += &format!("{}\n--\n", bare(m));
        }
        for d in &q.spc_dirs {
            text += &format!("{}\n", d.display());
        }
        let counts = [q.setup.len(), q.work.len(), q.spc_dirs.len(), text.len()];
        (counts, fnv(&text))
    }

    type Pin = (
        &'static str,
        f64,
        [usize; 5],
        u64,
        Option<([usize; 4], u64)>,
    );

    /// (workload, scale, engine counts, engine digest, SQL counts and digest): the old
    /// code's. M is the engine harness's alone.
    const PINS: [Pin; 48] = [
        (
            "A",
            1.0,
            [1000, 1000, 1000, 1, 1],
            0x382d1b99a163b616,
            Some(([1011, 1, 1000, 141620], 0x4d361c569e3112a1)),
        ),
        (
            "A",
            0.1,
            [100, 100, 100, 1, 1],
            0x0fe963f5f0266696,
            Some(([102, 1, 100, 13622], 0xb1910694e670d1e5)),
        ),
        (
            "A",
            0.01,
            [10, 10, 10, 1, 1],
            0x942ab9b696a25d31,
            Some(([12, 1, 10, 1382], 0xf26e79e86ac47007)),
        ),
        (
            "A",
            0.005,
            [5, 5, 5, 1, 1],
            0x5570a6c87e72cd9c,
            Some(([7, 1, 5, 732], 0xb4c5af6ddbf5d72e)),
        ),
        (
            "A",
            0.001,
            [1, 1, 1, 1, 1],
            0xd170e4704ff3dc50,
            Some(([3, 1, 1, 212], 0x51fd251239b1fd76)),
        ),
        (
            "A",
            0.0001,
            [1, 1, 1, 1, 1],
            0xd170e4704ff3dc50,
            Some(([3, 1, 1, 212], 0x51fd251239b1fd76)),
        ),
        (
            "B",
            1.0,
            [0, 20000, 20000, 20000, 20000],
            0xd2208ac7f3a4e54a,
            Some(([40, 20000, 0, 1587715], 0x951253d4cdd2efa4)),
        ),
        (
            "B",
            0.1,
            [0, 2000, 2000, 2000, 2000],
            0x13c090d64e048e12,
            Some(([4, 2000, 0, 152779], 0x75b89ac5a84fecbc)),
        ),
        (
            "B",
            0.01,
            [0, 200, 200, 200, 200],
            0x739eff6ec707c78a,
            Some(([1, 200, 0, 14701], 0x2f5d2fa6038eb8ef)),
        ),
        (
            "B",
            0.005,
            [0, 100, 100, 100, 100],
            0xcf136209fb04447e,
            Some(([1, 100, 0, 7201], 0x0b16247d28b24fc1)),
        ),
        (
            "B",
            0.001,
            [0, 20, 20, 20, 20],
            0x66786a9cbf331836,
            Some(([1, 20, 0, 1441], 0xd81aaf10cc562591)),
        ),
        (
            "B",
            0.0001,
            [0, 2, 2, 2, 2],
            0xc4c8a02e88c92e57,
            Some(([1, 2, 0, 169], 0x6346290701f231b4)),
        ),
        (
            "C",
            1.0,
            [0, 100000, 0, 1, 50],
            0xf142346d04cdce8b,
            Some(([100, 1, 0, 2892302], 0x8908a895d1e9da40)),
        ),
        (
            "C",
            0.1,
            [0, 10000, 0, 1, 50],
            0xe68d83699e599533,
            Some(([10, 1, 0, 279962], 0x31cec4102dfcb2dc)),
        ),
        (
            "C",
            0.01,
            [0, 1000, 0, 1, 50],
            0xbb18213205d312ef,
            Some(([1, 1, 0, 27728], 0x37739e9063ae92e9)),
        ),
        (
            "C",
            0.005,
            [0, 500, 0, 1, 50],
            0xf11247bc5f2e2353,
            Some(([1, 1, 0, 14228], 0xaabe2ce17aac2fff)),
        ),
        (
            "C",
            0.001,
            [0, 100, 0, 1, 50],
            0xf8e43f58959e3943,
            Some(([1, 1, 0, 3428], 0xfd76b6bce28fae97)),
        ),
        (
            "C",
            0.0001,
            [0, 10, 0, 1, 10],
            0x479ecd213566d6d0,
            Some(([1, 1, 0, 448], 0x26c17021c736b360)),
        ),
        (
            "D",
            1.0,
            [0, 2000, 4000000, 2000, 2001],
            0xf345b8c24538015a,
            Some(([41, 2001, 0, 257744], 0xb0fbd293ce206302)),
        ),
        (
            "D",
            0.1,
            [0, 200, 400000, 200, 201],
            0xbc44840bef575da2,
            Some(([5, 201, 0, 25208], 0x40d90dc88c36238e)),
        ),
        (
            "D",
            0.01,
            [0, 20, 40000, 20, 21],
            0xfb500f8c538c91cc,
            Some(([2, 21, 0, 2510], 0xb50de5cafff1bd7f)),
        ),
        (
            "D",
            0.005,
            [0, 10, 20000, 10, 11],
            0xa116632be524a847,
            Some(([2, 11, 0, 1270], 0xae944c5b0996d4f8)),
        ),
        (
            "D",
            0.001,
            [0, 2, 4000, 2, 3],
            0xd82bc943c8bdcc07,
            Some(([2, 3, 0, 302], 0x3dd00ca444b6b5f0)),
        ),
        (
            "D",
            0.0001,
            [0, 1, 2000, 1, 2],
            0x2d00b1bf5181193a,
            Some(([2, 2, 0, 181], 0x1a57f52aa6823cf1)),
        ),
        (
            "E",
            1.0,
            [0, 0, 0, 1000, 1000],
            0x4127642236c255aa,
            Some(([0, 1000, 0, 46785], 0xb307795f9d3ebe88)),
        ),
        (
            "E",
            0.1,
            [0, 0, 0, 100, 100],
            0xf4802acc4ded037e,
            Some(([0, 100, 0, 4585], 0x5220c91582603cf2)),
        ),
        (
            "E",
            0.01,
            [0, 0, 0, 10, 10],
            0x03a1a56f97c94d89,
            Some(([0, 10, 0, 455], 0xd418c32e959c5bb5)),
        ),
        (
            "E",
            0.005,
            [0, 0, 0, 6, 6],
            0x472a8efd9e9ddcc9,
            Some(([0, 6, 0, 275], 0x2a3fdfac930f0871)),
        ),
        (
            "E",
            0.001,
            [0, 0, 0, 2, 2],
            0xd223fe3a35886ed5,
            Some(([0, 2, 0, 95], 0x262e3a77f93e8405)),
        ),
        (
            "E",
            0.0001,
            [0, 0, 0, 2, 2],
            0xd223fe3a35886ed5,
            Some(([0, 2, 0, 95], 0x262e3a77f93e8405)),
        ),
        (
            "F",
            1.0,
            [0, 1, 100000, 0, 5],
            0x10df2cafb25671de,
            Some(([1, 1, 0, 135], 0x54898c15e33d93e7)),
        ),
        (
            "F",
            0.1,
            [0, 1, 10000, 0, 5],
            0x41e7d94248b74a93,
            Some(([1, 1, 0, 134], 0xdfab6d899bfcd5cb)),
        ),
        (
            "F",
            0.01,
            [0, 1, 1000, 0, 5],
            0x10e311846a6dba7c,
            Some(([1, 1, 0, 133], 0x14e10a452d1c33f7)),
        ),
        (
            "F",
            0.005,
            [0, 1, 500, 0, 5],
            0xf7a0634ac9ca80d7,
            Some(([1, 1, 0, 132], 0xddd1b0b43500d337)),
        ),
        (
            "F",
            0.001,
            [0, 1, 100, 0, 5],
            0xd4778bd636e46455,
            Some(([1, 1, 0, 132], 0xda82331d777f9d9b)),
        ),
        (
            "F",
            0.0001,
            [0, 1, 10, 0, 5],
            0xef3c37e2fa7164aa,
            Some(([1, 1, 0, 131], 0x1638c3a0d87582c7)),
        ),
        (
            "G",
            1.0,
            [0, 1, 0, 200, 200],
            0xfcb07130c065da19,
            Some(([1, 200, 0, 15625], 0x090acad8c14b8c27)),
        ),
        (
            "G",
            0.1,
            [0, 1, 0, 20, 20],
            0x74237afbc0e70111,
            Some(([1, 20, 0, 1565], 0x05723064cec626f3)),
        ),
        (
            "G",
            0.01,
            [0, 1, 0, 2, 2],
            0xaab751a99885a247,
            Some(([1, 2, 0, 195], 0x705871c676604e89)),
        ),
        (
            "G",
            0.005,
            [0, 1, 0, 1, 1],
            0x6416496929d3d456,
            Some(([1, 1, 0, 120], 0x02c676347411ab85)),
        ),
        (
            "G",
            0.001,
            [0, 1, 0, 1, 1],
            0x6416496929d3d456,
            Some(([1, 1, 0, 120], 0x02c676347411ab85)),
        ),
        (
            "G",
            0.0001,
            [0, 1, 0, 1, 1],
            0x6416496929d3d456,
            Some(([1, 1, 0, 120], 0x02c676347411ab85)),
        ),
        (
            "M",
            1.0,
            [0, 100000, 0, 100000, 100000],
            0xc84057a725d229be,
            None,
        ),
        (
            "M",
            0.1,
            [0, 10000, 0, 10000, 10000],
            0x7d6525ba0f52ba3e,
            None,
        ),
        (
            "M",
            0.01,
            [0, 1000, 0, 1000, 1000],
            0x5d48765b5377bbfe,
            None,
        ),
        ("M", 0.005, [0, 500, 0, 500, 500], 0x647702af2a46f4de, None),
        ("M", 0.001, [0, 100, 0, 100, 100], 0x0f5f0ce113de3b0e, None),
        ("M", 0.0001, [0, 10, 0, 10, 10], 0xa7e2eb03c0d7cbe0, None),
    ];

    #[test]
    fn both_harnesses_do_what_the_old_code_did_at_every_scale() {
        for (id, scale, counts, digest, sql) in PINS {
            let w = Workload::new(id, scale).expect(id);
            assert_eq!(
                engine_pin(&w),
                (counts, digest),
                "engine calls of {id} at scale {scale}"
            );
            if let Some(pin) = sql {
                assert_eq!(sql_pin(&w), pin, "SQL of {id} at scale {scale}");
            }
        }
        assert!(ALL
            .iter()
            .all(|id| PINS.iter().filter(|p| p.0 == *id).count() == 6));
    }

    #[test]
    fn the_lists_and_unknown_ids() {
        assert!(SIDE_BY_SIDE.iter().all(|id| ALL.contains(id)));
        assert!(ALL.iter().all(|id| Workload::new(id, 1.0).is_some()));
        assert_eq!(Workload::new("Z", 1.0), None);
        assert_eq!(Workload::new("a", 1.0), None);
        let a = Workload::new("A", 1.0).unwrap();
        assert_eq!((a.table_count(), a.tablespace_count()), (1000, 1000));
    }
}
