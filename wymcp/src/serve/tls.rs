//! TLS terminated by the accept loop itself (rustls, no OpenSSL): the
//! certificate chain and key from PEM files, reloaded without a restart,
//! HTTP/2 by ALPN, TLS 1.2 and 1.3 only, and optional client certificates
//! (mTLS) verified against a CA bundle.
//!
//! **Reloading.** The files are looked at every
//! [`reload_every`](TlsBuilder::reload_every) (default 10 s: their
//! modification times and sizes) and, on Unix, when the process receives
//! `SIGHUP`; a change is loaded and checked (the key must match the
//! certificate) before it replaces what is served. Connections already open
//! keep the certificate they were made with; new handshakes get the new
//! one. A reload that fails keeps the old certificate and is logged once
//! (a warning, the reason cut to 200 characters), not again until the files
//! change again. The CA bundle of client certificates is read once, when the
//! [`Tls`] is built.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

/// The largest PEM file read (a chain, a key, a CA bundle): 4 MiB.
const MAX_PEM_BYTES: u64 = 4 * 1024 * 1024;

/// Whether clients must present a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// A client may present a certificate (verified against the CA bundle
    /// when it does) or none; an application then authenticates it some
    /// other way too (a bearer token).
    Optional,
    /// A client that presents no certificate, or one the CA bundle does not
    /// verify, fails the handshake.
    Required,
}

/// Why a [`Tls`] could not be built or reloaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read, or is not the PEM it should be.
    #[error("`{path}`: {reason}")]
    File {
        /// The file, as configured.
        path: String,
        /// What was wrong (cut to 200 characters).
        reason: String,
    },
    /// rustls refused the configuration (a key that does not match the
    /// certificate, an unsupported key type, an empty CA bundle, …).
    #[error("TLS: {0}")]
    Config(String),
}

fn cut(text: impl fmt::Display) -> String {
    text.to_string().chars().take(200).collect()
}

fn file_error(path: &Path, reason: impl fmt::Display) -> TlsError {
    TlsError::File {
        path: cut(path.display()),
        reason: cut(reason),
    }
}

/// How to build a [`Tls`]: see [`Tls::builder`].
#[derive(Debug, Clone)]
pub struct TlsBuilder {
    cert: PathBuf,
    key: PathBuf,
    client_ca: Option<(PathBuf, ClientAuth)>,
    reload_every: Duration,
}

impl TlsBuilder {
    /// Verifies client certificates against the CA certificates of the PEM
    /// bundle `ca`; `auth` says whether a client must present one. A
    /// verified certificate reaches the application as a
    /// [`ClientCertificate`](crate::auth::ClientCertificate) request
    /// extension (see [`CertificateAuth`](crate::auth::CertificateAuth)).
    #[must_use]
    pub fn client_ca(mut self, ca: impl Into<PathBuf>, auth: ClientAuth) -> Self {
        self.client_ca = Some((ca.into(), auth));
        self
    }

    /// How often the certificate and key files are looked at for a change
    /// (at least 100 ms). Default 10 s.
    #[must_use]
    pub fn reload_every(mut self, every: Duration) -> Self {
        self.reload_every = every.max(Duration::from_millis(100));
        self
    }

    /// Loads the files and builds the rustls configuration.
    pub fn build(self) -> Result<Tls, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let stamp = stamp(&self.cert, &self.key);
        let certified = load(&self.cert, &self.key, &provider)?;
        let current = Arc::new(RwLock::new(Arc::new(certified)));
        let builder = ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .map_err(|e| TlsError::Config(cut(e)))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some((ca, auth)) => {
                let mut roots = RootCertStore::empty();
                for cert in read_certs(ca)? {
                    roots
                        .add(cert)
                        .map_err(|e| file_error(ca, format!("a CA certificate: {e}")))?;
                }
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone());
                let verifier = match auth {
                    ClientAuth::Optional => verifier.allow_unauthenticated(),
                    ClientAuth::Required => verifier,
                };
                let verifier = verifier.build().map_err(|e| TlsError::Config(cut(e)))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut config = builder.with_cert_resolver(Arc::new(Resolver(current.clone())));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            inner: Arc::new(Inner {
                cert: self.cert,
                key: self.key,
                reload_every: self.reload_every,
                client_auth: self.client_ca.map(|(_, auth)| auth),
                provider,
                current,
                seen: Mutex::new(stamp),
                acceptor: TlsAcceptor::from(Arc::new(config)),
            }),
        })
    }
}

/// TLS for [`Serve::tls`](super::Serve::tls): rustls with a certificate
/// chain and key from PEM files, reloaded when they change, ALPN `h2` and
/// `http/1.1`, TLS 1.2 and 1.3 only, and optionally client certificates.
///
/// **Reloading.** The files are looked at every
/// [`reload_every`](TlsBuilder::reload_every) (default 10 s: their
/// modification times and sizes) and, on Unix, when the process receives
/// `SIGHUP`; a change is loaded and checked (the key must match the
/// certificate) before it replaces what is served. Connections already open
/// keep the certificate they were made with; new handshakes get the new
/// one. A reload that fails keeps the old certificate and is logged once
/// (a warning, the reason cut to 200 characters), not again until the files
/// change again. The CA bundle of client certificates is read once, when
/// the `Tls` is built.
///
/// ```no_run
/// # async fn run(router: wymcp::axum::Router) -> Result<(), Box<dyn std::error::Error>> {
/// use wymcp::serve::{ClientAuth, Tls};
///
/// let tls = Tls::builder("/etc/mcp/cert.pem", "/etc/mcp/key.pem")
///     .client_ca("/etc/mcp/clients-ca.pem", ClientAuth::Optional)
///     .build()?;
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:443").await?;
/// wymcp::serve(listener, router).tls(tls).await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Tls {
    inner: Arc<Inner>,
}

