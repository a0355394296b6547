//! Encoder throughput on real code: texts per second for the transformer
//! (each precision this CPU runs) and the static tier, and one query's
//! latency.
//!
//!     cargo bench -p quarry-encoder --bench encode -- [CORPUS_DIR] [TEXTS]
//!
//! Texts are windows of 24 lines of the `.rs` files under CORPUS_DIR
//! (default: the cargo registry's sources, `~/.cargo/registry/src`), in
//! path order, so a run is repeatable on one machine. The model is the
//! installed one (`QUARRY_MODEL` or `scripts/fetch-model.sh`'s place).

use quarry_encoder::{locate_model, Embedder, EmbedderOptions, Precision, StaticModel};
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let corpus = args.first().map(PathBuf::from).unwrap_or_else(|| {
        let home = std::env::var_os("HOME").unwrap_or_default();
        Path::new(&home).join(".cargo/registry/src")
    });
    let wanted: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(512);
    let texts = windows(&corpus, wanted);
    if texts.is_empty() {
        eprintln!("no .rs files under {}", corpus.display());
        std::process::exit(2);
    }
    let dir = match locate_model(None) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    println!(
        "{} texts of 24 lines from {}, model {}",
        refs.len(),
        corpus.display(),
        dir.display()
    );
    let mut last = None;
    for precision in [Precision::F32, Precision::native()] {
        if last == Some(precision) {
            continue;
        }
        last = Some(precision);
        let options = EmbedderOptions {
            precision,
            ..EmbedderOptions::default()
        };
        let embedder = Embedder::load(&dir, options).expect("model loads");
        let started = Instant::now();
        for batch in refs.chunks(32) {
            embedder.embed(batch).expect("embeds");
        }
        let secs = started.elapsed().as_secs_f64();
        let query = Instant::now();
        embedder
            .embed(&["where do we retry failed requests"])
            .expect("embeds");
        println!(
            "transformer {precision:?}: {:.1} texts/s, one query {:.1} ms",
            refs.len() as f64 / secs,
            query.elapsed().as_secs_f64() * 1e3
        );
        if precision == Precision::native() {
            let started = Instant::now();
            let tier = StaticModel::distill(&embedder).expect("distils");
            println!(
                "static tier: distilled in {:.1} s",
                started.elapsed().as_secs_f64()
            );
            let started = Instant::now();
            for text in &refs {
                tier.embed(text).expect("embeds");
            }
            let secs = started.elapsed().as_secs_f64();
            println!("static tier: {:.0} texts/s", refs.len() as f64 / secs);
        }
    }
}

/// Up to `wanted` windows of 24 lines from the `.rs` files under `root`.
fn windows(root: &Path, wanted: usize) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries.into_iter().rev() {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
        if files.len() >= wanted {
            break;
        }
    }
    let mut texts = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for window in lines.chunks(24) {
            texts.push(window.join("\n"));
            if texts.len() == wanted {
                return texts;
            }
        }
    }
    texts
}
