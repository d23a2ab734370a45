//! `opreg validate`: the ingest checks, writing nothing; the diagnostics as text on stderr or
//! as a JSON or YAML document on stdout (for CI).

use crate::diag::Diagnostic;
use clap::ValueEnum;
use serde::Serialize;
use std::path::PathBuf;

// Help text: the doc comment of `Command::Validate` in src/cli/mod.rs.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Catalog sources (anything `opreg ingest` accepts); `-` reads a catalog file from standard input.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Also lint upgrade graphs that classic OLM and OLM v1 resolve differently (warnings).
    #[arg(long)]
    pub upgrades: bool,
    /// Print only errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Report format: text lines on stderr, or one JSON or YAML document on stdout.
    #[arg(short = 'o', long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Fail (exit 1) when there is any warning.
    #[arg(long)]
    pub warnings_as_errors: bool,
    /// Accept a catalog with no packages (refused by default, as a likely mistake).
    #[arg(long)]
    pub allow_empty: bool,
    #[command(flatten)]
    pub images: super::validate_images::Args,
    #[command(flatten)]
    pub image: super::ImageArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
    Yaml,
}

/// The machine-readable report.
#[derive(Serialize)]
struct Report<'a> {
    valid: bool,
    packages: Option<usize>,
    bundles: Option<usize>,
    entries: Option<usize>,
    diagnostics: Vec<Entry<'a>>,
    /// The image checks' counts (null without --images, or when the catalog is invalid).
    images: Option<&'a crate::imagecheck::Summary>,
}

/// A catalog diagnostic, or an image finding (which also has `image` and `location`).
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Catalog(Record<'a>),
    Image(ImageRecord<'a>),
}

/// One diagnostic, field by field (an image finding adds its own two).
#[derive(Serialize)]
struct Record<'a> {
    severity: &'static str,
    rule: &'static str,
    file: Option<&'a str>,
    document: Option<usize>,
    package: Option<&'a str>,
    channel: Option<&'a str>,
    bundle: Option<&'a str>,
    message: &'a str,
    /// What to change, and where (the text's `help:` line).
    help: Option<&'a str>,
}

impl<'a> From<&'a Diagnostic> for Record<'a> {
    fn from(d: &'a Diagnostic) -> Self {
        Record {
            severity: d.severity.as_str(),
            rule: d.rule.id(),
            file: d.origin.as_ref().map(|o| o.file.as_str()),
            document: d.origin.as_ref().and_then(|o| o.doc),
            package: d.package.as_deref(),
            channel: d.channel.as_deref(),
            bundle: d.bundle.as_deref(),
            message: &d.message,
            help: d.help.as_deref(),
        }
    }
}

/// A finding in the JSON or YAML report's `diagnostics`: a diagnostic's fields (no file,
/// document or channel) and two more.
#[derive(serde::Serialize)]
struct ImageRecord<'a> {
    #[serde(flatten)]
    diagnostic: Record<'a>,
    image: &'a str,
    /// The mirror that answered, when one did.
    location: Option<&'a str>,
}

impl<'a> From<&'a crate::imagecheck::Finding> for ImageRecord<'a> {
    fn from(f: &'a crate::imagecheck::Finding) -> Self {
        let diagnostic = Record {
            severity: f.severity.as_str(),
            rule: f.rule.id(),
            file: None,
            document: None,
            package: Some(&f.package),
            channel: None,
            bundle: Some(&f.bundle),
            message: &f.message,
            help: (!f.help.is_empty()).then_some(f.help.as_str()),
        };
        ImageRecord {
            diagnostic,
            image: &f.image,
            location: f.location.as_deref(),
        }
    }
}

pub fn run(a: Args) -> super::Ended {
    let text = a.output == Format::Text;
    let progress = super::progress::reporter(a.quiet);
    let image = a.image.options();
    let images = match a.images.checks(&image) {
        Ok(i) => i,
        Err(e) => return e.into(),
    };
    // Downloads draw their bars whatever the format; the checking spinner only beside text.
    let opts = crate::query::ValidateOptions {
        sources: a.sources.clone(),
        upgrades: a.upgrades,
        warnings_as_errors: a.warnings_as_errors,
        allow_empty: a.allow_empty,
        image,
        images,
        checking: if text {
            progress.clone()
        } else {
            Default::default()
        },
        progress,
    };
    let mut c = match crate::query::validate(&opts) {
        Ok(c) => c,
        Err(e) => return super::Ended::Failed(e),
    };
    super::offer_allow_empty(&mut c.errors);
    let (valid, counts) = (c.valid, c.counts);
    if text {
        if !a.quiet || a.warnings_as_errors {
            c.warnings.iter().for_each(super::output::diagnostic);
        }
        c.errors.iter().for_each(super::output::diagnostic);
        if let Some(r) = &c.images {
            super::validate_images::print(r, a.quiet && !a.warnings_as_errors);
        }
        let image_errors = c.images.as_ref().map_or(0, |r| r.errors());
        match counts {
            Some((p, b, e)) if valid => {
                if !a.quiet {
                    super::output::status(format_args!(
                        "valid: {p} packages, {b} bundles, {e} channel entries"
                    ));
                }
            }
            Some(_) if image_errors > 0 => super::output::failure_summary(format_args!(
                "{image_errors} image error(s): the catalog's images are not all usable"
            )),
            Some(_) => super::output::failure_summary(format_args!(
                "{} warning(s), refused by --warnings-as-errors",
                c.warnings.len() + c.images.as_ref().map_or(0, |r| r.warnings())
            )),
            None => super::output::failure_summary(format_args!(
                "{} error(s): the catalog is invalid",
                c.errors.len()
            )),
        }
    } else {
        let report = Report {
            valid,
            packages: counts.map(|c| c.0),
            bundles: counts.map(|c| c.1),
            entries: counts.map(|c| c.2),
            diagnostics: c
                .errors
                .iter()
                .chain(&c.warnings)
                .map(|d| Entry::Catalog(Record::from(d)))
                .chain(
                    c.images
                        .iter()
                        .flat_map(|r| &r.findings)
                        .map(|f| Entry::Image(f.into())),
                )
                .collect(),
            images: c.images.as_ref().map(|r| &r.summary),
        };
        let doc = if a.output == Format::Json {
            serde_json::to_string_pretty(&report)
                .map(|s| s + "\n")
                .map_err(|e| e.to_string())
        } else {
            yaml_serde::to_string(&report).map_err(|e| e.to_string())
        };
        let written = doc.and_then(|d| super::output::out(&d).map_err(|e| e.to_string()));
        if let Err(e) = written {
            return crate::error::Error::failed(format_args!("writing the report: {e}")).into();
        }
    }
    if valid {
        super::Ended::Done
    } else {
        // The diagnostics, or the report, say why.
        super::Ended::Reported
    }
}
