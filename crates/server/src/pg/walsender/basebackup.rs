//! BASE_BACKUP: a base backup over a WAL sender connection, as PostgreSQL 15's server
//! sends it to `pg_basebackup` (PostgreSQL's `basebackup.c`, `basebackup_copy.c`).
//!
//! Entry points: [`parse_options`] (PostgreSQL 15's `( NAME value, ... )` syntax and
//! the older bare keywords), [`base_backup`] (the exchange).
//!
//! The exchange, in order:
//! 1. `Engine::start_backup`: a checkpoint; its redo point is START WAL LOCATION
//!    (engine `checkpoint::OnlineBackup`). A result set (recptr, tli).
//! 2. A result set of the tablespaces (spcoid, spclocation, size in kB with PROGRESS),
//!    the data directory last with NULLs.
//! 3. One COPY OUT stream: per archive a CopyData `n` (archive name, tablespace
//!    location or ""), then `d` messages of tar data, with `p` (bytes so far) after
//!    each message under PROGRESS; then, if asked for, `m` and `d` messages of the
//!    backup manifest (PostgreSQL's JSON, version 1). CopyDone.
//! 4. `OnlineBackup::stop`: a BACKUP_END record, flushed; its end is the result set
//!    that follows (recptr, tli), then CommandComplete.
//!
//! Rules (cited as "basebackup rule N"):
//! 1. Each tablespace is its own archive `<oid>.tar` holding its version directory;
//!    `base.tar` comes last and holds the data directory with `backup_label` (written
//!    here, never copied from disk) first and `global/pg_control` last; its
//!    `pg_tblspc/<oid>` entries are the links (or, with TABLESPACE_MAP, a
//!    `tablespace_map` file and no links), as PostgreSQL sends them.
//! 2. Left out of `base.tar`, as PostgreSQL leaves them out: the contents of pg_wal
//!    (its directory and `archive_status` are sent; `-X stream` brings the WAL),
//!    pg_replslot and the other runtime directories; `postmaster.pid`,
//!    `postmaster.opts`, an on-disk `backup_label`, `tablespace_map` or
//!    `backup_manifest`; temporary files (`pgsql_tmp*`, Strata's `*.tmp`).
//! 3. A file is sent with the size it had when listed: one that vanished since is
//!    skipped (ENOENT), one that shrank is padded with zeros, one that grew is cut.
//!    Replay from START WAL LOCATION repairs all three (recovery rules 2 and 10).
//! 4. Tar headers are ustar headers whose whole path fits the 100-byte name field
//!    (pg_basebackup's tar parser reads no prefix field); a longer path is an error.

use super::{complete, feed, io, send_rows, text_field, Context, Flow, Socket};
use bytes::BytesMut;
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::PgWireBackendMessage;
use sha2::Digest;
use std::io::Read;
use std::path::{Path, PathBuf};
use strata_engine::OnlineBackup;
use strata_sql::SqlError;
use strata_types::Lsn;

/// How much tar data goes into one CopyData message.
const COPY_CHUNK_BYTES: usize = 64 << 10;
const TAR_BLOCK_BYTES: u64 = 512;

/// The checksums a manifest may carry per file (PostgreSQL's pg_checksum_type).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumKind {
    None,
    Crc32c,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl ChecksumKind {
    fn parse(v: &str) -> Result<ChecksumKind, SqlError> {
        Ok(match v.to_ascii_uppercase().as_str() {
            "NONE" => ChecksumKind::None,
            "CRC32C" => ChecksumKind::Crc32c,
            "SHA224" => ChecksumKind::Sha224,
            "SHA256" => ChecksumKind::Sha256,
            "SHA384" => ChecksumKind::Sha384,
            "SHA512" => ChecksumKind::Sha512,
            _ => {
                return Err(SqlError::new(
                    "22023",
                    format!("unrecognized checksum algorithm: \"{v}\""),
                ))
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            ChecksumKind::None => "NONE",
            ChecksumKind::Crc32c => "CRC32C",
            ChecksumKind::Sha224 => "SHA224",
            ChecksumKind::Sha256 => "SHA256",
            ChecksumKind::Sha384 => "SHA384",
            ChecksumKind::Sha512 => "SHA512",
        }
    }
}

/// The options of one BASE_BACKUP command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    pub label: String,
    pub progress: bool,
    /// CHECKPOINT 'fast' (Strata's checkpoints are always immediate; 'spread' is
    /// accepted and runs the same checkpoint).
    pub fast: bool,
    pub tablespace_map: bool,
    /// None: MANIFEST 'no'; Some(force_encode).
    pub manifest: Option<bool>,
    pub checksums: ChecksumKind,
    /// MAX_RATE in kB/s: the stream is throttled to it (PostgreSQL's throttling sink).
    pub max_rate_kb: Option<u64>,
}

/// One token of the option list.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Str(String),
    Num(String),
    Open,
    Close,
    Comma,
}

