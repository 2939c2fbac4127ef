//! `strata start` and `strata stop`: the server process.
//!
//! Owns the server's life: the data directory (created on first start, with its
//! default `pg_hba.conf`), its configuration (`strata.conf`, then `-c` flags), the
//! lock file `postmaster.pid`, the listening socket, logging, reload on SIGHUP
//! (`reload`), and shutdown on SIGINT/SIGTERM.
//!
//! Invariants:
//! 1. One server per data directory: `postmaster.pid` is created exclusively and
//!    holds the pid; a file left by a dead process is replaced, one of a live one
//!    refuses the start.
//! 2. A clean shutdown terminates the sessions (their transactions abort), writes a
//!    shutdown checkpoint, and only then removes the lock file; `strata stop` waits
//!    for that removal.
//! 3. Startup recovery happens before the socket is bound: no client sees a
//!    database that is still replaying.

use crate::config::{self, ServerConfig};
use crate::pg::serve::{serve_socket, Unauthenticated};
use crate::pg::{auth, Handlers};
use parking_lot::Mutex;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use strata_engine::{Engine, LogSink};
use strata_sql::session::{Registry, ServerState};

/// The lock file's name, as PostgreSQL's.
pub const LOCK_FILE: &str = "postmaster.pid";

fn now_stamp() -> String {
    let s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    strata_engine::utc_timestamp(s)
}

/// A log line as PostgreSQL writes it: time, severity, message.
fn format_line(line: &str) -> String {
    let has_severity = [
        "LOG:", "WARNING:", "ERROR:", "FATAL:", "PANIC:", "NOTICE:", "HINT:", "DETAIL:",
    ]
    .iter()
    .any(|p| line.starts_with(p));
    if has_severity {
        format!("{} {line}", now_stamp())
    } else {
        format!("{} LOG:  {line}", now_stamp())
    }
}

fn log_sink(data: &Path, cfg: &ServerConfig) -> Result<LogSink, String> {
    match &cfg.log_directory {
        None => Ok(Arc::new(|line: &str| eprintln!("{}", format_line(line)))),
        Some(d) => {
            let dir = if Path::new(d).is_absolute() {
                PathBuf::from(d)
            } else {
                data.join(d)
            };
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .map_err(|e| {
                    format!("could not create log directory \"{}\": {e}", dir.display())
                })?;
            let path = dir.join("strata.log");
            let f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&path)
                .map_err(|e| format!("could not open log file \"{}\": {e}", path.display()))?;
            let f = Mutex::new(f);
            Ok(Arc::new(move |line: &str| {
                let _ = writeln!(f.lock(), "{}", format_line(line));
            }))
        }
    }
}

/// Whether a process is running (a zombie, exited but not yet reaped, is not).
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s
            .rsplit_once(") ")
            .map(|(_, rest)| !rest.starts_with('Z') && !rest.starts_with('X'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

/// Creates the lock file, or says which server holds the directory.
fn take_lock(data: &Path, port: u16) -> Result<PathBuf, String> {
    let path = data.join(LOCK_FILE);
    for _ in 0..2 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let text = format!(
                    "{}\n{}\n{}\n{}\n",
                    std::process::id(),
                    data.display(),
                    SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_secs())
                        .unwrap_or(0),
                    port
                );
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| {
                        format!("could not write lock file \"{}\": {e}", path.display())
                    })?;
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let pid = read_pid(data);
                match pid {
                    Some(p) if p != std::process::id() as i32 && pid_alive(p) => {
                        return Err(format!(
                            "lock file \"{}\" already exists\nHINT:  Is another server (PID {p}) running in data directory \"{}\"?",
                            path.display(),
                            data.display()
                        ))
                    }
                    _ => {
                        // Stale: its process is gone (a crash). Replace it.
                        let _ = std::fs::remove_file(&path);
                    }
                }
            }
            Err(e) => {
                return Err(format!(
                    "could not create lock file \"{}\": {e}",
                    path.display()
                ))
            }
        }
    }
    Err(format!("could not create lock file \"{}\"", path.display()))
}

