//! Temporary relations' names: each session's are its own, as PostgreSQL's live in
//! the session's `pg_temp_N` schema, searched before every other.
//!
//! A temporary relation is kept in the catalog cache under its stored name
//! `pg_temp_<session>.<name>`; it has no `pg_class` row and its storage is in
//! [`strata_types::TEMP_TABLESPACE`] (no WAL, no fsync; smgr rule 8).
//!
//! Rules (cited as "temp rule N"):
//! 1. The session a thread serves is set with [`enter`] around each statement (a
//!    backend thread serves one session; tests interleave several on one thread).
//!    Lookups by name then try the session's temporary relation first, so a
//!    temporary table hides a permanent one of the same name; `pg_temp.name` names
//!    only the temporary one. Creation and the 42P07 check use exact names, so
//!    `CREATE TABLE t` beside a temporary `t` makes the permanent one.
//! 2. A session that never made a temporary relation pays nothing for them: no
//!    name is formatted or looked up twice.
//! 3. Messages show a temporary relation by its own name ([`shown`]), as
//!    PostgreSQL's do.
//! 4. Another session's temporary relations are invisible to name lookups and to
//!    listings ([`is_foreign`]).

use std::borrow::Cow;
use std::cell::Cell;

thread_local! {
    /// The session this thread serves (0: none) and whether it made temporary
    /// relations (rule 2).
    static SESSION: Cell<(u64, bool)> = const { Cell::new((0, false)) };
    /// Sessions that made temporary relations on this thread (rule 2).
    static USED: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Restores the thread's previous session when dropped ([`enter`]).
pub struct Entered((u64, bool));

impl Drop for Entered {
    fn drop(&mut self) {
        SESSION.with(|s| s.set(self.0));
    }
}

/// Serve session `id` on this thread until the guard drops (rule 1).
pub fn enter(id: u64) -> Entered {
    let used = USED.with(|u| u.borrow().contains(&id));
    Entered(SESSION.with(|s| s.replace((id, used))))
}

fn session() -> (u64, bool) {
    SESSION.with(|s| s.get())
}

/// Notes that the current session made a temporary relation (rule 2).
pub(crate) fn note_used() {
    let (id, used) = session();
    if !used && id != 0 {
        SESSION.with(|s| s.set((id, true)));
        USED.with(|u| u.borrow_mut().push(id));
    }
}

/// The stored-name prefix of the current session's temporary relations.
fn prefix(id: u64) -> String {
    format!("pg_temp_{id}.")
}

/// The stored name of a relation to create: `Some` for `pg_temp.name` (a
/// temporary one of the current session), `None` for a permanent one. 0A000-free:
/// outside a session `pg_temp.` names stay as they are and are not found.
pub(crate) fn stored_for_create(name: &str) -> Option<String> {
    let rest = name.strip_prefix("pg_temp.")?;
    let (id, _) = session();
    (id != 0).then(|| format!("{}{rest}", prefix(id)))
}

/// The stored name of a new relation beside temporary relation `of` (an index,
/// a renamed table): in the same session's namespace.
pub(crate) fn beside(name: &str) -> String {
    if is_stored(name) {
        return name.to_string();
    }
    let bare = name.strip_prefix("pg_temp.").unwrap_or(name);
    format!("{}{bare}", prefix(session().0))
}

/// Whether `name` is a stored temporary name (`pg_temp_N.x`).
fn is_stored(name: &str) -> bool {
    name.strip_prefix("pg_temp_")
        .and_then(|r| r.split_once('.'))
        .is_some_and(|(n, _)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Looks `name` up as the current session sees it (rule 1): `pg_temp.x` as its
/// temporary `x` only; a bare name as its temporary relation if it has one, else as
/// itself; a stored name as itself.
pub(crate) fn resolve<T>(name: &str, find: impl Fn(&str) -> Option<T>) -> Option<T> {
    let (id, used) = session();
    if let Some(rest) = name.strip_prefix("pg_temp.") {
        return (id != 0)
            .then(|| find(&format!("{}{rest}", prefix(id))))
            .flatten();
    }
    if used && !is_stored(name) {
        if let Some(t) = find(&format!("{}{name}", prefix(id))) {
            return Some(t);
        }
    }
    find(name)
}

/// Whether `name` is another session's temporary relation (rule 4).
pub(crate) fn is_foreign(name: &str) -> bool {
    is_stored(name) && !name.starts_with(&prefix(session().0))
}

/// `msg` with the current session's temporary relations shown by their own names
/// (rule 3).
pub fn shown(msg: &str) -> Cow<'_, str> {
    let (id, used) = session();
    if !used || !msg.contains("pg_temp_") {
        return Cow::Borrowed(msg);
    }
    Cow::Owned(msg.replace(&prefix(id), ""))
}

/// Whether stored name `stored` is what `name` names (an index found through its
/// table: the stored name, or a temporary one's own name).
pub(crate) fn same(stored: &str, name: &str) -> bool {
    stored == name
        || (is_stored(stored) && bare(stored) == name.strip_prefix("pg_temp.").unwrap_or(name))
}

/// A stored name as its session shows it.
pub fn bare(name: &str) -> &str {
    if is_stored(name) {
        name.split_once('.').map_or(name, |(_, n)| n)
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_per_session() {
        let _g = enter(7);
        note_used();
        assert_eq!(
            stored_for_create("pg_temp.t").as_deref(),
            Some("pg_temp_7.t")
        );
        assert_eq!(stored_for_create("t"), None);
        let have = ["pg_temp_7.t", "t", "u", "pg_temp_8.u"];
        let find = |n: &str| have.iter().find(|h| **h == n).map(|h| h.to_string());
        assert_eq!(resolve("t", find).as_deref(), Some("pg_temp_7.t"));
        assert_eq!(resolve("u", find).as_deref(), Some("u"));
        assert_eq!(resolve("pg_temp.u", find), None);
        assert!(is_foreign("pg_temp_8.u") && !is_foreign("pg_temp_7.t") && !is_foreign("u"));
        assert_eq!(
            shown("relation \"pg_temp_7.t\" exists"),
            "relation \"t\" exists"
        );
        assert_eq!(beside("t_pkey"), "pg_temp_7.t_pkey");
        assert_eq!(bare("pg_temp_7.t"), "t");
        drop(_g);
        let _h = enter(8);
        assert_eq!(
            resolve("t", find).as_deref(),
            Some("t"),
            "session 8 made none"
        );
    }
}
