//! JSON-RPC 2.0 messages as both servers receive them: the one place that
//! decides whether a client's bytes are a usable message, and with which
//! id an unusable one is answered. `lsp::framing` (Content-Length frames)
//! and `mcp::lines` (one message per line) call it before the protocol
//! libraries see a byte.
//!
//! Repairs what is valid JSON but trips the parser or the protocol
//! library: a lone UTF-16 surrogate escape (`"\ud800"`) becomes U+FFFD,
//! an id of `-0` becomes `0`. Everything else unusable is refused with the
//! code JSON-RPC names (-32700 parse error, -32600 invalid request) and,
//! whenever the message has one, its own id.
//! Never: interpret a method's params; panic on any bytes.

use serde_json::{json, Value};

/// A message parsed from a client's bytes, or the error to answer.
pub fn parse(body: &[u8]) -> Result<Parsed, Value> {
    let (mut message, mut repaired) = match serde_json::from_slice::<Value>(body) {
        Ok(message) => (message, false),
        Err(first) => match replace_lone_surrogates(body)
            .and_then(|fixed| serde_json::from_slice::<Value>(&fixed).ok())
        {
            Some(message) => (message, true),
            None => return Err(error(Value::Null, -32700, format!("Parse error: {first}"))),
        },
    };
    if let Some(id) = message.get_mut("id") {
        if id.as_f64().is_some_and(|n| n == 0.0) && !id.is_i64() && !id.is_u64() {
            *id = json!(0);
            repaired = true;
        }
    }
    if let Some((id, why)) = invalid(&message) {
        return Err(error(id, -32600, format!("Invalid request: {why}")));
    }
    Ok(Parsed { message, repaired })
}

/// A usable JSON-RPC message.
pub struct Parsed {
    pub message: Value,
    /// The bytes differ from `message` (repaired): send `message` on.
    pub repaired: bool,
}

/// An error response.
pub fn error(id: Value, code: i64, message: String) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": code, "message": message},
    })
}

/// Why `message` is not a JSON-RPC 2.0 request, notification or response,
/// with the id to answer with (null when it has no usable one).
pub fn invalid(message: &Value) -> Option<(Value, String)> {
    let Some(object) = message.as_object() else {
        return Some((Value::Null, "a message must be a JSON object".into()));
    };
    let id = match object.get("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id.clone()),
        Some(id @ Value::Number(n)) if n.is_i64() => Some(id.clone()),
        // The protocol libraries hold ids as i64: 2^63 and above ended the
        // session; this one message is refused instead, with its id.
        Some(id @ Value::Number(n)) if n.is_u64() => {
            return Some((id.clone(), format!("id {n} is beyond 2^63 - 1")));
        }
        Some(Value::Null) => Some(Value::Null),
        Some(other) => {
            return Some((
                Value::Null,
                format!("id must be an integer or a string, not {other}"),
            ))
        }
    };
    let answer = id.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return Some((answer, "\"jsonrpc\" must be \"2.0\"".into()));
    }
    match object.get("method") {
        Some(Value::String(_)) => match object.get("params") {
            None | Some(Value::Object(_) | Value::Array(_) | Value::Null) => None,
            Some(_) => Some((answer, "params must be an object or an array".into())),
        },
        Some(_) => Some((answer, "method must be a string".into())),
        None => {
            let has_result = object.contains_key("result");
            let has_error = object.contains_key("error");
            if id.is_none() {
                Some((answer, "a message needs a method or an id".into()))
            } else if has_result == has_error {
                Some((
                    answer,
                    "a response needs exactly one of result and error".into(),
                ))
            } else {
                None
            }
        }
    }
}

/// `body` with every `\uXXXX` escape of an unpaired UTF-16 surrogate
/// replaced by `\uFFFD`; `None` when there is none. JSON allows such
/// escapes; the parser (and Rust's strings) do not.
fn replace_lone_surrogates(body: &[u8]) -> Option<Vec<u8>> {
    let hex = |at: usize| -> Option<u16> {
        let digits = std::str::from_utf8(body.get(at..at + 4)?).ok()?;
        u16::from_str_radix(digits, 16).ok()
    };
    let unit_at = |at: usize| -> Option<u16> {
        (body.get(at) == Some(&b'\\') && body.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out = Vec::with_capacity(body.len());
    let mut changed = false;
    let mut i = 0;
    while i < body.len() {
        if body[i] != b'\\' {
            out.push(body[i]);
            i += 1;
            continue;
        }
        let Some(unit) = unit_at(i) else {
            // Another escape (or a broken one): copy it whole.
            out.extend_from_slice(&body[i..(i + 2).min(body.len())]);
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        if high && unit_at(i + 6).is_some_and(|next| (0xDC00..0xE000).contains(&next)) {
            out.extend_from_slice(&body[i..i + 12]);
            i += 12;
        } else if high || low {
            out.extend_from_slice(b"\\uFFFD");
            changed = true;
            i += 6;
        } else {
            out.extend_from_slice(&body[i..i + 6]);
            i += 6;
        }
    }
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_and_minus_zero_ids_are_repaired() {
        let parsed = parse(
            br#"{"jsonrpc":"2.0","id":-0,"method":"m","params":{"q":"a\ud800b\udc00\\ud800"}}"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(parsed.repaired);
        assert_eq!(parsed.message["id"], json!(0));
        assert_eq!(parsed.message["params"]["q"], "a\u{FFFD}b\u{FFFD}\\ud800");
        // A real pair is kept.
        let parsed =
            parse(br#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"q":"\ud83d\ude00"}}"#)
                .unwrap_or_else(|e| panic!("{e}"));
        assert!(!parsed.repaired);
        assert_eq!(parsed.message["params"]["q"], "\u{1F600}");
    }

    #[test]
    fn unusable_messages_are_answered_with_their_id_when_they_have_one() {
        let code = |body: &[u8]| {
            parse(body)
                .err()
                .map(|e| (e["id"].clone(), e["error"]["code"].clone()))
        };
        assert_eq!(code(b"{not json"), Some((Value::Null, json!(-32700))));
        assert_eq!(code(b"[1,2]"), Some((Value::Null, json!(-32600))));
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"m"}"#),
            Some((json!(9223372036854775808u64), json!(-32600)))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#),
            Some((json!("x"), json!(-32600)))
        );
        assert_eq!(
            code(br#"{"jsonrpc":"2.0","id":3,"method":"m","params":{}}"#),
            None
        );
    }
}
