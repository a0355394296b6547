//! A minimal LSP client over a child process's stdio, shared by the
//! end-to-end tests and `quarry-bench --lsp`. Panics on protocol failures
//! (it is a test and benchmark driver, never used by the server).

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How long any single wait lasts before it panics.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// A JSON-RPC client driving a `quarry lsp` child over stdio. It waits for
/// each response before the caller sends the next request, answers the
/// server's own requests with `null`, and keeps notifications.
pub struct Client {
    pub child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    pub notifications: Vec<Value>,
    pub next_id: i64,
    /// How long one wait lasts before it panics (`TIMEOUT` by default).
    pub timeout: Duration,
}

/// Reads one `Content-Length` frame's JSON body.
pub fn read_message(reader: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(n) = line.strip_prefix("Content-Length: ") {
            length = n.parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

impl Client {
    /// Starts `exe lsp` with its caches under `cache_home` and the model
    /// directory `model` (else a path where none is found).
    pub fn start(exe: &Path, cache_home: &Path, model: Option<&Path>) -> Client {
        let no_model = cache_home.join("no-model-here");
        let mut child = Command::new(exe)
            .arg("lsp")
            .env("XDG_CACHE_HOME", cache_home)
            .env_remove("QUARRY_HUB")
            .env("QUARRY_MODEL", model.unwrap_or(&no_model))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn quarry lsp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, incoming) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            while let Some(message) = read_message(&mut reader) {
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            incoming,
            notifications: Vec::new(),
            next_id: 1,
            timeout: TIMEOUT,
        }
    }

    pub fn send(&mut self, message: &Value) {
        let body = serde_json::to_string(message).expect("json");
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Writes several messages in one write, so the server reads them
    /// together.
    pub fn send_all(&mut self, messages: &[Value]) {
        let mut out = String::new();
        for message in messages {
            let body = serde_json::to_string(message).expect("json");
            out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        }
        self.stdin.write_all(out.as_bytes()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Writes a frame whose body is not valid JSON.
    pub fn send_raw(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Writes bytes as they are: broken frames, bad headers.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Waits for the response to `id`.
    pub fn response(&mut self, id: i64) -> Value {
        let deadline = Instant::now() + self.timeout;
        loop {
            let message = self.next(deadline);
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
            self.handle(message);
        }
    }

    /// Waits for the responses to every id in `ids`, in whatever order
    /// they come (requests sent together are answered concurrently).
    pub fn responses(&mut self, ids: &[i64]) -> std::collections::HashMap<i64, Value> {
        let deadline = Instant::now() + self.timeout;
        let mut found = std::collections::HashMap::new();
        while found.len() < ids.len() {
            let message = self.next(deadline);
            match message["id"].as_i64() {
                Some(id) if message.get("method").is_none() && ids.contains(&id) => {
                    found.insert(id, message);
                }
                _ => self.handle(message),
            }
        }
        found
    }

    /// Waits for an error response with a null id (a parse error).
    pub fn wait_error_without_id(&mut self) -> Value {
        let deadline = Instant::now() + self.timeout;
        loop {
            let message = self.next(deadline);
            if message.get("error").is_some() && message["id"].is_null() {
                return message;
            }
            self.handle(message);
        }
    }

    /// Handles one incoming message that is not the awaited response.
    pub fn handle(&mut self, message: Value) {
        if message.get("method").is_some() && message.get("id").is_some() {
            // A request from the server (progress token, registration).
            let id = message["id"].clone();
            self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null}));
        } else {
            self.notifications.push(message);
        }
    }

    pub fn next(&mut self, deadline: Instant) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(left) {
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => panic!("no message from the server in time"),
            Err(RecvTimeoutError::Disconnected) => panic!("the server closed its output"),
        }
    }

    /// Sends a request and returns its whole response (result or error).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response(id)
    }

    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(response.get("error").is_none(), "{method}: {response}");
        response["result"].clone()
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Waits until a notification satisfies `pred`.
    pub fn wait_notification(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.notifications.iter().find(|n| pred(n)) {
            return found.clone();
        }
        let deadline = Instant::now() + self.timeout;
        loop {
            let message = self.next(deadline);
            let matched = message.get("id").is_none() && pred(&message);
            self.handle(message.clone());
            if matched {
                return message;
            }
        }
    }

    /// Calls `method` until `pred` accepts the result.
    pub fn poll(&mut self, method: &str, params: Value, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + self.timeout;
        loop {
            let result = self.result(method, params.clone());
            if pred(&result) {
                return result;
            }
            assert!(
                Instant::now() < deadline,
                "{method} never matched: {result}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