fn syntax(what: &str) -> SqlError {
    SqlError::new("42601", format!("syntax error in BASE_BACKUP: {what}"))
}

fn tokenize(text: &str) -> Result<Vec<Token>, SqlError> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '(' | ')' | ',' => {
                chars.next();
                out.push(match c {
                    '(' => Token::Open,
                    ')' => Token::Close,
                    _ => Token::Comma,
                });
            }
            '\'' => {
                chars.next();
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some('\'') if chars.peek() == Some(&'\'') => {
                            chars.next();
                            s.push('\'');
                        }
                        Some('\'') => break,
                        Some(c) => s.push(c),
                        None => return Err(syntax("unterminated quoted string")),
                    }
                }
                out.push(Token::Str(s));
            }
            c if c.is_ascii_digit() || c == '-' => {
                let mut s = String::new();
                while let Some(&d) = chars.peek().filter(|d| d.is_ascii_digit() || **d == '-') {
                    s.push(d);
                    chars.next();
                }
                out.push(Token::Num(s));
            }
            c if c.is_alphanumeric() || c == '_' || c == '"' => {
                let mut s = String::new();
                while let Some(&d) = chars
                    .peek()
                    .filter(|d| d.is_alphanumeric() || **d == '_' || **d == '"')
                {
                    s.push(d);
                    chars.next();
                }
                out.push(Token::Word(s.trim_matches('"').to_ascii_uppercase()));
            }
            c => return Err(syntax(&format!("unexpected character \"{c}\""))),
        }
    }
    Ok(out)
}

/// `BASE_BACKUP [ ( NAME [value] [, ...] ) ]`, or the pre-15 form of bare keywords
/// (`LABEL 'x' PROGRESS FAST WAL NOWAIT MAX_RATE n TABLESPACE_MAP ...`). PostgreSQL's
/// errors: an unknown or repeated option, a bad value.
pub fn parse_options(text: &str) -> Result<Options, SqlError> {
    let tokens = tokenize(text)?;
    let mut it = tokens.into_iter().peekable();
    if it.next() != Some(Token::Word("BASE_BACKUP".into())) {
        return Err(syntax("expected BASE_BACKUP"));
    }
    let mut pairs: Vec<(String, Option<Token>)> = Vec::new();
    if it.peek() == Some(&Token::Open) {
        it.next();
        loop {
            let Some(Token::Word(name)) = it.next() else {
                return Err(syntax("expected an option name"));
            };
            let value = match it.peek() {
                Some(Token::Comma | Token::Close) | None => None,
                Some(_) => it.next(),
            };
            pairs.push((name, value));
            match it.next() {
                Some(Token::Comma) => continue,
                Some(Token::Close) if it.peek().is_none() => break,
                _ => return Err(syntax("expected \",\" or \")\"")),
            }
        }
    } else {
        while let Some(t) = it.next() {
            let Token::Word(name) = t else {
                return Err(syntax("expected an option name"));
            };
            let value = match it.peek() {
                Some(Token::Str(_) | Token::Num(_)) => it.next(),
                _ => None,
            };
            let (name, value) = match name.as_str() {
                "FAST" => ("CHECKPOINT".to_string(), Some(Token::Str("fast".into()))),
                "NOWAIT" => ("WAIT".to_string(), Some(Token::Word("FALSE".into()))),
                "NOVERIFY_CHECKSUMS" => (
                    "VERIFY_CHECKSUMS".to_string(),
                    Some(Token::Word("FALSE".into())),
                ),
                _ => (name, value),
            };
            pairs.push((name, value));
        }
    }
    options_from(pairs)
}

fn value_text(v: &Option<Token>) -> Option<String> {
    match v {
        Some(Token::Word(s) | Token::Str(s) | Token::Num(s)) => Some(s.clone()),
        _ => None,
    }
}

fn boolean(name: &str, v: &Option<Token>) -> Result<bool, SqlError> {
    let Some(s) = value_text(v) else {
        return Ok(true);
    };
    match s.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" | "yes" => Ok(true),
        "false" | "off" | "0" | "no" => Ok(false),
        _ => Err(SqlError::new(
            "22023",
            format!("{} requires a Boolean value", name.to_ascii_lowercase()),
        )),
    }
}

fn string(name: &str, v: &Option<Token>) -> Result<String, SqlError> {
    value_text(v).ok_or_else(|| {
        SqlError::new(
            "42601",
            format!("{} requires a parameter", name.to_ascii_lowercase()),
        )
    })
}

/// MAX_RATE in kB/s, in PostgreSQL's range.
fn max_rate(name: &str, v: &Option<Token>) -> Result<u64, SqlError> {
    let rate: u64 = string(name, v)?
        .parse()
        .map_err(|_| SqlError::new("22023", "max_rate requires an integer value"))?;
    if !(32..=1_048_576).contains(&rate) {
        return Err(SqlError::new(
            "22023",
            format!("{rate} is outside the valid range for parameter \"max_rate\" (32 .. 1048576)"),
        ));
    }
    Ok(rate)
}

