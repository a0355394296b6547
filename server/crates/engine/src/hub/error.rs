//! What can go wrong talking to a hub, and the one rule every message
//! keeps: a connection string is shown [`redact`]ed.
//!
//! Never: carry a password into an error, a log line or a status.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum HubError {
    #[error("hub URL {0} is not a PostgreSQL connection string")]
    Url(String),
    #[error("hub {url}: cannot connect")]
    Connect {
        url: String,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("hub {url}: no answer within {secs} s")]
    Timeout { url: String, secs: u64 },
    #[error("hub: {context}")]
    Sql {
        context: &'static str,
        #[source]
        source: tokio_postgres::Error,
    },
    #[error("hub schema is version {found}; this quarry reads version {expected} (a `quarry push` by this quarry upgrades an older hub, from version 2 on, in place; otherwise push into a new database, or drop the quarry_* tables and push again, with a matching quarry)")]
    Version { found: i32, expected: i32 },
    #[error("hub: {0}")]
    Invalid(String),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

impl HubError {
    /// The error and its causes on one line (a URL in it is redacted).
    pub fn full(&self) -> String {
        use std::error::Error;
        let mut text = self.to_string();
        let mut source = self.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }

    /// The hub could not be reached or went away: a caller with a local
    /// index answers from it instead (and says why).
    pub fn is_unreachable(&self) -> bool {
        match self {
            HubError::Connect { .. } | HubError::Timeout { .. } => true,
            HubError::Sql { source, .. } => {
                use std::error::Error;
                source.is_closed() || source.source().is_some_and(|s| s.is::<std::io::Error>())
            }
            _ => false,
        }
    }
}

/// `Sql` errors with what was being done.
pub(crate) fn sql(context: &'static str) -> impl FnOnce(tokio_postgres::Error) -> HubError {
    move |source| HubError::Sql { context, source }
}

/// `url` with any password replaced by `***`, in both of PostgreSQL's
/// forms (`postgres://user:secret@host/db`, `password=secret host=...`).
pub fn redact(url: &str) -> String {
    if let Some(scheme_end) = url.find("://") {
        let rest = &url[scheme_end + 3..];
        let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let redacted = match authority.rfind('@') {
            Some(at) => match authority[..at].find(':') {
                Some(colon) => format!("{}:***{}", &authority[..colon], &authority[at..]),
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        let mut query = rest[authority_end..].to_string();
        if let Some(q) = query.find('?') {
            let (path, params) = query.split_at(q + 1);
            let params: Vec<String> = params
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => p.to_string(),
                })
                .collect();
            query = format!("{path}{}", params.join("&"));
        }
        return format!("{}{}{}", &url[..scheme_end + 3], redacted, query);
    }
    // Key-value form: hide the value after `password=` (quoted or not).
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(at) = rest.find("password") {
        let after = &rest[at + "password".len()..];
        let eq = after.trim_start();
        if !eq.starts_with('=') {
            out.push_str(&rest[..at + "password".len()]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..at]);
        out.push_str("password=***");
        let value = eq[1..].trim_start();
        let end = if let Some(quoted) = value.strip_prefix('\'') {
            let mut end = quoted.len();
            let bytes = quoted.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => i += 2,
                    b'\'' => {
                        end = i + 1;
                        break;
                    }
                    _ => i += 1,
                }
            }
            1 + end.min(quoted.len())
        } else {
            value.find(char::is_whitespace).unwrap_or(value.len())
        };
        rest = &value[end.min(value.len())..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redact_hides_passwords_in_both_forms() {
        let cases = [
            (
                "postgres://quarry:s3cret@127.0.0.1:5432/hub",
                "postgres://quarry:***@127.0.0.1:5432/hub",
            ),
            (
                "postgresql://u:p%40ss@h/db?sslmode=disable&password=x",
                "postgresql://u:***@h/db?sslmode=disable&password=***",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            (
                "host=h user=u password=s3cret dbname=d",
                "host=h user=u password=*** dbname=d",
            ),
            (
                "host=h password = 'a b\\' c' dbname=d",
                "host=h password=*** dbname=d",
            ),
        ];
        for (url, want) in cases {
            let got = redact(url);
            assert_eq!(got, want, "{url}");
            assert!(!got.contains("s3cret") && !got.contains("p%40ss"));
        }
    }
}
