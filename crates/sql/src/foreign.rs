//! FOREIGN KEYs: the constraint as written ([`FkSpec`]), resolved against the
//! tables ([`resolve`]) and kept in the referencing table's catalog row (engine
//! catalog rule 11), and the checks each statement's writes owe ([`Guard`]).
//!
//! Rules (cited as "foreign rule N"):
//! 1. Checks run at the end of the statement, as PostgreSQL's RI triggers fire
//!    after it: a statement may insert a row and the row it references in either
//!    order, or delete a whole self-referencing tree. Memory: the distinct keys the
//!    statement wrote or removed.
//! 2. MATCH SIMPLE (the default) skips a key with any NULL; MATCH FULL skips an
//!    all-NULL key and refuses a partly NULL one (23503).
//! 3. A referencing key is looked up in the referenced table's unique index on the
//!    referenced columns (one probe per distinct key); a removed referenced key is
//!    looked for in the referencing table by one scan per statement and
//!    constraint, whatever the number of keys.
//! 4. NO ACTION forgives a removed key that the referenced table still holds at the
//!    end of the statement; RESTRICT does not. CASCADE deletes or re-keys the
//!    referencing rows and SET NULL empties their keys, each change owing its own
//!    checks in turn (a queue, never recursion). SET DEFAULT and DEFERRABLE are
//!    refused (0A000).
//! 5. Checks read the newest committed rows and the transaction's own: the
//!    transaction holds the writer lock (engine rule 1), so what it reads cannot
//!    change under it.

use crate::{bind, ident_name, object_name, SqlError, SqlResult, SqlType, TextOut};
use rustc_hash::{FxHashMap, FxHashSet};
use sqlparser::ast;
use std::sync::Arc;
use strata_engine::{Access, Datum, FkAction, ForeignKey, IndexRange, Interrupt, RelEntry, Txn};

/// A FOREIGN KEY as written (CREATE TABLE, ALTER TABLE ... ADD).
#[derive(Clone, Debug, PartialEq)]
pub struct FkSpec {
    pub name: Option<String>,
    pub columns: Vec<String>,
    pub parent: String,
    /// Empty: the referenced table's primary key.
    pub parent_columns: Vec<String>,
    pub on_delete: FkAction,
    pub on_update: FkAction,
    pub match_full: bool,
    /// NOT VALID: the existing rows are not checked.
    pub not_valid: bool,
}

/// The spec of a FOREIGN KEY constraint; `column`: a column constraint's column
/// (`REFERENCES t`), `name` its CONSTRAINT name.
pub(crate) fn spec(
    c: &ast::ForeignKeyConstraint,
    column: Option<&str>,
    name: Option<&ast::Ident>,
) -> SqlResult<FkSpec> {
    if let Some(ch) = &c.characteristics {
        let deferred = matches!(ch.initially, Some(ast::DeferrableInitial::Deferred));
        if ch.deferrable == Some(true) || deferred {
            return Err(SqlError::unsupported("DEFERRABLE foreign keys"));
        }
        if ch.enforced == Some(false) {
            return Err(SqlError::unsupported("NOT ENFORCED constraints"));
        }
    }
    if matches!(
        c.match_kind,
        Some(ast::ConstraintReferenceMatchKind::Partial)
    ) {
        return Err(SqlError::new("0A000", "MATCH PARTIAL not yet implemented"));
    }
    let action = |a: &Option<ast::ReferentialAction>| -> SqlResult<FkAction> {
        use ast::ReferentialAction as R;
        Ok(match a {
            None | Some(R::NoAction) => FkAction::NoAction,
            Some(R::Restrict) => FkAction::Restrict,
            Some(R::Cascade) => FkAction::Cascade,
            Some(R::SetNull) => FkAction::SetNull,
            Some(R::SetDefault) => return Err(SqlError::unsupported("ON ... SET DEFAULT")),
        })
    };
    let columns = match column {
        Some(c) => vec![c.to_string()],
        None => c.columns.iter().map(ident_name).collect(),
    };
    Ok(FkSpec {
        name: name.or(c.name.as_ref()).map(ident_name),
        columns,
        parent: object_name(&c.foreign_table)?,
        parent_columns: c.referred_columns.iter().map(ident_name).collect(),
        on_delete: action(&c.on_delete)?,
        on_update: action(&c.on_update)?,
        match_full: matches!(c.match_kind, Some(ast::ConstraintReferenceMatchKind::Full)),
        not_valid: false,
    })
}