/// The pid in a data directory's lock file.
pub fn read_pid(data: &Path) -> Option<i32> {
    std::fs::read_to_string(data.join(LOCK_FILE))
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// Makes every file and directory this process creates private to its owner
/// (umask 0077, PostgreSQL's `PG_MODE_MASK_OWNER`): directories 0700, files 0600,
/// whichever crate creates them.
pub fn private_files() {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
}

/// Creates the data directory 0700, or makes an existing one 0700 (as initdb
/// "fixing permissions on existing directory").
pub fn make_data_dir(data: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let err = |e: std::io::Error| format!("could not create directory \"{}\": {e}", data.display());
    if data.is_dir() {
        let empty = std::fs::read_dir(data).map_err(err)?.next().is_none();
        if !empty {
            return Ok(()); // not ours to change: init refuses a non-empty directory
        }
        std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700)).map_err(err)
    } else {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(data)
            .map_err(err)
    }
}

/// Refuses a data directory that group may write or others may access at all
/// (PostgreSQL's `checkDataDir`: mode & 0027 must be 0).
pub fn check_data_dir_permissions(data: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(data).map_err(|e| {
        format!(
            "could not read permissions of directory \"{}\": {e}",
            data.display()
        )
    })?;
    if meta.permissions().mode() & 0o027 != 0 {
        return Err(format!(
            "data directory \"{}\" has invalid permissions\nDETAIL:  Permissions should be u=rwx (0700) or u=rwx,g=rx (0750).",
            data.display()
        ));
    }
    Ok(())
}

/// `strata start`: creates the cluster if needed, recovers, serves until a signal.
pub fn start(data: &Path, flags: &[String]) -> Result<(), String> {
    private_files();
    if !data.join("global").join("pg_control").exists() {
        make_data_dir(data)?;
        let mut s = config::ServerConfig::from_flags(None, flags)?.engine;
        s.log = Arc::new(|_: &str| {});
        Engine::init(data, s).map_err(|e| e.to_string())?;
        crate::reload::write_default_hba(data, "trust")?;
        eprintln!(
            "{} LOG:  created a new cluster in \"{}\" (databases template1, template0, postgres)",
            now_stamp(),
            data.display()
        );
    }
    let data = data
        .canonicalize()
        .map_err(|e| format!("data directory \"{}\": {e}", data.display()))?;
    check_data_dir_permissions(&data)?;
    let conf = data.join("strata.conf");
    let cfg = ServerConfig::from_flags(Some(&conf), flags)?;
    let lock = take_lock(&data, cfg.port)?;
    hba_for_an_older_cluster(&data)?;
    let result = serve(&data, cfg, &conf, flags);
    let _ = std::fs::remove_file(&lock);
    result
}

/// A cluster made before Strata had a role catalog (no `global/1260`) has no
/// `pg_hba.conf` either: it gets the default one, whose loopback method is what its
/// authentication was (SCRAM once a password was set in the old `global/pg_authid`,
/// trust before). Any other cluster without the file is refused at start, as
/// PostgreSQL refuses it.
fn hba_for_an_older_cluster(data: &Path) -> Result<(), String> {
    if data.join("pg_hba.conf").exists() || data.join("global").join("1260").exists() {
        return Ok(());
    }
    let old = std::fs::read_to_string(data.join("global").join("pg_authid")).unwrap_or_default();
    let passwords = old
        .lines()
        .any(|l| l.contains(':') && !l.starts_with("xid "));
    let method = if passwords { "scram-sha-256" } else { "trust" };
    crate::reload::write_default_hba(data, method)?;
    eprintln!(
        "{} LOG:  wrote pg_hba.conf ({method} for local connections) for a cluster made before Strata had one",
        now_stamp()
    );
    Ok(())
}

