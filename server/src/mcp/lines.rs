//! The MCP server's stdio: one JSON-RPC message per line between the
//! client and rmcp, with a gate in front of rmcp.
//!
//! Owns the rule "every unusable line is answered": rmcp drops a line that
//! is not JSON, answers array params without the request's id and bad
//! tool arguments as an unknown method. Here a line that is not JSON gets
//! -32700, an invalid message -32600 (`jsonrpc` decides both, with the
//! message's id when it has one), a request whose params are not an object
//! or whose `tools/call` names no tool or passes non-object arguments
//! -32602 with its id. Lines are bounded (`MAX_LINE`): a longer one is
//! answered and skipped without being held in memory. Output is written
//! one whole line at a time, rmcp's and the gate's answers in order.
//! Never: interpret a tool's arguments beyond their shape; block rmcp on a
//! bad line.

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest line accepted (a request with a 64 KiB query is far below).
pub const MAX_LINE: usize = 8 << 20;

/// What the gate does with one line.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Hand these bytes (one line, repaired where needed) to rmcp.
    Pass(Vec<u8>),
    /// Answer this instead.
    Answer(Value),
    /// Nothing to do (a blank line, a bad notification).
    Drop,
}

/// Judges one line (without its newline).
pub fn screen(line: &[u8]) -> Verdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop;
    }
    let parsed = match crate::jsonrpc::parse(line) {
        Ok(parsed) => parsed,
        Err(answer) => return Verdict::Answer(answer),
    };
    let message = &parsed.message;
    let id = message.get("id").cloned();
    let invalid_params = |why: &str| match &id {
        Some(id) => Verdict::Answer(crate::jsonrpc::error(
            id.clone(),
            -32602,
            format!("Invalid params: {why}"),
        )),
        None => Verdict::Drop,
    };
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        match message.get("params") {
            None | Some(Value::Object(_)) => {}
            Some(Value::Null) if method != "tools/call" => {}
            Some(_) => return invalid_params("params must be an object"),
        }
        if method == "tools/call" {
            let params = &message["params"];
            if !params["name"].is_string() {
                return invalid_params("tools/call needs the tool's name, a string");
            }
            match params.get("arguments") {
                None | Some(Value::Object(_)) => {}
                Some(_) => return invalid_params("tool arguments must be an object"),
            }
        }
    }
    let mut bytes = if parsed.repaired {
        message.to_string().into_bytes()
    } else {
        line.to_vec()
    };
    bytes.push(b'\n');
    Verdict::Pass(bytes)
}

/// Reads lines from `input`, passes the usable ones to `rmcp` and sends
/// answers for the rest to `answers`. Closes `rmcp`'s side at the end of
/// input.
pub async fn pump_input<R, W>(input: R, mut rmcp: W, answers: mpsc::UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::with_capacity(1 << 16, input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let (complete, too_long) = match read_line(&mut input, &mut line).await {
            Ok(read) => read,
            Err(_) => break,
        };
        if line.is_empty() && !complete && !too_long {
            break; // end of input
        }
        let verdict = if too_long {
            Verdict::Answer(crate::jsonrpc::error(
                Value::Null,
                -32700,
                format!("Parse error: a message longer than {MAX_LINE} bytes"),
            ))
        } else {
            screen(&line)
        };
        match verdict {
            Verdict::Pass(bytes) => {
                if rmcp.write_all(&bytes).await.is_err() {
                    break;
                }
                let _ = rmcp.flush().await;
            }
            Verdict::Answer(answer) => {
                let mut bytes = answer.to_string().into_bytes();
                bytes.push(b'\n');
                let _ = answers.send(bytes);
            }
            Verdict::Drop => {}
        }
        if !complete && !too_long {
            break;
        }
    }
    let _ = rmcp.shutdown().await;
}

/// One line into `line` (without its newline): whether it ended with a
/// newline, and whether it was over `MAX_LINE` (then `line` is emptied
/// and the rest of the line skipped).
async fn read_line<R: AsyncRead + Unpin>(
    input: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> std::io::Result<(bool, bool)> {
    let mut too_long = false;
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Ok((false, too_long));
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        if !too_long {
            let end = if done { take - 1 } else { take };
            line.extend_from_slice(&available[..end]);
            if line.len() > MAX_LINE {
                too_long = true;
                line.clear();
                line.shrink_to(1 << 16);
            }
        }
        input.consume(take);
        if done {
            return Ok((true, too_long));
        }
    }
}

