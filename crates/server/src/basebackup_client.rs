//! `strata basebackup`: the client side of BASE_BACKUP, PostgreSQL's `pg_basebackup
//! -Fp -X stream` natively (the server's side is `pg::walsender::basebackup`). It owns
//! the target directory (and the tablespaces' target directories) while a backup runs:
//! the replication connections (through [`crate::walreceiver`]'s connect and
//! authentication), the tar extraction, the WAL streamed beside it, `-R`'s files.
//!
//! Entry points: [`Options`] and [`conninfo`] (what the command line asked for),
//! [`parse_mapping`] (`-T OLD=NEW`), [`run`] (the whole backup, on a runtime of its
//! own), [`Progress`] (how the binary shows it).
//!
//! The exchange, in order:
//! 1. On a replication connection, `SHOW wal_segment_size`, then `BASE_BACKUP (LABEL,
//!    PROGRESS, CHECKPOINT, WAIT false, MANIFEST, TABLESPACE_MAP false)`: the start
//!    result set (LSN, timeline), the tablespace result set (oid, location, kB).
//! 2. A second replication connection streams WAL from the first byte of the start
//!    LSN's segment into `DIR/pg_wal`, concurrently with the rest (the primary may
//!    remove segments once the backup ends).
//! 3. The COPY OUT stream: per archive `n` (name, location), `d` tar data, `p`
//!    progress; then `m` and `d` of the manifest, written to `DIR/backup_manifest`.
//! 4. The end result set (end LSN): the WAL stream goes on until it has written past
//!    it, then CopyDone. `-R` files; everything fsynced.
//!
//! Rules (cited as "basebackup client rule N"):
//! 1. The target directory must be absent or empty, checked before connecting; each
//!    tablespace's target (its `-T` mapping, else its own location) likewise, once the
//!    tablespace result set names it. On any failure what this run created is removed
//!    (a directory it created, or the contents of one that was empty), as pg_basebackup
//!    does.
//! 2. Tar members land under their archive's root only: absolute paths and `..` are
//!    refused, and so is a path through a link; links only as `pg_tblspc/<oid>` of
//!    base.tar, pointing to the tablespace's (mapped) target. Files are created 0600,
//!    directories 0700.
//! 3. WAL arrives in order (an XLogData not starting where the previous one ended is
//!    an error) into segment files created whole and zero-filled, as the server's own
//!    are; streaming stops only once it has written up to the backup's end LSN (the end
//!    of its BACKUP_END record, flushed before the end result set is sent).
//! 4. Nothing is reported done before it is durable: every file and directory written
//!    is fsynced before [`run`] returns Ok.
//! 5. The password never reaches a message; it does reach `primary_conninfo` under
//!    `-R`, as pg_basebackup writes it.

use crate::walreceiver::{self, Backend, Conninfo, ReceiverSettings, Socket};
use bytes::{BufMut, BytesMut};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};
use strata_types::Lsn;
use tokio::sync::watch;

/// How long the WAL stream waits for a message before it looks at the end LSN and
/// sends a status update if one is due.
const WAL_TICK: Duration = Duration::from_millis(100);
/// How often the WAL stream reports (and fsyncs) its position to the primary.
const STATUS_INTERVAL: Duration = Duration::from_secs(1);
/// A primary silent this long once the backup has ended has failed the WAL stream.
const WAL_TIMEOUT: Duration = Duration::from_secs(60);
const TAR_BLOCK: usize = 512;

/// What `strata basebackup` was asked for.
#[derive(Clone, Debug)]
pub struct Options {
    /// The target directory (rule 1).
    pub dir: PathBuf,
    pub conninfo: Conninfo,
    /// CHECKPOINT 'fast' (else 'spread').
    pub fast: bool,
    /// `-R`: `standby.signal` and `primary_conninfo`.
    pub write_recovery_conf: bool,
    /// `-T OLD=NEW`.
    pub tablespace_mappings: Vec<(PathBuf, PathBuf)>,
    pub manifest: bool,
    pub label: String,
}

/// How the binary shows progress: `start` once with the estimated size (the
/// tablespace result set's), then `update` with the bytes received so far.
pub trait Progress {
    fn start(&mut self, total_bytes: u64);
    fn update(&mut self, done_bytes: u64);
    fn finish(&mut self);
}

/// What a finished backup reports.
#[derive(Clone, Debug)]
pub struct Summary {
    pub start: Lsn,
    pub end: Lsn,
    pub timeline: u32,
    /// Bytes of the archives (tar data).
    pub bytes: u64,
    pub wal_segments: u64,
}

/// The connection: `-d` (keyword or URI form) with `-h`, `-p`, `-U` over it, and
/// `PGPASSWORD` when neither it nor the passfile gives a password.
pub fn conninfo(
    dbname: Option<&str>,
    host: Option<&str>,
    port: Option<u16>,
    user: Option<&str>,
) -> Result<Conninfo, String> {
    let mut ci = Conninfo::parse(dbname.unwrap_or(""))?;
    if let Some(h) = host {
        ci.host = h.to_string();
    }
    if let Some(p) = port {
        ci.port = p;
    }
    if let Some(u) = user {
        ci.user = u.to_string();
    }
    if ci.lookup_password().is_none() {
        ci.password = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty());
    }
    Ok(ci)
}

