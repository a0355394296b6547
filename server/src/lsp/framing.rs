//! LSP base-protocol framing between stdio and the protocol library:
//! `Content-Length` frames in, whole frames out, and a gate that lets only
//! well-formed JSON-RPC 2.0 messages through.
//!
//! Owns the rule "one bad message never ends a session": a frame whose
//! header or body is unusable is answered (with its id when it has one) or
//! logged, and reading goes on at the next `Content-Length` header, found
//! even in the middle of a line (a short `Content-Length` leaves the rest
//! of its body in front of the next header). Memory stays bounded: header
//! lines keep at most `MAX_HEADER_LINE` bytes, bodies over the configured
//! limit are refused without being read into memory.
//!
//! Interprets messages only as far as JSON-RPC validity (`jsonrpc`, which
//! also repairs lone surrogate escapes and `-0` ids), `exit` (so the
//! caller can tell an exit without shutdown) and dropping empty `params`
//! of the server's parameterless custom requests (`quarry/status` with
//! `{}`), which the protocol library would refuse.
//! Never: blocks on a bad frame, holds a whole oversized message in memory.

use serde::de::IgnoredAny;
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// Header lines longer than this keep only their last bytes: enough to
/// find a `Content-Length` header at the end of a garbage line.
const MAX_HEADER_LINE: usize = 4096;

const HEADER: &[u8] = b"content-length:";

/// What the gate needs to know about the server.
#[derive(Clone, Debug)]
pub struct Gate {
    /// Largest accepted body, in bytes.
    pub max_message: usize,
    /// Requests that take no parameters: `{}`, `[]` and `null` params are
    /// dropped before the protocol library sees them.
    pub paramless: &'static [&'static str],
    /// Set, and notified, when the client sends `exit`.
    pub exit_seen: Arc<AtomicBool>,
    pub exit: Arc<tokio::sync::Notify>,
}

/// One frame's body, or why the frame is unusable.
#[derive(Debug, PartialEq)]
enum Frame {
    Body(Vec<u8>),
    Malformed(String),
    Eof,
}

/// A buffered reader that can look ahead: a body that turns out to hold
/// the next frame's header is re-read from there.
struct FrameReader<R> {
    inner: R,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
}