/// Positions of `names` in `rel`'s columns (42703 in PostgreSQL's words).
fn positions(rel: &RelEntry, names: &[String]) -> SqlResult<Vec<usize>> {
    names
        .iter()
        .map(|n| {
            rel.columns
                .iter()
                .position(|c| c.name == *n)
                .ok_or_else(|| {
                    SqlError::new(
                        "42703",
                        format!(
                            "column \"{n}\" referenced in foreign key constraint does not exist"
                        ),
                    )
                })
        })
        .collect()
}

/// Whether values of `a` and `b` compare as keys (PostgreSQL finds an equality
/// operator between them): the same type, or both numbers, or both strings.
fn comparable(a: SqlType, b: SqlType) -> bool {
    use SqlType as T;
    let num = |t| {
        matches!(
            t,
            T::Int2 | T::Int4 | T::Int8 | T::Numeric | T::Float4 | T::Float8
        )
    };
    let text = |t| matches!(t, T::Text | T::Bpchar);
    a == b || (num(a) && num(b)) || (text(a) && text(b))
}

/// PostgreSQL's name for an unnamed FOREIGN KEY: `<table>_<columns>_fkey`, cut to
/// 63 bytes and numbered when `taken`.
fn choose_name(table: &str, columns: &[String], taken: &dyn Fn(&str) -> bool) -> String {
    let base = format!("{table}_{}", columns.join("_"));
    let mut k = 0;
    loop {
        let suffix = match k {
            0 => "fkey".to_string(),
            k => format!("fkey{k}"),
        };
        let mut b = base.clone();
        while b.len() + suffix.len() + 1 > 63 {
            b.pop();
        }
        let name = format!("{b}_{suffix}");
        if !taken(&name) {
            return name;
        }
        k += 1;
    }
}

/// Whether `rel` has a constraint called `name`.
fn constraint_taken(rel: &RelEntry, name: &str) -> bool {
    rel.foreign_keys.iter().any(|f| f.name == name)
        || rel
            .columns
            .iter()
            .any(|c| c.checks.iter().any(|(n, _)| n == name))
        || rel
            .indexes
            .iter()
            .any(|ix| ix.constraint && strata_engine::temp::bare(&ix.name) == name)
}

/// `spec` of table `table` resolved: its columns' positions, the referenced
/// table's stored name and the columns of its unique index (42830 without one),
/// the key types comparable (42804), a temporary table referencing only temporary
/// ones and a permanent one only permanent ones (42P16).
pub(crate) fn resolve(t: &Txn<'_>, db: &str, table: &str, spec: &FkSpec) -> SqlResult<ForeignKey> {
    let dbe = t.database(db)?;
    let rel = t.relation(&dbe, table)?;
    let parent = t.relation(&dbe, &spec.parent)?;
    if parent.sequence.is_some() || parent.view.is_some() {
        return Err(SqlError::new(
            "42809",
            format!("referenced relation \"{}\" is not a table", spec.parent),
        ));
    }
    let temp = |r: &RelEntry| r.reltablespace == strata_types::TEMP_TABLESPACE;
    match (temp(&rel), temp(&parent)) {
        (false, true) => {
            return Err(SqlError::new(
                "42P16",
                "constraints on permanent tables may reference only permanent tables",
            ))
        }
        (true, false) => {
            return Err(SqlError::new(
                "42P16",
                "constraints on temporary tables may reference only temporary tables",
            ))
        }
        _ => {}
    }
    let columns = positions(&rel, &spec.columns)?;
    let parent_columns = match spec.parent_columns.is_empty() {
        false => positions(&parent, &spec.parent_columns)?,
        true => match parent.indexes.iter().find(|ix| ix.primary) {
            Some(pk) => pk.columns.clone(),
            None => {
                return Err(SqlError::new(
                    "42830",
                    format!(
                        "there is no primary key for referenced table \"{}\"",
                        spec.parent
                    ),
                ))
            }
        },
    };
    if columns.len() != parent_columns.len() {
        return Err(SqlError::new(
            "42830",
            "number of referencing and referenced columns for foreign key disagree",
        ));
    }
    if unique_index(&parent, &parent_columns).is_none() {
        return Err(SqlError::new(
            "42830",
            format!(
                "there is no unique constraint matching given keys for referenced table \"{}\"",
                spec.parent
            ),
        ));
    }
    let shown = strata_engine::temp::bare(&rel.name).to_string();
    let name = spec
        .name
        .clone()
        .unwrap_or_else(|| choose_name(&shown, &spec.columns, &|n| constraint_taken(&rel, n)));
    for (c, p) in columns.iter().zip(&parent_columns) {
        let (a, b) = (&rel.columns[*c], &parent.columns[*p]);
        let (ta, tb) = (SqlType::of_column(a), SqlType::of_column(b));
        if !comparable(ta, tb) {
            return Err(SqlError::new(
                "42804",
                format!("foreign key constraint \"{name}\" cannot be implemented"),
            )
            .with_detail(format!(
                "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                a.name,
                b.name,
                ta.name(),
                tb.name()
            )));
        }
    }
    Ok(ForeignKey {
        name,
        columns,
        parent: parent.name.clone(),
        parent_columns,
        on_delete: spec.on_delete,
        on_update: spec.on_update,
        match_full: spec.match_full,
    })
}

