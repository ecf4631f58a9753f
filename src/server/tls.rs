//! [`Tls`]: TLS on the server's one port (`[server.tls]`,
//! `docs/security.md`). A connection whose first byte is a TLS handshake
//! record (`0x16`) is decrypted, and what it carries is told apart as on a
//! plain connection (HTTP or the line protocols). The certificate and key
//! are read again on SIGHUP ([`Tls::reload`]): new connections get the new
//! ones, open connections keep theirs. With `required`, a connection that
//! does not start a handshake is closed.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::TlsConfig;

/// The first byte of a TLS record carrying a handshake.
pub const HANDSHAKE: u8 = 0x16;

/// The server's TLS settings, reloadable.
#[derive(Debug)]
pub struct Tls {
    config: RwLock<Arc<rustls::ServerConfig>>,
    cert_file: PathBuf,
    key_file: PathBuf,
    pub required: bool,
}

fn server_config(cert_file: &Path, key_file: &Path) -> Result<Arc<rustls::ServerConfig>, String> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_file)
        .and_then(Iterator::collect)
        .map_err(|e| format!("TLS certificate {}: {e}", cert_file.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "TLS certificate {}: no certificate in it",
            cert_file.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| format!("TLS key {}: {e}", key_file.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("TLS certificate and key: {e}"))?;
    Ok(Arc::new(config))
}

impl Tls {
    /// The TLS of a configuration; `None` without a certificate.
    pub fn load(cfg: &TlsConfig) -> Result<Option<Tls>, String> {
        if cfg.cert_file.as_os_str().is_empty() {
            if cfg.required {
                return Err("server.tls.required needs server.tls.cert_file and key_file".into());
            }
            return Ok(None);
        }
        Ok(Some(Tls {
            config: RwLock::new(server_config(&cfg.cert_file, &cfg.key_file)?),
            cert_file: cfg.cert_file.clone(),
            key_file: cfg.key_file.clone(),
            required: cfg.required,
        }))
    }

    /// Reads the certificate and key again (SIGHUP); on an error the ones
    /// in use stay.
    pub fn reload(&self) -> Result<(), String> {
        let fresh = server_config(&self.cert_file, &self.key_file)?;
        *self
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// An acceptor with the current certificate.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        let config = self
            .config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        tokio_rustls::TlsAcceptor::from(Arc::clone(&config))
    }
}
