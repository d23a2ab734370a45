//! `opreg completions SHELL` and `opreg man`: shell completion scripts (clap_complete) and a
//! roff man page (clap_mangen), both generated from the same clap definition as `--help`.

use clap::CommandFactory;
use clap_complete::Shell;

// Help text: the doc comment of `Command::Completions` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(a: Args) -> i32 {
    let mut cmd = super::Cli::command();
    clap_complete::generate(a.shell, &mut cmd, "opreg", &mut std::io::stdout());
    super::EXIT_OK
}

// Help text: the doc comment of `Command::Man` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct ManArgs {}

pub fn run_man(_: ManArgs) -> i32 {
    let cmd = super::Cli::command();
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd).render(&mut out) {
        eprintln!("error: rendering the man page: {e}");
        return super::EXIT_FAILURE;
    }
    use std::io::Write;
    match std::io::stdout().write_all(&out) {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            eprintln!("error: writing the man page: {e}");
            super::EXIT_FAILURE
        }
    }
}
