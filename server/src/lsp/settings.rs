//! The server's settings, read from `initializationOptions`: unknown keys
//! are reported (and ignored), bad values are an error that names the key.

use serde_json::Value;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Embedding model directory (else the default lookup).
    pub model_path: Option<PathBuf>,
    /// Do not load a model: lexical and symbol branches only.
    pub lexical_only: bool,
    /// Embed with the static tier first (every chunk within seconds), the
    /// transformer's vectors filling in behind; search uses the static
    /// tier's alone until the transformer has some, then for the chunks
    /// it has not reached. Off by default: on the development set it
    /// scored below the transformer's partial list alone at every
    /// coverage measured, and it delays the transformer by its own pass.
    pub static_tier: bool,
    /// Hits per `quarry/search` when the request gives no limit.
    pub limit: usize,
    /// Most hits from one file before every other file's get a turn (0 =
    /// no cap; the soft per-file diversity applies either way).
    pub per_file_cap: usize,
    /// Most results of `workspace/symbol`.
    pub max_symbols: usize,
    /// RRF constant.
    pub rrf_k: f32,
    /// Candidates per branch (`None`: `max(limit * 4, 50)`).
    pub depth: Option<usize>,
    /// Paths left out of every search (globs).
    pub exclude: Vec<String>,
    /// Milliseconds to wait for more changes before reindexing.
    pub debounce_ms: u64,
    /// Shared hubs (shards, each perhaps a read replica) `quarry/search`
    /// asks first; empty: the local index alone. `$QUARRY_HUB` when unset.
    pub hub: Vec<String>,
    /// Globs of the hub repositories searched (all the role may read).
    pub hub_repos: Vec<String>,
    /// The hub repository the first folder is a checkout of (default: the
    /// folder's name): its changes are overlaid on the hub's commit.
    pub hub_repo: Option<String>,
    /// How long a query waits for the hub before the local index answers.
    pub hub_timeout_ms: u64,
    /// After the hub fails, how long until it is tried again.
    pub hub_retry_ms: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            model_path: None,
            lexical_only: false,
            static_tier: false,
            limit: 20,
            per_file_cap: 0,
            max_symbols: 128,
            rrf_k: 60.0,
            depth: None,
            exclude: Vec::new(),
            debounce_ms: 120,
            hub: Vec::new(),
            hub_repos: Vec::new(),
            hub_repo: None,
            hub_timeout_ms: 3000,
            hub_retry_ms: 5000,
        }
    }
}

