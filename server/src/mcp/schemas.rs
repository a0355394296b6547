//! The JSON Schemas of the tools' `structuredContent`, one constant per
//! tool, parsed into rmcp's form by [`schema`].
//! Never: describes a field a tool does not return (a test parses each).

use serde_json::Value;
use std::sync::Arc;

/// The JSON Schema of a tool's `structuredContent`.
pub(super) fn schema(text: &str) -> Arc<rmcp::model::JsonObject> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Arc::new(map),
        // The texts are constants checked by a test.
        _ => Arc::new(rmcp::model::JsonObject::new()),
    }
}

pub(super) const SEARCH_CODE_OUTPUT: &str = r#"{
  "type": "object",
  "required": ["mode", "coverage", "hits", "no_match"],
  "properties": {
    "mode": {"type": "string", "enum": ["hybrid", "partial", "lexical"]},
    "reason": {"type": "string", "description": "Why the search is lexical-only or partial."},
    "coverage": {
      "type": "object",
      "required": ["embedded", "total"],
      "properties": {"embedded": {"type": "integer"}, "total": {"type": "integer"}}
    },
    "no_match": {"type": "boolean", "description": "No chunk matched the query's words or names; the hits are only near it in meaning."},
    "hits": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["path", "start_line", "end_line", "symbol", "name", "label", "kind", "language", "score", "sources", "ranks", "snippet", "detail", "detail_line"],
        "properties": {
          "path": {"type": "string"},
          "start_line": {"type": "integer"},
          "end_line": {"type": "integer"},
          "symbol": {"type": "string", "description": "Qualified name."},
          "name": {"type": "string"},
          "label": {"type": "string", "description": "How to show it: `impl X` for an impl block."},
          "kind": {"type": "string"},
          "language": {"type": "string"},
          "score": {"type": "number", "description": "Falls strictly down the list."},
          "sources": {"type": "array", "items": {"type": "string"}},
          "ranks": {"type": "object", "additionalProperties": {"type": "integer"}},
          "snippet": {"type": "string", "description": "Numbered lines: the signature and the line that matched."},
          "detail": {"type": "string", "description": "The line that matched, or the signature."},
          "detail_line": {"type": "integer"}
        }
      }
    }
  }
}"#;

pub(super) const FIND_SYMBOL_OUTPUT: &str = r#"{
  "type": "object",
  "required": ["symbols"],
  "properties": {
    "symbols": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["path", "start_line", "end_line", "name_line", "name_column", "name", "qualified_name", "kind", "language", "tier"],
        "properties": {
          "path": {"type": "string"},
          "start_line": {"type": "integer"},
          "end_line": {"type": "integer"},
          "name_line": {"type": "integer"},
          "name_column": {"type": "integer"},
          "name": {"type": "string"},
          "qualified_name": {"type": "string"},
          "kind": {"type": "string"},
          "language": {"type": "string"},
          "tier": {"type": "string", "enum": ["exact", "prefix", "word", "fuzzy"]}
        }
      }
    }
  }
}"#;

pub(super) const FIND_USAGES_OUTPUT: &str = r#"{
  "type": "object",
  "required": ["symbol", "files"],
  "properties": {
    "symbol": {"type": "string"},
    "source": {"type": "string", "enum": ["hub"]},
    "reason": {"type": "string"},
    "files": {
      "type": "array",
      "items": {
        "type": "object",
        "required": ["path", "usages"],
        "properties": {
          "path": {"type": "string"},
          "repo": {"type": "string"},
          "commit": {"type": "string"},
          "local": {"type": "boolean"},
          "usages": {"type": "array", "items": {"type": "object"}}
        }
      }
    }
  }
}"#;

pub(super) const GET_CODE_CONTEXT_OUTPUT: &str = r#"{
  "type": "object",
  "required": ["path", "start_line", "end_line", "truncated", "text"],
  "properties": {
    "path": {"type": "string"},
    "symbol": {"type": ["string", "null"]},
    "start_line": {"type": "integer"},
    "end_line": {"type": "integer"},
    "truncated": {"type": "boolean"},
    "text": {"type": "string"},
    "repo": {"type": "string"},
    "commit": {"type": "string"},
    "source": {"type": "string", "enum": ["hub"]}
  }
}"#;

pub(super) const INDEX_STATUS_OUTPUT: &str = r#"{
  "type": "object",
  "required": ["root", "role", "index_age_secs", "indexing", "files", "chunks", "embedded"],
  "properties": {
    "root": {"type": "string"},
    "role": {"type": "string", "enum": ["writer", "reader"]},
    "index_age_secs": {"type": ["number", "null"]},
    "indexing": {"type": "boolean"},
    "files": {"type": "integer"},
    "chunks": {"type": "integer"},
    "embedded": {"type": "integer"},
    "model": {"type": ["string", "null"]},
    "model_error": {"type": ["string", "null"]}
  }
}"#;
