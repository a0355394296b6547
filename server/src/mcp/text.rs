//! What a tool answers, in few tokens: a hit's snippet for an agent,
//! usages as numbered lines, and results as Markdown text beside their
//! structured content.
//! Never: reads a file or the index (callers pass the text in).

use quarry_engine::search::{is_preamble, Hit};
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::ErrorData as McpError;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Most lines of a `search_code` snippet.
const SNIPPET_LINES: usize = 4;

/// What an agent needs of a hit in a few lines: its signature (the first
/// line that is not doc comment or decorator) and the line that matched
/// the query with a line of context after it, each numbered; `…` marks
/// lines left out.
pub(super) fn agent_snippet(file: &str, hit: &Hit) -> String {
    let lines: Vec<&str> = file.lines().collect();
    let line = |n: u32| lines.get(n.saturating_sub(1) as usize).copied();
    let signature = (hit.start_line..=hit.end_line)
        .find(|&n| line(n).is_some_and(|l| !l.trim().is_empty() && !is_preamble(l)))
        .unwrap_or(hit.start_line);
    let matched = hit
        .detail_line
        .clamp(hit.start_line, hit.end_line.max(hit.start_line));
    let mut shown: Vec<u32> = vec![signature];
    for n in [matched, matched + 1, signature + 1] {
        if shown.len() < SNIPPET_LINES && n <= hit.end_line && !shown.contains(&n) {
            shown.push(n);
        }
    }
    shown.sort_unstable();
    let mut out = String::new();
    let mut last: Option<u32> = None;
    for n in shown {
        let Some(text) = line(n) else { continue };
        if last.is_some_and(|l| n > l + 1) {
            out.push_str("…\n");
        }
        let _ = writeln!(out, "{n}: {}", text.trim_end());
        last = Some(n);
    }
    out.trim_end().to_string()
}

pub(super) fn tool_error(message: impl Into<String>) -> Result<CallToolResult, McpError> {
    Ok(CallToolResult::error(vec![ContentBlock::text(
        message.into(),
    )]))
}

pub(super) fn with_structure(text: String, value: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    result
}

/// One definition's usages as `find_usages` lists them.
pub(super) fn usage_entry<'l>(
    symbol: &str,
    kind: &str,
    lines: impl Iterator<Item = (usize, &'l str)>,
) -> Value {
    json!({
        "symbol": symbol,
        "kind": kind,
        "lines": lines.map(|(n, l)| json!({"line": n, "text": l})).collect::<Vec<_>>(),
    })
}

/// One file's usages as text: `heading`, then each definition and its
/// numbered lines.
pub(super) fn write_usages(out: &mut String, heading: &str, entries: &[Value]) {
    let _ = writeln!(out, "{heading}");
    for e in entries {
        let _ = writeln!(out, "  in `{}`:", e["symbol"].as_str().unwrap_or(""));
        for l in e["lines"].as_array().into_iter().flatten() {
            let _ = writeln!(
                out,
                "    {}: {}",
                l["line"],
                l["text"].as_str().unwrap_or("")
            );
        }
    }
}

/// `find_usages`' answer from the hub's usages: grouped by repository and
/// file, each with its definition and lines.
pub(super) fn hub_usages(name: &str, found: Vec<quarry_engine::hub::Usage>) -> CallToolResult {
    if found.is_empty() {
        return with_structure(
            format!("No usages of `{name}` outside its definition in the hub."),
            json!({ "symbol": name, "files": [], "source": "hub" }),
        );
    }
    // (repository, path, commit, from the working tree) -> usages
    type File = (String, String, String, bool);
    let mut groups: Vec<(File, Vec<Value>)> = Vec::new();
    for u in found {
        let entry = usage_entry(
            &u.symbol,
            u.kind,
            u.lines.iter().map(|(n, l)| (*n as usize, l.as_str())),
        );
        let key = (u.repo, u.path, u.commit, u.local);
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, entries)) => entries.push(entry),
            None => groups.push((key, vec![entry])),
        }
    }
    let mut out = String::new();
    for ((repo, path, commit, local), entries) in &groups {
        let at = if *local {
            "working tree".to_string()
        } else {
            commit.chars().take(12).collect()
        };
        write_usages(&mut out, &format!("{repo}:{path} ({at})"), entries);
    }
    let files: Vec<Value> = groups
        .into_iter()
        .map(|((repo, path, commit, local), usages)| {
            json!({"repo": repo, "commit": commit, "local": local, "path": path, "usages": usages})
        })
        .collect();
    with_structure(
        out,
        json!({ "symbol": name, "files": files, "source": "hub" }),
    )
}

/// Whether `line` holds `word` as a whole identifier.
pub(super) fn has_word(line: &str, word: &str) -> bool {
    quarry_engine::lexical::tokenize::whole_word_matches(line, word)
        .next()
        .is_some()
}