impl Settings {
    /// Parses `options` (absent, null or `[]`: the defaults). Returns the settings
    /// and the unknown keys.
    pub fn from_options(options: Option<&Value>) -> Result<(Settings, Vec<String>), String> {
        let mut settings = Settings::default();
        let mut unknown = Vec::new();
        // Neovim sends an empty Lua table as `[]`.
        let empty = |v: &&Value| v.is_null() || v.as_array().is_some_and(|a| a.is_empty());
        let Some(options) = options.filter(|v| !empty(v)) else {
            return Ok((settings, unknown));
        };
        let Some(map) = options.as_object() else {
            return Err("initializationOptions must be an object".into());
        };
        let count = |key: &str, v: &Value, max: u64| -> Result<usize, String> {
            v.as_u64()
                .filter(|n| *n <= max)
                .map(|n| n as usize)
                .ok_or_else(|| {
                    format!("initializationOptions.{key} must be an integer from 0 to {max}")
                })
        };
        for (key, value) in map {
            match key.as_str() {
                "modelPath" => {
                    settings.model_path = match value {
                        Value::Null => None,
                        Value::String(s) if !s.is_empty() => Some(PathBuf::from(s)),
                        _ => return Err("initializationOptions.modelPath must be a path".into()),
                    }
                }
                "lexicalOnly" => {
                    settings.lexical_only = value
                        .as_bool()
                        .ok_or("initializationOptions.lexicalOnly must be true or false")?
                }
                "staticTier" => {
                    settings.static_tier = value
                        .as_bool()
                        .ok_or("initializationOptions.staticTier must be true or false")?
                }
                "limit" => settings.limit = count(key, value, 1000)?.max(1),
                "perFileCap" => settings.per_file_cap = count(key, value, 1000)?,
                "maxSymbols" => settings.max_symbols = count(key, value, 100_000)?.max(1),
                "rrfK" => {
                    settings.rrf_k = value
                        .as_f64()
                        .filter(|k| *k > 0.0 && *k <= 10_000.0)
                        .ok_or("initializationOptions.rrfK must be a number above 0")?
                        as f32
                }
                "depth" => {
                    settings.depth = match value {
                        Value::Null => None,
                        v => Some(count(key, v, 10_000)?.max(1)),
                    }
                }
                "exclude" => {
                    settings.exclude = value
                        .as_array()
                        .and_then(|a| {
                            a.iter()
                                .map(|g| g.as_str().map(str::to_string))
                                .collect::<Option<Vec<_>>>()
                        })
                        .ok_or("initializationOptions.exclude must be a list of globs")?;
                    quarry_engine::filter::Filter::new(&[], &settings.exclude, &[], &[])
                        .map_err(|e| format!("initializationOptions.exclude: {e}"))?;
                }
                "debounceMs" => settings.debounce_ms = count(key, value, 60_000)? as u64,
                "hub" => {
                    settings.hub = match value {
                        Value::Null => Vec::new(),
                        Value::String(url) if !url.is_empty() => vec![url.clone()],
                        v => strings(v)
                            .ok_or("initializationOptions.hub must be a URL or a list of URLs")?,
                    }
                }
                "hubRepos" => {
                    settings.hub_repos = strings(value)
                        .ok_or("initializationOptions.hubRepos must be a list of globs")?
                }
                "hubRepo" => {
                    settings.hub_repo = match value {
                        Value::Null => None,
                        Value::String(name) if !name.is_empty() => Some(name.clone()),
                        _ => return Err("initializationOptions.hubRepo must be a name".into()),
                    }
                }
                "hubTimeoutMs" => {
                    settings.hub_timeout_ms = count(key, value, 600_000)?.max(1) as u64
                }
                "hubRetryMs" => settings.hub_retry_ms = count(key, value, 3_600_000)? as u64,
                _ => unknown.push(key.clone()),
            }
        }
        Ok((settings, unknown))
    }
}

/// A JSON list of strings.
fn strings(value: &Value) -> Option<Vec<String>> {
    value.as_array().and_then(|a| {
        a.iter()
            .map(|g| g.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_parse_with_unknown_keys_and_bad_values() {
        let (s, unknown) = Settings::from_options(Some(&json!({
            "perFileCap": 0, "maxSymbols": 50, "exclude": ["vendor"], "colour": "blue"
        })))
        .unwrap();
        assert_eq!(s.per_file_cap, 0);
        assert_eq!(s.max_symbols, 50);
        assert_eq!(s.exclude, vec!["vendor".to_string()]);
        assert_eq!(unknown, vec!["colour".to_string()]);
        assert_eq!(Settings::from_options(None).unwrap().0, Settings::default());
        let err = Settings::from_options(Some(&json!({"perFileCap": -1}))).unwrap_err();
        assert!(err.contains("perFileCap"), "{err}");
        let err = Settings::from_options(Some(&json!({"exclude": ["[a"]}))).unwrap_err();
        assert!(err.contains("bad path glob"), "{err}");
        assert!(Settings::from_options(Some(&json!([1]))).is_err());
        for empty in [json!(null), json!([])] {
            assert_eq!(
                Settings::from_options(Some(&empty)).unwrap().0,
                Settings::default()
            );
        }
    }

    #[test]
    fn a_hub_is_one_url_or_several() {
        let (s, _) = Settings::from_options(Some(&json!({"hub": "postgres://h/db"}))).unwrap();
        assert_eq!(s.hub, ["postgres://h/db"]);
        let (s, _) = Settings::from_options(Some(&json!({
            "hub": ["postgres://a/db", "postgres://b/db"], "hubRepos": ["svc-*"], "hubRepo": "mono"
        })))
        .unwrap();
        assert_eq!(s.hub.len(), 2);
        assert_eq!(s.hub_repos, ["svc-*"]);
        assert_eq!(s.hub_repo.as_deref(), Some("mono"));
        let err = Settings::from_options(Some(&json!({"hub": 5}))).unwrap_err();
        assert!(err.contains("hub"), "{err}");
    }
}