/// Position of `needle` (lowercase ASCII) in `hay`, ignoring ASCII case.
fn find_ci(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(inner: R) -> Self {
        FrameReader {
            inner,
            buf: Vec::with_capacity(1 << 16),
            pos: 0,
            eof: false,
        }
    }

    fn available(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Reads more input; false at end of input (or a read error).
    async fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        let start = self.buf.len();
        self.buf.resize(start + (1 << 16), 0);
        let n = self.inner.read(&mut self.buf[start..]).await.unwrap_or(0);
        self.buf.truncate(start + n);
        if n == 0 {
            self.eof = true;
        }
        n > 0
    }

    /// The next line without its end, at most `MAX_HEADER_LINE` bytes (the
    /// line's end when longer); `None` at end of input.
    async fn line(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(end) = self.available().iter().position(|&b| b == b'\n') {
                let line = &self.available()[..end];
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                let keep = &line[line.len().saturating_sub(MAX_HEADER_LINE)..];
                let out = keep.to_vec();
                self.pos += end + 1;
                return Some(out);
            }
            // No newline yet: keep only the tail of an overlong line.
            let len = self.available().len();
            if len > MAX_HEADER_LINE * 2 {
                self.pos += len - MAX_HEADER_LINE;
            }
            if !self.fill().await {
                let rest = self.available().to_vec();
                self.pos = self.buf.len();
                return (!rest.is_empty()).then_some(rest);
            }
        }
    }

    /// Makes `n` bytes available; false if input ends first.
    async fn ensure(&mut self, n: usize) -> bool {
        while self.available().len() < n {
            if !self.fill().await {
                return false;
            }
        }
        true
    }

    /// The next frame. Garbage before a header is skipped (and reported);
    /// a bad header is reported after its blank line, and reading resumes
    /// at the next header. With `resync`, a body that is not JSON but
    /// starts with a JSON value ends after that value.
    async fn frame(&mut self, max_body: usize, resync: bool) -> Frame {
        let mut length: Option<u64> = None;
        let mut problem: Option<String> = None;
        loop {
            let Some(line) = self.line().await else {
                return Frame::Eof;
            };
            let mut line = line.as_slice();
            if line.is_empty() {
                if length.is_some() || problem.is_some() {
                    break;
                }
                continue; // a stray blank line between frames
            }
            match find_ci(line, HEADER) {
                Some(0) => {}
                Some(at) => {
                    // The tail of a body cut short by its Content-Length,
                    // or noise: resynchronise on the header.
                    super::state::log(&format!(
                        "skipped {at} bytes of garbage before a Content-Length header"
                    ));
                    line = &line[at..];
                    length = None;
                    problem = None;
                }
                None => {}
            }
            let text = String::from_utf8_lossy(line);
            match text.split_once(':') {
                Some((name, value)) if name.trim().eq_ignore_ascii_case("content-length") => {
                    match value.trim().parse::<u64>() {
                        Ok(n) => length = Some(n),
                        Err(_) => problem = Some(format!("bad Content-Length {:?}", value.trim())),
                    }
                }
                Some((name, _))
                    if !name.is_empty()
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {} // Content-Type and the like
                _ if length.is_none() && problem.is_none() => {
                    // Not a header and no frame started: noise between frames.
                    super::state::log(&format!(
                        "skipped a line that is not an LSP header ({} bytes)",
                        line.len()
                    ));
                }
                _ => problem = Some("a header line that is not `Name: value`".into()),
            }
        }
        if let Some(problem) = problem {
            return Frame::Malformed(problem);
        }
        let length = length.unwrap_or(0);
        if length > max_body as u64 {
            // Refused unread: if the body really follows, it is skipped as
            // noise up to the next header, never held in memory.
            return Frame::Malformed(format!(
                "a message of {length} bytes is over the limit of {max_body} bytes"
            ));
        }
        let length = length as usize;
        if !self.ensure(length).await {
            self.pos = self.buf.len();
            return Frame::Eof;
        }
        let body = &self.available()[..length];
        if resync && serde_json::from_slice::<IgnoredAny>(body).is_err() {
            // A Content-Length longer than its body swallows the start of
            // the next frame: when the body starts with a whole JSON value,
            // that value is the message and reading resumes right after it.
            let mut values = serde_json::Deserializer::from_slice(body).into_iter::<IgnoredAny>();
            let end = match values.next() {
                Some(Ok(_)) => Some(values.byte_offset()),
                _ => find_ci(body, HEADER).filter(|&at| at > 0),
            };
            if let Some(end) = end.filter(|&end| end < length) {
                let out = body[..end].to_vec();
                self.pos += end;
                return Frame::Body(out);
            }
        }
        let out = body.to_vec();
        self.pos += length;
        Frame::Body(out)
    }
}

pub(crate) fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn error_response(id: Value, code: i64, message: String) -> Vec<u8> {
    frame(
        crate::jsonrpc::error(id, code, message)
            .to_string()
            .as_bytes(),
    )
}

/// Percent-escapes what some clients leave raw in `file://` URIs (spaces,
/// non-ASCII, other characters a URI may not hold) under the keys `uri`
/// and `rootUri`, anywhere in `value`; `%` is kept, so an escaped URI is
/// unchanged. A root such as `/home/me/my project` was refused ("unexpected
/// character at index 39") and left the server with no root. Returns
/// whether anything changed.
fn escape_uris(value: &mut Value) -> bool {
    match value {
        Value::Object(map) => {
            let mut changed = false;
            for (key, item) in map.iter_mut() {
                if let (true, Value::String(uri)) = (key == "uri" || key == "rootUri", &*item) {
                    if let Some(escaped) = escape_file_uri(uri) {
                        *item = Value::String(escaped);
                        changed = true;
                    }
                    continue;
                }
                changed |= escape_uris(item);
            }
            changed
        }
        Value::Array(items) => items.iter_mut().fold(false, |c, v| escape_uris(v) | c),
        _ => false,
    }
}

