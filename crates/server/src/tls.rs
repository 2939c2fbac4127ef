//! TLS with rustls: the server's side (`ssl`, `ssl_cert_file`, `ssl_key_file`,
//! `ssl_ca_file`, `ssl_min_protocol_version`) and the client's side of replication
//! connections (libpq's `sslmode`, `sslrootcert`, `sslcert`, `sslkey`).
//!
//! Entry points: [`TlsSettings`] and [`server_config`] (the server's certificate,
//! key and client-certificate roots, loaded at start and at reload), [`Stream`] (a
//! server connection before and after the handshake), [`peer_common_name`] (the
//! CN of a verified client certificate, for `cert` authentication), [`SslMode`],
//! [`ClientTls`] and [`client_config`] (a WAL receiver's or `strata basebackup`'s
//! TLS).
//!
//! Rules (cited as "tls rule N"):
//! 1. A server with `ssl = on` starts only with a certificate and a key it can use:
//!    a missing or unreadable file, a key that does not match the certificate, or a
//!    key file that group or others may read is FATAL with PostgreSQL's words. At
//!    reload the same errors are logged and the previous TLS configuration stays.
//! 2. Only what rustls honours is accepted: TLSv1.2 and TLSv1.3.
//!    `ssl_min_protocol_version = TLSv1` or `TLSv1.1` is an error at start, not a
//!    silently stronger setting.
//! 3. With `ssl_ca_file` set, client certificates are requested and, when one is
//!    sent, verified against that CA (an unverifiable one fails the handshake); a
//!    client without one may still connect, and `pg_hba.conf` (`cert`,
//!    `clientcert`) decides whether that is enough, as in PostgreSQL.
//! 4. The client side verifies as libpq does: `verify-full` checks the chain and the
//!    host name, `verify-ca` the chain only, `require` (and `prefer`, `allow`)
//!    nothing, except that `require` with a root certificate file present behaves as
//!    `verify-ca` (libpq's compatibility rule). Verification never falls back:
//!    `verify-ca` and `verify-full` without a root certificate file are errors.
//! 5. Paths of the server's files are relative to the data directory; the client's
//!    default to `~/.postgresql/root.crt`, `postgresql.crt` and `postgresql.key`.

use pgwire::tokio::tokio_rustls::rustls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme, SupportedProtocolVersion};
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// The server's TLS settings, as given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsSettings {
    pub enabled: bool,
    pub cert_file: String,
    pub key_file: String,
    pub ca_file: String,
    pub min_protocol: TlsVersion,
}

impl Default for TlsSettings {
    fn default() -> Self {
        TlsSettings {
            enabled: false,
            cert_file: "server.crt".into(),
            key_file: "server.key".into(),
            ca_file: String::new(),
            min_protocol: TlsVersion::V1_2,
        }
    }
}

/// The protocol versions rustls speaks (rule 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsVersion {
    V1_2,
    V1_3,
}