/// Writes rmcp's lines and the gate's answers to `output`, each whole.
/// Ends when rmcp's side closes (answers still queued are written first).
pub async fn pump_output<R, W>(
    from_rmcp: R,
    mut answers: mpsc::UnboundedReceiver<Vec<u8>>,
    mut output: W,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut from_rmcp = BufReader::new(from_rmcp);
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = from_rmcp.read_until(b'\n', &mut line) => {
                match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if output.write_all(&line).await.is_err() {
                            return;
                        }
                    }
                }
            }
            Some(answer) = answers.recv() => {
                if output.write_all(&answer).await.is_err() {
                    return;
                }
            }
        }
        let _ = output.flush().await;
    }
    while let Ok(answer) = answers.try_recv() {
        let _ = output.write_all(&answer).await;
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;
    use serde_json::json;

    fn answer(line: &str) -> Value {
        match screen(line.as_bytes()) {
            Verdict::Answer(answer) => answer,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn every_unusable_line_is_answered_with_its_id() {
        let e = answer("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/li");
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (Value::Null, json!(-32700))
        );
        assert_eq!(answer("not json")["error"]["code"], -32700);
        let e = answer(r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":[1]}"#);
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!(7), json!(-32602))
        );
        let e = answer(
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search_code","arguments":[1]}}"#,
        );
        assert_eq!(
            (e["id"].clone(), e["error"]["code"].clone()),
            (json!("a"), json!(-32602))
        );
        let e =
            answer(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#);
        assert_eq!(e["id"], 4);
        assert_eq!(screen(b"   "), Verdict::Drop);
        assert_eq!(
            screen(br#"{"jsonrpc":"2.0","method":"notifications/x","params":[1]}"#),
            Verdict::Drop
        );
        let good = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let mut passed = good.to_vec();
        passed.push(b'\n');
        assert_eq!(screen(good), Verdict::Pass(passed));
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_answered_without_being_held() {
        let mut input = vec![b'x'; MAX_LINE + 10];
        input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut passed = Vec::new();
        pump_input(&input[..], &mut passed, tx).await;
        let answer: Value =
            serde_json::from_slice(&rx.recv().await.expect("answer")).expect("json");
        assert_eq!(answer["error"]["code"], -32700);
        assert_eq!(
            String::from_utf8(passed).expect("utf8"),
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(256))]
        /// Random lines (bytes, JSON fragments, valid messages with odd
        /// params): the gate never panics or hangs, passes on only valid
        /// JSON-RPC objects, answers with JSON, and the valid line after
        /// them always reaches rmcp.
        #[test]
        fn random_lines_never_panic_and_never_hide_the_next_message(
            lines in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(proptest::prelude::any::<u8>(), 0..80)
                        .prop_map(|mut l| { l.retain(|&b| b != b'\n'); l }),
                    proptest::prelude::Just(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":[1]}}"#.to_vec()),
                    proptest::prelude::Just(br#"{"jsonrpc":"2.0","id":-0,"method":"ping","params":"\udc00"}"#.to_vec()),
                    proptest::prelude::Just(b"[]".to_vec()),
                    proptest::prelude::Just(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#.to_vec()),
                ],
                0..12,
            ),
        ) {
            let mut input = lines.join(&b'\n');
            input.extend_from_slice(b"\n{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"ping\"}\n");
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            let (finished, passed, answers) = runtime.block_on(async {
                let (tx, mut rx) = mpsc::unbounded_channel();
                let mut passed = Vec::new();
                let pumped = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    pump_input(&input[..], &mut passed, tx),
                )
                .await;
                let mut answers = Vec::new();
                while let Ok(answer) = rx.try_recv() {
                    answers.push(answer);
                }
                (pumped.is_ok(), passed, answers)
            });
            proptest::prop_assert!(finished, "the gate hung");
            let passed = String::from_utf8(passed).expect("passed lines are JSON text");
            for line in passed.lines() {
                let message: Value = serde_json::from_str(line).expect("valid JSON passed on");
                proptest::prop_assert!(crate::jsonrpc::invalid(&message).is_none(), "{message}");
            }
            proptest::prop_assert!(passed.ends_with("{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"ping\"}\n"), "{passed}");
            for answer in answers {
                let message: Value = serde_json::from_slice(&answer).expect("an answer is JSON");
                proptest::prop_assert!(message["error"]["code"].is_i64(), "{message}");
            }
        }
    }
}