/// MANIFEST 'yes' | 'no' | 'force-encode' (or a Boolean): `Some(force_encode)`.
fn manifest(name: &str, v: &Option<Token>) -> Result<Option<bool>, SqlError> {
    let s = value_text(v).unwrap_or_else(|| "yes".into());
    if s.eq_ignore_ascii_case("force-encode") {
        return Ok(Some(true));
    }
    match boolean(name, v) {
        Ok(true) => Ok(Some(false)),
        Ok(false) => Ok(None),
        Err(_) => Err(SqlError::new(
            "22023",
            format!("unrecognized manifest option: \"{s}\""),
        )),
    }
}

/// The named options checked and applied (PostgreSQL's parse_basebackup_options).
fn options_from(pairs: Vec<(String, Option<Token>)>) -> Result<Options, SqlError> {
    let mut o = Options {
        label: "base backup".into(),
        progress: false,
        fast: false,
        tablespace_map: false,
        manifest: None,
        checksums: ChecksumKind::Crc32c,
        max_rate_kb: None,
    };
    let mut seen: Vec<String> = Vec::new();
    let mut checksums_given = false;
    for (name, v) in &pairs {
        if seen.contains(name) {
            return Err(SqlError::new(
                "42601",
                format!("duplicate option \"{}\"", name.to_ascii_lowercase()),
            ));
        }
        seen.push(name.clone());
        let unsupported = |what: String| Err(SqlError::new("0A000", what));
        match name.as_str() {
            "LABEL" => o.label = string(name, v)?,
            "PROGRESS" => o.progress = boolean(name, v)?,
            "CHECKPOINT" => match string(name, v)?.to_ascii_lowercase().as_str() {
                "fast" => o.fast = true,
                "spread" => o.fast = false,
                other => {
                    return Err(SqlError::new(
                        "22023",
                        format!("unrecognized checkpoint type: \"{other}\""),
                    ))
                }
            },
            // Nothing to wait for: Strata archives no WAL.
            "WAIT" | "VERIFY_CHECKSUMS" => {
                boolean(name, v)?;
            }
            "WAL" if boolean(name, v)? => {
                return unsupported(
                    "BASE_BACKUP with WAL (pg_basebackup -X fetch) is not supported by Strata: use -X stream".into(),
                )
            }
            "WAL" => {}
            "MAX_RATE" => o.max_rate_kb = Some(max_rate(name, v)?),
            "TABLESPACE_MAP" => o.tablespace_map = boolean(name, v)?,
            "MANIFEST" => o.manifest = manifest(name, v)?,
            "MANIFEST_CHECKSUMS" => {
                o.checksums = ChecksumKind::parse(&string(name, v)?)?;
                checksums_given = true;
            }
            "TARGET" => match string(name, v)?.to_ascii_lowercase().as_str() {
                "client" => {}
                t => {
                    return unsupported(format!(
                        "backup target \"{t}\" is not supported by Strata: only \"client\""
                    ))
                }
            },
            "TARGET_DETAIL" | "COMPRESSION" | "COMPRESSION_DETAIL" => {
                return unsupported(format!(
                    "BASE_BACKUP option \"{}\" is not supported by Strata",
                    name.to_ascii_lowercase()
                ))
            }
            _ => {
                return Err(SqlError::new(
                    "42601",
                    format!(
                        "unrecognized base backup option: \"{}\"",
                        name.to_ascii_lowercase()
                    ),
                ))
            }
        }
    }
    if checksums_given && o.manifest.is_none() {
        return Err(SqlError::new(
            "22023",
            "manifest checksums require a backup manifest",
        ));
    }
    Ok(o)
}

/// One member of an archive, as listed (basebackup rule 3: the size is the listed one).
#[derive(Clone, Debug)]
struct Member {
    /// Path in the archive (relative to the data directory or the tablespace location).
    name: String,
    /// Where to read it; `None` for a directory, link or generated file.
    source: Option<PathBuf>,
    kind: tar::EntryType,
    size: u64,
    mode: u32,
    mtime_unix_s: u64,
    link: Option<String>,
    /// Generated content (backup_label, tablespace_map).
    content: Option<Vec<u8>>,
}

impl Member {
    fn dir(name: &str, mode: u32, mtime_unix_s: u64) -> Member {
        Member {
            name: name.to_string(),
            source: None,
            kind: tar::EntryType::Directory,
            size: 0,
            mode,
            mtime_unix_s,
            link: None,
            content: None,
        }
    }

    fn generated(name: &str, content: String, mtime_unix_s: u64) -> Member {
        Member {
            name: name.to_string(),
            source: None,
            kind: tar::EntryType::Regular,
            size: content.len() as u64,
            mode: 0o600,
            mtime_unix_s,
            link: None,
            content: Some(content.into_bytes()),
        }
    }