/// `-T OLD=NEW` (`\=` for a '=' in a path); both absolute, as pg_basebackup wants.
pub fn parse_mapping(s: &str) -> Result<(PathBuf, PathBuf), String> {
    let (mut old, mut new) = (String::new(), String::new());
    let mut seen_eq = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        let part = if seen_eq { &mut new } else { &mut old };
        match c {
            '\\' if chars.clone().next() == Some('=') => part.extend(chars.next()),
            '=' if seen_eq => return Err("multiple \"=\" signs in tablespace mapping".into()),
            '=' => seen_eq = true,
            c => part.push(c),
        }
    }
    if !seen_eq || old.is_empty() || new.is_empty() {
        return Err(format!(
            "invalid tablespace mapping format \"{s}\", must be \"OLDDIR=NEWDIR\""
        ));
    }
    for (which, p) in [("old", &old), ("new", &new)] {
        if !Path::new(p).is_absolute() {
            return Err(format!(
                "{which} directory is not an absolute path in tablespace mapping: {p}"
            ));
        }
    }
    Ok((PathBuf::from(old), PathBuf::from(new)))
}

/// The whole backup (module doc, steps 1 to 4); on failure what it created is gone
/// (rule 1).
pub fn run(opts: &Options, progress: &mut dyn Progress) -> Result<Summary, String> {
    let mut cleanup = Cleanup::default();
    cleanup.claim(&opts.dir)?;
    let result = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))
        .and_then(|rt| rt.block_on(backup(opts, &mut cleanup, progress)))
        .and_then(|s| {
            if opts.write_recovery_conf {
                write_recovery_conf(&opts.dir, &opts.conninfo)?;
            }
            sync_tree(&opts.dir)?;
            for (dir, _) in cleanup.dirs.iter().filter(|(d, _)| *d != opts.dir) {
                sync_tree(dir)?; // the tablespaces' targets
            }
            Ok(s)
        });
    if result.is_err() {
        cleanup.remove();
    }
    result
}

/// The directories a run made its own (rule 1): each with whether it created it.
#[derive(Default)]
struct Cleanup {
    dirs: Vec<(PathBuf, bool)>,
}

impl Cleanup {
    /// An absent directory is created (0700), an empty one taken; anything else is
    /// refused.
    fn claim(&mut self, dir: &Path) -> Result<(), String> {
        match fs::read_dir(dir) {
            Ok(mut entries) => {
                if entries.next().is_some() {
                    return Err(format!(
                        "directory \"{}\" exists but is not empty",
                        dir.display()
                    ));
                }
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|e| {
                    format!("could not set permissions of \"{}\": {e}", dir.display())
                })?;
                self.dirs.push((dir.to_path_buf(), false));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                make_dir(dir)?;
                self.dirs.push((dir.to_path_buf(), true));
            }
            Err(e) => {
                return Err(format!(
                    "could not access directory \"{}\": {e}",
                    dir.display()
                ))
            }
        }
        Ok(())
    }

    /// Removes what the run wrote: created directories whole, the contents of the
    /// others. Best effort: a failure here is not the error reported.
    fn remove(&self) {
        for (dir, created) in self.dirs.iter().rev() {
            if *created {
                let _ = fs::remove_dir_all(dir);
                continue;
            }
            for e in fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                let _ = match e.file_type() {
                    Ok(t) if t.is_dir() => fs::remove_dir_all(&p),
                    _ => fs::remove_file(&p),
                };
            }
        }
    }
}

fn make_dir(dir: &Path) -> Result<(), String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| format!("could not create directory \"{}\": {e}", dir.display()))
}

fn disk<'a>(what: &str, path: &'a Path) -> impl Fn(std::io::Error) -> String + 'a {
    let what = what.to_string();
    move |e| format!("could not {what} \"{}\": {e}", path.display())
}

/// One tablespace of the tablespace result set, with where it goes.
#[derive(Clone, Debug)]
struct Tablespace {
    oid: String,
    location: PathBuf,
    target: PathBuf,
}

