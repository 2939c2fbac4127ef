//! One connection's message loop, from accept to close, and the bound on
//! connections that have not authenticated yet.
//!
//! Entry points: [`serve_socket`] (run per accepted socket), [`Unauthenticated`]
//! (the pre-authentication set, one per server).
//!
//! Rules:
//! 1. Every byte from the client goes through [`frames::Guarded`] (frames rule 1-4);
//!    a violation is reported FATAL with its SQLSTATE, logged, and the connection
//!    closes.
//! 2. Until it authenticates, a connection holds no connection slot (the session
//!    registers after authentication, see `auth`), only a place in
//!    [`Unauthenticated`]: at most `capacity` sockets are there; admitting one more
//!    closes the oldest, so a flood of idle sockets costs bounded memory and file
//!    descriptors and cannot keep a real client (which authenticates in
//!    milliseconds) out.
//! 3. `authentication_timeout` bounds the time from accept to authentication.
//!    A connection that sent no startup packet is closed silently; one in the
//!    middle of authentication gets PostgreSQL's FATAL 57014 "canceling
//!    authentication due to timeout", which is logged.
//! 4. A FATAL error ends the connection after it is sent, and is logged with its
//!    SQLSTATE (PostgreSQL's `log_error_verbosity = verbose` form).
//! 5. A CancelRequest (the first packet of a connection of its own) sets the cancel
//!    flag of the session whose pid and secret it names, and the connection closes
//!    without a reply, as in PostgreSQL.
//! 6. An SSLRequest is answered 'S' when the server has TLS (`ssl = on`, read at that
//!    moment: reload rule 1) and 'N' otherwise; after 'S' the TLS handshake runs
//!    under the same `authentication_timeout` (rule 3), then the connection goes on
//!    over TLS with the same frame checks (rule 1, frames rule 6) and limits. A
//!    failed handshake is logged (`could not accept SSL connection: ...`) and the
//!    connection closes.

use super::frames::{self, Guarded};
use super::Handlers;
use crate::tls::Stream;
use futures::{SinkExt, StreamExt};
use parking_lot::Mutex;
use pgwire::api::{ClientInfo, DefaultClient, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::response::{GssEncResponse, SslResponse};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage, SslNegotiationMetaMessage};
use pgwire::tokio::server::{process_error, process_message, PgWireMessageServerCodec};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strata_engine::LogSink;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio_util::codec::Framed;

/// The connections accepted but not yet authenticated (rule 2).
pub struct Unauthenticated {
    capacity: usize,
    inner: Mutex<(u64, BTreeMap<u64, Arc<Notify>>)>,
}

/// A place in [`Unauthenticated`]; leaving it (drop) frees the place.
pub struct Ticket {
    set: Arc<Unauthenticated>,
    id: u64,
    evicted: Arc<Notify>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.set.inner.lock().1.remove(&self.id);
    }
}

impl Unauthenticated {
    pub fn new(capacity: usize) -> Arc<Unauthenticated> {
        assert!(capacity > 0);
        Arc::new(Unauthenticated {
            capacity,
            inner: Mutex::new((0, BTreeMap::new())),
        })
    }

    /// Admits a new connection, closing the oldest waiting one if the set is full.
    /// O(log n).
    pub fn admit(self: &Arc<Self>) -> Ticket {
        let mut g = self.inner.lock();
        while g.1.len() >= self.capacity {
            if let Some((_, oldest)) = g.1.pop_first() {
                oldest.notify_one(); // stores a permit: the loop sees it even if not waiting yet
            }
        }
        g.0 += 1;
        let id = g.0;
        let evicted = Arc::new(Notify::new());
        g.1.insert(id, evicted.clone());
        assert!(g.1.len() <= self.capacity);
        Ticket {
            set: self.clone(),
            id,
            evicted,
        }
    }

    /// How many connections are waiting to authenticate.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.inner.lock().1.len()
    }
}

/// A client connection, plain or TLS, behind the frame checks.
pub(crate) type Socket = Framed<Guarded<Stream>, PgWireMessageServerCodec<Arc<super::Prepared>>>;

fn before_auth(state: PgWireConnectionState) -> bool {
    matches!(
        state,
        PgWireConnectionState::AwaitingSslRequest
            | PgWireConnectionState::AwaitingStartup
            | PgWireConnectionState::AuthenticationInProgress
    )
}

/// Sends a FATAL error, logs it, and flushes (the caller then closes).
async fn send_fatal(socket: &mut Socket, log: &LogSink, code: &str, message: &str) {
    log(&format!("FATAL:  {code}: {message}"));
    let info = ErrorInfo::new("FATAL".into(), code.into(), message.into());
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(info.into()))
        .await;
}

/// What ended the wait for the next message.
enum Next {
    Message(PgWireFrontendMessage),
    Violation(frames::Violation),
    Closed,
    TimedOut,
}