/// The name of a unique index of `rel` on exactly the columns `cols` (any order).
fn unique_index<'r>(rel: &'r RelEntry, cols: &[usize]) -> Option<&'r strata_engine::IndexDef> {
    rel.indexes.iter().find(|ix| {
        ix.unique && ix.columns.len() == cols.len() && cols.iter().all(|c| ix.columns.contains(c))
    })
}

/// `Key (a, b)=(1, 2)`, PostgreSQL's DETAIL words for a key.
fn key_text(names: &[&str], key: &[Datum]) -> String {
    let vals: Vec<String> = key
        .iter()
        .map(|d| d.to_text().unwrap_or_else(|| "null".into()))
        .collect();
    format!("Key ({})=({})", names.join(", "), vals.join(", "))
}

/// One of the written table's own FOREIGN KEYs: the keys its new rows reference.
struct Own {
    fk: ForeignKey,
    /// The referencing table's name, shown.
    table: String,
    names: Vec<String>,
    parent_types: Vec<SqlType>,
    /// The referenced table's unique index, and for each of its columns the
    /// position in the key.
    index: String,
    order: Vec<usize>,
    keys: FxHashSet<Vec<Datum>>,
}

/// A FOREIGN KEY that references the written table: the keys its old rows had
/// (and, for an UPDATE, the new key of each).
struct Ref {
    child: Arc<RelEntry>,
    fk: ForeignKey,
    parent_names: Vec<String>,
    old: FxHashMap<Vec<Datum>, Option<Vec<Datum>>>,
}

/// The FOREIGN KEY checks one statement's writes to one table owe (foreign rule 1).
pub(crate) struct Guard {
    /// The written table's stored name.
    table: String,
    own: Vec<Own>,
    refs: Vec<Ref>,
    /// Whether this guard's rows were deleted (else updated): which action applies.
    deleting: bool,
}

impl Guard {
    /// The checks writes to `table` owe; empty (and free per row) for a table with
    /// no FOREIGN KEY either way.
    pub(crate) fn new(t: &Txn<'_>, db: &str, table: &str) -> SqlResult<Guard> {
        let dbe = t.database(db)?;
        let rel = t.relation(&dbe, table)?;
        let mut own = Vec::new();
        for fk in &rel.foreign_keys {
            let parent = t.relation(&dbe, &fk.parent)?;
            let ix = unique_index(&parent, &fk.parent_columns).ok_or_else(|| {
                SqlError::new(
                    "XX000",
                    format!("foreign key \"{}\" has no unique index", fk.name),
                )
            })?;
            let order = ix
                .columns
                .iter()
                .map(|c| {
                    fk.parent_columns
                        .iter()
                        .position(|p| p == c)
                        .expect("same set")
                })
                .collect();
            own.push(Own {
                table: strata_engine::temp::bare(&rel.name).to_string(),
                names: fk
                    .columns
                    .iter()
                    .map(|c| rel.columns[*c].name.clone())
                    .collect(),
                parent_types: fk
                    .parent_columns
                    .iter()
                    .map(|c| SqlType::of_column(&parent.columns[*c]))
                    .collect(),
                index: ix.name.clone(),
                order,
                keys: FxHashSet::default(),
                fk: fk.clone(),
            });
        }
        let mut refs = Vec::new();
        for child in t.referencing(db, &rel.name)? {
            for fk in child.foreign_keys.iter().filter(|f| f.parent == rel.name) {
                refs.push(Ref {
                    parent_names: fk
                        .parent_columns
                        .iter()
                        .map(|c| rel.columns[*c].name.clone())
                        .collect(),
                    child: child.clone(),
                    fk: fk.clone(),
                    old: FxHashMap::default(),
                });
            }
        }
        Ok(Guard {
            table: rel.name.clone(),
            own,
            refs,
            deleting: true,
        })
    }

