//! Frame validation under pgwire: every frontend message is checked against the
//! protocol's layout before pgwire decodes it.
//!
//! Entry point: [`Guarded`], an `AsyncRead` over the socket that hands pgwire one
//! validated frame at a time ([`check_frame`] is the pure validator).
//!
//! Rules (see PostgreSQL's `pqcomm.c`, `postgres.c` and `protocol-message-formats`):
//! 1. A message's content ends exactly where its declared length says: a string
//!    field ends at its NUL, counts are read as PostgreSQL reads them (unsigned
//!    16-bit), and bytes left over, or missing, are a protocol violation (08P01).
//!    So a Query's text is the whole message: nothing after its NUL can run as a
//!    hidden second statement.
//! 2. Lengths are bounded before any byte of the body is buffered: the startup
//!    packet at 10,000 bytes (PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`), messages
//!    before authentication at 65,535 (`PG_MAX_AUTH_TOKEN_LENGTH`), small control
//!    messages at 10,000 (`PQ_SMALL_MESSAGE_LIMIT`), and Query, Parse, Bind and
//!    CopyData at [`MAX_QUERY_MESSAGE_BYTES`]. A peer costs at most one frame of
//!    memory.
//! 3. Before authentication completes only password-family messages (and
//!    Terminate) are accepted; the flag is set by the connection loop, and since
//!    frames are released one at a time, a frame is always checked against the
//!    state the previous one left. The first password message is a
//!    SASLInitialResponse, or a PasswordMessage when the startup handler asked for
//!    a cleartext password (its flag, set before the request goes out): each is
//!    checked against its own layout before pgwire decodes it.
//! 4. After a violation nothing more is released: the read fails with a
//!    [`Violation`] that the connection loop reports as FATAL before closing.
//! 5. A frame's buffer is not kept once pgwire has read the frame (when little
//!    input follows it): a large query text is then held only by the String pgwire
//!    decodes it into, while it runs ([`RELEASE_BUFFER_BYTES`]; the connection loop
//!    does the same for pgwire's own read buffer).
//! 6. TLS starts on a clean stream: when the server answers an SSLRequest with 'S',
//!    no byte the client sent after the request may be buffered (PostgreSQL's check
//!    against plaintext injected before the handshake, CVE-2021-23214), and on the
//!    encrypted stream a second SSLRequest or GSSENCRequest is a protocol version
//!    the server does not speak (0A000), as in PostgreSQL.

use bytes::{Buf, BytesMut};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The largest Query, Parse, Bind or CopyData message (the query text bound).
pub const MAX_QUERY_MESSAGE_BYTES: usize = 16 << 20;
/// A read buffer this large is given back once its frames are taken (item 16: a
/// query text costs about its size), if at most [`KEEP_INPUT_BYTES`] of input
/// remain in it to be copied.
pub const RELEASE_BUFFER_BYTES: usize = 1 << 20;
/// See [`RELEASE_BUFFER_BYTES`].
pub const KEEP_INPUT_BYTES: usize = 64 << 10;
/// PostgreSQL's `MAX_STARTUP_PACKET_LENGTH`.
pub const MAX_STARTUP_PACKET_BYTES: usize = 10_000;
/// PostgreSQL's `PG_MAX_AUTH_TOKEN_LENGTH`: messages during authentication.
pub const MAX_AUTH_MESSAGE_BYTES: usize = 65_535;
/// PostgreSQL's `PQ_SMALL_MESSAGE_LIMIT`: Sync, Execute, Describe, ...
pub const MAX_SMALL_MESSAGE_BYTES: usize = 10_000;

const SSL_REQUEST: i32 = 80_877_103;
const GSS_REQUEST: i32 = 80_877_104;
const CANCEL_REQUEST: i32 = 80_877_102;

/// A protocol violation: what the client is told (FATAL) before the connection closes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for Violation {}

fn violation(message: impl Into<String>) -> Violation {
    Violation {
        code: "08P01",
        message: message.into(),
    }
}

