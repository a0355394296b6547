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
                    crate::filter::Filter::new(&[], &settings.exclude, &[], &[])
                        .map_err(|e| format!("initializationOptions.exclude: {e}"))?;
                }
                "debounceMs" => settings.debounce_ms = count(key, value, 60_000)? as u64,
                _ => unknown.push(key.clone()),
            }
        }
        Ok((settings, unknown))
    }
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
}
