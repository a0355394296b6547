//! The connection to a hub: dialling a server (plain or TLS), checking or
//! creating its schema, and the reader's second connection.
//!
//! Never: show a connection string's password (errors carry the
//! [`redact`]ed URL), or talk to a hub of another schema version.

use super::error::{redact, sql, HubError};
use super::{schema, tls};
use std::time::Duration;
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config, NoTls};

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
    pub(super) client: Client,
    /// A reader's second connection (see [`Hub::side`]).
    pub(super) side: Option<Client>,
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