/// Steps 1 to 4 on the runtime.
async fn backup(
    opts: &Options,
    cleanup: &mut Cleanup,
    progress: &mut dyn Progress,
) -> Result<Summary, String> {
    let mut settings = ReceiverSettings::new(opts.conninfo.clone());
    settings.application_name = "strata basebackup".into();
    let mut sock = walreceiver::connect(&settings).await?;
    let seg_bytes = segment_size(&mut sock).await?;
    query(&mut sock, &command(opts)).await?;
    let started = result_set(&mut sock)
        .await
        .map_err(|e| format!("could not initiate base backup: {e}"))?;
    let (start, timeline) = position(&started, "start")?;
    let rows = result_set(&mut sock)
        .await
        .map_err(|e| format!("could not get backup header: {e}"))?;
    let (spcs, total) = tablespaces(&rows, &opts.tablespace_mappings)?;
    for s in &spcs {
        cleanup.claim(&s.target)?;
    }
    progress.start(total);
    let (end_tx, end_rx) = watch::channel(None);
    let wal_dir = opts.dir.join("pg_wal");
    let mut wal = tokio::spawn(stream_wal(
        settings, wal_dir, seg_bytes, start, timeline, end_rx,
    ));
    let _abort = AbortOnDrop(wal.abort_handle());
    let mut ex = Extract::new(&opts.dir, spcs);
    let end = tokio::select! {
        r = receive(&mut sock, &mut ex, progress) => r?,
        w = &mut wal => return Err(match w {
            Ok(Err(e)) => e,
            Ok(Ok(_)) => "the WAL stream ended before the backup did".into(),
            Err(e) => format!("the WAL stream failed: {e}"),
        }),
    };
    progress.finish();
    let _ = end_tx.send(Some(end));
    let wal_segments = wal
        .await
        .map_err(|e| format!("the WAL stream failed: {e}"))??;
    terminate(&mut sock).await;
    Ok(Summary {
        start,
        end,
        timeline,
        bytes: ex.done,
        wal_segments,
    })
}

/// Aborts the WAL stream's task when the backup ends without it.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The BASE_BACKUP command (PostgreSQL 15's syntax).
fn command(opts: &Options) -> String {
    format!(
        "BASE_BACKUP (LABEL '{}', PROGRESS, CHECKPOINT '{}', WAIT false, MANIFEST '{}', TABLESPACE_MAP false)",
        opts.label.replace('\'', "''"),
        if opts.fast { "fast" } else { "spread" },
        if opts.manifest { "yes" } else { "no" },
    )
}

/// `SHOW wal_segment_size`, in bytes.
async fn segment_size(sock: &mut Socket) -> Result<u64, String> {
    let rows = walreceiver::simple_query(sock, "SHOW wal_segment_size")
        .await
        .map_err(|e| format!("could not fetch WAL segment size: {e}"))?;
    let text = rows
        .first()
        .and_then(|r| r.first().cloned().flatten())
        .ok_or("could not fetch WAL segment size: no value")?;
    let bytes = strata_types::units::parse_memory("wal_segment_size", &text, 1)
        .map_err(|e| format!("could not fetch WAL segment size: {e}"))?;
    if !bytes.is_power_of_two() || bytes < TAR_BLOCK as u64 {
        return Err(format!("invalid WAL segment size {text}"));
    }
    Ok(bytes)
}

async fn query(sock: &mut Socket, text: &str) -> Result<(), String> {
    let mut buf = BytesMut::new();
    frontend::query(text, &mut buf).map_err(|e| e.to_string())?;
    walreceiver::send(sock, buf).await
}

/// The rows of one result set, up to its CommandComplete.
async fn result_set(sock: &mut Socket) -> Result<Vec<Vec<Option<String>>>, String> {
    let mut rows = Vec::new();
    loop {
        match walreceiver::recv(sock).await? {
            Backend::Msg(Message::DataRow(row)) => rows.push(walreceiver::data_row(row.buffer())?),
            Backend::Msg(Message::CommandComplete(_)) => return Ok(rows),
            Backend::Msg(Message::RowDescription(_) | Message::ParameterStatus(_))
            | Backend::Notice => {}
            Backend::Error(e) => return Err(e),
            _ => return Err("unexpected message from server".into()),
        }
    }
}

/// A (recptr, tli) result set.
fn position(rows: &[Vec<Option<String>>], which: &str) -> Result<(Lsn, u32), String> {
    let bad = || format!("invalid backup {which} position from server");
    let row = rows.first().filter(|_| rows.len() == 1).ok_or_else(bad)?;
    let field = |i: usize| row.get(i).cloned().flatten().ok_or_else(bad);
    let lsn = field(0)?.parse::<Lsn>().map_err(|_| bad())?;
    let tli = field(1)?.parse::<u32>().map_err(|_| bad())?;
    Ok((lsn, tli))
}

/// The tablespace result set: each tablespace with its target (its mapping, else its
/// location), and the estimated size in bytes.
fn tablespaces(
    rows: &[Vec<Option<String>>],
    mappings: &[(PathBuf, PathBuf)],
) -> Result<(Vec<Tablespace>, u64), String> {
    let mut out = Vec::new();
    let mut total = 0u64;
    for row in rows {
        let col = |i: usize| row.get(i).cloned().flatten();
        total += col(2).and_then(|k| k.parse::<u64>().ok()).unwrap_or(0) * 1024;
        let (Some(oid), Some(location)) = (col(0), col(1)) else {
            continue; // the data directory
        };
        if oid.is_empty() || !oid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("invalid tablespace oid \"{oid}\" from server"));
        }
        let location = PathBuf::from(location);
        let target = mappings
            .iter()
            .find(|(old, _)| *old == location)
            .map_or_else(|| location.clone(), |(_, new)| new.clone());
        out.push(Tablespace {
            oid,
            location,
            target,
        });
    }
    Ok((out, total))
}

