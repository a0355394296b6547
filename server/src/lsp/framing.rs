//! LSP base-protocol framing between stdio and the protocol library:
//! `Content-Length` frames in, whole frames out. A frame whose body is not a
//! JSON object is answered with a JSON-RPC parse error (id null) and
//! dropped, so one malformed message never ends the session.
//!
//! Never: interpret messages beyond checking that they are JSON objects.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

/// The largest body accepted (bigger ones are refused and skipped).
const MAX_BODY: usize = 256 << 20;

/// One frame's body, or why the frame is unusable.
enum Frame {
    Body(Vec<u8>),
    Malformed(String),
    Eof,
}

async fn read_frame<R: AsyncRead + Unpin>(reader: &mut BufReader<R>) -> Frame {
    let mut length: Option<usize> = None;
    let mut bad_header = None;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line).await {
            Ok(0) | Err(_) => return Frame::Eof,
            Ok(_) => {}
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if length.is_none() && bad_header.is_none() {
                // A stray blank line between frames.
                continue;
            }
            break;
        }
        match line.split_once(':') {
            Some((name, value)) if name.eq_ignore_ascii_case("content-length") => {
                match value.trim().parse::<usize>() {
                    Ok(n) => length = Some(n),
                    Err(_) => bad_header = Some(format!("bad Content-Length {:?}", value.trim())),
                }
            }
            Some(_) => {} // Content-Type and the like.
            None => bad_header = Some(format!("bad header line {line:?}")),
        }
    }
    let Some(length) = length else {
        return Frame::Malformed(bad_header.unwrap_or_else(|| "no Content-Length".into()));
    };
    if length > MAX_BODY {
        // Skip it without holding it in memory.
        let mut rest = (&mut *reader).take(length as u64);
        let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
        return Frame::Malformed(format!("message of {length} bytes is too large"));
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).await.is_err() {
        return Frame::Eof;
    }
    if let Some(why) = bad_header {
        return Frame::Malformed(why);
    }
    Frame::Body(body)
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

fn parse_error(why: &str) -> Vec<u8> {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": -32700, "message": format!("Parse error: {why}")},
    });
    frame(body.to_string().as_bytes())
}

/// Copies frames from `input` to `server`; answers malformed ones through
/// `errors`. Ends at end of input (closing `server`).
pub async fn pump_input<R, W>(input: R, mut server: W, errors: UnboundedSender<Vec<u8>>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    loop {
        match read_frame(&mut reader).await {
            Frame::Eof => break,
            Frame::Malformed(why) => {
                super::log(&format!("malformed message: {why}"));
                let _ = errors.send(parse_error(&why));
            }
            Frame::Body(body) => {
                match serde_json::from_slice::<serde_json::Value>(&body) {
                    Ok(value) if value.is_object() => {}
                    Ok(_) => {
                        let _ = errors.send(parse_error("a message must be a JSON object"));
                        continue;
                    }
                    Err(e) => {
                        super::log(&format!("malformed message: {e}"));
                        let _ = errors.send(parse_error(&e.to_string()));
                        continue;
                    }
                }
                if server.write_all(&frame(&body)).await.is_err() {
                    break;
                }
                let _ = server.flush().await;
            }
        }
    }
    let _ = server.shutdown().await;
}

/// Writes the server's frames and the parse errors to `output`, each frame
/// whole. Ends when the server's side closes.
pub async fn pump_output<R, W>(server: R, mut errors: UnboundedReceiver<Vec<u8>>, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(server);
    let mut errors_open = true;
    loop {
        tokio::select! {
            next = read_frame(&mut reader) => match next {
                Frame::Body(body) => {
                    if output.write_all(&frame(&body)).await.is_err() {
                        return;
                    }
                    let _ = output.flush().await;
                }
                Frame::Malformed(_) => {}
                Frame::Eof => break,
            },
            error = errors.recv(), if errors_open => match error {
                Some(bytes) => {
                    if output.write_all(&bytes).await.is_err() {
                        return;
                    }
                    let _ = output.flush().await;
                }
                None => errors_open = false,
            },
        }
    }
    let _ = output.flush().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn run(input: &[u8]) -> (Vec<u8>, Vec<u8>) {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let mut server = Vec::new();
        pump_input(input, &mut server, tx).await;
        let mut errors = Vec::new();
        while let Ok(e) = rx.try_recv() {
            errors.extend(e);
        }
        (server, errors)
    }

    #[tokio::test]
    async fn good_frames_pass_and_bad_ones_get_parse_errors() {
        let mut input = Vec::new();
        input.extend(frame(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#));
        input.extend(frame(br#"{"jsonrpc": "2.0", "id": 7, "method": "#));
        input.extend(frame(b"[1, 2]"));
        input.extend(b"Content-Length: nope\r\n\r\n");
        input.extend(frame(br#"{"jsonrpc":"2.0","method":"b"}"#));
        let (server, errors) = run(&input).await;
        let server = String::from_utf8(server).unwrap();
        assert!(server.contains(r#""method":"a""#) && server.contains(r#""method":"b""#));
        assert_eq!(server.matches("Content-Length").count(), 2);
        let errors = String::from_utf8(errors).unwrap();
        assert_eq!(errors.matches("-32700").count(), 3, "{errors}");
        assert!(errors.contains(r#""id":null"#));
    }
}