/// Where a connection is in the protocol, as far as framing goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Untyped packets: SSLRequest, GSSENCRequest, CancelRequest, StartupMessage.
    Startup,
    /// Typed messages; `first_password` until the first password-family message.
    Typed { first_password: bool },
    /// After a CancelRequest: nothing more is read.
    Done,
}

/// Reads a message body field by field; any overrun is a violation.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Violation> {
        if n > self.b.len() {
            return Err(violation("insufficient data left in message"));
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }
    fn u16(&mut self) -> Result<usize, Violation> {
        let b = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([b[0], b[1]])))
    }
    fn i16(&mut self) -> Result<i16, Violation> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Result<i32, Violation> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn cstr(&mut self) -> Result<&'a [u8], Violation> {
        let n = self
            .b
            .iter()
            .position(|c| *c == 0)
            .ok_or_else(|| violation("invalid string in message"))?;
        let s = self.take(n + 1)?;
        Ok(&s[..n])
    }
    fn end(&self) -> Result<(), Violation> {
        if self.b.is_empty() {
            Ok(())
        } else {
            Err(violation("invalid message format"))
        }
    }
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Checks the startup packet's key/value list: pairs of strings, then a NUL.
fn check_startup_body(body: &[u8]) -> Result<(), Violation> {
    let mut r = Reader { b: body };
    loop {
        let name = r.cstr()?;
        if name.is_empty() {
            break;
        }
        r.cstr()?;
    }
    r.end()
        .map_err(|_| violation("invalid startup packet layout: expected terminator as last byte"))
}

/// One untyped packet: `Ok(None)` while incomplete, else its length and next phase.
fn check_startup(b: &[u8]) -> Result<Option<(usize, Phase)>, Violation> {
    if b.len() < 4 {
        return Ok(None);
    }
    let len = be_i32(b);
    if len < 8 || len as usize > MAX_STARTUP_PACKET_BYTES {
        return Err(violation("invalid length of startup packet"));
    }
    let len = len as usize;
    if b.len() < len {
        return Ok(None);
    }
    let code = be_i32(&b[4..]);
    let next = match code {
        SSL_REQUEST | GSS_REQUEST if len == 8 => Phase::Startup,
        SSL_REQUEST | GSS_REQUEST => return Err(violation("invalid length of startup packet")),
        CANCEL_REQUEST if len >= 12 => Phase::Done,
        CANCEL_REQUEST => return Err(violation("invalid length of startup packet")),
        _ => {
            let (major, minor) = (code >> 16, code & 0xFFFF);
            if major != 3 {
                return Err(Violation {
                    code: "0A000",
                    message: format!(
                        "unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.2"
                    ),
                });
            }
            check_startup_body(&b[8..len])?;
            Phase::Typed {
                first_password: true,
            }
        }
    };
    Ok(Some((len, next)))
}

/// The largest body a typed message may declare, or `None` for an unknown type.
fn max_body(t: u8, authenticated: bool) -> Option<usize> {
    if !authenticated {
        return match t {
            b'p' | b'X' => Some(MAX_AUTH_MESSAGE_BYTES),
            _ => None,
        };
    }
    match t {
        b'Q' | b'P' | b'B' | b'd' => Some(MAX_QUERY_MESSAGE_BYTES),
        b'E' | b'D' | b'C' | b'H' | b'S' | b'X' | b'c' | b'f' => Some(MAX_SMALL_MESSAGE_BYTES),
        b'p' => Some(MAX_AUTH_MESSAGE_BYTES),
        _ => None,
    }
}

/// Checks a Bind body: names, format codes, parameter values, result formats.
fn check_bind(r: &mut Reader<'_>) -> Result<(), Violation> {
    r.cstr()?;
    r.cstr()?;
    let nformats = r.u16()?;
    for _ in 0..nformats {
        let f = r.i16()?;
        if f != 0 && f != 1 {
            return Err(violation(format!("unsupported format code: {f}")));
        }
    }
    let nparams = r.u16()?;
    if nformats > 1 && nformats != nparams {
        return Err(violation(format!(
            "bind message has {nformats} parameter formats but {nparams} parameters"
        )));
    }
    for _ in 0..nparams {
        let len = r.i32()?;
        if len < -1 {
            return Err(violation("invalid message format"));
        }
        if len > 0 {
            r.take(len as usize)?;
        }
    }
    let nresults = r.u16()?;
    for _ in 0..nresults {
        let f = r.i16()?;
        if f != 0 && f != 1 {
            return Err(violation(format!("unsupported format code: {f}")));
        }
    }
    Ok(())
}

