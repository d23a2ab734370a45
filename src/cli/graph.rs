//! `opreg graph`: draw a package's update graph.

/// Draw a package's update graph (not available yet).
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_a: Args) -> i32 {
    eprintln!("error: `opreg graph` is not available yet");
    super::EXIT_FAILURE
}
