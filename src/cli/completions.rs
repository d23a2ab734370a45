//! `opreg completions SHELL` and `opreg man`: shell completion scripts (clap_complete) and roff
//! man pages (clap_mangen), all generated from the same clap definition as `--help`.

use clap::CommandFactory;
use clap_complete::Shell;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Completions` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

pub fn run(a: Args) -> i32 {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "opreg", &mut script);
    write(&script)
}

// Help text: the doc comment of `Command::Man` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// The page of this subcommand (opreg-SUBCOMMAND(1)) instead of opreg(1).
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "out_dir")]
    pub subcommand: Option<String>,
    /// Write every page (opreg.1 and one opreg-SUBCOMMAND.1 per subcommand) into DIR.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

pub fn run_man(a: ManArgs) -> i32 {
    if let Some(dir) = &a.out_dir {
        return write_all(dir);
    }
    let page = match &a.subcommand {
        None => render(super::Cli::command()),
        Some(name) => match subcommand(name) {
            Some(cmd) => render(cmd),
            None => {
                super::output::error(format_args!(
                    "opreg has no subcommand {name:?}; `opreg --help` lists them"
                ));
                return super::EXIT_USAGE;
            }
        },
    };
    match page {
        Ok(bytes) => write(&bytes),
        Err(e) => {
            super::output::error(format_args!("rendering the man page: {e}"));
            super::EXIT_FAILURE
        }
    }
}

/// Subcommand `name` as a page of its own, named `opreg-NAME` as opreg(1) refers to it.
fn subcommand(name: &str) -> Option<clap::Command> {
    let mut root = super::Cli::command();
    root.build();
    let sub = root.find_subcommand(name)?.clone();
    // clap names take 'static strings; a page per subcommand is made once per process.
    let full: &'static str = Box::leak(format!("opreg-{name}").into_boxed_str());
    Some(sub.name(full).bin_name(full))
}

fn render(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut out)?;
    Ok(out)
}

/// Every page into `dir`.
fn write_all(dir: &std::path::Path) -> i32 {
    let mut root = super::Cli::command();
    // Built, so that clap's own `help` subcommand, which opreg(1) names too, is listed.
    root.build();
    let names: Vec<String> = root
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    let mut pages = vec![("opreg.1".to_string(), render(root))];
    for n in names {
        if let Some(cmd) = subcommand(&n) {
            pages.push((format!("opreg-{n}.1"), render(cmd)));
        }
    }
    for (file, page) in pages {
        let path = dir.join(&file);
        if let Err(e) = page.and_then(|p| std::fs::write(&path, p)) {
            super::output::error(format_args!("writing {}: {e}", path.display()));
            return super::EXIT_FAILURE;
        }
    }
    super::EXIT_OK
}

fn write(bytes: &[u8]) -> i32 {
    match super::output::write_out(|w| w.write_all(bytes)) {
        Ok(()) => super::EXIT_OK,
        Err(e) => {
            super::output::error(format_args!("writing output: {e}"));
            super::EXIT_FAILURE
        }
    }
}