/// Checks a typed message's body against its type's layout (rule 1). `cleartext`:
/// the first password message answers AuthenticationCleartextPassword (the
/// `password` method) and is a PasswordMessage, else a SASLInitialResponse.
fn check_body(t: u8, body: &[u8], first_password: bool, cleartext: bool) -> Result<(), Violation> {
    let mut r = Reader { b: body };
    match t {
        b'Q' | b'f' => {
            r.cstr()?;
        }
        b'P' => {
            r.cstr()?;
            r.cstr()?;
            let n = r.u16()?;
            r.take(n * 4)?;
        }
        b'B' => check_bind(&mut r)?,
        b'E' => {
            r.cstr()?;
            r.i32()?;
        }
        b'D' | b'C' => {
            let kind = r.take(1)?[0];
            if kind != b'S' && kind != b'P' {
                let what = if t == b'D' { "DESCRIBE" } else { "CLOSE" };
                return Err(violation(format!("invalid {what} message subtype {kind}")));
            }
            r.cstr()?;
        }
        b'p' if first_password && cleartext => {
            // PasswordMessage: the password, one string.
            r.cstr()?;
        }
        b'p' if first_password => {
            // SASLInitialResponse: mechanism, then -1 or the length of the rest.
            r.cstr()?;
            let n = r.i32()?;
            if n != -1 {
                r.take(usize::try_from(n).map_err(|_| violation("invalid message format"))?)?;
            }
        }
        b'p' | b'd' => return Ok(()),
        _ => {} // H, S, X, c: no body
    }
    r.end()
}

/// One typed message: `Ok(None)` while incomplete, else its whole length.
fn check_typed(
    b: &[u8],
    first_password: bool,
    authenticated: bool,
    cleartext: bool,
) -> Result<Option<usize>, Violation> {
    let Some(&t) = b.first() else {
        return Ok(None);
    };
    let Some(max) = max_body(t, authenticated) else {
        return Err(if authenticated {
            violation(format!("invalid frontend message type {t}"))
        } else {
            // Before authentication only SASL messages come (trust authenticates
            // at the startup packet), as in PostgreSQL's auth.c.
            violation(format!("expected SASL response, got message type {t}"))
        });
    };
    if b.len() < 5 {
        return Ok(None);
    }
    let len = be_i32(&b[1..]);
    if len < 4 || (len as usize - 4) > max {
        return Err(violation("invalid message length"));
    }
    let total = 1 + len as usize;
    if b.len() < total {
        return Ok(None);
    }
    check_body(t, &b[5..total], first_password, cleartext)?;
    Ok(Some(total))
}

/// Validates the frame at the front of `b` in `phase`: `Ok(None)` while it is
/// incomplete, else its length and the phase after it.
pub fn check_frame(
    b: &[u8],
    phase: Phase,
    authenticated: bool,
) -> Result<Option<(usize, Phase)>, Violation> {
    check_frame_expecting(b, phase, authenticated, false)
}

/// [`check_frame`], with the first password message expected as a PasswordMessage
/// when `cleartext` (the `password` method asked for one), else as a
/// SASLInitialResponse.
pub fn check_frame_expecting(
    b: &[u8],
    phase: Phase,
    authenticated: bool,
    cleartext: bool,
) -> Result<Option<(usize, Phase)>, Violation> {
    match phase {
        Phase::Startup => check_startup(b),
        Phase::Typed { first_password } => {
            Ok(
                check_typed(b, first_password, authenticated, cleartext)?.map(|n| {
                    let first_password = first_password && b[0] != b'p';
                    (n, Phase::Typed { first_password })
                }),
            )
        }
        Phase::Done => Err(violation("unexpected data after a cancel request")),
    }
}

