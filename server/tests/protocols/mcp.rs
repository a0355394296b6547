//! End-to-end: the real `quarry mcp` over stdio (newline-delimited JSON-RPC)
//! on a temp copy of the fixture: initialize, list tools, call each tool,
//! refuse a path outside the workspace, see an edit on disk.

use crate::common::mcp::Mcp;
use crate::common::Workspace;
use serde_json::{json, Value};

#[test]
fn serves_the_five_tools_over_stdio() {
    let ws = Workspace::fixture();
    let mut mcp = Mcp::start(&ws);

    let tools = mcp.request("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "search_code",
        "find_symbol",
        "find_usages",
        "get_code_context",
        "index_status",
    ] {
        assert!(names.contains(&expected), "{names:?}");
    }
    let search_schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_code")
        .unwrap()["inputSchema"]
        .clone();
    assert_eq!(
        search_schema["required"],
        json!(["query"]),
        "{search_schema}"
    );
    // Every tool only reads, and declares the shape of what it returns.
    for tool in tools["result"]["tools"].as_array().unwrap() {
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool}");
        assert_eq!(tool["outputSchema"]["type"], "object", "{tool}");
    }

    let (error, text, data) = mcp.call(
        "search_code",
        json!({"query": "GraphStore::insert", "limit": 3}),
    );
    assert!(!error, "{text}");
    assert!(
        text.contains("`GraphStore::insert` (method) src/graph_store.rs:54-59"),
        "{text}"
    );
    assert_eq!(data["hits"][0]["symbol"], "GraphStore::insert");
    // Alone on the workspace, it writes the index; answered without
    // waiting for an update, it says whether one runs.
    let (error, text, status) = mcp.call("index_status", json!({}));
    assert!(
        !error && text.contains("This server writes the index"),
        "{text}"
    );
    assert_eq!(status["role"], "writer", "{status}");
    assert!(status["files"].as_u64().unwrap_or(0) > 0, "{status}");
    // The snippet shows the signature, numbered, not just a doc comment.
    let snippet = data["hits"][0]["snippet"].as_str().unwrap();
    assert!(snippet.starts_with("55:     pub fn insert("), "{snippet}");
    assert_eq!(data["no_match"], false);
    // The structured content has what the output schema requires.
    let schema = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_code")
        .unwrap()["outputSchema"]
        .clone();
    for key in schema["required"].as_array().unwrap() {
        assert!(data.get(key.as_str().unwrap()).is_some(), "{key} in {data}");
    }
    for key in schema["properties"]["hits"]["items"]["required"]
        .as_array()
        .unwrap()
    {
        assert!(
            data["hits"][0].get(key.as_str().unwrap()).is_some(),
            "{key}"
        );
    }
    let (error, text, _) = mcp.call("search_code", json!({"query": "retry ".repeat(200_000)}));
    assert!(error && text.contains("at most"), "a 1 MB query is refused");
    let (error, text, _) = mcp.call("search_code", json!({"query": "insert", "limit": 0}));
    assert!(
        error && text.contains("limit"),
        "limit 0 is refused: {text}"
    );
    let (error, text, data) = mcp.call("search_code", json!({"query": "quokka_trampoline_gauge"}));
    assert!(!error, "{text}");
    assert_eq!(data["no_match"], true, "{text}");
    assert!(
        text.contains("No code matches the words") || text.contains("No results"),
        "{text}"
    );
    let (error, text, _) = mcp.call(
        "search_code",
        json!({"query": "insert", "language": "python"}),
    );
    assert!(!error && !text.contains(".rs:"), "{text}");
    let (error, text, _) = mcp.call("search_code", json!({"query": "x", "language": "cobol"}));
    assert!(error && text.contains("unknown language"), "{text}");

    let (error, text, data) =
        mcp.call("find_symbol", json!({"name": "RetryPolicy", "exact": true}));
    assert!(!error, "{text}");
    assert_eq!(data["symbols"][0]["qualified_name"], "RetryPolicy");
    let (error, text, _) = mcp.call(
        "find_symbol",
        json!({"name": "NoSuchThingAnywhere", "exact": true}),
    );
    assert!(error && text.contains("no symbol"), "{text}");

    // `lookup` is defined in graph_store.rs and called elsewhere in it.
    let (error, text, data) = mcp.call("find_usages", json!({"symbol": "NodeSource::lookup"}));
    assert!(!error, "{text}");
    let files = data["files"].as_array().expect("files");
    assert!(!files.is_empty(), "{text}");
    for file in files {
        for usage in file["usages"].as_array().unwrap() {
            assert_ne!(
                usage["symbol"], "NodeSource::lookup",
                "the definition is left out: {text}"
            );
        }
    }
    assert!(text.contains("self.lookup(id)"), "{text}");

    let (error, text, data) = mcp.call(
        "get_code_context",
        json!({"path": "src/graph_store.rs", "symbol": "GraphStore::insert"}),
    );
    assert!(!error, "{text}");
    assert_eq!(data["start_line"], 54);
    assert!(text.contains("pub fn insert("), "{text}");
    let (error, text, _) = mcp.call(
        "get_code_context",
        json!({"path": "src/graph_store.rs", "start_line": 1, "end_line": 3}),
    );
    assert!(
        !error && text.starts_with("src/graph_store.rs:1-3"),
        "{text}"
    );

    // Paths outside the workspace are refused.
    for path in ["../../etc/passwd", "/etc/passwd"] {
        let (error, text, _) = mcp.call("get_code_context", json!({"path": path}));
        assert!(error, "{path}: {text}");
        assert!(
            text.contains("outside the workspace") || text.contains("cannot open"),
            "{text}"
        );
    }
    // Bad arguments are a tool or protocol error; the server keeps going.
    let bad = mcp.request(
        "tools/call",
        json!({"name": "search_code", "arguments": {"limit": 2}}),
    );
    assert!(
        bad.get("error").is_some() || bad["result"]["isError"] == true,
        "{bad}"
    );

    // An edit on disk shows in the next call.
    ws.write("src/fresh.rs", "pub fn freshly_written_function() {}\n");
    let (error, text, _) = mcp.call("find_symbol", json!({"name": "freshly_written_function"}));
    assert!(!error && text.contains("src/fresh.rs"), "{text}");

    drop(mcp.stdin);
    let status = mcp.child.wait().expect("wait");
    assert!(status.success(), "{status}");
}