    /// Bytes this member takes in the archive: header plus padded data.
    fn archive_bytes(&self) -> u64 {
        TAR_BLOCK_BYTES + self.size.div_ceil(TAR_BLOCK_BYTES) * TAR_BLOCK_BYTES
    }
}

/// A user tablespace: its OID and location (the target of `pg_tblspc/<oid>`).
#[derive(Clone, Debug)]
struct Tablespace {
    oid: String,
    location: String,
}

fn io_error(op: &str, path: &Path, e: std::io::Error) -> SqlError {
    SqlError::new(
        "58030",
        format!("could not {op} \"{}\": {e}", path.display()),
    )
}

/// The tablespaces, from `pg_tblspc`'s links (as PostgreSQL lists them).
fn tablespaces(data: &Path) -> Result<Vec<Tablespace>, SqlError> {
    let dir = data.join("pg_tblspc");
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(io_error("open directory", &dir, e)),
    };
    for e in entries {
        let e = e.map_err(|e| io_error("read directory", &dir, e))?;
        let oid = e.file_name().to_string_lossy().into_owned();
        if oid.parse::<u32>().is_err() {
            continue;
        }
        match std::fs::read_link(e.path()) {
            Ok(target) => out.push(Tablespace {
                oid,
                location: target.display().to_string(),
            }),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {} // dropped meanwhile
            Err(err) => return Err(io_error("read symbolic link", &e.path(), err)),
        }
    }
    out.sort_by(|a, b| a.oid.cmp(&b.oid));
    Ok(out)
}

fn mtime_of(m: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    u64::try_from(m.mtime()).unwrap_or(0)
}

fn mode_of(m: &std::fs::Metadata) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    m.permissions().mode() & 0o7777
}

/// Basebackup rule 2: whether `name` (in directory `rel`, "" at the top) is left out.
fn excluded_file(rel: &str, name: &str) -> bool {
    const TOP: &[&str] = &[
        "postmaster.pid",
        "postmaster.opts",
        "backup_label",
        "tablespace_map",
        "backup_manifest",
    ];
    name.starts_with("pgsql_tmp")
        || name.ends_with(".tmp")
        || name == "pg_internal.init"
        || (rel.is_empty() && TOP.contains(&name))
        || (rel == "global" && name == "pg_control") // sent last
}

/// Directories sent empty (basebackup rule 2).
const EMPTY_DIRS: &[&str] = &[
    "pg_stat_tmp",
    "pg_replslot",
    "pg_dynshmem",
    "pg_notify",
    "pg_serial",
    "pg_snapshots",
    "pg_subtrans",
];

/// Lists `root/rel` recursively into `out` (directories before their contents), in
/// name order. `links`: send `pg_tblspc`'s links (no TABLESPACE_MAP).
fn list_dir(root: &Path, rel: &str, links: bool, out: &mut Vec<Member>) -> Result<(), SqlError> {
    let dir = root.join(rel);
    let mut names: Vec<String> = match std::fs::read_dir(&dir) {
        Ok(it) => it
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()), // gone
        Err(e) => return Err(io_error("open directory", &dir, e)),
    };
    names.sort();
    for name in names {
        if excluded_file(rel, &name) {
            continue;
        }
        let path = dir.join(&name);
        let member = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue, // rule 3
            Err(e) => return Err(io_error("stat file or directory", &path, e)),
        };
        let (mode, mtime) = (mode_of(&meta), mtime_of(&meta));
        if rel.is_empty() && name == "pg_wal" {
            out.push(Member::dir("pg_wal", 0o700, mtime));
            out.push(Member::dir("pg_wal/archive_status", 0o700, mtime));
        } else if EMPTY_DIRS.contains(&name.as_str()) {
            out.push(Member::dir(&member, 0o700, mtime));
        } else if rel == "pg_tblspc" && meta.file_type().is_symlink() {
            if links {
                let target = std::fs::read_link(&path)
                    .map_err(|e| io_error("read symbolic link", &path, e))?;
                out.push(Member {
                    kind: tar::EntryType::Symlink,
                    link: Some(target.display().to_string()),
                    ..Member::dir(&member, 0o777, mtime)
                });
            }
        } else if meta.is_dir() {
            out.push(Member::dir(&member, mode, mtime));
            list_dir(root, &member, links, out)?;
        } else if meta.is_file() {
            out.push(Member {
                source: Some(path),
                kind: tar::EntryType::Regular,
                size: meta.len(),
                ..Member::dir(&member, mode, mtime)
            });
        }
    }
    Ok(())
}

/// The members of `base.tar` (basebackup rule 1). `links`: no TABLESPACE_MAP.
fn base_members(
    data: &Path,
    label: String,
    map: Option<String>,
    now: u64,
) -> Result<Vec<Member>, SqlError> {
    let links = map.is_none();
    let mut out = vec![Member::generated("backup_label", label, now)];
    if let Some(map) = map {
        out.push(Member::generated("tablespace_map", map, now));
    }
    list_dir(data, "", links, &mut out)?;
    let control = data.join("global").join("pg_control");
    let meta = std::fs::metadata(&control).map_err(|e| io_error("stat file", &control, e))?;
    out.push(Member {
        source: Some(control),
        kind: tar::EntryType::Regular,
        size: meta.len(),
        ..Member::dir("global/pg_control", mode_of(&meta), mtime_of(&meta))
    });
    Ok(out)
}