/// The socket as pgwire sees it: only validated frames come through, one at a time.
pub struct Guarded<S> {
    inner: S,
    raw: BytesMut,
    ready: BytesMut,
    phase: Phase,
    authenticated: Arc<AtomicBool>,
    failed: Option<Violation>,
    /// TLS is established: a second SSLRequest or GSSENCRequest is refused (rule 6).
    encrypted: bool,
    /// Set by the startup handler when it asks for a cleartext password (rule 3).
    cleartext: Arc<AtomicBool>,
}

impl<S> Guarded<S> {
    /// `authenticated` is set by the connection loop once authentication is done.
    pub fn new(inner: S, authenticated: Arc<AtomicBool>, cleartext: Arc<AtomicBool>) -> Guarded<S> {
        Guarded {
            inner,
            raw: BytesMut::with_capacity(1024),
            ready: BytesMut::new(),
            phase: Phase::Startup,
            authenticated,
            failed: None,
            encrypted: false,
            cleartext,
        }
    }

    /// A guard over a stream on which TLS was just established, for the startup
    /// packet that follows (rule 6).
    pub fn encrypted(
        inner: S,
        authenticated: Arc<AtomicBool>,
        cleartext: Arc<AtomicBool>,
    ) -> Guarded<S> {
        Guarded {
            encrypted: true,
            ..Guarded::new(inner, authenticated, cleartext)
        }
    }

    /// Bytes read from the socket and not yet handed to pgwire (rule 6: none may be
    /// left when TLS starts).
    pub fn buffered(&self) -> usize {
        self.raw.len() + self.ready.len()
    }

    /// The flags of [`Guarded::new`]: authentication done, cleartext password asked.
    pub fn flags(&self) -> (Arc<AtomicBool>, Arc<AtomicBool>) {
        (self.authenticated.clone(), self.cleartext.clone())
    }

    /// The stream underneath.
    pub fn into_inner(self) -> S {
        self.inner
    }

    /// Rule 5: a frame handed over entirely to pgwire is not kept: `ready` shares its
    /// buffer with `raw`, so a large frame's buffer (a 10 MB query text) is freed
    /// now rather than at the next frame, unless more than a little input follows
    /// it (copying that would cost more than it saves).
    fn release_frame(&mut self) {
        self.ready = BytesMut::new();
        if self.raw.capacity() > RELEASE_BUFFER_BYTES && self.raw.len() <= KEEP_INPUT_BYTES {
            self.raw = BytesMut::from(&self.raw[..]);
        }
    }

    /// Moves the next complete, valid frame from `raw` to `ready`; false if none yet.
    fn release_one(&mut self) -> Result<bool, Violation> {
        let authed = self.authenticated.load(Ordering::Acquire);
        if self.encrypted && self.phase == Phase::Startup && self.raw.len() >= 8 {
            let code = be_i32(&self.raw[4..]);
            if code == SSL_REQUEST || code == GSS_REQUEST {
                return Err(Violation {
                    code: "0A000",
                    message: format!(
                        "unsupported frontend protocol {}.{}: server supports 3.0 to 3.2",
                        code >> 16,
                        code & 0xFFFF
                    ),
                });
            }
        }
        let cleartext = self.cleartext.load(Ordering::Acquire);
        match check_frame_expecting(&self.raw, self.phase, authed, cleartext)? {
            None => Ok(false),
            Some((n, next)) => {
                self.ready = self.raw.split_to(n);
                self.phase = next;
                Ok(true)
            }
        }
    }
}

fn io_violation(v: Violation) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, v)
}