/// The COPY OUT stream (step 3), then the end result set: the end LSN.
async fn receive(
    sock: &mut Socket,
    ex: &mut Extract,
    progress: &mut dyn Progress,
) -> Result<Lsn, String> {
    loop {
        match walreceiver::recv(sock).await? {
            Backend::Msg(Message::CopyOutResponse(_)) => {}
            Backend::Msg(Message::CopyData(d)) => {
                if let Some(done) = ex.copy_data(d.data())? {
                    progress.update(done);
                }
            }
            Backend::Msg(Message::CopyDone) => break,
            Backend::Msg(Message::ParameterStatus(_)) | Backend::Notice => {}
            Backend::Error(e) => return Err(format!("could not get COPY data stream: {e}")),
            _ => return Err("unexpected message in the base backup stream".into()),
        }
    }
    ex.close()?;
    let rows = result_set(sock)
        .await
        .map_err(|e| format!("could not get write-ahead log end position from server: {e}"))?;
    let (end, _) = position(&rows, "end")?;
    loop {
        match walreceiver::recv(sock).await? {
            Backend::Msg(Message::ReadyForQuery(_)) => return Ok(end),
            Backend::Error(e) => return Err(format!("backup failed: {e}")),
            _ => {}
        }
    }
}

/// Terminate, not waiting for anything.
async fn terminate(sock: &mut Socket) {
    let mut bye = BytesMut::new();
    frontend::terminate(&mut bye);
    let _ = tokio::time::timeout(Duration::from_secs(1), walreceiver::send(sock, bye)).await;
}

/// Where the COPY OUT stream's messages go.
struct Extract {
    dir: PathBuf,
    spcs: Vec<Tablespace>,
    untar: Option<Untar>,
    manifest: Option<fs::File>,
    /// Archive bytes received.
    done: u64,
}

impl Extract {
    fn new(dir: &Path, spcs: Vec<Tablespace>) -> Extract {
        Extract {
            dir: dir.to_path_buf(),
            spcs,
            untar: None,
            manifest: None,
            done: 0,
        }
    }

    /// One CopyData message; `Some(bytes)` for a progress message.
    fn copy_data(&mut self, data: &[u8]) -> Result<Option<u64>, String> {
        let (kind, body) = data.split_first().ok_or("empty COPY message")?;
        match kind {
            b'n' => {
                self.close()?;
                let mut parts = body.split(|b| *b == 0);
                let name = String::from_utf8_lossy(parts.next().unwrap_or_default());
                let location = String::from_utf8_lossy(parts.next().unwrap_or_default());
                self.untar = Some(self.archive(&name, &location)?);
            }
            b'd' => {
                if let Some(m) = self.manifest.as_mut() {
                    let path = self.dir.join("backup_manifest");
                    m.write_all(body).map_err(disk("write file", &path))?;
                } else if let Some(u) = self.untar.as_mut() {
                    self.done += body.len() as u64;
                    u.feed(body)?;
                } else {
                    return Err("COPY data before the first archive".into());
                }
            }
            b'p' => {
                let b: [u8; 8] = body.try_into().map_err(|_| "invalid progress message")?;
                return Ok(Some(u64::try_from(i64::from_be_bytes(b)).unwrap_or(0)));
            }
            b'm' => {
                self.close()?;
                let path = self.dir.join("backup_manifest");
                self.manifest = Some(create_file(&path)?);
            }
            k => {
                return Err(format!(
                    "unrecognized archive stream message type '{}'",
                    char::from(*k)
                ))
            }
        }
        Ok(None)
    }

    /// The archive `name` (an `n` message): base.tar into the directory, a
    /// tablespace's into its target.
    fn archive(&self, name: &str, location: &str) -> Result<Untar, String> {
        if location.is_empty() {
            let links = self
                .spcs
                .iter()
                .map(|s| (s.oid.clone(), s.location.clone(), s.target.clone()))
                .collect();
            return Ok(Untar::new(self.dir.clone(), links));
        }
        let spc = self
            .spcs
            .iter()
            .find(|s| s.location == Path::new(location))
            .ok_or_else(|| {
                format!("archive \"{name}\" for an unknown tablespace \"{location}\"")
            })?;
        Ok(Untar::new(spc.target.clone(), Vec::new()))
    }

    /// Ends the current archive (it must be whole) or the manifest.
    fn close(&mut self) -> Result<(), String> {
        if let Some(u) = self.untar.take() {
            u.close()?;
        }
        if let Some(m) = self.manifest.take() {
            m.sync_all()
                .map_err(disk("fsync file", &self.dir.join("backup_manifest")))?;
        }
        Ok(())
    }
}