#[test]
fn search_code_ranks_by_score_alone_when_asked_not_to_spread_files() {
    let ws = Workspace::fixture();
    let mut mcp = Mcp::start(&ws);
    let query = "rate limit tokens";
    let hits = |data: &serde_json::Value| data["hits"].as_array().expect("hits").clone();
    let from_limiter = |data: &serde_json::Value| {
        hits(data)
            .iter()
            .filter(|h| h["path"] == "ratelimit/limiter.go")
            .count()
    };
    let (error, spread_text, spread) = mcp.call("search_code", json!({"query": query, "limit": 4}));
    assert!(!error, "{spread_text}");
    let (error, text, by_score) = mcp.call(
        "search_code",
        json!({"query": query, "limit": 4, "spread_files": false}),
    );
    assert!(!error, "{text}");
    let scores: Vec<f64> = hits(&by_score)
        .iter()
        .map(|h| h["score"].as_f64().expect("score"))
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{text}");
    // The file that matches best gives its third chunk a place that the
    // default hands to another file.
    assert!(
        from_limiter(&by_score) > from_limiter(&spread),
        "{spread_text}\n---\n{text}"
    );
}

/// Issue 43, item 16: a line that is not JSON was dropped without the
/// -32700 JSON-RPC asks for, array params were answered without the id,
/// bad `arguments` as an unknown method. Each is answered with its code
/// and id now, and the session goes on.
#[test]
fn every_unusable_line_gets_its_json_rpc_error() {
    let ws = Workspace::fixture();
    let mut mcp = Mcp::start(&ws);
    let cases: &[(&str, Value, i64)] = &[
        ("this is not json", Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/li"#,
            Value::Null,
            -32700,
        ),
        (
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/list","params":[1,2]}"#,
            json!(6),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_code","arguments":"EventBus"}}"#,
            json!(7),
            -32602,
        ),
        (
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"tools/list"}"#,
            json!(9223372036854775808u64),
            -32600,
        ),
    ];
    for (line, id, code) in cases {
        let answer = mcp.raw(line);
        assert_eq!(answer["id"], *id, "{line}: {answer}");
        assert_eq!(answer["error"]["code"], *code, "{line}: {answer}");
        let (error, text, _) = mcp.call("find_symbol", json!({"name": "EventBus"}));
        assert!(!error && text.contains("EventBus"), "after {line}: {text}");
    }
    // A lone surrogate escape is valid JSON: served, not refused.
    let answer = mcp.raw(
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"search_code","arguments":{"query":"EventBus \ud800"}}}"#,
    );
    assert_eq!(answer["id"], 8, "{answer}");
    assert!(answer["result"]["content"].is_array(), "{answer}");
    let _ = mcp.child.kill();
}

/// Issue 43, item 7: `quarry mcp --root /` did not answer `initialize`
/// within 30 s (it walked the whole file system first). The walk now runs
/// behind the session.
#[cfg(target_os = "linux")]
#[test]
fn an_mcp_server_rooted_at_the_filesystem_root_initializes_at_once() {
    use std::io::{BufRead, BufReader, Write};
    let ws = Workspace::empty();
    let started = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_quarry"))
        .args(["mcp", "--lexical", "--root", "/", "--cache-dir"])
        .arg(ws.cache())
        .env("XDG_CACHE_HOME", ws.dir.path().join("xdg"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(
        stdin,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}}})
    )
    .expect("write");
    stdin.flush().expect("flush");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let line = rx.recv_timeout(std::time::Duration::from_secs(10));
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("no answer to initialize within 10 s");
    let answer: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(answer["result"]["serverInfo"]["name"], "quarry", "{answer}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
}