fn serve(data: &Path, cfg: ServerConfig, conf: &Path, flags: &[String]) -> Result<(), String> {
    let sink = log_sink(data, &cfg)?;
    // Reload rule 4: pg_hba.conf and TLS are checked before recovery starts.
    let live = Arc::new(crate::reload::Live::load(data, conf, flags, &cfg, &sink)?);
    let mut settings = cfg.engine.clone();
    settings.log = sink.clone();
    // Engine rule 7: after a PANIC (logged by the engine) the process ends; the next
    // start recovers from WAL. A panic anywhere is treated the same way: it may have
    // left pages locked or a change half applied, so no thread may carry on.
    settings.on_fatal = Arc::new(|_: &str| std::process::exit(3));
    let (hook, sessions) = drop_database_hook();
    settings.on_drop_database = Some(hook);
    let panic_sink = sink.clone();
    std::panic::set_hook(Box::new(move |info| {
        panic_sink(&format!(
            "PANIC:  {info}; terminating the server (restart recovers from WAL)\n{}",
            std::backtrace::Backtrace::force_capture()
        ));
        std::process::abort();
    }));
    // SIGHUP is caught from here on (its default action would end the process): one
    // that comes during recovery is a reload once the server serves.
    let (rt, mut hup) = runtime()?;
    let engine = Arc::new(Engine::open(data, settings).map_err(|e| e.to_string())?);
    if !engine.in_recovery() {
        migrate_authid_file(&engine, data, &sink)?;
    }
    let (server, shared, views) = server_state(&cfg, &engine, data, &sink, &live)?;
    let _ = sessions.set(Arc::downgrade(&server));
    let archiver = start_archiver(&engine, &cfg, &sink, &live)?;
    let max_connections = cfg.max_connections;
    let served: Result<(), String> = rt.block_on(async {
        let mut listeners = Vec::new();
        for addr in cfg.listen_addrs()? {
            let l = tokio::net::TcpListener::bind((addr.as_str(), cfg.port))
                .await
                .map_err(|e| format!("could not bind to \"{addr}\", port {}: {e}", cfg.port))?;
            sink(&format!("listening on {addr}, port {}", cfg.port));
            listeners.push(l);
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| e.to_string())?;
        let mut int = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
            .map_err(|e| e.to_string())?;
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        if let Some(r) = crate::standby::start_receiver(&engine, &cfg, &sink, stop_rx.clone())? {
            let _ = views.receiver.set(r);
        }
        let waiting = Unauthenticated::new(unauthenticated_capacity(max_connections));
        for l in listeners {
            let accept = Acceptor {
                engine: engine.clone(),
                server: server.clone(),
                waiting: waiting.clone(),
                max_connections,
                shared: shared.clone(),
                log: sink.clone(),
            };
            tokio::spawn(accept.run(l, stop_rx.clone()));
        }
        loop {
            tokio::select! {
                _ = term.recv() => break,
                _ = int.recv() => break,
                _ = hup.recv() => {
                    let live = live.clone();
                    let _ = tokio::task::spawn_blocking(move || live.reload()).await;
                }
            }
        }
        sink("received fast shutdown request");
        let _ = stop_tx.send(true);
        Ok(())
    });
    // Fast shutdown: end the sessions (their transactions abort), then checkpoint.
    server.registry.terminate_all();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.registry.count() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    rt.shutdown_timeout(Duration::from_secs(1));
    served?;
    if let Some((stop, thread)) = archiver {
        stop.store(true, std::sync::atomic::Ordering::Release);
        let _ = thread.join();
    }
    sink("shutting down");
    drop((server, shared, views)); // the views hold the engine too
    match Arc::try_unwrap(engine) {
        Ok(e) => e.close().map_err(|e| e.to_string())?,
        Err(e) => {
            // A backend is stuck: checkpoint anyway; recovery covers the rest.
            e.checkpoint().map_err(|e| e.to_string())?;
        }
    }
    sink("database system is shut down");
    Ok(())
}

/// The server's runtime (one worker: see docs/ARCHITECTURE.md), and SIGHUP caught
/// on it.
fn runtime() -> Result<(tokio::runtime::Runtime, tokio::signal::unix::Signal), String> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))?;
    let hup = {
        let _in_runtime = rt.enter();
        tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
            .map_err(|e| e.to_string())?
    };
    Ok((rt, hup))
}

