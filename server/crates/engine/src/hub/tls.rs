//! TLS to the hub, as the connection string asks (libpq's `sslmode`).
//!
//! Owns: reading `sslmode` and `sslrootcert` out of a URL (tokio-postgres
//! knows `disable`, `prefer` and `require` only) and the connector:
//! `prefer` and `require` encrypt without checking the certificate (what
//! libpq does); `verify-ca` checks it against the system's roots and
//! `sslrootcert`, `verify-full` the host name too.
//! Never: fall back to plain TCP when the URL requires TLS.

use super::error::HubError;
use native_tls::{Certificate, TlsConnector};
use postgres_native_tls::MakeTlsConnector;
use std::path::PathBuf;

/// How the certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Encrypted, the certificate not checked (`prefer`, `require`).
    None,
    /// Signed by a trusted root (`verify-ca`).
    Ca,
    /// And issued to the host connected to (`verify-full`).
    Full,
}

/// What a connection string asks of TLS, and the string left for
/// tokio-postgres.
#[derive(Debug, PartialEq)]
pub struct TlsAsk {
    pub url: String,
    pub verify: Verify,
    pub root_cert: Option<PathBuf>,
}

/// Takes `sslmode=verify-ca|verify-full` (replaced by `require`) and
/// `sslrootcert=PATH` (removed) out of `url`, in either of PostgreSQL's
/// forms.
pub fn split(url: &str) -> TlsAsk {
    let mut verify = Verify::None;
    let mut root_cert = None;
    let mut take = |key: &str, value: &str| -> Option<String> {
        match (key, value) {
            ("sslmode", "verify-ca") => {
                verify = Verify::Ca;
                Some("sslmode=require".into())
            }
            ("sslmode", "verify-full") => {
                verify = Verify::Full;
                Some("sslmode=require".into())
            }
            ("sslrootcert", path) => {
                root_cert = Some(PathBuf::from(path));
                Some(String::new())
            }
            _ => None,
        }
    };
    let url = if let Some((head, query)) = url.split_once('?').filter(|_| url.contains("://")) {
        let params: Vec<String> = query
            .split('&')
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                match take(k, v) {
                    Some(s) if s.is_empty() => None,
                    Some(s) => Some(s),
                    None => Some(p.to_string()),
                }
            })
            .collect();
        if params.is_empty() {
            head.to_string()
        } else {
            format!("{head}?{}", params.join("&"))
        }
    } else if url.contains("://") {
        url.to_string()
    } else {
        url.split_whitespace()
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                match take(k.trim(), v.trim()) {
                    Some(s) if s.is_empty() => None,
                    Some(s) => Some(s),
                    None => Some(p.to_string()),
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    TlsAsk {
        url,
        verify,
        root_cert,
    }
}

/// The connector for `ask`; `shown` is the redacted URL for errors.
pub fn connector(ask: &TlsAsk, shown: &str) -> Result<MakeTlsConnector, HubError> {
    let mut builder = TlsConnector::builder();
    match ask.verify {
        Verify::None => {
            builder
                .danger_accept_invalid_certs(true)
                .danger_accept_invalid_hostnames(true);
        }
        Verify::Ca => {
            builder.danger_accept_invalid_hostnames(true);
        }
        Verify::Full => {}
    }
    if let Some(path) = &ask.root_cert {
        let pem = std::fs::read(path).map_err(|e| {
            HubError::Invalid(format!("{shown}: sslrootcert {}: {e}", path.display()))
        })?;
        let cert = Certificate::from_pem(&pem).map_err(|e| {
            HubError::Invalid(format!("{shown}: sslrootcert {}: {e}", path.display()))
        })?;
        builder.add_root_certificate(cert);
    }
    let connector = builder
        .build()
        .map_err(|e| HubError::Invalid(format!("{shown}: TLS: {e}")))?;
    Ok(MakeTlsConnector::new(connector))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_modes_and_root_certificates_come_out_of_both_forms() {
        let ask =
            split("postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem&application_name=x");
        assert_eq!(
            ask.url,
            "postgres://u@h/db?sslmode=require&application_name=x"
        );
        assert_eq!(ask.verify, Verify::Full);
        assert_eq!(ask.root_cert, Some(PathBuf::from("/ca.pem")));
        let ask = split("host=h sslmode=verify-ca user=u");
        assert_eq!(ask.url, "host=h sslmode=require user=u");
        assert_eq!(ask.verify, Verify::Ca);
        let ask = split("postgres://u@h/db?sslmode=require");
        assert_eq!(ask.url, "postgres://u@h/db?sslmode=require");
        assert_eq!(ask.verify, Verify::None);
        assert_eq!(split("postgres://u@h/db").url, "postgres://u@h/db");
    }
}
