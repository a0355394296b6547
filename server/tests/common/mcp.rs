//! Driving the real `quarry mcp` binary over stdio (newline-delimited
//! JSON-RPC) for the end-to-end tests.

use super::Workspace;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

pub struct Mcp {
    pub child: Child,
    pub stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: i64,
}

impl Mcp {
    pub fn start(ws: &Workspace) -> Mcp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
        command
            .args(["mcp", "--lexical", "--root"])
            .arg(ws.root())
            .arg("--cache-dir")
            .arg(ws.cache())
            .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"));
        Mcp::spawn(command)
    }

    /// A server on the cache the language servers of `common::lsp` use
    /// (the default cache dir under the same `XDG_CACHE_HOME`).
    pub fn start_shared(ws: &Workspace) -> Mcp {
        let mut command = Command::new(env!("CARGO_BIN_EXE_quarry"));
        command
            .args(["mcp", "--lexical", "--root"])
            .arg(ws.root())
            .env("XDG_CACHE_HOME", ws.dir.path().join("xdg-cache"));
        Mcp::spawn(command)
    }

    pub fn spawn(mut command: Command) -> Mcp {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn quarry mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut mcp = Mcp {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let init = mcp.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "quarry-test", "version": "1"}}),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "quarry", "{init}");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        mcp
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).expect("read") > 0,
                "server closed"
            );
            let message: Value = serde_json::from_str(&line).expect("json line");
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    /// Writes `line` as it is (a newline added) and returns the next
    /// message the server writes.
    pub fn raw(&mut self, line: &str) -> Value {
        writeln!(self.stdin, "{line}").expect("write");
        self.stdin.flush().expect("flush");
        let mut answer = String::new();
        assert!(
            self.stdout.read_line(&mut answer).expect("read") > 0,
            "server closed"
        );
        serde_json::from_str(&answer).expect("json line")
    }

    /// Calls a tool; returns (is_error, text, structured content).
    pub fn call(&mut self, tool: &str, arguments: Value) -> (bool, String, Value) {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = &response["result"];
        assert!(result.is_object(), "{tool}: {response}");
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (
            result["isError"].as_bool().unwrap_or(false),
            text,
            result["structuredContent"].clone(),
        )
    }
}
