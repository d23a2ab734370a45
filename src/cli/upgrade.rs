//! `opreg upgrade`: where an installed version upgrades to, and why.

/// Resolve upgrades from an installed version (not available yet).
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_a: Args) -> i32 {
    eprintln!("error: `opreg upgrade` is not available yet");
    super::EXIT_FAILURE
}
