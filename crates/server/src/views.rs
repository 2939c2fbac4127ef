//! The rows of the system views (`strata_sql::views`): WAL senders for
//! `pg_stat_replication`, the WAL receiver for `pg_stat_wal_receiver`, replay's
//! statistics for `strata_stat_replay`; and `pg_reload_conf()`'s way to the server.
//!
//! Entry point: [`ServerViews`].

use crate::pg::walsender::{pid_of, SenderInfo, WalSenders};
use crate::standby::EngineSink;
use std::sync::{Arc, OnceLock};
use strata_engine::Engine;
use strata_engine::Numeric;
use strata_sql::syncrep::SyncRep;
use strata_sql::views::{interval, timestamp, SystemViews};
use strata_sql::Datum;

/// What the views read.
pub struct ServerViews {
    pub engine: Arc<Engine>,
    pub senders: Arc<WalSenders>,
    pub syncrep: Arc<SyncRep>,
    /// A standby's WAL receiver, once started.
    pub receiver: OnceLock<Arc<EngineSink>>,
    /// What `pg_reload_conf()` reloads.
    pub live: Arc<crate::reload::Live>,
}

fn text(s: &str) -> Datum {
    Datum::Text(s.to_string())
}

fn opt(d: Option<Datum>) -> Datum {
    d.unwrap_or(Datum::Null)
}

impl ServerViews {
    fn replication_row(&self, s: &SenderInfo) -> Vec<Datum> {
        let (prio, sync) = self.syncrep.sync_state(s.id, &s.who.application_name);
        let p = s.progress;
        let lsn_or_null = |l: strata_types::Lsn| {
            if l == strata_types::Lsn::INVALID {
                Datum::Null
            } else {
                Datum::Lsn(l)
            }
        };
        vec![
            Datum::Int4(pid_of(s.id)),
            text(&s.who.user),
            text(&s.who.application_name),
            opt(s.who.client_addr.map(|a| text(&a.ip().to_string()))),
            opt(s.who.client_addr.map(|a| Datum::Int4(i32::from(a.port())))),
            timestamp(s.backend_start_unix_us),
            opt(s.xmin.map(|x| Datum::Int8(i64::from(x.0)))),
            text(s.state),
            lsn_or_null(p.sent),
            lsn_or_null(p.write),
            lsn_or_null(p.flush),
            lsn_or_null(p.apply),
            opt(s.write_lag.map(interval)),
            opt(s.flush_lag.map(interval)),
            opt(s.replay_lag.map(interval)),
            Datum::Int4(prio),
            text(sync),
            opt(s.reply_time_unix_us.map(timestamp)),
        ]
    }

    fn wal_receiver_rows(&self) -> Vec<Vec<Datum>> {
        let Some(sink) = self.receiver.get() else {
            return Vec::new();
        };
        let st = sink.state.lock().clone();
        let received = self.engine.received_lsn().unwrap_or_default();
        const PG_EPOCH_UNIX_US: i64 = 946_684_800_000_000;
        vec![vec![
            Datum::Int4(0),
            text(st.status),
            Datum::Lsn(st.receive_start_lsn),
            Datum::Int4(1),
            Datum::Lsn(received),
            Datum::Lsn(received),
            Datum::Int4(i32::try_from(st.received_tli).unwrap_or(0)),
            timestamp(st.last_msg_send_time_us + PG_EPOCH_UNIX_US),
            timestamp(st.last_msg_receipt_unix_us),
            Datum::Lsn(st.latest_end_lsn),
            opt(st.slot_name.as_deref().map(text)),
            text(&st.sender_host),
            Datum::Int4(i32::from(st.sender_port)),
            text(&st.conninfo),
        ]]
    }

    fn replay_rows(&self) -> Vec<Vec<Datum>> {
        let mut stats: Vec<_> = self.engine.replay_stats().into_iter().collect();
        stats.sort_by_key(|s| std::cmp::Reverse(s.1 .1)); // most time first
        stats
            .into_iter()
            .map(|((rmgr, info), (n, d))| {
                let name = strata_engine::record_name(strata_wal::RmgrId(rmgr), info);
                let (rm, ty) = name.split_once('/').unwrap_or((name, ""));
                let us = d.as_micros() as i128;
                vec![
                    text(rm),
                    text(ty),
                    Datum::Int8(i64::try_from(n).unwrap_or(i64::MAX)),
                    Datum::Numeric(Numeric::from_i128_scaled(us, 3)),
                    Datum::Numeric(Numeric::from_i128(if n == 0 {
                        0
                    } else {
                        us / i128::from(n)
                    })),
                ]
            })
            .collect()
    }
}

impl SystemViews for ServerViews {
    /// `pg_reload_conf()`: the reload SIGHUP runs (reload rules), done before the
    /// function returns (PostgreSQL signals the postmaster and returns at once).
    fn reload_conf(&self) -> bool {
        self.live.reload();
        true
    }

    fn rows(&self, name: &str) -> Vec<Vec<Datum>> {
        match name {
            "pg_stat_replication" => self
                .senders
                .list()
                .iter()
                .filter(|s| s.state != "startup")
                .map(|s| self.replication_row(s))
                .collect(),
            "pg_stat_wal_receiver" => self.wal_receiver_rows(),
            "strata_stat_replay" => self.replay_rows(),
            _ => Vec::new(),
        }
    }
}