/// The violation inside an I/O error made by [`Guarded`], if it is one.
pub fn violation_of(e: &io::Error) -> Option<&Violation> {
    e.get_ref().and_then(|x| x.downcast_ref::<Violation>())
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(buf.remaining());
                buf.put_slice(&this.ready[..n]);
                this.ready.advance(n);
                if this.ready.is_empty() {
                    this.release_frame();
                }
                return Poll::Ready(Ok(()));
            }
            if let Some(v) = &this.failed {
                return Poll::Ready(Err(io_violation(v.clone())));
            }
            match this.release_one() {
                Ok(true) => continue,
                Ok(false) => {}
                Err(v) => {
                    this.failed = Some(v);
                    continue;
                }
            }
            let mut chunk = [0u8; 8192];
            let mut rb = ReadBuf::new(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut rb) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) if rb.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => this.raw.extend_from_slice(rb.filled()),
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typed(t: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![t];
        v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    fn after_startup() -> Phase {
        Phase::Typed {
            first_password: false,
        }
    }

    #[test]
    fn a_query_with_bytes_after_its_nul_is_a_violation() {
        let ok = typed(b'Q', b"SELECT 1\0");
        assert_eq!(
            check_frame(&ok, after_startup(), true).unwrap(),
            Some((ok.len(), after_startup()))
        );
        let hidden = typed(b'Q', b"SELECT 1\0DROP TABLE t\0");
        let e = check_frame(&hidden, after_startup(), true).unwrap_err();
        assert_eq!(e.code, "08P01");
    }

    #[test]
    fn lengths_and_counts_past_the_end_are_violations() {
        // Bind declaring 65535 parameters (a "negative" count) with none present.
        let mut body = b"\0\0".to_vec();
        body.extend_from_slice(&0u16.to_be_bytes());
        body.extend_from_slice(&0xFFFFu16.to_be_bytes());
        assert!(check_frame(&typed(b'B', &body), after_startup(), true).is_err());
        // A parameter length past the end.
        let mut body = b"\0\0".to_vec();
        body.extend_from_slice(&0u16.to_be_bytes());
        body.extend_from_slice(&1u16.to_be_bytes());
        body.extend_from_slice(&1000i32.to_be_bytes());
        assert!(check_frame(&typed(b'B', &body), after_startup(), true).is_err());
        // A message length below 4.
        let bad = [b'S', 0, 0, 0, 2];
        assert!(check_frame(&bad, after_startup(), true).is_err());
        // Unknown type, and a query before authentication.
        assert!(check_frame(&typed(b'Z', b""), after_startup(), true).is_err());
        assert!(check_frame(&typed(b'Q', b"x\0"), after_startup(), false).is_err());
    }

    #[test]
    fn the_first_password_message_has_the_layout_its_method_asked_for() {
        let first = Phase::Typed {
            first_password: true,
        };
        let password = typed(b'p', b"secret\0");
        let mut sasl = b"SCRAM-SHA-256\0".to_vec();
        sasl.extend(3i32.to_be_bytes());
        sasl.extend(b"abc");
        let sasl = typed(b'p', &sasl);
        // SASL expected: a bare password would leave pgwire reading past the end.
        assert!(check_frame_expecting(&password, first, false, false).is_err());
        assert!(check_frame_expecting(&sasl, first, false, false).is_ok());
        // A cleartext password expected: one string, nothing after it.
        assert!(check_frame_expecting(&password, first, false, true).is_ok());
        assert!(check_frame_expecting(&sasl, first, false, true).is_err());
    }

    #[test]
    fn startup_packets_are_bounded_and_checked() {
        let mut p = Vec::new();
        let body = b"user\0u\0\0";
        p.extend_from_slice(&((8 + body.len()) as i32).to_be_bytes());
        p.extend_from_slice(&196_608i32.to_be_bytes());
        p.extend_from_slice(body);
        let (n, next) = check_frame(&p, Phase::Startup, false).unwrap().unwrap();
        assert_eq!(n, p.len());
        assert_eq!(
            next,
            Phase::Typed {
                first_password: true
            }
        );
        assert!(check_frame(&[0, 1, 0, 0], Phase::Startup, false).is_err());
        assert_eq!(check_frame(&p[..6], Phase::Startup, false).unwrap(), None);
    }
}
