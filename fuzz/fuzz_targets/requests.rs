//! The law of every request type (`dreamtown_protocol::request`): what a
//! command's parse step accepts, its encode step writes back in a form the
//! parse step reads as the same request (the module parses with the code
//! the client encodes with). Input: a byte that picks the command (or
//! subcommand) from the name table, then the argv, split at NUL bytes.
#![no_main]

use dreamtown_protocol::commands::ALL;
use dreamtown_protocol::request::round_trip;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let every: Vec<Vec<&str>> = ALL
        .iter()
        .flat_map(|command| match command.subcommands {
            [] => vec![vec![command.name]],
            subs => subs.iter().map(|sub| vec![command.name, *sub]).collect(),
        })
        .collect();
    let words = &every[usize::from(which) % every.len()];
    let argv: Vec<&[u8]> = if rest.is_empty() { Vec::new() } else { rest.split(|&b| b == 0).collect() };
    if let Some(Err(broken)) = round_trip(words, &argv) {
        panic!("{broken}");
    }
});
