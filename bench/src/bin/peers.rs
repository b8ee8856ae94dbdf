//! `peers`: one scenario of Redis Streams, Dreams or Town as a job queue,
//! timed, for bench/peers.py (the flags and the line: `dreamtown_bench::peers`).

use std::process::ExitCode;

use dreamtown_bench::peers::{Options, run};

fn main() -> ExitCode {
    match Options::parse(std::env::args().skip(1)).and_then(|o| run(&o)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("peers: {e}");
            ExitCode::FAILURE
        }
    }
}