impl TlsVersion {
    /// `ssl_min_protocol_version`'s values, PostgreSQL's names.
    pub fn parse(name: &str, value: &str) -> Result<TlsVersion, String> {
        match value.trim() {
            v if v.eq_ignore_ascii_case("TLSv1.2") => Ok(TlsVersion::V1_2),
            v if v.eq_ignore_ascii_case("TLSv1.3") => Ok(TlsVersion::V1_3),
            v if v.eq_ignore_ascii_case("TLSv1") || v.eq_ignore_ascii_case("TLSv1.1") => Err(format!(
                "invalid value for parameter \"{name}\": \"{value}\"\nDETAIL:  Strata's TLS (rustls) speaks TLSv1.2 and TLSv1.3 only.\nHINT:  Available values: TLSv1.2, TLSv1.3."
            )),
            _ => Err(format!(
                "invalid value for parameter \"{name}\": \"{value}\"\nHINT:  Available values: TLSv1.2, TLSv1.3."
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            TlsVersion::V1_2 => "TLSv1.2",
            TlsVersion::V1_3 => "TLSv1.3",
        }
    }

    fn versions(self) -> &'static [&'static SupportedProtocolVersion] {
        static BOTH: &[&SupportedProtocolVersion] =
            &[&rustls::version::TLS13, &rustls::version::TLS12];
        static ONLY_13: &[&SupportedProtocolVersion] = &[&rustls::version::TLS13];
        match self {
            TlsVersion::V1_2 => BOTH,
            TlsVersion::V1_3 => ONLY_13,
        }
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An I/O error in PostgreSQL's words: "No such file or directory", without Rust's
/// "(os error 2)".
pub fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn resolve(data: &Path, file: &str) -> PathBuf {
    let p = Path::new(file);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        data.join(p)
    }
}

/// Certificates of a PEM file; `what` names the file in errors ("server
/// certificate file", "root certificate file").
fn load_certs(
    path: &Path,
    shown: &str,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path)
        .map_err(|e| format!("could not load {what} \"{shown}\": {}", io_text(&e)))?;
    parse_certs(&bytes, shown, what)
}

fn parse_certs(
    bytes: &[u8],
    shown: &str,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("could not load {what} \"{shown}\": {e}"))?;
    if certs.is_empty() {
        return Err(format!("could not load {what} \"{shown}\": no start line"));
    }
    Ok(certs)
}

/// PostgreSQL's check of a private key file's owner and mode (rule 1).
fn check_key_file(path: &Path, shown: &str) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).map_err(|e| {
        format!(
            "could not access private key file \"{shown}\": {}",
            io_text(&e)
        )
    })?;
    if !m.is_file() {
        return Err(format!(
            "private key file \"{shown}\" is not a regular file"
        ));
    }
    let me = rustix::process::geteuid().as_raw();
    if m.uid() != me && m.uid() != 0 {
        return Err(format!(
            "private key file \"{shown}\" must be owned by the database user or root"
        ));
    }
    let loose = if m.uid() == me {
        m.mode() & 0o077 != 0
    } else {
        m.mode() & 0o037 != 0
    };
    if loose {
        return Err(format!(
            "private key file \"{shown}\" has group or world access\nDETAIL:  File must have permissions u=rw (0600) or less if owned by the database user, or permissions u=rw,g=r (0640) or less if owned by root."
        ));
    }
    Ok(())
}

fn load_key(path: &Path, shown: &str) -> Result<PrivateKeyDer<'static>, String> {
    check_key_file(path, shown)?;
    let bytes = std::fs::read(path).map_err(|e| {
        format!(
            "could not load private key file \"{shown}\": {}",
            io_text(&e)
        )
    })?;
    PrivateKeyDer::from_pem_slice(&bytes)
        .map_err(|e| format!("could not load private key file \"{shown}\": {e}"))
}

fn roots(path: &Path, shown: &str) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    for c in load_certs(path, shown, "root certificate file")? {
        store
            .add(c)
            .map_err(|e| format!("could not load root certificate file \"{shown}\": {e}"))?;
    }
    Ok(store)
}

/// The server's TLS: its rustls configuration, and its certificate chain as read
/// (PEM, for SCRAM channel binding: `tls-server-end-point` hashes the certificate).
#[derive(Debug)]
pub struct ServerTls {
    pub config: Arc<rustls::ServerConfig>,
    pub cert_pem: Arc<Vec<u8>>,
}

/// The server's TLS, or `None` with `ssl = off` (rules 1-3, 5).
pub fn server_config(data: &Path, s: &TlsSettings) -> Result<Option<ServerTls>, String> {
    if !s.enabled {
        return Ok(None);
    }
    let what = "server certificate file";
    let cert_pem = std::fs::read(resolve(data, &s.cert_file))
        .map_err(|e| format!("could not load {what} \"{}\": {}", s.cert_file, io_text(&e)))?;
    let certs = parse_certs(&cert_pem, &s.cert_file, what)?;
    let key = load_key(&resolve(data, &s.key_file), &s.key_file)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(s.min_protocol.versions())
        .map_err(|e| format!("could not set the SSL protocol version range: {e}"))?;
    let builder = if s.ca_file.is_empty() {
        builder.with_no_client_auth()
    } else {
        let store = roots(&resolve(data, &s.ca_file), &s.ca_file)?;
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(store), provider())
            .allow_unauthenticated()
            .build()
            .map_err(|e| {
                format!(
                    "could not load root certificate file \"{}\": {e}",
                    s.ca_file
                )
            })?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "could not load private key file \"{}\": key values mismatch ({e})",
            s.key_file
        )
    })?;
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Some(ServerTls {
        config: Arc::new(config),
        cert_pem: Arc::new(cert_pem),
    }))
}

