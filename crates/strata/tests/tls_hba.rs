//! Property: with `ssl = on` clients (psql, pg_basebackup, a Strata standby) speak TLS
//! to Strata and verify it against a test CA (`verify-full` refuses a wrong host
//! name); `pg_hba.conf` decides who may connect and how, as PostgreSQL 15 does (`host`,
//! `hostssl`, `hostnossl`, `reject`, `cert`, no match, with PostgreSQL's 28000 texts
//! and log lines); SIGHUP and `pg_reload_conf()` change the rules, TLS and
//! `archive_command` without a restart; bad TLS files and a bad or missing `pg_hba.conf` stop the start with
//! PostgreSQL's words. Certificates are made here, by /usr/bin/openssl, in a
//! temporary directory: no key material lives in the repository.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const OPENSSL: &str = "/usr/bin/openssl";

/// A test CA, a server certificate for `localhost` and client certificates.
struct Pki {
    dir: PathBuf,
}

impl Pki {
    fn new(dir: &Path) -> Pki {
        assert!(
            Path::new(OPENSSL).exists(),
            "openssl not found at {OPENSSL}"
        );
        let p = Pki {
            dir: dir.join("pki"),
        };
        std::fs::create_dir_all(&p.dir).unwrap();
        p.openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=Strata test CA",
        ]);
        p.issue(
            "server",
            "localhost",
            "subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n",
        );
        p.issue("alice", "alice", "extendedKeyUsage=clientAuth\n");
        p
    }

    fn openssl(&self, args: &[&str]) {
        let out = Command::new(OPENSSL)
            .args(args)
            .current_dir(&self.dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `name.crt` and `name.key` (0600), signed by the CA, with subject CN `cn`.
    fn issue(&self, name: &str, cn: &str, extensions: &str) {
        let (key, csr, crt, ext) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        std::fs::write(self.dir.join(&ext), extensions).unwrap();
        let subj = format!("/CN={cn}");
        self.openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &subj,
        ]);
        self.openssl(&[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            &crt,
            "-days",
            "2",
            "-extfile",
            &ext,
        ]);
        chmod(&self.dir.join(&key), 0o600);
    }

    fn path(&self, file: &str) -> String {
        self.dir.join(file).display().to_string()
    }

    /// The server's certificate and key, and the CA for client certificates, copied
    /// into a data directory (the settings' default names, and `root.crt`).
    fn install(&self, data: &Path) {
        for (from, to) in [
            ("server.crt", "server.crt"),
            ("server.key", "server.key"),
            ("ca.crt", "root.crt"),
        ] {
            std::fs::copy(self.dir.join(from), data.join(to)).unwrap();
        }
        chmod(&data.join("server.key"), 0o600);
    }
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// psql with a whole connection string (`-d`), as `user`; its output.
fn psql_conn(port: u16, user: &str, extra: &str, sql: &str) -> Output {
    assert!(Path::new(PSQL).exists(), "psql not found at {PSQL}");
    let conn = format!(
        "host=localhost hostaddr=127.0.0.1 port={port} user={user} dbname=postgres connect_timeout=30 {extra}"
    );
    Command::new(PSQL)
        .args([
            "-X",
            "-q",
            "-A",
            "-t",
            "-w",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            &conn,
            "-c",
            sql,
        ])
        .env_remove("PGPASSWORD")
        .env("PGSSLMODE", "disable")
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// psql's answer to `sql`, which must succeed.
fn ok(port: u16, user: &str, extra: &str, sql: &str) -> String {
    let o = psql_conn(port, user, extra, sql);
    assert!(o.status.success(), "psql {user} {extra}: {}", stderr(&o));
    stdout(&o)
}

/// psql's error, which must come.
fn refused(port: u16, user: &str, extra: &str) -> String {
    let o = psql_conn(port, user, extra, "select 1");
    assert!(!o.status.success(), "psql {user} {extra} connected");
    stderr(&o)
}

/// The login roles the tests connect as, besides `strata`.
const ROLES: &str = "create role alice login; create role bob login; create role carol login; create role dave login; create role tlsonly login; create role plainonly login; create role rej login";

/// A new cluster in `data` with the test PKI, `ssl = on` and the CA for client
/// certificates in `strata.conf`, [`ROLES`], and `hba` as its rules.
fn tls_cluster(data: &Path, pki: &Pki, hba: &str) {
    init(data, None);
    {
        // The roles are made under the default rules, then the server goes.
        let s = Server::start(data, &[]);
        s.psql_ok("postgres", &["-c", ROLES]);
    }
    pki.install(data);
    std::fs::write(
        data.join("strata.conf"),
        "ssl = on\nssl_ca_file = 'root.crt'\n",
    )
    .unwrap();
    write_hba(data, hba);
}

/// Waits (30 s at most) until the server log has `line`.
fn wait_for_log(s: &Server, line: &str) {
    let t0 = Instant::now();
    while !s.log_text().contains(line) {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "no {line:?} in the log:\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn sighup(s: &Server) {
    let st = Command::new("kill")
        .args(["-HUP", &s.pid().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn verify_full_checks_the_ca_and_the_host_name_and_require_encrypts() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    tls_cluster(&data, &pki, "host all all 127.0.0.1/32 trust\n");
    let s = Server::start(&data, &[]);
    let ca = pki.path("ca.crt");
    let full = format!("sslmode=verify-full sslrootcert={ca}");
    assert_eq!(ok(s.port, "strata", &full, "select 1"), "1");
    let info = ok(s.port, "strata", &full, "\\conninfo");
    assert!(info.contains("SSL connection (protocol: TLSv1.3"), "{info}");
    // The certificate names localhost: another name fails verify-full.
    let wrong = format!("sslmode=verify-full sslrootcert={ca} host=wrong.example");
    let e = refused(s.port, "strata", &wrong);
    assert!(
        e.contains("does not match host name \"wrong.example\""),
        "{e}"
    );
    // verify-ca checks the chain only; a CA that did not sign the certificate fails.
    let ca_only = format!("sslmode=verify-ca sslrootcert={ca} host=wrong.example");
    assert_eq!(ok(s.port, "strata", &ca_only, "select 1"), "1");
    let other = tempfile::tempdir().unwrap();
    let e = refused(
        s.port,
        "strata",
        &format!(
            "sslmode=verify-ca sslrootcert={}",
            Pki::new(other.path()).path("ca.crt")
        ),
    );
    assert!(e.contains("certificate verify failed"), "{e}");
    // require encrypts without verifying; disable stays plain (a host line).
    let info = ok(s.port, "strata", "sslmode=require", "\\conninfo");
    assert!(info.contains("SSL connection"), "{info}");
    let info = ok(s.port, "strata", "sslmode=disable", "\\conninfo");
    assert!(!info.contains("SSL connection"), "{info}");
    // A larger answer streams over TLS as over TCP.
    assert_eq!(
        ok(
            s.port,
            "strata",
            "sslmode=require",
            "select count(*) from generate_series(1, 100000)"
        ),
        "100000"
    );
}

#[test]
fn hba_lines_choose_by_encryption_and_refuse_in_postgres_words() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    tls_cluster(
        &data,
        &pki,
        "# rules\nhostssl all tlsonly 127.0.0.1/32 trust\nhostnossl all plainonly 127.0.0.1/32 trust\nhost all rej 127.0.0.1/32 reject\nhost all strata 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 reject\n",
    );
    let s = Server::start(&data, &[]);
    assert_eq!(ok(s.port, "tlsonly", "sslmode=require", "select 1"), "1");
    let e = refused(s.port, "tlsonly", "sslmode=disable");
    let want = "FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"tlsonly\", database \"postgres\", no encryption";
    assert!(e.contains(want), "{e}");
    assert_eq!(ok(s.port, "plainonly", "sslmode=disable", "select 1"), "1");
    let e = refused(s.port, "plainonly", "sslmode=require");
    let want = "FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"plainonly\", database \"postgres\", SSL encryption";
    assert!(e.contains(want), "{e}");
    let e = refused(s.port, "rej", "sslmode=disable");
    let want = "FATAL:  pg_hba.conf rejects connection for host \"127.0.0.1\", user \"rej\", database \"postgres\", no encryption";
    assert!(e.contains(want), "{e}");
    let e = refused(s.port, "nobody", "sslmode=require");
    assert!(e.contains("FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"nobody\", database \"postgres\", SSL encryption"), "{e}");
    // A replication connection matches the replication keyword only.
    let e = refused(s.port, "strata", "sslmode=disable replication=true");
    assert!(e.contains("FATAL:  pg_hba.conf rejects replication connection for host \"127.0.0.1\", user \"strata\", no encryption"), "{e}");
    // Each refusal is in the log with its SQLSTATE, once.
    wait_for_log(
        &s,
        "FATAL:  28000: pg_hba.conf rejects replication connection",
    );
    let log = s.log_text();
    assert_eq!(
        log.matches(
            "FATAL:  28000: pg_hba.conf rejects connection for host \"127.0.0.1\", user \"rej\""
        )
        .count(),
        1,
        "{log}"
    );
    assert!(log.contains("FATAL:  28000: no pg_hba.conf entry for host \"127.0.0.1\", user \"tlsonly\", database \"postgres\", no encryption"), "{log}");
}

#[test]
fn cert_authentication_takes_the_users_certificate_only() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    tls_cluster(
        &data,
        &pki,
        "hostssl all carol 127.0.0.1/32 trust clientcert=verify-full\nhostssl all dave 127.0.0.1/32 trust clientcert=verify-ca\nhostssl all all 127.0.0.1/32 cert\nhost all all 127.0.0.1/32 reject\n",
    );
    let s = Server::start(&data, &[]);
    let cert = format!(
        "sslmode=verify-full sslrootcert={} sslcert={} sslkey={}",
        pki.path("ca.crt"),
        pki.path("alice.crt"),
        pki.path("alice.key")
    );
    assert_eq!(ok(s.port, "alice", &cert, "select 1"), "1");
    let e = refused(s.port, "bob", &cert);
    assert!(
        e.contains("FATAL:  certificate authentication failed for user \"bob\""),
        "{e}"
    );
    let e = refused(s.port, "alice", "sslmode=require");
    assert!(
        e.contains("FATAL:  connection requires a valid client certificate"),
        "{e}"
    );
    wait_for_log(&s, "connection requires a valid client certificate");
    let log = s.log_text();
    assert!(
        log.contains(
            "LOG:  provided user name (bob) and authenticated user name (alice) do not match"
        ),
        "{log}"
    );
    assert!(log.contains("FATAL:  28000: certificate authentication failed for user \"bob\"\nDETAIL:  Connection matched pg_hba.conf line 3: \"hostssl all all 127.0.0.1/32 cert\""), "{log}");
    // clientcert on another method: verify-full wants the CN, verify-ca a certificate.
    let e = refused(s.port, "carol", &cert);
    assert!(
        e.contains("FATAL:  \"trust\" authentication failed for user \"carol\""),
        "{e}"
    );
    wait_for_log(&s, "LOG:  certificate validation (clientcert=verify-full) failed for user \"carol\": CN mismatch");
    assert_eq!(ok(s.port, "dave", &cert, "select 1"), "1");
    let e = refused(s.port, "dave", "sslmode=require");
    assert!(
        e.contains("FATAL:  connection requires a valid client certificate"),
        "{e}"
    );
}

#[test]
fn password_methods_authenticate_against_the_scram_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("s3cret"));
    let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
    assert!(
        hba.contains(
            "host    all             all             127.0.0.1/32            scram-sha-256"
        ),
        "--pwfile: loopback authenticates too:\n{hba}"
    );
    write_hba(
        &data,
        "host all strata 127.0.0.1/32 password\nhost all all 127.0.0.1/32 md5\n",
    );
    let s = Server::start(&data, &[]);
    // password: the password in clear, checked against the SCRAM verifier.
    assert!(s.answers(Some("s3cret")));
    assert!(!s.answers(Some("wrong")));
    // md5 runs SCRAM (the stored password is a SCRAM verifier, as in PostgreSQL).
    let out = s.psql("nobody", &["-c", "select 1"], Some("x"));
    assert!(stderr(&out).contains("password authentication failed for user \"nobody\""));
    wait_for_log(&s, "Role \"nobody\" does not exist.");
    let log = s.log_text();
    assert!(log.contains("FATAL:  28P01: password authentication failed for user \"strata\"\nDETAIL:  Password does not match for user \"strata\".\n\tConnection matched pg_hba.conf line 1: \"host all strata 127.0.0.1/32 password\""), "{log}");
}

