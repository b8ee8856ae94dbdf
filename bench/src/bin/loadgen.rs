//! `loadgen`: the bench's load generator for dependent request loops (the
//! modes, flags and output line: the `dreamtown_bench` library).

use std::process::ExitCode;

use dreamtown_bench::{Options, run};

fn main() -> ExitCode {
    match Options::parse(std::env::args().skip(1)).and_then(|o| run(&o)) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("loadgen: {e}");
            ExitCode::FAILURE
        }
    }
}