/// A new file, 0600 (rule 2).
fn create_file(path: &Path) -> Result<fs::File, String> {
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(disk("create file", path))
}

/// A tar archive extracted as it arrives, block by block (rule 2).
struct Untar {
    root: PathBuf,
    /// base.tar's links: (oid, original location, target).
    links: Vec<(String, PathBuf, PathBuf)>,
    /// Links made so far, relative to the root: nothing is extracted through them.
    made_links: Vec<PathBuf>,
    header: Vec<u8>,
    /// The file being written (None: data skipped), its path, and the bytes left of
    /// its data and of the padding after it.
    file: Option<(fs::File, PathBuf)>,
    data_left: u64,
    pad_left: u64,
    ended: bool,
}

impl Untar {
    fn new(root: PathBuf, links: Vec<(String, PathBuf, PathBuf)>) -> Untar {
        Untar {
            root,
            links,
            made_links: Vec::new(),
            header: Vec::with_capacity(TAR_BLOCK),
            file: None,
            data_left: 0,
            pad_left: 0,
            ended: false,
        }
    }

    fn feed(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            if self.data_left > 0 {
                let n = usize::try_from(self.data_left)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                if let Some((f, path)) = self.file.as_mut() {
                    f.write_all(&data[..n]).map_err(disk("write file", path))?;
                }
                self.data_left -= n as u64;
                data = &data[n..];
                if self.data_left == 0 {
                    self.file = None;
                }
            } else if self.pad_left > 0 {
                let n = usize::try_from(self.pad_left)
                    .unwrap_or(usize::MAX)
                    .min(data.len());
                self.pad_left -= n as u64;
                data = &data[n..];
            } else if self.ended {
                if data.iter().any(|b| *b != 0) {
                    return Err("unexpected data after the end of a tar archive".into());
                }
                return Ok(());
            } else {
                let n = (TAR_BLOCK - self.header.len()).min(data.len());
                self.header.extend_from_slice(&data[..n]);
                data = &data[n..];
                if self.header.len() == TAR_BLOCK {
                    let block = std::mem::take(&mut self.header);
                    self.entry(&block)?;
                }
            }
        }
        Ok(())
    }

    /// One header block: a member, or the zero block that ends the archive.
    fn entry(&mut self, block: &[u8]) -> Result<(), String> {
        if block.iter().all(|b| *b == 0) {
            self.ended = true;
            return Ok(());
        }
        let h = tar::Header::from_byte_slice(block);
        check_sum(block, h)?;
        let name = h
            .path()
            .map_err(|e| format!("invalid tar member name: {e}"))?
            .into_owned();
        let rel = self.member_path(&name)?;
        let path = self.root.join(&rel);
        let size = h
            .entry_size()
            .map_err(|e| format!("invalid tar header for \"{}\": {e}", name.display()))?;
        self.data_left = size;
        self.pad_left = (TAR_BLOCK as u64 - size % TAR_BLOCK as u64) % TAR_BLOCK as u64;
        match h.entry_type() {
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                if let Some(parent) = path.parent() {
                    make_dir(parent)?;
                }
                let f = create_file(&path)?;
                if size > 0 {
                    self.file = Some((f, path));
                }
            }
            tar::EntryType::Directory => make_dir(&path)?,
            tar::EntryType::Symlink => {
                let original = h
                    .link_name()
                    .map_err(|e| format!("invalid link target of \"{}\": {e}", name.display()))?
                    .map(|l| l.into_owned())
                    .unwrap_or_default();
                self.link(&rel, &original, &path)?;
            }
            t => {
                return Err(format!(
                    "unsupported tar member type {:?} for \"{}\"",
                    t,
                    name.display()
                ))
            }
        }
        Ok(())
    }

    /// A member's path relative to the root (rule 2).
    fn member_path(&self, name: &Path) -> Result<PathBuf, String> {
        let mut rel = PathBuf::new();
        for c in name.components() {
            match c {
                Component::Normal(p) => rel.push(p),
                Component::CurDir => {}
                _ => {
                    return Err(format!(
                        "tar member \"{}\" is outside the archive's directory",
                        name.display()
                    ))
                }
            }
        }
        if rel.as_os_str().is_empty() {
            return Err("tar member with an empty name".into());
        }
        if self.made_links.iter().any(|l| rel.starts_with(l)) {
            return Err(format!(
                "tar member \"{}\" is behind a symbolic link",
                name.display()
            ));
        }
        Ok(rel)
    }

    /// `pg_tblspc/<oid>` of base.tar, pointing to the tablespace's target (rule 2).
    fn link(&mut self, rel: &Path, original: &Path, path: &Path) -> Result<(), String> {
        let oid = rel
            .strip_prefix("pg_tblspc")
            .ok()
            .and_then(|r| r.to_str())
            .filter(|o| !o.is_empty() && !o.contains('/'))
            .ok_or_else(|| format!("unexpected symbolic link \"{}\"", rel.display()))?;
        let target = self
            .links
            .iter()
            .find(|(o, loc, _)| o == oid || loc == original)
            .map(|(_, _, t)| t.clone())
            .ok_or_else(|| {
                format!(
                    "symbolic link \"{}\" to an unknown tablespace",
                    rel.display()
                )
            })?;
        if let Some(parent) = path.parent() {
            make_dir(parent)?;
        }
        std::os::unix::fs::symlink(&target, path).map_err(disk("create symbolic link", path))?;
        self.made_links.push(rel.to_path_buf());
        Ok(())
    }

    /// The archive must have ended with its zero block, no member cut short.
    fn close(self) -> Result<(), String> {
        if self.ended && self.data_left == 0 {
            Ok(())
        } else {
            Err(format!(
                "tar archive for \"{}\" ended prematurely",
                self.root.display()
            ))
        }
    }
}

