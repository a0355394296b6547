//! The binary as a user runs it: the CLI, confinement against hostile trees and races, hostile input, several processes on one workspace.
//! One test binary per group: each links candle, tokenizers and
//! tree-sitter once.

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod confinement;
mod hostile;
mod hub;
mod multiprocess;