    /// A new row (INSERT, COPY, an UPDATE's new version): the keys it references.
    pub(crate) fn inserted(&mut self, row: &[Datum]) -> SqlResult<()> {
        for o in &mut self.own {
            let key: Vec<&Datum> = o.fk.columns.iter().map(|c| &row[*c]).collect();
            let nulls = key.iter().filter(|d| d.is_null()).count();
            if nulls == key.len() || (nulls > 0 && !o.fk.match_full) {
                continue; // foreign rule 2
            }
            if nulls > 0 {
                return Err(violation(&o.table, &o.fk.name).with_detail(
                    "MATCH FULL does not allow mixing of null and nonnull key values.",
                ));
            }
            let key = key
                .into_iter()
                .zip(&o.parent_types)
                .map(|(d, t)| bind::cast_datum(d.clone(), *t))
                .collect::<SqlResult<Vec<Datum>>>()?;
            o.keys.insert(key);
        }
        Ok(())
    }

    /// A deleted row: the keys other rows may still reference.
    pub(crate) fn deleted(&mut self, row: &[Datum]) {
        for r in &mut self.refs {
            if let Some(k) = parent_key(&r.fk, row) {
                r.old.insert(k, None);
            }
        }
    }

    /// An updated row: the new version's references, and the old key if it changed.
    pub(crate) fn updated(&mut self, old: &[Datum], new: &[Datum]) -> SqlResult<()> {
        self.deleting = false;
        if self
            .own
            .iter()
            .any(|o| o.fk.columns.iter().any(|c| old[*c] != new[*c]))
        {
            self.inserted(new)?;
        }
        for r in &mut self.refs {
            let changed = r.fk.parent_columns.iter().any(|c| old[*c] != new[*c]);
            if let (true, Some(k)) = (changed, parent_key(&r.fk, old)) {
                let new_key =
                    r.fk.parent_columns
                        .iter()
                        .map(|c| new[*c].clone())
                        .collect();
                r.old.insert(k, Some(new_key));
            }
        }
        Ok(())
    }
}

/// The key row `row` of a referenced table offers through `fk` (None with a NULL).
fn parent_key(fk: &ForeignKey, row: &[Datum]) -> Option<Vec<Datum>> {
    let key: Vec<Datum> = fk.parent_columns.iter().map(|c| row[*c].clone()).collect();
    (!key.iter().any(Datum::is_null)).then_some(key)
}

fn violation(table: &str, fk: &str) -> SqlError {
    SqlError::new(
        "23503",
        format!("insert or update on table \"{table}\" violates foreign key constraint \"{fk}\""),
    )
}

/// Runs the checks `guard` owes, and those the changes it causes owe in turn
/// (foreign rules 3-4), at the end of the statement.
pub(crate) fn finish(
    guard: Guard,
    t: &mut Txn<'_>,
    db: &str,
    check: Interrupt<'_>,
) -> SqlResult<()> {
    let mut queue = vec![guard];
    while let Some(g) = queue.pop() {
        for o in &g.own {
            check_references(t, db, o, check)?;
        }
        for r in g.refs {
            if let Some(next) = referenced_removed(t, db, &g.table, g.deleting, r, check)? {
                queue.push(next);
            }
        }
    }
    Ok(())
}

/// 23503 unless every key in `o.keys` is in the referenced table (foreign rule 3).
fn check_references(t: &Txn<'_>, db: &str, o: &Own, check: Interrupt<'_>) -> SqlResult<()> {
    let mut keys: Vec<&Vec<Datum>> = o.keys.iter().collect();
    keys.sort();
    for key in keys {
        let range = IndexRange {
            eq: o.order.iter().map(|i| key[*i].clone()).collect(),
            lo: None,
            hi: None,
            not_null: false,
            backward: false,
        };
        let mut found = false;
        t.scan_index_each(db, &o.fk.parent, &o.index, &range, check, &mut |row| {
            found =
                o.fk.parent_columns
                    .iter()
                    .zip(key)
                    .all(|(c, k)| row[*c] == *k);
            Ok(!found)
        })?;
        if !found {
            let names: Vec<&str> = o.names.iter().map(String::as_str).collect();
            return Err(violation(&o.table, &o.fk.name).with_detail(format!(
                "{} is not present in table \"{}\".",
                key_text(&names, key),
                strata_engine::temp::bare(&o.fk.parent)
            )));
        }
    }
    Ok(())
}