/// `uri` with the bytes a URI may not hold escaped, or `None` when it is
/// not a `file://` URI or needs nothing.
fn escape_file_uri(uri: &str) -> Option<String> {
    let rest = uri.strip_prefix("file://")?;
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@%".contains(&b);
    if rest.bytes().all(allowed) {
        return None;
    }
    let mut out = String::with_capacity(uri.len() + 16);
    out.push_str("file://");
    for b in rest.bytes() {
        if allowed(b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Some(out)
}

/// What to do with one frame's body: pass it on (maybe rewritten) or
/// answer it with an error.
fn admit(body: &[u8], gate: &Gate) -> Result<Vec<u8>, Vec<u8>> {
    // A lone surrogate escape or an id of -0 is repaired (`repaired`): the
    // protocol library would refuse it without the id.
    let crate::jsonrpc::Parsed {
        mut message,
        mut repaired,
    } = crate::jsonrpc::parse(body).map_err(|answer| {
        super::state::log(&format!("unusable message: {}", answer["error"]["message"]));
        frame(answer.to_string().as_bytes())
    })?;
    if let Some(params) = message.get_mut("params") {
        repaired |= escape_uris(params);
    }
    let method = message.get("method").and_then(Value::as_str);
    if method == Some("exit") {
        gate.exit_seen.store(true, Ordering::SeqCst);
        gate.exit.notify_one();
    }
    if method.is_some_and(|m| gate.paramless.contains(&m)) {
        let empty = match message.get("params") {
            Some(Value::Object(map)) => map.is_empty(),
            Some(Value::Array(list)) => list.is_empty(),
            Some(Value::Null) => true,
            _ => false,
        };
        if empty {
            if let Some(object) = message.as_object_mut() {
                object.remove("params");
            }
            repaired = true;
        }
    }
    Ok(if repaired {
        frame(message.to_string().as_bytes())
    } else {
        frame(body)
    })
}

/// Copies well-formed messages from `input` to `server`; answers the rest
/// through `errors`. Ends at end of input (closing `server`).
pub async fn pump_input<R, W>(input: R, mut server: W, errors: UnboundedSender<Vec<u8>>, gate: Gate)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = FrameReader::new(input);
    loop {
        match reader.frame(gate.max_message, true).await {
            Frame::Eof => break,
            Frame::Malformed(why) => {
                super::state::log(&format!("malformed message: {why}"));
                let _ = errors.send(error_response(
                    Value::Null,
                    -32700,
                    format!("Parse error: {why}"),
                ));
            }
            Frame::Body(body) => match admit(&body, &gate) {
                Ok(bytes) => {
                    if server.write_all(&bytes).await.is_err() {
                        break;
                    }
                    let _ = server.flush().await;
                }
                Err(answer) => {
                    let _ = errors.send(answer);
                }
            },
        }
    }
    let _ = server.shutdown().await;
}

/// Sends each of the server's frames, whole, to `out` (where the gate's
/// answers go too). Ends when the server's side closes.
pub async fn read_server<R: AsyncRead + Unpin>(server: R, out: UnboundedSender<Vec<u8>>) {
    let mut reader = FrameReader::new(server);
    loop {
        match reader.frame(usize::MAX, false).await {
            Frame::Body(body) => {
                if out.send(frame(&body)).is_err() {
                    return;
                }
            }
            Frame::Malformed(_) => {}
            Frame::Eof => return,
        }
    }
}

/// Writes frames to `output` one whole frame at a time, in the order they
/// were queued. Ends when every sender is gone.
pub async fn write_output<W: AsyncWrite + Unpin>(
    mut frames: UnboundedReceiver<Vec<u8>>,
    mut output: W,
) {
    while let Some(bytes) = frames.recv().await {
        if output.write_all(&bytes).await.is_err() {
            return;
        }
        let _ = output.flush().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            max_message: 1 << 20,
            paramless: &["quarry/status"],
            exit_seen: Arc::new(AtomicBool::new(false)),
            exit: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Runs `input` through the gate: (what the server got, the answers).
    async fn run(input: &[u8]) -> (String, String) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut server = Vec::new();
        pump_input(input, &mut server, tx, gate()).await;
        let mut errors = Vec::new();
        while let Ok(e) = rx.try_recv() {
            errors.extend(e);
        }
        (
            String::from_utf8(server).unwrap(),
            String::from_utf8(errors).unwrap(),
        )
    }

    fn ok(n: u32) -> Vec<u8> {
        frame(format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"m{n}"}}"#).as_bytes())
    }

    #[tokio::test]
    async fn good_frames_pass_and_bad_bodies_are_answered() {
        let mut input = ok(1);
        input.extend(frame(br#"{"jsonrpc": "2.0", "id": 7, "method": "#));
        input.extend(frame(b"[1, 2]"));
        input.extend(ok(2));
        let (server, errors) = run(&input).await;
        assert!(server.contains(r#""method":"m1""#) && server.contains(r#""method":"m2""#));
        assert_eq!(server.matches("Content-Length").count(), 2);
        assert_eq!(errors.matches("-32700").count(), 1, "{errors}");
        assert_eq!(errors.matches("-32600").count(), 1, "{errors}");
    }

    #[test]
    fn raw_file_uris_are_escaped() {
        assert_eq!(
            escape_file_uri("file:///home/me/my project/é.rs").as_deref(),
            Some("file:///home/me/my%20project/%C3%A9.rs")
        );
        assert_eq!(escape_file_uri("file:///home/me/my%20project"), None);
        assert_eq!(escape_file_uri("untitled:Untitled 1"), None);
        let mut params = serde_json::json!({
            "rootUri": "file:///w/a b",
            "workspaceFolders": [{"uri": "file:///w/a b", "name": "a b"}],
            "textDocument": {"uri": "file:///w/ok.rs", "text": "file:///w/a b"}
        });
        assert!(escape_uris(&mut params));
        assert_eq!(params["rootUri"], "file:///w/a%20b");
        assert_eq!(params["workspaceFolders"][0]["uri"], "file:///w/a%20b");
        assert_eq!(params["workspaceFolders"][0]["name"], "a b");
        assert_eq!(params["textDocument"]["text"], "file:///w/a b");
        assert!(!escape_uris(&mut params));
    }

    #[tokio::test]
    async fn invalid_json_rpc_objects_are_answered_with_their_id() {
        let cases: &[(&str, &str)] = &[
            ("{}", "null"),
            (r#"{"jsonrpc":"2.0","id":[1],"method":"a"}"#, "null"),
            (r#"{"jsonrpc":"2.0","id":1.5,"method":"a"}"#, "null"),
            (r#"{"jsonrpc":"2.0","id":3,"method":7}"#, "3"),
            (r#"{"id":4,"method":"a"}"#, "4"),
            (r#"{"jsonrpc":"1.0","id":"x","method":"a"}"#, "\"x\""),
            (r#"{"jsonrpc":"2.0","id":5}"#, "5"),
            (r#"{"jsonrpc":"2.0","id":6,"method":"a","params":3}"#, "6"),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"a"}"#,
                "9223372036854775808",
            ),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":null}"#,
                "18446744073709551615",
            ),
        ];
        for (body, id) in cases {
            let mut input = frame(body.as_bytes());
            input.extend(ok(9));
            let (server, errors) = run(&input).await;
            assert!(server.contains(r#""method":"m9""#), "{body}: {server}");
            assert_eq!(server.matches("Content-Length").count(), 1, "{body}");
            assert!(errors.contains("-32600"), "{body}: {errors}");
            assert!(
                errors.contains(&format!(r#""id":{id}"#)),
                "{body}: {errors}"
            );
        }
        // Responses from the client pass.
        let (server, errors) = run(&frame(br#"{"jsonrpc":"2.0","id":1,"result":null}"#)).await;
        assert!(server.contains("result") && errors.is_empty());
    }

    #[tokio::test]
    async fn framing_resynchronises_on_the_next_header() {
        // Invalid UTF-8 in a header line.
        let mut input = b"Content-Type: \xff\xfe\r\n".to_vec();
        input.extend(ok(1));
        // A Content-Length shorter than the body.
        let body = br#"{"jsonrpc":"2.0","id":2,"method":"m2"}"#;
        input.extend(format!("Content-Length: {}\r\n\r\n", body.len() - 5).as_bytes());
        input.extend(body);
        input.extend(ok(3));
        // A Content-Length far beyond the limit, then a good frame.
        input.extend(b"Content-Length: 1000000000000\r\n\r\n");
        input.extend(ok(4));
        // A Content-Length longer than the body swallows the next header.
        let body = br#"{"jsonrpc":"2.0","id":5,"method":"m5"}"#;
        input.extend(format!("Content-Length: {}\r\n\r\n", body.len() + 10).as_bytes());
        input.extend(body);
        input.extend(ok(6));
        // A bad Content-Length value.
        input.extend(b"Content-Length: nope\r\n\r\n");
        input.extend(ok(7));
        let (server, errors) = run(&input).await;
        for n in [1, 3, 4, 5, 6, 7] {
            assert!(
                server.contains(&format!(r#""method":"m{n}""#)),
                "m{n}: {server}"
            );
        }
        assert!(errors.contains("over the limit"), "{errors}");
        assert!(errors.contains("bad Content-Length"), "{errors}");
    }

    #[tokio::test]
    async fn a_huge_header_line_is_bounded_and_skipped() {
        let mut input = vec![b'x'; 8 << 20];
        input.extend(b"\r\n");
        input.extend(ok(1));
        let mut reader = FrameReader::new(input.as_slice());
        let frame = reader.frame(1 << 20, true).await;
        assert!(
            matches!(&frame, Frame::Body(b) if b.ends_with(br#""m1"}"#)),
            "{frame:?}"
        );
        assert!(reader.buf.capacity() < 1 << 20, "{}", reader.buf.capacity());
    }

    #[tokio::test]
    async fn parameterless_requests_accept_empty_params_and_exit_is_seen() {
        let gate = gate();
        let status = br#"{"jsonrpc":"2.0","id":1,"method":"quarry/status","params":{}}"#;
        let admitted = String::from_utf8(admit(status, &gate).unwrap()).unwrap();
        assert!(!admitted.contains("params"), "{admitted}");
        let other = br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#;
        let admitted = String::from_utf8(admit(other, &gate).unwrap()).unwrap();
        assert!(admitted.contains("params"), "{admitted}");
        assert!(!gate.exit_seen.load(Ordering::SeqCst));
        admit(br#"{"jsonrpc":"2.0","method":"exit"}"#, &gate).unwrap();
        assert!(gate.exit_seen.load(Ordering::SeqCst));
    }

    /// One piece of a random input stream.
    fn piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..64),
            (0..1000u32).prop_map(ok),
            proptest::collection::vec(any::<u8>(), 0..64).prop_map(|body| frame(&body)),
            (0..200usize, proptest::collection::vec(any::<u8>(), 0..64)).prop_map(|(n, body)| {
                let mut out = format!("Content-Length: {n}\r\n\r\n").into_bytes();
                out.extend(body);
                out
            }),
            Just(b"Content-Length: 99999999999999999999\r\n\r\n".to_vec()),
            Just(frame(
                br#"{"jsonrpc":"2.0","id":-0,"method":"m","params":{"q":"\ud800"}}"#
            )),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(256))]
        /// Random streams of bytes, valid frames, frames of random bodies
        /// and lying `Content-Length` headers: the gate never panics,
        /// never hangs (each stream ends within 5 s), passes on only valid
        /// JSON-RPC and answers everything else with JSON.
        #[test]
        fn random_streams_never_panic_or_hang(pieces in proptest::collection::vec(piece(), 0..12)) {
            let input: Vec<u8> = pieces.concat();
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            let outcome = runtime.block_on(async {
                let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
                let mut server = Vec::new();
                let pumped = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    pump_input(&input[..], &mut server, tx, gate()),
                )
                .await;
                let mut answers = Vec::new();
                while let Ok(answer) = rx.try_recv() {
                    answers.push(answer);
                }
                (pumped.is_ok(), server, answers)
            });
            let (finished, server, answers) = outcome;
            proptest::prop_assert!(finished, "the gate hung");
            let mut reader = &server[..];
            while !reader.is_empty() {
                let text = String::from_utf8_lossy(reader);
                let header_end = text.find("\r\n\r\n").expect("a header");
                let n: usize = text["Content-Length: ".len()..header_end].parse().expect("length");
                let body = &reader[header_end + 4..header_end + 4 + n];
                let message: Value = serde_json::from_slice(body).expect("valid JSON passed on");
                proptest::prop_assert!(crate::jsonrpc::invalid(&message).is_none(), "{message}");
                reader = &reader[header_end + 4 + n..];
            }
            for answer in answers {
                let text = String::from_utf8_lossy(&answer);
                let body = &text[text.find("\r\n\r\n").expect("header") + 4..];
                let message: Value = serde_json::from_str(body).expect("an answer is JSON");
                proptest::prop_assert!(message["error"]["code"].is_i64(), "{message}");
            }
        }
    }
}
