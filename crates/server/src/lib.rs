//! strata-server: the server process. Start, stop and init of a cluster, settings
//! (`strata.conf`, `-c`) and their reload, the PostgreSQL wire protocol, TLS,
//! `pg_hba.conf` and authentication, and the registry of connections; it feeds
//! statements to `strata-sql` and sends back what they return.
//!
//! Module map: [`archiver`] (runs `archive_command` for completed WAL segments),
//! [`basebackup_client`] (`strata basebackup`: BASE_BACKUP and WAL streamed into a copy),
//! [`config`] (settings: parsing, units, ranges, SHOW's list),
//! [`hba`] (`pg_hba.conf`: parsing and the choice of a line),
//! [`tls`] (rustls: the server's certificates, client certificates, the client side
//! of replication connections), [`reload`] (SIGHUP and `pg_reload_conf()`: what a
//! running server re-reads),
//! [`server`] (the process: data directory, lock file, logging, listeners, shutdown),
//! [`walreceiver`] (a standby's client of its primary's WAL sender), [`standby`] (the
//! engine as the receiver's sink, and its start),
//! [`pg`] (the wire protocol: the connection loop, frames, authentication, the
//! handlers that run a session per connection, and the WAL sender of
//! `replication=true` connections).
//!
//! Rules (cited as "server rule N"):
//! 1. No client input ends the process: every failure of a connection is that
//!    connection's (an error with its SQLSTATE, or FATAL and the connection closes);
//!    only the engine's PANIC (engine rule 7) and a Rust panic (which aborts: pages may
//!    be pinned or a change half applied) end the server, and restart recovers.
//! 2. Errors are logged once, where they are answered: a session's to the client and
//!    the server log (`log_sink`), start-up's to stderr by the binary.
//! 3. The protocol runs on tokio; each session's statements run on a thread of their
//!    own (the SQL layer is synchronous), so a long statement blocks nobody else.
//! 4. No connection is served before `pg_hba.conf` says how it authenticates (auth
//!    rule 1), and no cluster starts without a `pg_hba.conf` it can read (reload
//!    rule 4); `strata init` writes one.

pub mod archiver;
pub mod basebackup_client;
pub mod config;
pub mod hba;
pub mod pg;
pub mod reload;
pub mod server;
pub mod standby;
pub mod tls;
pub mod views;
pub mod walreceiver;

pub use server::{init, start, stop};
pub use standby::promote;