/// A tar header's checksum: the bytes summed with the checksum field as spaces.
fn check_sum(block: &[u8], h: &tar::Header) -> Result<(), String> {
    let want = h
        .cksum()
        .map_err(|e| format!("invalid tar header checksum: {e}"))?;
    let got: u32 = block
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if (148..156).contains(&i) {
                32
            } else {
                u32::from(*b)
            }
        })
        .sum();
    if got != want {
        return Err("invalid tar header checksum".into());
    }
    Ok(())
}

/// The WAL stream (step 2, rule 3): the number of segments written.
async fn stream_wal(
    settings: ReceiverSettings,
    dir: PathBuf,
    seg_bytes: u64,
    start: Lsn,
    timeline: u32,
    end: watch::Receiver<Option<Lsn>>,
) -> Result<u64, String> {
    let fail = |e: String| format!("could not stream write-ahead log: {e}");
    let mut sock = walreceiver::connect(&settings).await.map_err(fail)?;
    let from = Lsn(start.0 - start.0 % seg_bytes);
    query(
        &mut sock,
        &format!("START_REPLICATION PHYSICAL {from} TIMELINE {timeline}"),
    )
    .await
    .map_err(fail)?;
    loop {
        match walreceiver::recv(&mut sock).await.map_err(fail)? {
            Backend::CopyBoth => break,
            Backend::Error(e) => return Err(fail(e)),
            Backend::Notice | Backend::Msg(Message::ParameterStatus(_)) => {}
            _ => return Err(fail("unexpected response to START_REPLICATION".into())),
        }
    }
    make_dir(&dir)?;
    let mut wal = WalFiles {
        dir,
        seg_bytes,
        timeline,
        next: from,
        cur: None,
        segments: 0,
    };
    receive_wal(&mut sock, &mut wal, end).await.map_err(fail)?;
    wal.sync()?;
    status_update(&mut sock, wal.next).await.map_err(fail)?;
    let mut done = BytesMut::new();
    frontend::copy_done(&mut done);
    walreceiver::send(&mut sock, done).await.map_err(fail)?;
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(m) = walreceiver::recv(&mut sock).await {
            if matches!(m, Backend::Msg(Message::ReadyForQuery(_))) {
                break;
            }
        }
    })
    .await;
    terminate(&mut sock).await;
    sync_dir(&wal.dir)?;
    Ok(wal.segments)
}

/// The copy-both loop: XLogData written, keepalives answered, a status update every
/// [`STATUS_INTERVAL`], until written up to the end LSN (the end of the BACKUP_END
/// record) once it is known.
async fn receive_wal(
    sock: &mut Socket,
    wal: &mut WalFiles,
    end: watch::Receiver<Option<Lsn>>,
) -> Result<(), String> {
    let (mut last_status, mut last_recv) = (Instant::now(), Instant::now());
    let mut end_known = false;
    loop {
        if let Some(e) = *end.borrow() {
            if wal.next >= e {
                return Ok(());
            }
            if !end_known {
                (end_known, last_recv) = (true, Instant::now());
            }
        }
        let mut reply = last_status.elapsed() >= STATUS_INTERVAL;
        match tokio::time::timeout(WAL_TICK, walreceiver::recv(sock)).await {
            Err(_) if end_known && last_recv.elapsed() >= WAL_TIMEOUT => {
                return Err(format!(
                    "the primary sent no WAL for {} s, stopped at {} before the backup's end",
                    WAL_TIMEOUT.as_secs(),
                    wal.next
                ))
            }
            Err(_) => {}
            Ok(m) => {
                last_recv = Instant::now();
                reply |= wal_message(m?, wal)?;
            }
        }
        if reply {
            wal.sync()?;
            status_update(sock, wal.next).await?;
            last_status = Instant::now();
        }
    }
}

