//! End-to-end over stdio: one bad message never ends a session. Every kind
//! of broken frame and invalid JSON-RPC is answered (with its id when it
//! has one) and the next valid message is served; the protocol's smaller
//! rules (parameterless requests, empty initialization options, `exit`
//! without `shutdown`) hold.

use crate::common::lsp::{start_with, start_with_options, wait_exit};
use crate::common::Workspace;
use quarry_bench::lsp_client::Client;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn frame(body: &str) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body.as_bytes());
    out
}

fn status_request(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "quarry/status"}).to_string()
}

/// Waits for the response with this id (or any error when `id` is null).
fn answer(client: &mut Client, id: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let message = client.next(deadline);
        if message.get("method").is_none() && message.get("id") == Some(id) {
            return message;
        }
        client.handle(message);
    }
}

/// The server still answers: `quarry/status` with a fresh id.
fn still_serving(client: &mut Client, what: &str) {
    let id = client.next_id;
    client.next_id += 1;
    client.send_bytes(&frame(&status_request(id)));
    let response = answer(client, &json!(id));
    assert!(
        response["result"]["folders"].is_array(),
        "after {what}: {response}"
    );
}

#[cfg(target_os = "linux")]
fn peak_memory_kib(client: &Client) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", client.child.id()))
        .expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

#[test]
fn bad_messages_are_answered_and_the_session_goes_on() {
    let ws = Workspace::fixture();
    let mut client = start_with(&ws, None);
    still_serving(&mut client, "start");

    // An invalid UTF-8 byte in a header line.
    let mut bytes = b"X-Junk: \xff\xfe\r\n".to_vec();
    bytes.extend(frame(&status_request(900)));
    client.send_bytes(&bytes);
    assert!(answer(&mut client, &json!(900))["result"].is_object());

    // Objects that are JSON but not JSON-RPC: -32600, with the id when it
    // has a usable one, and no end of the session.
    let invalid: &[(&str, Value)] = &[
        ("{}", Value::Null),
        (
            r#"{"jsonrpc":"2.0","id":[1],"method":"quarry/status"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":1.5,"method":"quarry/status"}"#,
            Value::Null,
        ),
        (r#"{"jsonrpc":"2.0","id":901,"method":7}"#, json!(901)),
        (r#"{"id":902,"method":"quarry/status"}"#, json!(902)),
        (
            r#"{"jsonrpc":"1.0","id":903,"method":"quarry/status"}"#,
            json!(903),
        ),
        ("[1,2]", Value::Null),
        // Ids past i64 ended the session (exit 0).
        (
            r#"{"jsonrpc":"2.0","id":9223372036854775808,"method":"quarry/status"}"#,
            json!(9223372036854775808u64),
        ),
        (
            r#"{"jsonrpc":"2.0","id":18446744073709551615,"result":null}"#,
            json!(18446744073709551615u64),
        ),
    ];
    for (body, id) in invalid {
        client.send_bytes(&frame(body));
        let response = answer(&mut client, id);
        assert_eq!(response["error"]["code"], -32600, "{body}: {response}");
        still_serving(&mut client, body);
    }

    // A Content-Length shorter than the body: a parse error, then the
    // framing finds the next header.
    let body = status_request(904);
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() - 4).into_bytes();
    bytes.extend(body.as_bytes());
    bytes.extend(frame(&status_request(905)));
    client.send_bytes(&bytes);
    assert_eq!(answer(&mut client, &Value::Null)["error"]["code"], -32700);
    assert!(answer(&mut client, &json!(905))["result"].is_object());

    // A Content-Length of 10^12 is refused, not waited for.
    let mut bytes = b"Content-Length: 1000000000000\r\n\r\n".to_vec();
    bytes.extend(frame(&status_request(906)));
    client.send_bytes(&bytes);
    let refused = answer(&mut client, &Value::Null);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("over the limit"),
        "{refused}"
    );
    assert!(answer(&mut client, &json!(906))["result"].is_object());

    // A 64 MiB header line without a newline costs no memory to speak of
    // (measured once indexing is over; before the fix it grew by 140 MB).
    client.poll("quarry/status", Value::Null, |s| {
        !s["folders"][0]["lastWalk"].is_null()
    });
    #[cfg(target_os = "linux")]
    let before = peak_memory_kib(&client);
    let mut bytes = vec![b'x'; 64 << 20];
    bytes.extend(b"\r\n");
    bytes.extend(frame(&status_request(907)));
    client.send_bytes(&bytes);
    assert!(answer(&mut client, &json!(907))["result"].is_object());
    #[cfg(target_os = "linux")]
    {
        let grown = peak_memory_kib(&client).saturating_sub(before);
        assert!(grown < 32 << 10, "peak memory grew by {grown} KiB");
    }

    // A 1 MB query is refused at once with a message saying why (it took
    // 13-19 s to search).
    let started = Instant::now();
    let huge = client.call("quarry/search", json!({"query": "retry ".repeat(200_000)}));
    assert_eq!(huge["error"]["code"], -32602, "{huge}");
    assert!(
        huge["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most"),
        "{huge}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    still_serving(&mut client, "a 1 MB query");

    // Parameterless requests take `{}`, `null` or nothing.
    for params in [json!({}), Value::Null] {
        let status = client.call("quarry/status", params.clone());
        assert!(status["result"]["folders"].is_array(), "{params}: {status}");
    }
    still_serving(&mut client, "status with {}");

    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    assert_eq!(wait_exit(&mut client).code(), Some(0));
}

#[test]
fn empty_initialization_options_mean_defaults() {
    for options in [json!([]), Value::Null] {
        let ws = Workspace::fixture();
        let mut client = start_with_options(&ws, None, options.clone());
        still_serving(&mut client, &format!("initializationOptions {options}"));
        client.result("shutdown", json!(null));
        client.notify("exit", json!(null));
        assert_eq!(wait_exit(&mut client).code(), Some(0));
    }
}

#[test]
fn exit_without_shutdown_exits_with_1() {
    let ws = Workspace::fixture();
    let mut client = start_with(&ws, None);
    still_serving(&mut client, "start");
    client.notify("exit", json!(null));
    assert_eq!(wait_exit(&mut client).code(), Some(1));
}

#[test]
fn a_root_uri_sent_unescaped_is_accepted() {
    let ws = Workspace::empty();
    let root = ws.root().join("my project é");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join("lib.rs"), "pub fn spaced_out_helper() {}\n").expect("write");
    let root = std::fs::canonicalize(&root).expect("root");
    let mut client = Client::start(
        Path::new(env!("CARGO_BIN_EXE_quarry")),
        &ws.dir.path().join("xdg-cache"),
        None,
    );
    // As some clients send it: no percent-escapes.
    let raw = format!("file://{}", root.display());
    let init = client.result(
        "initialize",
        json!({"processId": null, "rootUri": raw, "capabilities": {}}),
    );
    assert_eq!(init["serverInfo"]["name"], "quarry");
    client.notify("initialized", json!({}));
    let status = client.poll("quarry/status", Value::Null, |s| {
        !s["folders"][0]["lastWalk"].is_null()
    });
    assert_eq!(status["folders"][0]["files"], 1, "{status}");
    let found = client.result("quarry/search", json!({"query": "spaced_out_helper"}));
    assert_eq!(found["hits"][0]["label"], "spaced_out_helper", "{found}");
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
}