#[test]
fn sighup_and_pg_reload_conf_change_rules_and_tls_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    init(&data, None);
    pki.install(&data);
    let s = Server::start(&data, &[]);
    s.psql_ok("postgres", &["-c", ROLES]);
    // SIGHUP: a reject line takes effect at once.
    write_hba(&data, "host all all 127.0.0.1/32 reject\n");
    sighup(&s);
    wait_for_log(&s, "received SIGHUP, reloading configuration files");
    let t0 = Instant::now();
    while psql_conn(s.port, "strata", "sslmode=disable", "select 1")
        .status
        .success()
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "not reloaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    let e = refused(s.port, "strata", "sslmode=disable");
    assert!(e.contains("pg_hba.conf rejects connection"), "{e}");
    write_hba(&data, "host all all 127.0.0.1/32 trust\n");
    sighup(&s);
    let t0 = Instant::now();
    while !psql_conn(s.port, "strata", "sslmode=disable", "select 1")
        .status
        .success()
    {
        assert!(t0.elapsed() < Duration::from_secs(30), "not reloaded");
        std::thread::sleep(Duration::from_millis(20));
    }
    // pg_reload_conf(): superuser only; TLS turned on, a restart-only setting refused.
    let e = stderr(&psql_conn(
        s.port,
        "alice",
        "sslmode=disable",
        "select pg_reload_conf()",
    ));
    assert!(
        e.contains("ERROR:  permission denied for function pg_reload_conf"),
        "{e}"
    );
    assert!(refused(s.port, "strata", "sslmode=require").contains("server does not support SSL"));
    std::fs::write(data.join("strata.conf"), "ssl = on\nmax_connections = 50\n").unwrap();
    assert_eq!(
        ok(
            s.port,
            "strata",
            "sslmode=disable",
            "select pg_reload_conf()"
        ),
        "t"
    );
    let log = s.log_text();
    assert!(
        log.contains("LOG:  parameter \"ssl\" changed to \"on\""),
        "{log}"
    );
    assert!(
        log.contains(
            "LOG:  parameter \"max_connections\" cannot be changed without restarting the server"
        ),
        "{log}"
    );
    let full = format!("sslmode=verify-full sslrootcert={}", pki.path("ca.crt"));
    assert_eq!(ok(s.port, "strata", &full, "select 1"), "1");
    // A bad line: the reload keeps the old rules, and says so.
    write_hba(
        &data,
        "host all all 127.0.0.1/32 trust\nhost all all 1.2.3.4/33 trust\n",
    );
    assert_eq!(
        ok(
            s.port,
            "strata",
            "sslmode=disable",
            "select pg_reload_conf()"
        ),
        "t"
    );
    let log = s.log_text();
    assert!(log.contains("LOG:  F0000: invalid CIDR mask in address \"1.2.3.4/33\"\nCONTEXT:  line 2 of configuration file \""), "{log}");
    assert!(log.contains("LOG:  pg_hba.conf was not reloaded"), "{log}");
    assert_eq!(ok(s.port, "strata", "sslmode=disable", "select 1"), "1");
}