/// One message of the copy-both stream; whether the primary asked for a reply.
fn wal_message(m: Backend, wal: &mut WalFiles) -> Result<bool, String> {
    let body = match m {
        Backend::Msg(Message::CopyData(d)) => d.into_bytes(),
        Backend::Msg(Message::CopyDone) => {
            return Err(format!(
                "the primary ended the stream at {} before the backup's end",
                wal.next
            ))
        }
        Backend::Notice => return Ok(false),
        Backend::Error(e) => return Err(e),
        _ => return Err("unexpected message type in the WAL stream".into()),
    };
    let be_u64 = |at: usize| -> Option<u64> {
        Some(u64::from_be_bytes(body.get(at..at + 8)?.try_into().ok()?))
    };
    match body.first() {
        Some(b'w') if body.len() >= 25 => {
            let start = Lsn(be_u64(1).unwrap_or(0));
            if start != wal.next {
                return Err(format!(
                    "received WAL at {start} from the primary, expected {}",
                    wal.next
                ));
            }
            wal.write(&body[25..])?;
            Ok(false)
        }
        Some(b'k') if body.len() >= 18 => Ok(body[17] != 0),
        _ => Err("invalid streaming message".into()),
    }
}

/// A standby status update: written and flushed up to `at`, nothing applied.
async fn status_update(sock: &mut Socket, at: Lsn) -> Result<(), String> {
    let mut msg = BytesMut::with_capacity(34);
    msg.put_u8(b'r');
    msg.put_u64(at.0);
    msg.put_u64(at.0);
    msg.put_u64(0);
    msg.put_i64(walreceiver::pg_now());
    msg.put_u8(0);
    let mut buf = BytesMut::new();
    frontend::CopyData::new(msg.freeze())
        .map_err(|e| e.to_string())?
        .write(&mut buf);
    walreceiver::send(sock, buf).await
}

/// The WAL written into `pg_wal`: segment files created whole and zero-filled.
struct WalFiles {
    dir: PathBuf,
    seg_bytes: u64,
    /// The timeline streamed: its segments' names.
    timeline: u32,
    /// Where the next XLogData must start.
    next: Lsn,
    cur: Option<(u64, fs::File, PathBuf)>,
    segments: u64,
}