/// Issue 43, item 16: a lone-surrogate escape (valid JSON) and an id of
/// `-0` (an integer to JSON) were answered with an error and id null.
/// Both are served now, with their own id.
#[test]
fn a_lone_surrogate_and_a_minus_zero_id_are_served() {
    let ws = Workspace::fixture();
    let mut client = start_with(&ws, None);
    still_serving(&mut client, "start");
    let body = r#"{"jsonrpc":"2.0","id":950,"method":"quarry/search","params":{"query":"EventBus \ud800"}}"#;
    client.send_bytes(&frame(body));
    let response = answer(&mut client, &json!(950));
    assert!(response["result"]["hits"].is_array(), "{response}");
    client.send_bytes(&frame(
        r#"{"jsonrpc":"2.0","id":-0,"method":"quarry/status"}"#,
    ));
    let response = answer(&mut client, &json!(0));
    assert!(response["result"]["folders"].is_array(), "{response}");
    still_serving(&mut client, "repairs");
}

/// Issue 43, item 7: a server rooted at `/` did not answer `shutdown`
/// within 30 s while its first walk ran. The walk now stops at shutdown.
#[cfg(target_os = "linux")]
#[test]
fn a_server_rooted_at_the_filesystem_root_shuts_down_at_once() {
    let ws = Workspace::empty();
    let mut client = Client::start(
        Path::new(env!("CARGO_BIN_EXE_quarry")),
        &ws.dir.path().join("xdg-cache"),
        None,
    );
    let init = client.result(
        "initialize",
        json!({"processId": null, "rootUri": "file:///", "capabilities": {}}),
    );
    assert_eq!(init["serverInfo"]["name"], "quarry");
    client.notify("initialized", json!({}));
    // The first walk is under way (or queued) now.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    client.result("shutdown", json!(null));
    client.notify("exit", json!(null));
    assert_eq!(wait_exit(&mut client).code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "shutdown took {:?}",
        started.elapsed()
    );
}