/// The common name of the client's certificate, if it sent one (rustls verified it
/// against `ssl_ca_file` during the handshake: rule 3).
pub fn peer_common_name(conn: &rustls::ServerConnection) -> Option<String> {
    let der = conn.peer_certificates()?.first()?;
    x509_certificate::X509Certificate::from_der(der.as_ref())
        .ok()?
        .subject_common_name()
}

/// SCRAM's `tls-server-end-point` channel binding data of a server certificate
/// (RFC 5929): the certificate hashed with its signature's hash, SHA-256 for MD5 and
/// SHA-1; `None` for a signature with no such hash (Ed25519).
pub fn tls_server_end_point(der: &[u8]) -> Option<Vec<u8>> {
    use sha2::Digest;
    use x509_certificate::SignatureAlgorithm as S;
    let cert = x509_certificate::X509Certificate::from_der(der).ok()?;
    Some(match cert.signature_algorithm()? {
        S::RsaSha1 | S::RsaSha256 | S::EcdsaSha256 => sha2::Sha256::digest(der).to_vec(),
        S::RsaSha384 | S::EcdsaSha384 => sha2::Sha384::digest(der).to_vec(),
        S::RsaSha512 => sha2::Sha512::digest(der).to_vec(),
        _ => return None,
    })
}

/// A server connection: plain TCP, or TLS after an SSLRequest.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<pgwire::tokio::tokio_rustls::server::TlsStream<TcpStream>>),
}

macro_rules! each {
    ($self:ident, $poll:ident($($arg:expr),*)) => {
        match $self.get_mut() {
            Stream::Plain(s) => Pin::new(s).$poll($($arg),*),
            Stream::Tls(s) => Pin::new(s).$poll($($arg),*),
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, poll_write(cx, buf))
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, poll_shutdown(cx))
    }
}

// ---- the client side (rule 4) ----

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// libpq's values; anything else is refused with libpq's message.
    pub fn parse(v: &str) -> Result<SslMode, String> {
        Ok(match v {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return Err(format!("invalid sslmode value: \"{v}\"")),
        })
    }

    /// Whether a connection without TLS is refused.
    pub fn requires_tls(self) -> bool {
        matches!(
            self,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
        )
    }
}

/// What a client connection's TLS is made of (a conninfo's keywords).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientTls {
    pub rootcert: Option<String>,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub min_protocol: Option<TlsVersion>,
}

fn home_file(name: &str) -> Option<PathBuf> {
    let home = std::env::var("HOME").ok().filter(|h| !h.is_empty())?;
    Some(Path::new(&home).join(".postgresql").join(name))
}

/// The given file, else libpq's default under `~/.postgresql`.
fn client_file(given: &Option<String>, default: &str) -> Option<PathBuf> {
    match given {
        Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
        _ => home_file(default),
    }
}