impl WalFiles {
    fn write(&mut self, mut data: &[u8]) -> Result<(), String> {
        while !data.is_empty() {
            let (segno, off) = (self.next.0 / self.seg_bytes, self.next.0 % self.seg_bytes);
            let n = usize::try_from(self.seg_bytes - off)
                .unwrap_or(usize::MAX)
                .min(data.len());
            let (f, path) = self.segment(segno)?;
            f.write_all_at(&data[..n], off)
                .map_err(disk("write WAL file", path))?;
            self.next += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// The open segment `segno`: the previous one fsynced and closed, a new one
    /// created whole and zero-filled.
    fn segment(&mut self, segno: u64) -> Result<(&fs::File, &Path), String> {
        if !matches!(&self.cur, Some((s, _, _)) if *s == segno) {
            self.sync()?;
            let path = self.dir.join(strata_wal::segment_file_name(
                self.timeline,
                segno,
                self.seg_bytes,
            ));
            let f = create_file(&path)?;
            let zeros = vec![0u8; 1 << 20];
            let mut at = 0u64;
            while at < self.seg_bytes {
                let n = usize::try_from(self.seg_bytes - at)
                    .unwrap_or(usize::MAX)
                    .min(zeros.len());
                f.write_all_at(&zeros[..n], at)
                    .map_err(disk("zero-fill WAL file", &path))?;
                at += n as u64;
            }
            self.cur = Some((segno, f, path));
            self.segments += 1;
        }
        match &self.cur {
            Some((_, f, p)) => Ok((f, p)),
            None => Err("no open WAL file".into()),
        }
    }

    fn sync(&self) -> Result<(), String> {
        match &self.cur {
            Some((_, f, path)) => f.sync_all().map_err(disk("fsync WAL file", path)),
            None => Ok(()),
        }
    }
}

/// `-R`: `standby.signal` and `primary_conninfo` appended to `postgresql.auto.conf`.
fn write_recovery_conf(dir: &Path, ci: &Conninfo) -> Result<(), String> {
    let signal = dir.join("standby.signal");
    create_file(&signal)?;
    let conf = dir.join("postgresql.auto.conf");
    let mut f = fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&conf)
        .map_err(disk("open file", &conf))?;
    let line = format!(
        "primary_conninfo = '{}'\n",
        conninfo_string(ci).replace('\'', "''")
    );
    f.write_all(line.as_bytes())
        .map_err(disk("write file", &conf))
}

/// The keyword form of the connection, password included (rule 5).
pub fn conninfo_string(ci: &Conninfo) -> String {
    let kv = walreceiver::kv;
    let mut parts = vec![kv("user", &ci.user)];
    if let Some(p) = &ci.password {
        parts.push(kv("password", p));
    }
    if let Some(p) = &ci.passfile {
        parts.push(kv("passfile", p));
    }
    if let Some(a) = &ci.application_name {
        parts.push(kv("application_name", a));
    }
    if let Some(t) = ci.connect_timeout {
        parts.push(kv("connect_timeout", &t.as_secs().to_string()));
    }
    parts.push(kv("host", &ci.host));
    parts.push(kv("port", &ci.port.to_string()));
    if let Some(m) = &ci.sslmode {
        parts.push(kv("sslmode", m));
    }
    parts.extend(ci.other.iter().map(|(k, v)| kv(k, v)));
    parts.join(" ")
}

/// fsyncs every file and directory under `root` (links not followed: rule 4).
fn sync_tree(root: &Path) -> Result<(), String> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).map_err(disk("read directory", &dir))? {
            let e = e.map_err(disk("read directory", &dir))?;
            let t = e.file_type().map_err(disk("stat", &e.path()))?;
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() {
                let p = e.path();
                fs::File::open(&p)
                    .and_then(|f| f.sync_all())
                    .map_err(disk("fsync file", &p))?;
            }
        }
        sync_dir(&dir)?;
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<(), String> {
    fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(disk("fsync directory", dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tablespace_mappings() {
        assert_eq!(
            parse_mapping("/a/b=/c\\=d").unwrap(),
            (PathBuf::from("/a/b"), PathBuf::from("/c=d"))
        );
        assert!(parse_mapping("/a").is_err());
        assert!(parse_mapping("a=/b").is_err());
        assert!(parse_mapping("/a=/b=/c").is_err());
    }

    #[test]
    fn conninfo_string_round_trips() {
        let ci = conninfo(
            Some(r"host=h user=u password='it\'s a'"),
            Some("127.0.0.1"),
            Some(5433),
            None,
        )
        .unwrap();
        let s = conninfo_string(&ci);
        assert_eq!(Conninfo::parse(&s).unwrap(), ci);
        assert!(s.contains("host=127.0.0.1 port=5433"), "{s}");
    }

    #[test]
    fn wal_crosses_segments_into_whole_zeroed_files() {
        let dir = tempfile::tempdir().unwrap();
        let seg = 1u64 << 16;
        let mut wal = WalFiles {
            dir: dir.path().to_path_buf(),
            seg_bytes: seg,
            timeline: 1,
            next: Lsn(3 * seg - 10),
            cur: None,
            segments: 0,
        };
        wal.write(&[9u8; 30]).unwrap();
        wal.sync().unwrap();
        assert_eq!((wal.next, wal.segments), (Lsn(3 * seg + 20), 2));
        let read = |segno: u64| {
            fs::read(
                dir.path()
                    .join(strata_wal::segment_file_name(1, segno, seg)),
            )
            .unwrap()
        };
        let (a, b) = (read(2), read(3));
        assert_eq!((a.len() as u64, b.len() as u64), (seg, seg));
        assert!(a[..a.len() - 10].iter().all(|x| *x == 0) && a[a.len() - 10..] == [9u8; 10]);
        assert!(b[..20] == [9u8; 20] && b[20..].iter().all(|x| *x == 0));
    }

    fn tar_of(members: &[(&str, tar::EntryType, &[u8], Option<&str>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, kind, data, link) in members {
            let mut h = tar::Header::new_ustar();
            h.set_path(name).unwrap();
            h.set_entry_type(*kind);
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            if let Some(l) = link {
                h.set_link_name(l).unwrap();
            }
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.extend_from_slice(&[0u8; 1024]);
        out
    }

    #[test]
    fn untar_in_small_pieces() {
        let dir = tempfile::tempdir().unwrap();
        let spc = dir.path().join("spc");
        let data = tar_of(&[
            ("global", tar::EntryType::Directory, b"", None),
            (
                "global/pg_control",
                tar::EntryType::Regular,
                &[7u8; 700],
                None,
            ),
            (
                "pg_tblspc/16400",
                tar::EntryType::Symlink,
                b"",
                Some("/old/spc"),
            ),
        ]);
        let links = vec![("16400".into(), PathBuf::from("/old/spc"), spc.clone())];
        let mut u = Untar::new(dir.path().to_path_buf(), links);
        for chunk in data.chunks(100) {
            u.feed(chunk).unwrap();
        }
        u.close().unwrap();
        let f = dir.path().join("global/pg_control");
        assert_eq!(fs::read(&f).unwrap(), vec![7u8; 700]);
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(
            fs::read_link(dir.path().join("pg_tblspc/16400")).unwrap(),
            spc
        );
        for bad in ["../x", "pg_tblspc/16400/x"] {
            let mut u = Untar::new(
                dir.path().to_path_buf(),
                vec![("16400".into(), PathBuf::from("/old/spc"), spc.clone())],
            );
            u.made_links.push(PathBuf::from("pg_tblspc/16400"));
            let mut h = tar::Header::new_ustar();
            h.as_ustar_mut().unwrap().name[..bad.len()].copy_from_slice(bad.as_bytes());
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(0);
            h.set_cksum();
            assert!(u.feed(h.as_bytes()).is_err(), "{bad}");
        }
        let mut cut = Untar::new(dir.path().join("cut"), Vec::new());
        cut.feed(&data[..600]).unwrap();
        assert!(cut.close().is_err());
    }
}