/// Standby rule 9's hook: replay about to drop a database ends its sessions (57P04)
/// through the registry, once the server state exists (a weak reference: the engine
/// must not keep the server state alive).
fn drop_database_hook() -> (
    strata_engine::DropDatabaseHook,
    Arc<std::sync::OnceLock<std::sync::Weak<ServerState>>>,
) {
    let cell: Arc<std::sync::OnceLock<std::sync::Weak<ServerState>>> = Arc::default();
    let c = cell.clone();
    let hook: strata_engine::DropDatabaseHook = Arc::new(move |db: &str| {
        if let Some(s) = c.get().and_then(std::sync::Weak::upgrade) {
            s.registry.terminate_dropped_database(db);
        }
    });
    (hook, cell)
}

type States = (
    Arc<ServerState>,
    Arc<crate::pg::Shared>,
    Arc<crate::views::ServerViews>,
);

/// What the sessions, the protocol layer and the system views share.
fn server_state(
    cfg: &ServerConfig,
    engine: &Arc<Engine>,
    data: &Path,
    sink: &LogSink,
    live: &Arc<crate::reload::Live>,
) -> Result<States, String> {
    let syncrep = Arc::new(strata_sql::syncrep::SyncRep::new(
        &cfg.synchronous_standby_names,
    )?);
    let senders = crate::pg::walsender::WalSenders::new(cfg.max_wal_senders);
    let flushed = senders.flushed.clone();
    engine.on_wal_flushed(Arc::new(move |lsn| {
        flushed.send_replace(lsn);
    }));
    let held = senders.clone();
    engine.hold_horizon(Arc::new(move || held.feedback_horizon()));
    let views = Arc::new(crate::views::ServerViews {
        engine: engine.clone(),
        senders: senders.clone(),
        syncrep: syncrep.clone(),
        receiver: std::sync::OnceLock::new(),
        live: live.clone(),
    });
    let server = Arc::new(ServerState {
        syncrep,
        views: views.clone(),
        registry: Registry::default(),
        settings: show_list(cfg, engine, data),
        derive: auth::derive,
        log: sink.clone(),
        reserved_connections: cfg.superuser_reserved_connections,
    });
    let shared = Arc::new(crate::pg::Shared {
        mock_nonce: auth::load_mock_nonce(&*engine.settings().vfs, data)?.into(),
        senders,
        live: live.clone(),
    });
    Ok((server, shared, views))
}

/// The archiver thread, with `archive_mode = on` and an `archive_command` (archiver
/// rule 3); with no command, segments wait in pg_wal (PostgreSQL's behaviour), said once.
type Archiver = Option<(
    Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
)>;