/// The client's rustls configuration for `mode` (not `Disable`).
pub fn client_config(mode: SslMode, t: &ClientTls) -> Result<Arc<rustls::ClientConfig>, String> {
    let root_path = client_file(&t.rootcert, "root.crt");
    let root_exists = root_path.as_ref().is_some_and(|p| p.exists());
    let verify = match mode {
        SslMode::VerifyFull => Verify::Full,
        SslMode::VerifyCa => Verify::Ca,
        SslMode::Require if root_exists => Verify::Ca,
        _ => Verify::None,
    };
    if verify != Verify::None && !root_exists {
        let shown = root_path
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        return Err(format!(
            "root certificate file \"{shown}\" does not exist\nEither provide the file or change sslmode to disable server certificate verification."
        ));
    }
    if t.rootcert.as_deref() == Some("system") {
        return Err("sslrootcert=system is not supported by Strata".into());
    }
    let versions = t.min_protocol.unwrap_or(TlsVersion::V1_2).versions();
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(versions)
        .map_err(|e| format!("could not set the SSL protocol version range: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match (verify, root_path) {
        (Verify::None, _) | (_, None) => Arc::new(NoVerify(provider())),
        (v, Some(path)) => {
            let shown = path.display().to_string();
            let store = roots(&path, &shown)?;
            let inner = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(store),
                provider(),
            )
            .build()
            .map_err(|e| format!("could not read root certificate file \"{shown}\": {e}"))?;
            Arc::new(ChainVerifier {
                inner,
                check_name: v == Verify::Full,
            })
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let cert_path = client_file(&t.cert, "postgresql.crt").filter(|p| p.exists());
    let mut config = match cert_path {
        None => builder.with_no_client_auth(),
        Some(cp) => {
            let shown = cp.display().to_string();
            let certs = load_certs(&cp, &shown, "certificate file")?;
            let kp = client_file(&t.key, "postgresql.key").ok_or_else(|| {
                format!("certificate present, but not private key file for \"{shown}\"")
            })?;
            let key = load_key(&kp, &kp.display().to_string())?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                format!(
                    "certificate does not match private key file \"{}\": {e}",
                    kp.display()
                )
            })?
        }
    };
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(Arc::new(config))
}

/// The name the client verifies and sends (SNI): the host, as an IP address or a
/// DNS name.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    ServerName::try_from(host.to_string())
        .map_err(|_| format!("invalid host name for SSL: \"{host}\""))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verify {
    None,
    Ca,
    Full,
}

/// `require`, `prefer`, `allow` without a root certificate: the server's certificate
/// is not checked (libpq's behaviour), only the handshake's signatures.
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca` and `verify-full`: the chain must reach a root of `sslrootcert`;
/// the host name is checked for `verify-full` only.
#[derive(Debug)]
struct ChainVerifier {
    inner: Arc<rustls::client::WebPkiServerVerifier>,
    check_name: bool,
}

impl ServerCertVerifier for ChainVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error};
        match self
            .inner
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_versions_rustls_cannot_honour_are_refused() {
        assert_eq!(TlsVersion::parse("v", "TLSv1.2"), Ok(TlsVersion::V1_2));
        assert_eq!(TlsVersion::parse("v", "tlsv1.3"), Ok(TlsVersion::V1_3));
        for bad in ["TLSv1", "TLSv1.1", "SSLv3", ""] {
            let e = TlsVersion::parse("ssl_min_protocol_version", bad).expect_err(bad);
            assert!(
                e.starts_with("invalid value for parameter \"ssl_min_protocol_version\""),
                "{e}"
            );
        }
    }

    #[test]
    fn sslmode_values_are_libpqs() {
        assert_eq!(SslMode::parse("verify-full"), Ok(SslMode::VerifyFull));
        assert!(SslMode::parse("on").is_err());
        assert!(SslMode::Require.requires_tls() && !SslMode::Prefer.requires_tls());
    }

    #[test]
    fn missing_server_files_are_postgres_errors() {
        let dir = tempfile::tempdir().expect("temp dir");
        let s = TlsSettings {
            enabled: true,
            ..TlsSettings::default()
        };
        let e = server_config(dir.path(), &s).expect_err("no certificate");
        assert_eq!(
            e,
            "could not load server certificate file \"server.crt\": No such file or directory"
        );
        std::fs::write(dir.path().join("server.crt"), "garbage").expect("write");
        let e = server_config(dir.path(), &s).expect_err("bad certificate");
        assert!(e.ends_with("no start line"), "{e}");
        assert!(server_config(dir.path(), &TlsSettings::default())
            .expect("off")
            .is_none());
    }
}
