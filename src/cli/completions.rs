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

pub fn run(a: Args) -> super::Ended {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "opreg", &mut script);
    write(&script)
}

// Help text: the doc comment of `Command::Man` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// The page of this subcommand (opreg-SUBCOMMAND(1)) instead of opreg(1); a nested one as
    /// `image-build` or "image build".
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "out_dir")]
    pub subcommand: Option<String>,
    /// Write every page into DIR (made when missing): opreg.1 and one page per subcommand at
    /// any depth (opreg-image.1, opreg-image-build.1, ...).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

pub fn run_man(a: ManArgs) -> super::Ended {
    if let Some(dir) = &a.out_dir {
        return write_all(dir);
    }
    let page = match &a.subcommand {
        None => render(super::Cli::command()),
        Some(name) => {
            let wanted = format!("opreg-{}", name.replace(' ', "-"));
            match pages().into_iter().find(|(n, _)| *n == wanted) {
                Some((_, cmd)) => render(cmd),
                None => {
                    return crate::error::Error::Usage(format!(
                        "opreg has no subcommand {name:?}; `opreg --help` lists them"
                    ))
                    .into();
                }
            }
        }
    };
    match page {
        Ok(bytes) => write(&bytes),
        Err(e) => crate::error::Error::failed(format_args!("rendering the man page: {e}")).into(),
    }
}

/// Every page: opreg(1), then one per subcommand at any depth, named as the parent's page
/// refers to it (`opreg-image` lists `opreg-image-build(1)`).
fn pages() -> Vec<(String, clap::Command)> {
    let mut root = super::Cli::command();
    // Built, so that clap's own `help` subcommand, which opreg(1) names too, is listed.
    root.build();
    let mut out = Vec::new();
    add_subcommands(&root, "opreg", &mut out);
    out.insert(0, ("opreg".to_string(), root));
    out
}

fn add_subcommands(parent: &clap::Command, prefix: &str, out: &mut Vec<(String, clap::Command)>) {
    for sub in parent.get_subcommands().filter(|c| !c.is_hide_set()) {
        let full = format!("{prefix}-{}", sub.get_name());
        // clap names take 'static strings; the pages are made once per process.
        let name: &'static str = Box::leak(full.clone().into_boxed_str());
        let page = sub.clone().name(name).bin_name(name);
        // clap's `help` has a page (its parent's page lists it), not one per command it names.
        if sub.get_name() != "help" {
            add_subcommands(&page, &full, out);
        }
        out.push((full, page));
    }
}

/// A page, whose header names opreg and its version (clap_mangen would put a subcommand's
/// name there).
fn render(cmd: clap::Command) -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd)
        .source(format!("opreg {}", env!("CARGO_PKG_VERSION")))
        .render(&mut out)?;
    Ok(out)
}

/// Every page into `dir`, which is made when missing.
fn write_all(dir: &std::path::Path) -> super::Ended {
    if let Err(e) = std::fs::create_dir_all(dir) {
        return crate::error::Error::failed(format_args!("creating {}: {e}", dir.display())).into();
    }
    for (name, cmd) in pages() {
        let path = dir.join(format!("{name}.1"));
        if let Err(e) = render(cmd).and_then(|p| std::fs::write(&path, p)) {
            return crate::error::Error::failed(format_args!("writing {}: {e}", path.display()))
                .into();
        }
    }
    super::Ended::Done
}

fn write(bytes: &[u8]) -> super::Ended {
    match super::output::write_out(|w| w.write_all(bytes)) {
        Ok(()) => super::Ended::Done,
        Err(e) => crate::error::Error::failed(format_args!("writing output: {e}")).into(),
    }
}