/// The members of a tablespace's archive: its version directory, recursively.
fn tablespace_members(spc: &Tablespace) -> Result<Vec<Member>, SqlError> {
    let root = Path::new(&spc.location);
    let version = strata_smgr::TABLESPACE_VERSION_DIR;
    let mut out = Vec::new();
    match std::fs::symlink_metadata(root.join(version)) {
        Ok(m) => out.push(Member::dir(version, mode_of(&m), mtime_of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out), // dropped
        Err(e) => return Err(io_error("stat file or directory", &root.join(version), e)),
    }
    list_dir(root, version, true, &mut out)?;
    Ok(out)
}

/// The backup label PostgreSQL writes (`do_pg_backup_start`), for recovery rule 10.
fn backup_label(b: &OnlineBackup, label: &str, segment_bytes: u64, tli: u32) -> String {
    format!(
        "START WAL LOCATION: {} (file {})\nCHECKPOINT LOCATION: {}\nBACKUP METHOD: streamed\nBACKUP FROM: primary\nSTART TIME: {}\nLABEL: {label}\nSTART TIMELINE: {tli}\n",
        b.start,
        strata_wal::segment_file_name(tli, b.start.0 / segment_bytes, segment_bytes),
        b.checkpoint,
        strata_engine::utc_timestamp(b.start_time_unix_s),
    )
}

/// A file's checksum for the manifest, as it is computed.
enum Sum {
    None,
    Crc32c(u32),
    Sha224(sha2::Sha224),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Sum {
    fn new(kind: ChecksumKind) -> Sum {
        match kind {
            ChecksumKind::None => Sum::None,
            ChecksumKind::Crc32c => Sum::Crc32c(0),
            ChecksumKind::Sha224 => Sum::Sha224(sha2::Sha224::new()),
            ChecksumKind::Sha256 => Sum::Sha256(sha2::Sha256::new()),
            ChecksumKind::Sha384 => Sum::Sha384(sha2::Sha384::new()),
            ChecksumKind::Sha512 => Sum::Sha512(sha2::Sha512::new()),
        }
    }

    fn update(&mut self, b: &[u8]) {
        match self {
            Sum::None => {}
            Sum::Crc32c(c) => *c = crc32c::crc32c_append(*c, b),
            Sum::Sha224(h) => h.update(b),
            Sum::Sha256(h) => h.update(b),
            Sum::Sha384(h) => h.update(b),
            Sum::Sha512(h) => h.update(b),
        }
    }

    /// The hex PostgreSQL writes: a CRC-32C as its four bytes in memory (little-endian
    /// on the machines PostgreSQL builds for), a SHA digest as its bytes.
    fn hex(self) -> Option<String> {
        let bytes: Vec<u8> = match self {
            Sum::None => return None,
            Sum::Crc32c(c) => c.to_le_bytes().to_vec(),
            Sum::Sha224(h) => h.finalize().to_vec(),
            Sum::Sha256(h) => h.finalize().to_vec(),
            Sum::Sha384(h) => h.finalize().to_vec(),
            Sum::Sha512(h) => h.finalize().to_vec(),
        };
        Some(hex(&bytes))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A backup manifest in PostgreSQL's format (`backup_manifest.c`), version 1.
struct Manifest {
    text: String,
    files: usize,
    force_encode: bool,
    kind: ChecksumKind,
}

impl Manifest {
    fn new(force_encode: bool, kind: ChecksumKind) -> Manifest {
        Manifest {
            text: "{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n\"Files\": [".into(),
            files: 0,
            force_encode,
            kind,
        }
    }

    fn add(&mut self, path: &str, size: u64, mtime_unix_s: u64, sum: Option<String>) {
        use std::fmt::Write;
        self.text
            .push_str(if self.files == 0 { "\n" } else { ",\n" });
        self.files += 1;
        if self.force_encode {
            let _ = write!(
                self.text,
                "{{ \"Encoded-Path\": \"{}\", ",
                hex(path.as_bytes())
            );
        } else {
            let _ = write!(self.text, "{{ \"Path\": {}, ", json_string(path));
        }
        let when = strata_engine::utc_timestamp(mtime_unix_s).replace(" UTC", " GMT");
        let _ = write!(self.text, "\"Size\": {size}, \"Last-Modified\": \"{when}\"");
        if let Some(sum) = sum {
            let _ = write!(
                self.text,
                ", \"Checksum-Algorithm\": \"{}\", \"Checksum\": \"{sum}\"",
                self.kind.name()
            );
        }
        self.text.push_str(" }");
    }

    /// The WAL range and the manifest's own SHA-256 (over everything before it).
    fn finish(mut self, start: Lsn, end: Lsn) -> String {
        self.text.push_str("\n],\n\"WAL-Ranges\": [\n");
        self.text.push_str(&format!(
            "{{ \"Timeline\": 1, \"Start-LSN\": \"{start}\", \"End-LSN\": \"{end}\" }}\n],\n"
        ));
        let sum = hex(&sha2::Sha256::digest(self.text.as_bytes()));
        self.text
            .push_str(&format!("\"Manifest-Checksum\": \"{sum}\"}}\n"));
        self.text
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The COPY OUT stream: tar bytes gathered into `d` messages, `p` progress after
/// each, the manifest built as files go by.
struct Out<'a> {
    socket: &'a mut Socket,
    timeout: std::time::Duration,
    buf: Vec<u8>,
    done: u64,
    progress: bool,
    manifest: Option<Manifest>,
    /// MAX_RATE in bytes per second, and when the stream began.
    rate_bytes_per_s: Option<u64>,
    began: std::time::Instant,
}

impl Out<'_> {
    async fn message(&mut self, kind: u8, body: &[u8]) -> Result<(), SqlError> {
        let mut m = BytesMut::with_capacity(1 + body.len());
        m.extend_from_slice(&[kind]);
        m.extend_from_slice(body);
        let msg = PgWireBackendMessage::CopyData(CopyData::new(m.freeze()));
        feed(self.socket, msg).await.map_err(io)
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), SqlError> {
        self.buf.extend_from_slice(bytes);
        self.done += bytes.len() as u64;
        if self.buf.len() >= COPY_CHUNK_BYTES {
            self.send_data().await?;
        }
        Ok(())
    }

    async fn send_data(&mut self) -> Result<(), SqlError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let data = std::mem::take(&mut self.buf);
        self.message(b'd', &data).await?;
        if self.progress {
            let done = i64::try_from(self.done).unwrap_or(i64::MAX);
            self.message(b'p', &done.to_be_bytes()).await?;
        }
        super::tokio_flush(self.socket, self.timeout)
            .await
            .map_err(io)?;
        if let Some(rate) = self.rate_bytes_per_s {
            // MAX_RATE: never ahead of `rate` bytes per second since the start.
            let due = std::time::Duration::from_secs_f64(self.done as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(self.began.elapsed()) {
                tokio::time::sleep(wait).await;
            }
        }
        Ok(())
    }

    /// One archive: `n`, its members, the two zero blocks that end a tar file.
    async fn archive(
        &mut self,
        name: &str,
        location: &str,
        members: &[Member],
        manifest_prefix: &str,
    ) -> Result<(), SqlError> {
        let mut n = Vec::new();
        for s in [name, location] {
            n.extend_from_slice(s.as_bytes());
            n.push(0);
        }
        self.message(b'n', &n).await?;
        for m in members {
            self.member(m, manifest_prefix).await?;
        }
        self.write(&[0u8; 2 * TAR_BLOCK_BYTES as usize]).await?;
        self.send_data().await
    }

    /// One member: header, data (basebackup rule 3), padding; its manifest entry.
    async fn member(&mut self, m: &Member, manifest_prefix: &str) -> Result<(), SqlError> {
        let mut file = match &m.source {
            Some(p) => match std::fs::File::open(p) {
                Ok(f) => Some(f),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(io_error("open file", p, e)),
            },
            None => None,
        };
        self.write(&header(m)?).await?;
        let mut sum = Sum::new(
            self.manifest
                .as_ref()
                .map_or(ChecksumKind::None, |m| m.kind),
        );
        if let Some(c) = &m.content {
            sum.update(c);
            self.write(c).await?;
        } else if let Some(f) = file.as_mut() {
            let path = m.source.as_deref().unwrap_or(Path::new(""));
            let mut left = m.size;
            let mut chunk = vec![0u8; COPY_CHUNK_BYTES];
            while left > 0 {
                let want = usize::try_from(left).unwrap_or(usize::MAX).min(chunk.len());
                let got = f
                    .read(&mut chunk[..want])
                    .map_err(|e| io_error("read file", path, e))?;
                if got == 0 {
                    chunk[..want].fill(0); // it shrank: pad (rule 3)
                }
                let n = if got == 0 { want } else { got };
                sum.update(&chunk[..n]);
                self.write(&chunk[..n]).await?;
                left -= n as u64;
            }
        }
        let pad = (TAR_BLOCK_BYTES - m.size % TAR_BLOCK_BYTES) % TAR_BLOCK_BYTES;
        self.write(&vec![0u8; pad as usize]).await?;
        if m.kind == tar::EntryType::Regular {
            if let Some(man) = self.manifest.as_mut() {
                let path = format!("{manifest_prefix}{}", m.name);
                man.add(&path, m.size, m.mtime_unix_s, sum.hex());
            }
        }
        Ok(())
    }
}

/// A ustar header for `m` (basebackup rule 4).
fn header(m: &Member) -> Result<[u8; 512], SqlError> {
    let too_long = || {
        SqlError::new(
            "54000",
            format!("file name too long for tar format: \"{}\"", m.name),
        )
    };
    if m.name.len() > 99 {
        return Err(too_long());
    }
    let mut h = tar::Header::new_ustar();
    h.set_path(&m.name).map_err(|_| too_long())?;
    h.set_entry_type(m.kind);
    h.set_size(m.size);
    h.set_mode(m.mode);
    h.set_mtime(m.mtime_unix_s);
    if let Some(l) = &m.link {
        if l.len() > 99 {
            return Err(SqlError::new(
                "54000",
                format!("symbolic link \"{}\" target is too long", m.name),
            ));
        }
        h.set_link_name(l).map_err(|_| too_long())?;
    }
    h.set_cksum();
    Ok(*h.as_bytes())
}

/// One tablespace result-set row: oid, location, size in kB (PROGRESS only).
fn tablespace_row(
    oid: Option<&str>,
    location: Option<&str>,
    bytes: Option<u64>,
) -> Vec<Option<String>> {
    vec![
        oid.map(str::to_string),
        location.map(str::to_string),
        bytes.map(|b| (b / 1024).to_string()),
    ]
}

/// The whole exchange (module doc, steps 1–4).
pub(super) async fn base_backup(
    socket: &mut Socket,
    cx: &Context,
    text: &str,
) -> Result<Flow, SqlError> {
    let opts = parse_options(text)?;
    cx.senders.report(cx.slot, |s| s.state = "backup"); // walsender rule 6
    let engine = cx.engine.clone();
    let backup = tokio::task::spawn_blocking(move || engine.start_backup())
        .await
        .map_err(|e| SqlError::new("XX000", e.to_string()))??;
    (cx.log)(&format!(
        "LOG:  base backup \"{}\" started: redo LSN {}, checkpoint LSN {}",
        opts.label, backup.start, backup.checkpoint
    ));
    let data = cx.engine.data_dir().to_path_buf();
    let spcs = tablespaces(&data)?;
    let label = backup_label(
        &backup,
        &opts.label,
        cx.engine.wal_segment_bytes(),
        cx.engine.timeline(),
    );
    let map = opts.tablespace_map.then(|| {
        spcs.iter()
            .map(|s| format!("{} {}\n", s.oid, s.location))
            .collect::<String>()
    });
    let mut archives = Vec::new();
    for s in &spcs {
        let prefix = format!("pg_tblspc/{}/", s.oid);
        archives.push((
            format!("{}.tar", s.oid),
            s.location.clone(),
            tablespace_members(s)?,
            prefix,
        ));
    }
    let base = base_members(&data, label, map, backup.start_time_unix_s)?;
    archives.push(("base.tar".into(), String::new(), base, String::new()));
    send_header(socket, &backup, &archives, opts.progress).await?;
    feed(
        socket,
        PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(0, 0, vec![])),
    )
    .await
    .map_err(io)?;
    let mut out = Out {
        socket,
        timeout: cx.timeout,
        buf: Vec::new(),
        done: 0,
        progress: opts.progress,
        manifest: opts
            .manifest
            .map(|force| Manifest::new(force, opts.checksums)),
        rate_bytes_per_s: opts.max_rate_kb.map(|kb| kb * 1024),
        began: std::time::Instant::now(),
    };
    for (name, location, members, prefix) in &archives {
        out.archive(name, location, members, prefix).await?;
    }
    let start = backup.start;
    let end = tokio::task::spawn_blocking(move || backup.stop())
        .await
        .map_err(|e| SqlError::new("XX000", e.to_string()))??;
    if let Some(m) = out.manifest.take() {
        let text = m.finish(start, end);
        out.message(b'm', &[]).await?;
        for chunk in text.as_bytes().chunks(COPY_CHUNK_BYTES) {
            out.message(b'd', chunk).await?;
        }
    }
    let socket = out.socket;
    feed(socket, PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await
        .map_err(io)?;
    send_position(socket, end).await?;
    (cx.log)(&format!(
        "LOG:  base backup \"{}\" done: start {start}, end {end}",
        opts.label
    ));
    feed(socket, complete("BASE_BACKUP")).await.map_err(io)?;
    Ok(Flow::Continue)
}

type Archive = (String, String, Vec<Member>, String);

/// Steps 1 and 2: the start position, then the tablespaces (sizes under PROGRESS).
async fn send_header(
    socket: &mut Socket,
    backup: &OnlineBackup,
    archives: &[Archive],
    progress: bool,
) -> Result<(), SqlError> {
    send_position(socket, backup.start).await?;
    let fields = vec![
        text_field("spcoid", 26),
        text_field("spclocation", 25),
        text_field("size", 20),
    ];
    let rows = archives
        .iter()
        .map(|(name, location, members, _)| {
            let bytes = progress.then(|| {
                members.iter().map(Member::archive_bytes).sum::<u64>() + 2 * TAR_BLOCK_BYTES
            });
            match name.strip_suffix(".tar").filter(|_| !location.is_empty()) {
                Some(oid) => tablespace_row(Some(oid), Some(location), bytes),
                None => tablespace_row(None, None, bytes),
            }
        })
        .collect();
    send_rows(socket, fields, rows, "SELECT").await.map_err(io)
}

/// A (recptr, tli) result set: the start or the end of the backup.
async fn send_position(socket: &mut Socket, at: Lsn) -> Result<(), SqlError> {
    let fields = vec![text_field("recptr", 25), text_field("tli", 20)];
    let row = vec![Some(at.to_string()), Some("1".to_string())];
    send_rows(socket, fields, vec![row], "SELECT")
        .await
        .map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_in_postgresql_15_syntax() {
        let o = parse_options(
            "BASE_BACKUP ( LABEL 'pg_basebackup base backup',  PROGRESS,  CHECKPOINT 'fast',  WAIT 0,  MANIFEST 'yes',  TARGET 'client')",
        )
        .unwrap();
        assert_eq!(o.label, "pg_basebackup base backup");
        assert!(o.progress && o.fast && !o.tablespace_map);
        assert_eq!(o.manifest, Some(false));
        assert_eq!(o.checksums, ChecksumKind::Crc32c);
        let o = parse_options("BASE_BACKUP").unwrap();
        assert_eq!(o.manifest, None);
        let o =
            parse_options("base_backup LABEL 'it''s' PROGRESS FAST NOWAIT MAX_RATE 1024").unwrap();
        assert_eq!(o.label, "it's");
        assert_eq!(o.max_rate_kb, Some(1024));
        assert!(o.fast && o.progress);
        let o = parse_options(
            "BASE_BACKUP (MANIFEST 'force-encode', MANIFEST_CHECKSUMS 'sha256', TABLESPACE_MAP)",
        )
        .unwrap();
        assert_eq!(o.manifest, Some(true));
        assert_eq!(o.checksums, ChecksumKind::Sha256);
        assert!(o.tablespace_map);
        let err = |t: &str| {
            let e = parse_options(t).unwrap_err();
            format!("{} {}", e.code, e.message)
        };
        assert_eq!(
            err("BASE_BACKUP (BOGUS)"),
            "42601 unrecognized base backup option: \"bogus\""
        );
        assert_eq!(
            err("BASE_BACKUP (PROGRESS, PROGRESS)"),
            "42601 duplicate option \"progress\""
        );
        assert_eq!(
            err("BASE_BACKUP (CHECKPOINT 'slow')"),
            "22023 unrecognized checkpoint type: \"slow\""
        );
        assert_eq!(
            err("BASE_BACKUP (MANIFEST 'maybe')"),
            "22023 unrecognized manifest option: \"maybe\""
        );
        assert_eq!(
            err("BASE_BACKUP (MANIFEST_CHECKSUMS 'md5', MANIFEST 'yes')"),
            "22023 unrecognized checksum algorithm: \"md5\""
        );
        assert_eq!(
            err("BASE_BACKUP (MANIFEST_CHECKSUMS 'sha256')"),
            "22023 manifest checksums require a backup manifest"
        );
        assert!(err("BASE_BACKUP (TARGET 'server')").starts_with("0A000"));
        assert!(err("BASE_BACKUP (WAL)").starts_with("0A000"));
        assert!(err("BASE_BACKUP (MAX_RATE 1)").starts_with("22023"));
        assert!(err("BASE_BACKUP (LABEL 'x'").starts_with("42601"));
    }

    #[test]
    fn manifest_checksum_covers_everything_before_it() {
        let mut m = Manifest::new(false, ChecksumKind::Crc32c);
        let mut sum = Sum::new(ChecksumKind::Crc32c);
        sum.update(b"123456789");
        // CRC-32C("123456789") = 0xE3069283, written as its little-endian bytes.
        m.add("PG_VERSION", 9, 0, sum.hex());
        let text = m.finish(Lsn(0x0200_0028), Lsn(0x0200_0100));
        assert!(text.contains("{ \"Path\": \"PG_VERSION\", \"Size\": 9, \"Last-Modified\": \"1970-01-01 00:00:00 GMT\", \"Checksum-Algorithm\": \"CRC32C\", \"Checksum\": \"839206e3\" }"), "{text}");
        assert!(
            text.contains("\"Start-LSN\": \"0/2000028\", \"End-LSN\": \"0/2000100\""),
            "{text}"
        );
        let at = text.find("\"Manifest-Checksum\"").unwrap();
        let want = hex(&sha2::Sha256::digest(&text.as_bytes()[..at]));
        assert_eq!(
            &text[at..],
            format!("\"Manifest-Checksum\": \"{want}\"}}\n")
        );
    }
}
