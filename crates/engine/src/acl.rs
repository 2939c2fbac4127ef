//! Access control lists as the catalog keeps them: PostgreSQL's `aclitem[]`, with
//! role OIDs where PostgreSQL's text shows names (a renamed role needs no ACL
//! rewritten). The SQL layer decides what a privilege allows (its `privileges`
//! module); this module owns the stored form and what it says about roles.
//!
//! Entry points: [`AclItem`], [`encode`], [`decode`], [`Priv`], [`roles_named`].
//!
//! | stored | meaning |
//! |--------|---------|
//! | `{}` | no privileges for anyone (an empty list, not the defaults) |
//! | `{=Tc/10,16384=r*w/10}` | PUBLIC has TEMPORARY and CONNECT, granted by role 10; role 16384 SELECT with grant option and UPDATE |
//!
//! A missing ACL (`None` in an entry) means the defaults, as PostgreSQL's NULL
//! `relacl`: the owner holds every privilege of the object's kind, PUBLIC what the
//! kind gives it (CONNECT and TEMPORARY on a database, USAGE on the schema
//! `public`, nothing on tables, sequences or tablespaces).
//!
//! Rules (cited as "acl rule N"):
//! 1. Privileges are PostgreSQL's letters in its order, `arwdDxtXUCTc`; a `*` after a
//!    letter is its grant option.
//! 2. Grantee 0 is PUBLIC. An item's privileges are never empty: an item that would
//!    hold none is removed.

use crate::codec::{DecResult, DecodeError};
use strata_types::Oid;

/// A privilege: one bit per PostgreSQL letter (acl rule 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Priv(pub u16);

impl Priv {
    pub const INSERT: Priv = Priv(1);
    pub const SELECT: Priv = Priv(1 << 1);
    pub const UPDATE: Priv = Priv(1 << 2);
    pub const DELETE: Priv = Priv(1 << 3);
    pub const TRUNCATE: Priv = Priv(1 << 4);
    pub const REFERENCES: Priv = Priv(1 << 5);
    pub const TRIGGER: Priv = Priv(1 << 6);
    pub const EXECUTE: Priv = Priv(1 << 7);
    pub const USAGE: Priv = Priv(1 << 8);
    pub const CREATE: Priv = Priv(1 << 9);
    pub const TEMPORARY: Priv = Priv(1 << 10);
    pub const CONNECT: Priv = Priv(1 << 11);
    pub const NONE: Priv = Priv(0);

    /// PostgreSQL's letters, in its order (acl rule 1).
    pub const LETTERS: [(char, Priv); 12] = [
        ('a', Priv::INSERT),
        ('r', Priv::SELECT),
        ('w', Priv::UPDATE),
        ('d', Priv::DELETE),
        ('D', Priv::TRUNCATE),
        ('x', Priv::REFERENCES),
        ('t', Priv::TRIGGER),
        ('X', Priv::EXECUTE),
        ('U', Priv::USAGE),
        ('C', Priv::CREATE),
        ('T', Priv::TEMPORARY),
        ('c', Priv::CONNECT),
    ];

    pub fn contains(self, p: Priv) -> bool {
        self.0 & p.0 == p.0
    }
    pub fn union(self, p: Priv) -> Priv {
        Priv(self.0 | p.0)
    }
    pub fn minus(self, p: Priv) -> Priv {
        Priv(self.0 & !p.0)
    }
    pub fn intersect(self, p: Priv) -> Priv {
        Priv(self.0 & p.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// One entry of an ACL: what `grantor` gave `grantee` (0: PUBLIC).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AclItem {
    pub grantee: Oid,
    pub grantor: Oid,
    pub privs: Priv,
    /// The privileges held WITH GRANT OPTION (a subset of `privs`).
    pub grant_options: Priv,
}

/// The stored text of an ACL (module table).
pub fn encode(acl: &[AclItem]) -> String {
    let items: Vec<String> = acl
        .iter()
        .map(|i| {
            let mut s = String::new();
            if i.grantee.0 != 0 {
                s.push_str(&i.grantee.0.to_string());
            }
            s.push('=');
            s.push_str(&letters(i.privs, i.grant_options));
            s.push('/');
            s.push_str(&i.grantor.0.to_string());
            s
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

/// The letters of `privs`, each followed by `*` if in `grant_options`.
pub fn letters(privs: Priv, grant_options: Priv) -> String {
    let mut s = String::new();
    for (c, p) in Priv::LETTERS {
        if privs.contains(p) {
            s.push(c);
            if grant_options.contains(p) {
                s.push('*');
            }
        }
    }
    s
}

fn bad() -> DecodeError {
    DecodeError("catalog ACL does not decode".into())
}

/// An ACL from its stored text.
pub fn decode(s: &str) -> DecResult<Vec<AclItem>> {
    let inner = s
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or_else(bad)?;
    if inner.is_empty() {
        return Ok(Vec::new());
    }
    inner.split(',').map(decode_item).collect()
}

fn decode_item(s: &str) -> DecResult<AclItem> {
    let (grantee, rest) = s.split_once('=').ok_or_else(bad)?;
    let (privs_text, grantor) = rest.rsplit_once('/').ok_or_else(bad)?;
    let oid = |t: &str| t.parse::<u32>().map(Oid).map_err(|_| bad());
    let grantee = if grantee.is_empty() {
        Oid(0)
    } else {
        oid(grantee)?
    };
    let (mut privs, mut grant_options) = (Priv::NONE, Priv::NONE);
    let mut last = None;
    for c in privs_text.chars() {
        if c == '*' {
            grant_options = grant_options.union(last.ok_or_else(bad)?);
            continue;
        }
        let p = Priv::LETTERS
            .iter()
            .find(|(l, _)| *l == c)
            .map(|(_, p)| *p)
            .ok_or_else(bad)?;
        privs = privs.union(p);
        last = Some(p);
    }
    Ok(AclItem {
        grantee,
        grantor: oid(grantor)?,
        privs,
        grant_options,
    })
}

/// Every role an ACL names, as grantee or grantor (PUBLIC left out).
pub fn roles_named(acl: &[AclItem]) -> impl Iterator<Item = Oid> + '_ {
    acl.iter()
        .flat_map(|i| [i.grantee, i.grantor])
        .filter(|o| o.0 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acls_round_trip_in_postgres_letters() {
        let acl = vec![
            AclItem {
                grantee: Oid(0),
                grantor: Oid(10),
                privs: Priv::TEMPORARY.union(Priv::CONNECT),
                grant_options: Priv::NONE,
            },
            AclItem {
                grantee: Oid(16384),
                grantor: Oid(10),
                privs: Priv::SELECT.union(Priv::UPDATE).union(Priv::INSERT),
                grant_options: Priv::SELECT,
            },
        ];
        let text = encode(&acl);
        assert_eq!(text, "{=Tc/10,16384=ar*w/10}");
        assert_eq!(decode(&text).unwrap(), acl);
        assert_eq!(decode("{}").unwrap(), vec![]);
        for bad in ["", "{x}", "{=q/10}", "{=*r/10}", "{1=r}", "{a=r/10}"] {
            assert!(decode(bad).is_err(), "{bad}");
        }
        let named: Vec<Oid> = roles_named(&acl).collect();
        assert_eq!(named, [Oid(10), Oid(16384), Oid(10)]);
    }
}