async fn next_message(
    socket: &mut Socket,
    ticket: &Option<Ticket>,
    deadline: &mut std::pin::Pin<&mut tokio::time::Sleep>,
) -> Next {
    let read = async {
        match socket.next().await {
            Some(Ok(m)) => {
                // pgwire has copied the message out of its read buffer: a large
                // buffer (a big query text) is given back before the query runs.
                let buf = socket.read_buffer_mut();
                if buf.capacity() > frames::RELEASE_BUFFER_BYTES
                    && buf.len() <= frames::KEEP_INPUT_BYTES
                {
                    *buf = bytes::BytesMut::from(&buf[..]);
                }
                Next::Message(m)
            }
            Some(Err(PgWireError::IoError(e))) => match frames::violation_of(&e) {
                Some(v) => Next::Violation(v.clone()),
                None => Next::Closed,
            },
            Some(Err(e)) => Next::Violation(frames::Violation {
                code: "08P01",
                message: format!("invalid message: {e}"),
            }),
            None => Next::Closed,
        }
    };
    match ticket {
        Some(t) => tokio::select! {
            _ = deadline.as_mut() => Next::TimedOut,
            _ = t.evicted.notified() => Next::Closed,
            n = read => n,
        },
        None => read.await,
    }
}

/// What an SSLRequest or GSSENCRequest led to.
enum Negotiated {
    /// Answered; the connection goes on as it was.
    Answered,
    /// Answer 'S' and start TLS (rule 6).
    StartTls(crate::reload::Tls),
    Closed,
}

/// Answers SSLRequest (rule 6) and GSSENCRequest ("no": Strata has no GSSAPI).
async fn negotiate(
    socket: &mut Socket,
    m: SslNegotiationMetaMessage,
    tls: Option<crate::reload::Tls>,
) -> Negotiated {
    let reply = match m {
        SslNegotiationMetaMessage::PostgresSsl(_) => match tls {
            Some(t) if !socket.is_secure() => return Negotiated::StartTls(t),
            _ => PgWireBackendMessage::SslResponse(SslResponse::Refuse),
        },
        SslNegotiationMetaMessage::PostgresGss(_) => {
            PgWireBackendMessage::GssEncResponse(GssEncResponse::Refuse)
        }
        SslNegotiationMetaMessage::None => {
            socket.set_state(PgWireConnectionState::AwaitingStartup);
            return Negotiated::Answered;
        }
    };
    match socket.send(reply).await {
        Ok(()) => Negotiated::Answered,
        Err(_) => Negotiated::Closed,
    }
}

/// An SSLRequest or GSSENCRequest: the connection as it goes on (upgraded to TLS
/// if so negotiated, within the authentication deadline: rule 6), or `None` when it
/// must close.
async fn on_negotiation(
    mut socket: Socket,
    m: SslNegotiationMetaMessage,
    conn: &super::Conn,
    log: &LogSink,
    deadline: &mut std::pin::Pin<&mut tokio::time::Sleep>,
    ticket: &Option<Ticket>,
) -> Option<Socket> {
    let tls = conn.shared.live.tls();
    let evicted = async {
        match ticket {
            Some(t) => t.evicted.notified().await,
            None => std::future::pending().await,
        }
    };
    match negotiate(&mut socket, m, tls).await {
        Negotiated::Answered => Some(socket),
        Negotiated::Closed => None,
        // Rules 2 and 3 hold during the handshake: the deadline, and eviction.
        Negotiated::StartTls(t) => tokio::select! {
            s = start_tls(socket, t, conn, log) => s,
            _ = deadline.as_mut() => None,
            _ = evicted => None,
        },
    }
}

/// Answers 'S' and runs the TLS handshake (rule 6, frames rule 6); the connection
/// over TLS, or `None` when it must close (after logging why).
async fn start_tls(
    mut socket: Socket,
    tls: crate::reload::Tls,
    conn: &super::Conn,
    log: &LogSink,
) -> Option<Socket> {
    if socket.get_ref().buffered() > 0 || !socket.read_buffer().is_empty() {
        let m = "received unencrypted data after SSL request";
        send_fatal(&mut socket, log, "08P01", m).await;
        return None;
    }
    let accept = PgWireBackendMessage::SslResponse(SslResponse::Accept);
    socket.send(accept).await.ok()?;
    let addr = socket.socket_addr();
    let parts = socket.into_parts();
    let (authenticated, cleartext) = parts.io.flags();
    let Stream::Plain(tcp) = parts.io.into_inner() else {
        return None;
    };
    let tls_stream = match tls.acceptor.accept(tcp).await {
        Ok(s) => s,
        Err(e) => {
            log(&format!(
                "LOG:  08P01: could not accept SSL connection: {e}"
            ));
            return None;
        }
    };
    let (_, session) = tls_stream.get_ref();
    let peer = super::TlsPeer {
        common_name: crate::tls::peer_common_name(session),
        has_certificate: session.peer_certificates().is_some_and(|c| !c.is_empty()),
        verifies_clients: tls.verifies_clients,
        server_cert_pem: tls.cert_pem.clone(),
    };
    conn.set_tls(peer);
    let guarded = Guarded::encrypted(Stream::Tls(Box::new(tls_stream)), authenticated, cleartext);
    let codec = PgWireMessageServerCodec::new(DefaultClient::new(addr, true));
    let mut socket = Framed::new(guarded, codec);
    socket.set_state(PgWireConnectionState::AwaitingStartup);
    Some(socket)
}