fn start_archiver(
    engine: &Engine,
    cfg: &ServerConfig,
    sink: &LogSink,
    live: &Arc<crate::reload::Live>,
) -> Result<Archiver, String> {
    if !cfg.engine.archive_mode {
        // A standby's archiver finds nothing ready until it is promoted: received WAL
        // is its primary's to archive (archive_mode = always is not built).
        return Ok(None);
    }
    if cfg.archive_command.is_empty() {
        // The archiver starts all the same: a reload may set the command.
        sink("WARNING:  archive_mode enabled, yet archive_command is not set: WAL segments accumulate in pg_wal");
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let live = live.clone();
    let thread = crate::archiver::start(
        engine.settings().vfs.clone(),
        engine.data_dir().to_path_buf(),
        Arc::new(move || live.archive_command()),
        sink.clone(),
        stop.clone(),
    )
    .map_err(|e| format!("could not start the archiver: {e}"))?;
    Ok(Some((stop, thread)))
}

/// SHOW's list, with the values the cluster fixed at `init` (wal_segment_size) as
/// the cluster has them, not as this start's settings say.
fn show_list(cfg: &ServerConfig, engine: &Engine, data: &Path) -> Vec<(String, String, String)> {
    let mut list = cfg.show_list(data);
    for (name, value, _) in &mut list {
        if name == "wal_segment_size" {
            *value = strata_types::units::format_memory(engine.wal_segment_bytes());
        }
    }
    list
}

/// How many sockets may wait to authenticate at once (serve rule 2): enough that
/// every slot could be mid-handshake twice over, at least 64.
fn unauthenticated_capacity(max_connections: usize) -> usize {
    (2 * max_connections).max(64)
}

/// The accept loop of one listening socket.
struct Acceptor {
    engine: Arc<Engine>,
    server: Arc<ServerState>,
    waiting: Arc<Unauthenticated>,
    max_connections: usize,
    shared: Arc<crate::pg::Shared>,
    log: LogSink,
}

/// Whether an accept error means the process or system is out of descriptors or
/// memory (then waiting helps; retrying at once would spin).
fn out_of_resources(e: &std::io::Error) -> bool {
    // EMFILE 24, ENFILE 23, ENOBUFS 105, ENOMEM 12 (Linux).
    matches!(e.raw_os_error(), Some(24 | 23 | 105 | 12))
}

impl Acceptor {
    /// Accepts until `stop` changes. Out of file descriptors, it sleeps 100 ms
    /// between tries and logs once per episode, instead of spinning.
    async fn run(self, l: tokio::net::TcpListener, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut starved = false;
        loop {
            let acc = tokio::select! {
                _ = stop.changed() => break,
                acc = l.accept() => acc,
            };
            let sock = match acc {
                Ok((sock, _)) => sock,
                Err(e) => {
                    if out_of_resources(&e) {
                        if !starved {
                            (self.log)(&format!("LOG:  could not accept new connection: {e}"));
                            starved = true;
                        }
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    continue;
                }
            };
            if starved {
                (self.log)("LOG:  accepting new connections again");
                starved = false;
            }
            let _ = sock.set_nodelay(true);
            let ticket = self.waiting.admit();
            let Ok((sock, peer)) = with_peer(sock) else {
                continue;
            };
            let h = Handlers::new(
                self.engine.clone(),
                self.server.clone(),
                self.max_connections,
                self.shared.clone(),
                peer,
            );
            tokio::spawn(serve_socket(
                sock,
                h,
                ticket,
                self.shared.live.authentication_timeout(),
                self.log.clone(),
            ));
        }
    }
}

/// `strata stop`: signals the server of a data directory and waits for it to exit.
pub fn stop(data: &Path, mode: &str, wait_secs: u64) -> Result<(), String> {
    let Some(pid) = read_pid(data) else {
        return Err(format!(
            "PID file \"{}\" does not exist\nIs server running?",
            data.join(LOCK_FILE).display()
        ));
    };
    if !pid_alive(pid) {
        let _ = std::fs::remove_file(data.join(LOCK_FILE));
        return Err(format!("no server running (stale PID {pid} removed)"));
    }
    let sig = match mode {
        "fast" | "smart" => "-TERM",
        "immediate" => "-KILL",
        other => {
            return Err(format!(
                "unrecognized shutdown mode \"{other}\" (fast, immediate)"
            ))
        }
    };
    let st = std::process::Command::new("kill")
        .arg(sig)
        .arg(pid.to_string())
        .status()
        .map_err(|e| format!("could not run kill: {e}"))?;
    if !st.success() {
        return Err(format!("could not send stop signal (PID: {pid})"));
    }
    eprintln!("waiting for server to shut down...");
    let deadline = Instant::now() + Duration::from_secs(wait_secs);
    while pid_alive(pid) {
        if Instant::now() > deadline {
            return Err(format!("server (PID {pid}) does not shut down"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if mode == "immediate" {
        let _ = std::fs::remove_file(data.join(LOCK_FILE));
    }
    eprintln!("server stopped");
    Ok(())
}

/// A client socket and a second handle on it, for the connection to notice a
/// client that has gone while a statement runs (pg module invariant 5).
fn with_peer(
    sock: tokio::net::TcpStream,
) -> std::io::Result<(tokio::net::TcpStream, Option<std::net::TcpStream>)> {
    let std_sock = sock.into_std()?;
    let peer = std_sock.try_clone().ok();
    Ok((tokio::net::TcpStream::from_std(std_sock)?, peer))
}

/// `strata init`: a new cluster in `data` (like initdb), with the bootstrap
/// superuser's password from the first line of `pwfile` if given.
pub fn init(
    data: &std::path::Path,
    settings: &[String],
    pwfile: Option<&std::path::Path>,
) -> Result<(), String> {
    let password = match pwfile {
        Some(p) => Some(
            std::fs::read_to_string(p)
                .map_err(|e| format!("could not read password file \"{}\": {e}", p.display()))?
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
        ),
        None => None,
    };
    let s = crate::config::settings_from(settings)?;
    private_files();
    make_data_dir(data)?;
    let s = strata_engine::Settings {
        log: std::sync::Arc::new(|_: &str| {}),
        ..s
    };
    strata_engine::Engine::init(data, s.clone()).map_err(|e| e.to_string())?;
    // A password set to be used: loopback connections authenticate too.
    let local_method = if password.is_some() {
        "scram-sha-256"
    } else {
        "trust"
    };
    crate::reload::write_default_hba(data, local_method)?;
    if password.is_none() {
        // initdb's words.
        eprintln!("strata: warning: enabling \"trust\" authentication for local connections\nstrata: hint: You can change this by editing pg_hba.conf or using the option --pwfile the next time you run strata init.");
    }
    if let Some(pw) = password {
        set_bootstrap_password(data, s, &pw)?;
    }
    println!(
        "Success. The cluster is in \"{}\" with databases template1, template0 and postgres.",
        data.display()
    );
    Ok(())
}

/// `strata init --pwfile`: the bootstrap superuser's password, committed in the
/// role catalog like any ALTER ROLE (roles rule 1).
fn set_bootstrap_password(
    data: &Path,
    s: strata_engine::Settings,
    password: &str,
) -> Result<(), String> {
    let v = auth::derive(password)?;
    let engine = strata_engine::Engine::open(data, s).map_err(|e| e.to_string())?;
    let mut t = engine.begin();
    let name = strata_sql::roles::BOOTSTRAP_SUPERUSER;
    let mut e = (*t.role(name).map_err(|e| e.to_string())?).clone();
    e.password = Some(strata_sql::roles::format_verifier(&v));
    t.alter_role(name, e).map_err(|e| e.to_string())?;
    t.commit().map_err(|e| e.to_string())?;
    engine.close().map_err(|e| e.to_string())
}

/// A cluster from before the role catalog kept SCRAM verifiers in
/// `global/pg_authid` (`role:iterations:salt:stored_key:server_key`, hex): each
/// becomes its role's password in the catalog (the role made, with LOGIN, if
/// missing), then the file is renamed `pg_authid.migrated`. Once per cluster.
fn migrate_authid_file(engine: &Engine, data: &Path, log: &LogSink) -> Result<(), String> {
    let path = data.join("global").join("pg_authid");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(());
    };
    let mut t = engine.begin();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("xid "))
    {
        let f: Vec<&str> = line.split(':').collect();
        let [role, it, salt, sk, svk] = f.as_slice() else {
            return Err(format!("{}: malformed line", path.display()));
        };
        let hex = |h: &str| hex::decode(h).map_err(|e| format!("{}: {e}", path.display()));
        let v = strata_sql::roles::Verifier {
            iterations: it
                .parse()
                .map_err(|_| format!("{}: malformed line", path.display()))?,
            salt: hex(salt)?,
            stored_key: hex(sk)?,
            server_key: hex(svk)?,
        };
        let pw = Some(strata_sql::roles::format_verifier(&v));
        let err = |e: strata_engine::EngineError| e.to_string();
        match t.role(role) {
            Ok(e) if e.password.is_none() => {
                let e = strata_engine::RoleEntry {
                    password: pw,
                    ..(*e).clone()
                };
                t.alter_role(role, e).map_err(err)?;
            }
            Ok(_) => {}
            Err(_) => {
                let e = strata_engine::RoleEntry {
                    login: true,
                    password: pw,
                    ..strata_engine::RoleEntry::new(role)
                };
                t.create_role(e).map_err(err)?;
            }
        }
    }
    t.commit().map_err(|e| e.to_string())?;
    std::fs::rename(&path, path.with_extension("migrated")).map_err(|e| e.to_string())?;
    log(&format!(
        "LOG:  moved the passwords of \"{}\" into the role catalog",
        path.display()
    ));
    Ok(())
}