struct Inner {
    cert: PathBuf,
    key: PathBuf,
    reload_every: Duration,
    client_auth: Option<ClientAuth>,
    provider: Arc<CryptoProvider>,
    current: Arc<RwLock<Arc<CertifiedKey>>>,
    /// The files' modification times and sizes when last loaded (or last
    /// tried): a failed reload is not tried, nor logged, again until they
    /// change.
    seen: Mutex<Stamp>,
    acceptor: TlsAcceptor,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("cert", &self.inner.cert)
            .field("key", &self.inner.key)
            .field("reload_every", &self.inner.reload_every)
            .field("client_auth", &self.inner.client_auth)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// TLS with the certificate chain of the PEM file `cert` (the server's
    /// certificate first) and the private key of the PEM file `key` (PKCS#8,
    /// PKCS#1 or SEC1); finish with [`TlsBuilder::build`].
    pub fn builder(cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> TlsBuilder {
        TlsBuilder {
            cert: cert.into(),
            key: key.into(),
            client_ca: None,
            reload_every: Duration::from_secs(10),
        }
    }

    /// Reads the certificate and key files again now; on success new
    /// handshakes use them, on failure the certificate served is kept and
    /// the error returned.
    pub fn reload(&self) -> Result<(), TlsError> {
        let stamp = stamp(&self.inner.cert, &self.inner.key);
        *self
            .inner
            .seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = stamp;
        let certified = load(&self.inner.cert, &self.inner.key, &self.inner.provider)?;
        *self
            .inner
            .current
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(certified);
        Ok(())
    }

    /// The certificate served now (DER), the end-entity one first.
    #[must_use]
    pub fn certificate_chain(&self) -> Vec<CertificateDer<'static>> {
        self.inner
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .cert
            .clone()
    }

    pub(super) fn acceptor(&self) -> &TlsAcceptor {
        &self.inner.acceptor
    }

    /// Reloads when the files changed since last looked at; logs the
    /// outcome once per change.
    fn reload_if_changed(&self) {
        let stamp = stamp(&self.inner.cert, &self.inner.key);
        {
            let seen = self
                .inner
                .seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if *seen == stamp {
                return;
            }
        }
        self.reload_logged("the certificate files changed");
    }

    fn reload_logged(&self, why: &'static str) {
        match self.reload() {
            Ok(()) => tracing::info!(target: "wymcp::serve", why, "TLS certificate reloaded"),
            Err(error) => tracing::warn!(
                target: "wymcp::serve",
                why,
                %error,
                "TLS certificate reload failed; the old certificate is kept"
            ),
        }
    }

    /// Looks at the files every `reload_every`, and reloads on `SIGHUP`,
    /// until `stop` says the server stops.
    pub(super) async fn watch(self, mut stop: watch::Receiver<bool>) {
        #[cfg(unix)]
        let mut hangup =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
        let mut tick = tokio::time::interval(self.inner.reload_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            #[cfg(unix)]
            let hup = async {
                match hangup.as_mut() {
                    Some(signal) => {
                        signal.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            #[cfg(not(unix))]
            let hup = std::future::pending::<()>();
            let forced = tokio::select! {
                _ = stop.changed() => return,
                _ = tick.tick() => false,
                () = hup => true,
            };
            let tls = self.clone();
            // Reading files blocks: off the runtime's threads.
            let _ = tokio::task::spawn_blocking(move || {
                if forced {
                    tls.reload_logged("SIGHUP");
                } else {
                    tls.reload_if_changed();
                }
            })
            .await;
        }
    }
}

/// The certificate resolver: whatever was loaded last.
#[derive(Debug)]
struct Resolver(Arc<RwLock<Arc<CertifiedKey>>>);

impl ResolvesServerCert for Resolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.0
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

type Stamp = [Option<(SystemTime, u64)>; 2];

fn stamp(cert: &Path, key: &Path) -> Stamp {
    let of = |path: &Path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    };
    [of(cert), of(key)]
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, TlsError> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| file_error(path, e))?;
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| file_error(path, e))?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(file_error(path, "larger than 4 MiB"));
    }
    Ok(bytes)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bytes = read_bounded(path)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_error(path, format!("not PEM: {e}")))?;
    if certs.is_empty() {
        return Err(file_error(path, "holds no certificate"));
    }
    Ok(certs)
}

fn load(cert: &Path, key: &Path, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let chain = read_certs(cert)?;
    let key_bytes = read_bounded(key)?;
    let private = PrivateKeyDer::from_pem_slice(&key_bytes)
        .map_err(|e| file_error(key, format!("no private key: {e}")))?;
    CertifiedKey::from_der(chain, private, provider).map_err(|e| TlsError::Config(cut(e)))
}