/// `strata start` that must fail; its stderr (where start-up errors go).
fn start_fails(data: &Path, extra: &[&str]) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["start", "-D"]).arg(data);
    cmd.args([
        "-c",
        &format!("port={}", free_port()),
        "-c",
        "listen_addresses=127.0.0.1",
    ]);
    for e in extra {
        cmd.args(["-c", e]);
    }
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("the server started");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    stderr(&out)
}

#[test]
fn bad_tls_files_and_a_bad_or_missing_hba_file_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    init(&data, None);
    let e = start_fails(&data, &["ssl=on"]);
    assert!(
        e.contains(
            "could not load server certificate file \"server.crt\": No such file or directory"
        ),
        "{e}"
    );
    pki.install(&data);
    chmod(&data.join("server.key"), 0o644);
    let e = start_fails(&data, &["ssl=on"]);
    assert!(e.contains("private key file \"server.key\" has group or world access\nDETAIL:  File must have permissions u=rw (0600) or less if owned by the database user, or permissions u=rw,g=r (0640) or less if owned by root."), "{e}");
    chmod(&data.join("server.key"), 0o600);
    std::fs::copy(pki.dir.join("alice.key"), data.join("server.key")).unwrap();
    let e = start_fails(&data, &["ssl=on"]);
    assert!(
        e.contains("could not load private key file \"server.key\": key values mismatch"),
        "{e}"
    );
    let e = start_fails(&data, &["ssl_min_protocol_version=TLSv1.1"]);
    assert!(
        e.contains("invalid value for parameter \"ssl_min_protocol_version\": \"TLSv1.1\""),
        "{e}"
    );
    write_hba(
        &data,
        "host all all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 ident\n",
    );
    let e = start_fails(&data, &[]);
    assert!(e.contains("LOG:  F0000: invalid authentication method \"ident\": not supported by Strata\nCONTEXT:  line 2 of configuration file"), "{e}");
    assert!(e.contains("could not load pg_hba.conf"), "{e}");
    std::fs::remove_file(data.join("pg_hba.conf")).unwrap();
    let e = start_fails(&data, &[]);
    assert!(e.contains("could not open configuration file"), "{e}");
    assert!(
        e.contains("pg_hba.conf\": No such file or directory"),
        "{e}"
    );
    assert!(e.contains("could not load pg_hba.conf"), "{e}");
}