/// What the removal of referenced keys `r.old` does to the referencing table:
/// NO ACTION / RESTRICT refuse if a row still references one (23503); CASCADE and
/// SET NULL change those rows, returning the checks the change owes.
fn referenced_removed(
    t: &mut Txn<'_>,
    db: &str,
    table: &str,
    deleting: bool,
    mut r: Ref,
    check: Interrupt<'_>,
) -> SqlResult<Option<Guard>> {
    let action = if deleting {
        r.fk.on_delete
    } else {
        r.fk.on_update
    };
    if action == FkAction::NoAction {
        still_present(t, db, table, &mut r, check)?;
    }
    if r.old.is_empty() {
        return Ok(None);
    }
    let m = Matcher {
        parent_types: parent_types(t, db, table, &r.fk)?,
        r,
    };
    match action {
        FkAction::NoAction | FkAction::Restrict => {
            refuse_if_referenced(t, db, table, &m, check).map(|()| None)
        }
        FkAction::Cascade | FkAction::SetNull => {
            change_referencing(t, db, &m, (action, deleting), check).map(Some)
        }
        FkAction::SetDefault => Err(SqlError::unsupported("ON ... SET DEFAULT")),
    }
}

/// A removed referenced key, and its new value for an UPDATE.
type Removed = (Vec<Datum>, Option<Vec<Datum>>);

/// Finds the referencing rows whose keys were removed.
struct Matcher {
    r: Ref,
    parent_types: Vec<SqlType>,
}

impl Matcher {
    /// The removed key row `row` of the referencing table references, in the
    /// referenced table's terms, with its new key for an UPDATE (None: it
    /// references none of them).
    fn matched(&self, row: &[Datum]) -> SqlResult<Option<Removed>> {
        let fk = &self.r.fk;
        if fk.columns.iter().any(|c| row[*c].is_null()) {
            return Ok(None);
        }
        let k = fk
            .columns
            .iter()
            .zip(&self.parent_types)
            .map(|(c, t)| bind::cast_datum(row[*c].clone(), *t))
            .collect::<SqlResult<Vec<Datum>>>()?;
        Ok(self.r.old.get(&k).cloned().map(|new| (k, new)))
    }
}