/// A new connection: plain TCP behind the frame checks, waiting for SSLRequest or
/// the startup packet.
fn plain_socket(
    sock: TcpStream,
    addr: std::net::SocketAddr,
    authenticated: Arc<AtomicBool>,
    cleartext: Arc<AtomicBool>,
) -> Socket {
    let codec = PgWireMessageServerCodec::new(DefaultClient::new(addr, false));
    let guarded = Guarded::new(Stream::Plain(sock), authenticated, cleartext);
    let mut socket = Framed::new(guarded, codec);
    socket.set_state(PgWireConnectionState::AwaitingSslRequest);
    socket
}

/// Serves one accepted socket until it closes (rules 1-4).
pub async fn serve_socket(
    sock: TcpStream,
    handlers: Handlers,
    ticket: Ticket,
    auth_timeout: Duration,
    log: LogSink,
) {
    let Ok(addr) = sock.peer_addr() else { return };
    let authenticated = Arc::new(AtomicBool::new(false));
    let cleartext = handlers.query.conn.cleartext.clone();
    let mut socket = plain_socket(sock, addr, authenticated.clone(), cleartext);
    let deadline = tokio::time::sleep(auth_timeout);
    tokio::pin!(deadline);
    let mut ticket = Some(ticket);
    let startup = handlers.startup.clone();
    let query = handlers.query.clone();
    let noop = Arc::new(pgwire::api::NoopHandler);
    loop {
        if ticket.is_some() && !before_auth(socket.state()) {
            authenticated.store(true, Ordering::Release);
            ticket = None; // rule 2: no longer waiting to authenticate
            if let Some(cx) = handlers.query.conn.walsender_context() {
                // Authenticated as a WAL sender: the replication protocol from here on.
                super::walsender::serve(&mut socket, cx).await;
                break;
            }
        }
        let msg = match next_message(&mut socket, &ticket, &mut deadline).await {
            Next::Message(m) => m,
            Next::Closed => break,
            Next::Violation(v) => {
                send_fatal(&mut socket, &log, v.code, &v.message).await;
                break;
            }
            Next::TimedOut => {
                if matches!(
                    socket.state(),
                    PgWireConnectionState::AuthenticationInProgress
                ) {
                    let m = "canceling authentication due to timeout";
                    send_fatal(&mut socket, &log, "57014", m).await;
                }
                break;
            }
        };
        // An error during a COPY an Execute started waits for the client's Sync, as
        // in any extended-protocol exchange (PostgreSQL: discard until Sync); the
        // data messages themselves do not say so.
        let is_extended = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => msg.is_extended_query(),
        };
        match msg {
            PgWireFrontendMessage::Terminate(_) => break,
            PgWireFrontendMessage::SslNegotiation(m) => {
                let conn = handlers.query.conn.clone();
                match on_negotiation(socket, m, &conn, &log, &mut deadline, &ticket).await {
                    Some(s) => socket = s,
                    None => break,
                }
                continue;
            }
            // A CancelRequest comes on a connection of its own (rule 5).
            PgWireFrontendMessage::CancelRequest(c) => {
                super::cancel_request(&handlers.query.conn.server, &c);
                break;
            }
            _ => {}
        }
        let r = process_message(
            msg,
            &mut socket,
            startup.clone(),
            query.clone(),
            query.clone(),
            query.clone(),
            noop.clone(),
        )
        .await;
        if let Err(mut e) = r {
            let errors = super::Errors(handlers.query.conn.clone());
            pgwire::api::ErrorHandler::on_error(&errors, &socket, &mut e);
            let info = ErrorInfo::from(e);
            let fatal = info.is_fatal();
            // A failed authentication is logged by the startup handler, with its
            // DETAIL (auth rule 5).
            if fatal && info.code != "28P01" && info.code != "28000" {
                log(&format!("FATAL:  {}: {}", info.code, info.message));
            }
            let r = process_error(
                &mut socket,
                PgWireError::UserError(Box::new(info)),
                is_extended,
            );
            if r.await.is_err() || fatal {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admitting_past_capacity_evicts_the_oldest() {
        let set = Unauthenticated::new(2);
        let a = set.admit();
        let b = set.admit();
        assert_eq!(set.len(), 2);
        let c = set.admit();
        assert_eq!(set.len(), 2);
        // a was told to leave (a stored permit), b and c were not.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            tokio::time::timeout(Duration::from_millis(100), a.evicted.notified())
                .await
                .expect("oldest evicted");
            assert!(
                tokio::time::timeout(Duration::from_millis(20), b.evicted.notified())
                    .await
                    .is_err()
            );
        });
        drop((a, b, c));
        assert_eq!(set.len(), 0);
    }
}
