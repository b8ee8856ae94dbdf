//! Every command's (and subcommand's) parse step on a raw argv
//! (`dreamtown::fuzzing`): the first byte picks a command (or one of the shared argument readers, or
//! the module-load arguments), the rest, split at NUL bytes, is the argv.
//! Properties: no panic; errors are `ERR ...`; an accepted argv has an
//! argument count the command's registered arity allows, is still
//! accepted with its keywords in lower case, and is refused with one
//! unknown argument appended (accepted, where the last argument repeats);
//! the same argv gets the same verdict twice; accepted module arguments
//! are pairs, each name once.
#![no_main]

use dreamtown::fuzzing::{command, commands, module_args, shared};
use libfuzzer_sys::fuzz_target;

/// Keywords inside the arguments (subcommand names are in the command's
/// name, `TOWN.AGENT|GET`, not in its argv).
const KEYWORDS: &[&str] = &[
    "NODE", "TRIGGER", "EVENT", "GENERATION", "RETAIN", "SUCCESS", "FAILURE", "QUIET", "OFFSET", "NOQUIET", "LEASE",
    "BLOCK", "COUNT", "URGENT", "RELIABLE", "TTL", "AGENTS", "ROUNDS", "TASKS", "CONCURRENCY", "RATE", "NONE",
    "LIMIT",
];

/// (command, arguments given) after which one more positional argument is
/// optional: `TOWN.STATS <town> [<agent>]`.
const OPTIONAL_POSITIONAL: &[(&str, usize)] = &[("TOWN.STATS", 1)];

/// Commands whose last argument repeats, so one more is accepted, not
/// refused: `TOWN.ACK <town> <agent> <message-id> [<message-id> ...]`.
const REPEATED_LAST: &[&str] = &["TOWN.ACK"];

fn lower_keywords(argv: &[&[u8]]) -> Vec<Vec<u8>> {
    argv.iter()
        .map(|arg| match KEYWORDS.iter().any(|k| arg.eq_ignore_ascii_case(k.as_bytes())) {
            true => arg.to_ascii_lowercase(),
            false => arg.to_vec(),
        })
        .collect()
}

fn check_error(result: &Result<(), String>) {
    if let Err(error) = result {
        assert!(error.starts_with("ERR ") && error.len() > 4, "error reply {error:?}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let argv: Vec<&[u8]> = if rest.is_empty() { Vec::new() } else { rest.split(|&b| b == 0).collect() };
    let specs = commands();
    assert!(specs.iter().all(|(name, _)| command(name, &[]).is_some()), "a command without its parse step here");
    let exposed = specs;
    if pick < 128 {
        let Some((name, arity)) = exposed.get(usize::from(pick) % exposed.len().max(1)) else { return };
        let (name, arity) = (name.as_str(), *arity);
        let result = command(name, &argv).expect("exposed");
        check_error(&result);
        assert_eq!(command(name, &argv), Some(result.clone()), "{name}: not deterministic");
        if result.is_ok() {
            // The name counts, and a subcommand's (`TOWN.AGENT|GET`) too.
            let argc = argv.len() as i32 + name.split('|').count() as i32;
            assert!(if arity >= 0 { argc == arity } else { argc >= -arity }, "{name} accepted {argc} arguments, arity {arity}");
            let lower = lower_keywords(&argv);
            let lower: Vec<&[u8]> = lower.iter().map(Vec::as_slice).collect();
            assert_eq!(command(name, &lower), Some(Ok(())), "{name}: keywords are case-sensitive");
            // Unless one more positional argument is optional there, or
            // the last one repeats.
            if REPEATED_LAST.contains(&name) {
                let mut longer = argv.clone();
                longer.push(b"\x01unknown");
                assert_eq!(command(name, &longer), Some(Ok(())), "{name}: one more of its last argument refused");
            } else if !OPTIONAL_POSITIONAL.contains(&(name, argv.len())) {
                let mut longer = argv.clone();
                longer.push(b"\x01unknown");
                assert!(matches!(command(name, &longer), Some(Err(_))), "{name} accepted a trailing argument");
            }
        }
    } else if pick < 224 {
        check_error(&shared(pick, &argv));
    } else {
        // Module arguments come in pairs, each name once.
        if module_args(&argv).is_ok() {
            assert_eq!(argv.len() % 2, 0, "odd module arguments accepted");
            let names: Vec<&[u8]> = argv.iter().step_by(2).copied().collect();
            assert!(names.iter().enumerate().all(|(i, n)| !names[..i].contains(n)), "a module argument twice");
        }
    }
});
