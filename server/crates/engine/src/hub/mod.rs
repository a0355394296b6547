//! The hub: a shared index of many repositories in PostgreSQL with
//! pgvector, built once (by CI, by a server-side indexer) and searched by
//! every developer's CLI, language server and agent.
//!
//! Owns: the connection ([`Hub`], TLS in `tls`), the schema (`schema`),
//! writing a repository at a commit (`push`), answering a query over the
//! repositories a role may read, on one server or several shards
//! (`query`, `symbols`), the workspace's own changes laid over the hub's
//! commit (`overlay`) and the servers' long-lived link (`link`).
//! PostgreSQL retrieves candidates (HNSW over `halfvec` for meaning, a
//! term table for words, a name index for identifiers); Quarry ranks them
//! with the same stages as the local index (`search::search_blended` over
//! a snapshot of the candidate files, with the repositories' own corpus
//! statistics).
//!
//! Invariants: a push is one transaction, so readers see a repository at
//! its old commit or its new one, never a mix; every value in a statement
//! is a parameter (role names, the one identifier a statement must spell
//! out, go through [`quote_ident`]).
//! Never: show a connection string's password (errors and logs carry
//! [`redact`]ed URLs), or run without the schema version it was built for.

mod link;
mod overlay;
mod push;
mod query;
mod read;
mod schema;
mod symbols;
mod tls;

pub use link::{local_reason, within, Ask, Checkout, HubLink};
pub use overlay::{Overlay, OverlaySource};
pub use push::{push, PushStats};
pub use query::{search, HubHit, HubResults, OverlayInfo, RepoScope};
pub use read::{file, usages, HubFile, Usage};
pub use symbols::{symbols, HubSymbol};

use std::time::Duration;
use thiserror::Error;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};

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
    #[error("hub schema is version {found}; this quarry reads version {expected} (push into a new database, or drop the quarry_* tables and push again, with a matching quarry)")]
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

/// How long a connection attempt may take before the hub counts as down.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// One connection, its task spawned on the current runtime, the vector
/// search's breadth set.
async fn dial(
    config: &Config,
    connector: Option<&postgres_native_tls::MakeTlsConnector>,
    shown: &str,
) -> Result<Client, HubError> {
    let connected = match connector {
        None => config.connect(NoTls).await.map(|(client, connection)| {
            tokio::spawn(async move {
                // Ends when the client is dropped or the server goes
                // away; the next statement then fails with the reason.
                let _ = connection.await;
            });
            client
        }),
        Some(connector) => config
            .connect(connector.clone())
            .await
            .map(|(client, connection)| {
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                client
            }),
    };
    let client = connected.map_err(|source| HubError::Connect {
        url: shown.to_string(),
        source,
    })?;
    // HNSW returns at most `ef_search` rows (40 by default): the vector
    // list must reach the dense branch's depth.
    client
        .batch_execute(HNSW_SEARCH)
        .await
        .map_err(sql("setting the vector search's breadth"))?;
    Ok(client)
}

/// Candidates the vector index keeps per query: as many as the vector
/// candidate list asks each shard for (`query::DENSE_DEPTH` twice).
const HNSW_SEARCH: &str = "SET hnsw.ef_search = 100";

/// A connection to a hub whose schema is current.
pub struct Hub {
    client: Client,
    /// A reader's second connection (see [`Hub::side`]).
    side: Option<Client>,
    url: String,
}

impl Hub {
    /// Connects (TLS as `sslmode` asks, a [`CONNECT_TIMEOUT`]) and creates or checks
    /// the schema. The connection runs on the current tokio runtime.
    pub async fn connect(url: &str) -> Result<Hub, HubError> {
        let hub = Hub::open(url, false).await?;
        schema::ensure(&hub.client).await?;
        Ok(hub)
    }

    /// Connects to read only: checks the schema's version and never
    /// creates it, so a streaming replica (read-only) serves queries.
    pub async fn connect_read(url: &str) -> Result<Hub, HubError> {
        let hub = Hub::open(url, true).await?;
        schema::check_existing(&hub.client).await?;
        Ok(hub)
    }

    async fn open(url: &str, with_side: bool) -> Result<Hub, HubError> {
        let shown = redact(url);
        let ask = tls::split(url);
        let mut config: Config = ask.url.parse().map_err(|_| HubError::Url(shown.clone()))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("quarry");
        }
        let connector = if config.get_ssl_mode() == SslMode::Disable {
            None
        } else {
            Some(tls::connector(&ask, &shown)?)
        };
        let client = dial(&config, connector.as_ref(), &shown).await?;
        let side = match with_side {
            true => Some(dial(&config, connector.as_ref(), &shown).await?),
            false => None,
        };
        Ok(Hub {
            client,
            side,
            url: shown,
        })
    }

    /// The connection for a statement run beside one on `client` (the
    /// vector list beside the lexical ones): the second connection of a
    /// reader, else the one connection (statements then queue).
    pub(crate) fn side(&self) -> &Client {
        self.side.as_ref().unwrap_or(&self.client)
    }

    /// The URL with its password hidden.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Lets `role` read `repo` (search, symbols, context): the row-level
    /// policy shows a repository's rows only to roles granted it.
    pub async fn grant(&self, repo: &str, role: &str) -> Result<(), HubError> {
        schema::grant(&self.client, repo, role).await
    }

    /// Vacuums and analyzes the hub's tables: what autovacuum does after a
    /// bulk push, done at once. Term postings are read from their index
    /// alone only on pages vacuum has marked all-visible.
    pub async fn vacuum(&self) -> Result<(), HubError> {
        self.client
            .batch_execute(
                "VACUUM (ANALYZE) quarry_repos, quarry_files, quarry_chunks, quarry_terms, quarry_df",
            )
            .await
            .map_err(sql("vacuuming the hub"))
    }

    /// The hub database's size on disk, in bytes.
    pub async fn size_bytes(&self) -> Result<i64, HubError> {
        Ok(self
            .client
            .query_one("SELECT pg_database_size(current_database())", &[])
            .await
            .map_err(sql("measuring the hub"))?
            .get(0))
    }

    /// The repositories this connection's role may read, with their
    /// commits and chunk counts.
    pub async fn repos(&self) -> Result<Vec<(String, String, i64)>, HubError> {
        let rows = self
            .client
            .query(
                "SELECT name, commit_id, n_docs FROM quarry_repos ORDER BY name",
                &[],
            )
            .await
            .map_err(sql("listing repositories"))?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect())
    }
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

/// `name` as a quoted SQL identifier (`"a""b"` for `a"b`): for the role
/// names a `GRANT` must spell out, which no parameter can stand for.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
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

    #[test]
    fn identifiers_are_quoted_whole() {
        assert_eq!(quote_ident("team"), "\"team\"");
        assert_eq!(
            quote_ident("x\"; DROP TABLE t; --"),
            "\"x\"\"; DROP TABLE t; --\""
        );
    }
}