/// NO ACTION / RESTRICT: 23503 if a row of the referencing table still
/// references a removed key (one scan; foreign rule 3).
fn refuse_if_referenced(
    t: &Txn<'_>,
    db: &str,
    table: &str,
    m: &Matcher,
    check: Interrupt<'_>,
) -> SqlResult<()> {
    let child = &m.r.child.name;
    let mut hit: Option<Vec<Datum>> = None;
    let mut err: Option<SqlError> = None;
    t.scan_each(db, child, check, &mut |row| {
        match m.matched(&row) {
            Ok(found) => hit = found.map(|(k, _)| k),
            Err(e) => err = Some(e),
        }
        Ok(hit.is_none() && err.is_none())
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    let Some(k) = hit else { return Ok(()) };
    let names: Vec<&str> = m.r.parent_names.iter().map(String::as_str).collect();
    let child = strata_engine::temp::bare(child);
    Err(SqlError::new(
        "23503",
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{child}\"",
            strata_engine::temp::bare(table),
            m.r.fk.name,
        ),
    )
    .with_detail(format!(
        "{} is still referenced from table \"{child}\".",
        key_text(&names, &k),
    )))
}

/// CASCADE / SET NULL: deletes the referencing rows of removed keys, or gives
/// them the new key or NULL; returns the checks those changes owe in turn.
fn change_referencing(
    t: &mut Txn<'_>,
    db: &str,
    m: &Matcher,
    (action, deleting): (FkAction, bool),
    check: Interrupt<'_>,
) -> SqlResult<Guard> {
    let child = m.r.child.name.clone();
    let types: Vec<SqlType> = (m.r.fk.columns.iter())
        .map(|c| SqlType::of_column(&m.r.child.columns[*c]))
        .collect();
    let mut next = Guard::new(t, db, &child)?;
    let mut err: Option<SqlError> = None;
    if deleting && action == FkAction::Cascade {
        let mut pred = |row: &[Datum]| match m.matched(row) {
            Ok(Some(_)) => {
                next.deleted(row);
                true
            }
            Ok(None) => false,
            Err(e) => {
                err.get_or_insert(e);
                false
            }
        };
        // Engine rule 10: the children as of now, those committed since a
        // REPEATABLE READ snapshot too (none left pointing at a deleted parent).
        t.at_latest(|t| t.delete_using(db, &child, Access::Seq, &mut pred, check))?;
    } else {
        let mut f = |row: &[Datum]| -> Option<Vec<Datum>> {
            let new = match m.matched(row) {
                Ok(Some((_, new_key))) => rekey(row, &m.r.fk, action, new_key, &types),
                Ok(None) => return None,
                Err(e) => Err(e),
            };
            match new.and_then(|n| next.updated(row, &n).map(|()| n)) {
                Ok(n) => Some(n),
                Err(e) => {
                    err.get_or_insert(e);
                    None
                }
            }
        };
        t.at_latest(|t| t.update_using(db, &child, Access::Seq, &mut f, check))?;
        next.deleting = false;
    }
    err.map_or(Ok(next), Err)
}

/// A referencing row with its key set to the referenced row's new key (CASCADE)
/// or to NULL (SET NULL), cast to its columns' types.
fn rekey(
    row: &[Datum],
    fk: &ForeignKey,
    action: FkAction,
    new_key: Option<Vec<Datum>>,
    types: &[SqlType],
) -> SqlResult<Vec<Datum>> {
    let mut out = row.to_vec();
    for (i, c) in fk.columns.iter().enumerate() {
        out[*c] = match (&new_key, action) {
            (Some(k), FkAction::Cascade) => bind::cast_datum(k[i].clone(), types[i])?,
            _ => Datum::Null,
        };
    }
    Ok(out)
}

/// The types of `fk`'s referenced columns in table `table`.
fn parent_types(t: &Txn<'_>, db: &str, table: &str, fk: &ForeignKey) -> SqlResult<Vec<SqlType>> {
    let dbe = t.database(db)?;
    let rel = t.relation(&dbe, table)?;
    Ok(fk
        .parent_columns
        .iter()
        .map(|c| SqlType::of_column(&rel.columns[*c]))
        .collect())
}

/// NO ACTION: forgets the removed keys the referenced table still holds (another
/// row took the key in the same statement; foreign rule 4).
fn still_present(
    t: &Txn<'_>,
    db: &str,
    table: &str,
    r: &mut Ref,
    check: Interrupt<'_>,
) -> SqlResult<()> {
    let dbe = t.database(db)?;
    let rel = t.relation(&dbe, table)?;
    let Some(ix) = unique_index(&rel, &r.fk.parent_columns) else {
        return Ok(());
    };
    let order: Vec<usize> = ix
        .columns
        .iter()
        .map(|c| {
            r.fk.parent_columns
                .iter()
                .position(|p| p == c)
                .expect("same set")
        })
        .collect();
    let keys: Vec<Vec<Datum>> = r.old.keys().cloned().collect();
    for key in keys {
        let range = IndexRange {
            eq: order.iter().map(|i| key[*i].clone()).collect(),
            lo: None,
            hi: None,
            not_null: false,
            backward: false,
        };
        let mut found = false;
        t.scan_index_each(db, table, &ix.name, &range, check, &mut |row| {
            found =
                r.fk.parent_columns
                    .iter()
                    .zip(&key)
                    .all(|(c, k)| row[*c] == *k);
            Ok(!found)
        })?;
        if found {
            r.old.remove(&key);
        }
    }
    Ok(())
}

/// ALTER TABLE ... ADD FOREIGN KEY: every existing row's key must be referenced
/// (23503 as an insert's), unless NOT VALID.
pub(crate) fn validate(
    t: &mut Txn<'_>,
    db: &str,
    table: &str,
    check: Interrupt<'_>,
    fk: &ForeignKey,
) -> SqlResult<()> {
    let mut g = Guard::new(t, db, table)?;
    g.own.retain(|o| o.fk.name == fk.name);
    g.refs.clear();
    let mut err = None;
    t.scan_each(db, table, check, &mut |row| {
        if let Err(e) = g.inserted(&row) {
            err = Some(e);
        }
        Ok(err.is_none())
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    finish(g, t, db, check)
}