#[test]
fn a_standby_streams_over_tls_with_verify_full() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let (data, copy, pgcopy) = (
        dir.path().join("d"),
        dir.path().join("standby"),
        dir.path().join("pgcopy"),
    );
    // Replication only over TLS: plain replication connections are rejected.
    tls_cluster(
        &data,
        &pki,
        "hostnossl replication all 127.0.0.1/32 reject\nhostssl replication all 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 trust\n",
    );
    let primary = Server::start(&data, &[]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t values (1)",
        ],
    );
    let ca = pki.path("ca.crt");
    let conn = |host: &str| {
        format!(
            "host={host} port={} user=strata sslmode=verify-full sslrootcert={ca}",
            primary.port
        )
    };
    let basebackup = |to: &Path, c: &str| {
        Command::new(env!("CARGO_BIN_EXE_strata"))
            .args(["basebackup", "-c", "fast", "-R", "-d", c, "-D"])
            .arg(to)
            .output()
            .unwrap()
    };
    let wrong = basebackup(&copy, &conn("127.0.0.1"));
    assert!(
        !wrong.status.success(),
        "verify-full accepted a certificate for another name"
    );
    assert!(stderr(&wrong).contains("certificate"), "{}", stderr(&wrong));
    let plain = basebackup(
        &copy,
        &format!(
            "host=127.0.0.1 port={} user=strata sslmode=disable",
            primary.port
        ),
    );
    assert!(
        stderr(&plain).contains("pg_hba.conf rejects replication connection"),
        "{}",
        stderr(&plain)
    );
    let out = basebackup(&copy, &conn("localhost"));
    assert!(
        out.status.success(),
        "{}\n{}",
        stderr(&out),
        primary.log_text()
    );
    let auto = std::fs::read_to_string(copy.join("postgresql.auto.conf")).unwrap();
    assert!(
        auto.contains("sslmode=verify-full") && auto.contains("sslrootcert="),
        "{auto}"
    );
    let standby = Server::start(&copy, &["wal_retrieve_retry_interval=100ms"]);
    primary.psql_ok(
        "postgres",
        &[
            "-c",
            "insert into t select g from generate_series(2, 500) g",
        ],
    );
    let t0 = Instant::now();
    loop {
        let n = standby.psql_ok("postgres", &["-c", "select count(*) from t"]);
        if n.trim() == "500" {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "standby has {n}:\n{}",
            standby.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let ssl = primary.psql_ok(
        "postgres",
        &["-c", "select count(*) from pg_stat_replication"],
    );
    assert_eq!(ssl.trim(), "1");
    pg_basebackup_over_tls(&primary, &pgcopy);
}

/// PostgreSQL's pg_basebackup over TLS (sslmode=require), which the rules demand.
fn pg_basebackup_over_tls(primary: &Server, to: &Path) {
    let out = Command::new("/usr/lib/postgresql/15/bin/pg_basebackup")
        .args(["-X", "stream", "-c", "fast", "--no-manifest", "-d"])
        .arg(format!(
            "host=127.0.0.1 port={} user=strata sslmode=require",
            primary.port
        ))
        .arg("-D")
        .arg(to)
        .output()
        .expect("pg_basebackup (apt-get install -y postgresql-15)");
    assert!(
        out.status.success(),
        "pg_basebackup: {}\n{}",
        stderr(&out),
        primary.log_text()
    );
    assert!(to.join("global/pg_control").exists());
}

/// `openssl s_client -starttls postgres`: a TLS connection that sends the bytes
/// written to its stdin (nothing is checked of the server's certificate).
fn tls_client(port: u16) -> std::process::Child {
    Command::new(OPENSSL)
        .args(["s_client", "-starttls", "postgres", "-quiet", "-connect"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Waits (30 s at most) for a child to end by itself.
fn exits(c: &mut std::process::Child, what: &str) {
    let t0 = Instant::now();
    while c.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(30) {
            let _ = c.kill();
            panic!("{what}: the connection stayed open");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn frame_checks_and_authentication_timeout_hold_over_tls() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    tls_cluster(&data, &pki, "host all all 127.0.0.1/32 trust\n");
    let s = Server::start(&data, &["authentication_timeout=1s"]);
    // A startup packet too short to be one, inside TLS: FATAL 08P01, logged.
    let mut c = tls_client(s.port);
    let mut stdin = c.stdin.take().unwrap();
    stdin.write_all(&[0, 0, 0, 3]).unwrap();
    stdin.flush().unwrap();
    wait_for_log(&s, "FATAL:  08P01: invalid length of startup packet");
    exits(&mut c, "a bad frame");
    // A second SSLRequest inside TLS is a protocol version the server does not speak.
    let mut c = tls_client(s.port);
    let mut stdin = c.stdin.take().unwrap();
    stdin.write_all(&[0, 0, 0, 8, 4, 210, 22, 47]).unwrap();
    stdin.flush().unwrap();
    wait_for_log(&s, "FATAL:  0A000: unsupported frontend protocol 1234.5679");
    exits(&mut c, "a second SSLRequest");
    // A TLS client that says nothing is closed after authentication_timeout.
    let mut c = tls_client(s.port);
    let _stdin = c.stdin.take().unwrap();
    let t0 = Instant::now();
    exits(&mut c, "an idle TLS client");
    assert!(t0.elapsed() < Duration::from_secs(10));
    // Plaintext sent after the SSLRequest, before the handshake: refused (CVE-2021-23214).
    let mut raw = Raw::connect(s.port);
    let mut bytes = vec![0, 0, 0, 8, 4, 210, 22, 47];
    bytes.extend(startup_packet("strata"));
    raw.send(&bytes);
    let msgs = raw.until_ready();
    assert_eq!(
        first_error(&msgs),
        Some((
            "08P01".to_string(),
            "received unencrypted data after SSL request".to_string()
        )),
        "{msgs:?}"
    );
}

#[test]
fn a_reload_sets_archive_command_for_the_running_archiver() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    let arch = dir.path().join("arch");
    std::fs::create_dir(&arch).unwrap();
    init(&data, None);
    let s = Server::start(&data, &["archive_mode=on"]);
    wait_for_log(&s, "archive_mode enabled, yet archive_command is not set");
    let command = format!("cp %p {}/%f", arch.display());
    std::fs::write(
        data.join("strata.conf"),
        format!("archive_command = '{command}'\n"),
    )
    .unwrap();
    assert_eq!(
        ok(
            s.port,
            "strata",
            "sslmode=disable",
            "select pg_reload_conf()"
        ),
        "t"
    );
    let log = s.log_text();
    let changed = format!("LOG:  parameter \"archive_command\" changed to \"{command}\"");
    assert!(log.contains(&changed), "{log}");
    s.psql_ok(
        "postgres",
        &[
            "-c",
            "create table t (a int)",
            "-c",
            "insert into t values (1)",
            "-c",
            "select pg_switch_wal()",
        ],
    );
    let t0 = Instant::now();
    while std::fs::read_dir(&arch).unwrap().next().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "nothing archived:\n{}",
            s.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn scram_over_tls_binds_to_the_servers_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    init(&data, Some("s3cret"));
    pki.install(&data);
    std::fs::write(data.join("strata.conf"), "ssl = on\n").unwrap();
    write_hba(
        &data,
        "host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n",
    );
    let s = Server::start(&data, &[]);
    // SCRAM-SHA-256-PLUS (tls-server-end-point) is offered over TLS, so libpq binds.
    let bound = "sslmode=require channel_binding=require password=s3cret";
    assert_eq!(ok(s.port, "strata", bound, "select 1"), "1");
    let e = refused(
        s.port,
        "strata",
        "sslmode=require channel_binding=require password=no",
    );
    assert!(
        e.contains("password authentication failed for user \"strata\""),
        "{e}"
    );
    // Without TLS there is nothing to bind to.
    assert!(!psql_conn(
        s.port,
        "strata",
        "sslmode=disable channel_binding=require password=s3cret",
        "select 1"
    )
    .status
    .success());
    assert_eq!(
        ok(
            s.port,
            "strata",
            "sslmode=disable password=s3cret",
            "select 1"
        ),
        "1"
    );
    // Strata's own client binds too (strata basebackup, a standby's WAL receiver).
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["basebackup", "-c", "fast", "-d"])
        .arg(format!(
            "host=127.0.0.1 port={} user=strata password=s3cret sslmode=require channel_binding=require",
            s.port
        ))
        .arg("-D")
        .arg(dir.path().join("copy"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn a_tls_client_that_goes_away_stops_its_statement() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new(dir.path());
    let data = dir.path().join("d");
    tls_cluster(&data, &pki, "host all all 127.0.0.1/32 trust\n");
    let s = Server::start(&data, &[]);
    let conn = format!(
        "host=127.0.0.1 port={} user=strata dbname=postgres sslmode=require",
        s.port
    );
    let mut psql = Command::new(PSQL)
        .args(["-X", "-q", "-d", &conn, "-c"])
        .arg("select count(*) from generate_series(1, 2000000000)")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    psql.kill().unwrap(); // SIGKILL: the TLS stream ends without a Terminate
    psql.wait().unwrap();
    // Over TLS the bytes are encrypted: the end of the stream is what tells.
    wait_for_log(&s, "FATAL:  08006: connection to client lost");
}

#[test]
fn a_password_message_where_scram_was_asked_is_a_protocol_violation() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("d");
    init(&data, Some("s3cret"));
    write_hba(
        &data,
        "host all strata 127.0.0.1/32 password\nhost all all 127.0.0.1/32 scram-sha-256\n",
    );
    let s = Server::start(&data, &[]);
    // SCRAM asked (R 10): a bare password in reply is refused before it is decoded.
    let mut r = Raw::connect(s.port);
    r.send(&startup_packet("alice"));
    let (t, body) = r.read_msg().expect("SASL request");
    assert_eq!((t, &body[..4]), (b'R', &10i32.to_be_bytes()[..]));
    r.send(&frame(b'p', &cstr("s3cret")));
    let msgs = r.until_ready();
    assert_eq!(
        first_error(&msgs).map(|e| e.0),
        Some("08P01".into()),
        "{msgs:?}"
    );
    // A cleartext password asked (R 3): a SASL message in reply is refused too.
    let mut r = Raw::connect(s.port);
    r.send(&startup_packet("strata"));
    let (t, body) = r.read_msg().expect("password request");
    assert_eq!((t, &body[..]), (b'R', &3i32.to_be_bytes()[..]));
    let mut sasl = cstr("SCRAM-SHA-256");
    sasl.extend((-1i32).to_be_bytes());
    r.send(&frame(b'p', &sasl));
    let msgs = r.until_ready();
    assert_eq!(
        first_error(&msgs).map(|e| e.0),
        Some("08P01".into()),
        "{msgs:?}"
    );
    // The server goes on.
    assert!(s.answers(Some("s3cret")));
}
