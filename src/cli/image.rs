//! `opreg image build` and `opreg image push`: argument parsing and printing only; the work is
//! [`crate::imagebuild`]'s and [`crate::image::push`]'s.

use super::connection_args::{DestFlags, RegistryArgs, SrcFlags};
use super::output;
use crate::error::Error;
use crate::imagebuild::{self as build, BuildOptions, Target};
use std::path::PathBuf;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: ImageCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum ImageCommand {
    /// Build a catalog image from SOURCEs, without a daemon, reproducibly.
    ///
    /// The catalog is validated first (an invalid one builds nothing). The image holds the FBC
    /// under /configs (one catalog.json per package, opm's layout), the opreg database pre-built
    /// from exactly those files under /tmp/cache (when the base's server is this opreg version),
    /// the configs label, and Entrypoint/Cmd as opm's generated Dockerfile sets them. The same
    /// inputs, base and opreg binary give the same digest.
    ///
    /// Without --base the image is complete by itself: this opreg binary (which must be
    /// statically linked), linked as opm and grpc_health_probe, run as a non-root user.
    ///
    /// Targets: `oci:DIR[:TAG]` writes an OCI image layout (DIR ends at the first colon, as
    /// skopeo reads it; an untagged target keeps the layout's tags); a registry reference is
    /// pushed with --push. Without --push a registry target is a dry run: nothing is sent, what
    /// would be pushed is printed, no --digest-file is written (a warning says so), and the exit
    /// code is 0.
    ///
    /// Exit codes: 0 built (and written or pushed); 1 invalid catalog (nothing is built), or a
    /// failure reading, building, writing or pushing; 2 usage error; 130 interrupted.
    Build(Box<BuildArgs>),
    /// Push the image of an OCI layout to a registry.
    ///
    /// Blobs the registry has are not sent again, large ones go in chunks, a request answered
    /// 429 or 5xx is tried again (after the registry's Retry-After), and the manifest goes
    /// last, so a failed push leaves no tag pointing at missing content. Credentials come from
    /// the same files as for pulls. Prints the digest (not with -q).
    ///
    /// Exit codes: 0 pushed; 1 the layout could not be read or the push failed; 2 usage error;
    /// 130 interrupted.
    Push(PushArgs),
    /// Write a new cosign key pair: PREFIX.key (ECDSA P-256, encrypted with the passphrase as
    /// cosign encrypts it) and PREFIX.pub.
    ///
    /// The files are cosign's: cosign, podman and skopeo use them, and opreg reads theirs. The
    /// passphrase comes from --passphrase-file, else COSIGN_PASSWORD, else a prompt.
    GenerateKeyPair(super::sign::GenerateArgs),
    /// Sign an image in a registry with a cosign private key.
    ///
    /// The signature is cosign's tag-based one, which podman, CRI-O and OpenShift verify: the
    /// simple-signing payload naming the repository and the manifest digest, ECDSA-SHA256, in a
    /// layer of the manifest at the tag sha256-<hex>.sig. Signing again adds a signature; the
    /// others stay.
    Sign(super::sign::SignArgs),
    /// Verify that an image's digest is signed by a key, for its repository.
    ///
    /// Exits 0 when a signature by the key covers the digest REF names now and names REF's
    /// repository, 1 otherwise, with one line saying why (unsigned, signed by another key, for
    /// another digest or repository, or signed in sigstore's new bundle format, which opreg does
    /// not read yet).
    Verify(super::sign::VerifyArgs),
}

#[derive(clap::Args, Debug)]
pub struct PushArgs {
    /// The image to push: oci:DIR[:TAG] (the only image of the layout when TAG is left out).
    #[arg(value_name = "oci:DIR[:TAG]")]
    pub source: String,
    /// Where to push it: registry/repository[:tag] (`latest` when the tag is left out).
    #[arg(value_name = "REF")]
    pub target: String,
    /// Write the pushed digest to this file.
    #[arg(long, value_name = "FILE")]
    pub digest_file: Option<PathBuf>,
    /// Print nothing on success, not even the digest (--digest-file writes it); only errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Sign the pushed image with this cosign private key, after the push.
    #[arg(long, value_name = "FILE")]
    pub sign_key: Option<PathBuf>,
    /// The --sign-key passphrase, from this file [default: $COSIGN_PASSWORD, else a prompt].
    #[arg(long, value_name = "FILE", requires = "sign_key")]
    pub passphrase_file: Option<PathBuf>,
    #[command(flatten)]
    pub image: ImageFlags,
    #[command(flatten)]
    pub dest: DestFlags,
}

#[derive(clap::Args, Debug)]
pub struct BuildArgs {
    /// Anything `opreg render` accepts: FBC directories, bundle directories, images.
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Where the image goes: oci:DIR[:TAG], or a registry reference (with --push).
    #[arg(short = 't', long = "tag", required = true, value_name = "REF")]
    pub tags: Vec<String>,
    /// The image to build on (a registry reference or oci:DIR[:TAG]) [default: this binary].
    #[arg(long, value_name = "IMAGE")]
    pub base: Option<String>,
    /// Platforms to keep from a multi-arch base, comma-separated [default: all].
    #[arg(
        long = "platform",
        value_name = "OS/ARCH[/VARIANT]",
        value_delimiter = ','
    )]
    pub platforms: Vec<String>,
    /// Push registry targets (without it, a registry target is a dry run: it sends nothing,
    /// says what would be pushed, writes no --digest-file and exits 0).
    #[arg(long)]
    pub push: bool,
    /// An extra label, KEY=VALUE, KEY not empty (repeatable; applied last).
    #[arg(long = "label", value_name = "KEY=VALUE")]
    pub labels: Vec<String>,
    /// Where the FBC goes in the image.
    #[arg(long, default_value = "/configs", value_name = "PATH")]
    pub configs_path: String,
    /// Where the pre-built cache goes in the image.
    #[arg(long, default_value = "/tmp/cache", value_name = "PATH")]
    pub cache_path: String,
    /// Write the image's digest to this file (only when a target was written or pushed).
    #[arg(long, value_name = "FILE")]
    pub digest_file: Option<PathBuf>,
    /// Every timestamp in the image [default: 0, the epoch].
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS")]
    pub source_date_epoch: Option<u64>,
    /// Print nothing on success, not even the digest (--digest-file writes it); only errors,
    /// and the warning that a dry run wrote no --digest-file.
    #[arg(short, long)]
    pub quiet: bool,
    /// Sign each pushed image with this cosign private key, after the push (needs --push).
    #[arg(long, value_name = "FILE", requires = "push")]
    pub sign_key: Option<PathBuf>,
    /// The --sign-key passphrase, from this file [default: $COSIGN_PASSWORD, else a prompt].
    #[arg(long, value_name = "FILE", requires = "sign_key")]
    pub passphrase_file: Option<PathBuf>,
    /// A containers-policy.json the base image and image SOURCEs must satisfy.
    #[arg(long, value_name = "FILE", env = "OPREG_SIGNATURE_POLICY")]
    pub signature_policy: Option<PathBuf>,
    #[command(flatten)]
    pub limits: super::image_args::LimitArgs,
    #[command(flatten)]
    pub image: ImageFlags,
    #[command(flatten)]
    pub src: SrcFlags,
    #[command(flatten)]
    pub dest: DestFlags,
}

// The image flags that apply to building and pushing (the source's and the base's pulls, the
// push); the platform is --platform above.
#[derive(clap::Args, Debug, Clone)]
#[command(next_help_heading = "Registries")]
pub struct ImageFlags {
    #[command(flatten)]
    pub registries: RegistryArgs,
    /// When pushing, blobs larger than this go in chunks of this many bytes (lower it for a
    /// registry or proxy that refuses large requests with 413).
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20, value_parser = clap::value_parser!(u64).range(1..))]
    pub chunk_size: u64,
}

pub fn run(a: Args) -> super::Ended {
    match a.command {
        ImageCommand::Build(b) => run_build(*b),
        ImageCommand::Push(p) => run_push(p),
        ImageCommand::GenerateKeyPair(g) => super::sign::run_generate(g),
        ImageCommand::Sign(s) => super::sign::run_sign(s),
        ImageCommand::Verify(v) => super::sign::run_verify(v),
    }
}

fn run_push(a: PushArgs) -> super::Ended {
    let key = match &a.sign_key {
        Some(k) => match super::sign::signing_key(k, a.passphrase_file.as_deref()) {
            Ok(k) => Some(k),
            Err(e) => return e.into(),
        },
        None => None,
    };
    let run = build::run::PushRun {
        source: &a.source,
        target: &a.target,
        dest: crate::image::ImageOptions {
            connection: a.image.registries.destination(&a.dest),
            ..Default::default()
        },
        chunk_size: a.image.chunk_size,
        sign_key: key.as_ref(),
    };
    let bar = super::progress::Drawer::copy(a.quiet, "pushing");
    let done = build::run::push(&run, &bar, &mut |e| report_build(e, a.quiet));
    drop(bar);
    match done {
        Ok(digest) => finish(&digest, a.digest_file.as_deref(), a.quiet),
        Err(e) => super::Ended::Failed(e),
    }
}

fn pushed(r: &crate::image::reference::Reference, p: &crate::image::push::Pushed) {
    output::status(format_args!(
        "pushed {r} {}: {} blobs uploaded ({} bytes), {} mounted, {} already there",
        p.digest, p.uploaded, p.uploaded_bytes, p.mounted, p.skipped
    ));
}

/// Writes `--digest-file` and prints the digest (unless `quiet`).
fn finish(digest: &str, digest_file: Option<&std::path::Path>, quiet: bool) -> super::Ended {
    if let Some(f) = digest_file {
        if let Err(e) = crate::image::push::write_digest_file(f, digest) {
            return Error::failed(format_args!("--digest-file {}: {e}", f.display())).into();
        }
    }
    if !quiet {
        if let Err(e) = output::out(&format!("{digest}\n")) {
            return Error::failed(format_args!("writing output: {e}")).into();
        }
    }
    super::Ended::Done
}

/// As every command fails, with a last line saying that no image was written.
fn fail(e: Error) -> super::Ended {
    if matches!(e, Error::Invalid { .. }) {
        super::report(&e);
        output::status("nothing was built");
        return super::Ended::Reported;
    }
    super::Ended::Failed(e)
}

fn run_build(a: BuildArgs) -> super::Ended {
    let parsed = (|| -> Result<_, Error> {
        let targets = a
            .tags
            .iter()
            .map(|t| Target::parse(t))
            .collect::<Result<Vec<_>, _>>()?;
        let platforms = a
            .platforms
            .iter()
            .map(|p| {
                crate::oci::manifest::parse_platform(p).map_err(|e| Error::Usage(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let labels = a
            .labels
            .iter()
            .map(|l| build::parse_label(l))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((targets, platforms, labels))
    })();
    let (targets, platforms, labels) = match parsed {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let key = match &a.sign_key {
        Some(k) => match super::sign::signing_key(k, a.passphrase_file.as_deref()) {
            Ok(k) => Some(k),
            Err(e) => return fail(e),
        },
        None => None,
    };
    let opts = BuildOptions {
        sources: a.sources.clone(),
        image: crate::image::ImageOptions {
            signature_policy: a.signature_policy.clone(),
            connection: a.image.registries.source(&a.src),
            max_manifest_size: a.limits.max_manifest_size,
            max_layer_size: a.limits.max_layer_size,
            ..Default::default()
        },
        base: a.base.clone(),
        platforms,
        labels,
        configs_path: a.configs_path.clone(),
        cache_path: a.cache_path.clone(),
        source_date_epoch: a.source_date_epoch,
        progress: super::progress::reporter(a.quiet),
    };
    let run = build::run::RunOptions {
        build: opts,
        targets,
        push: a.push,
        chunk_size: a.image.chunk_size,
        sign_key: key.as_ref(),
        digest_file: a.digest_file.clone(),
    };
    let quiet = a.quiet;
    let bar = super::progress::Drawer::copy(quiet || !a.push, "pushing");
    let dest = a.image.registries.destination(&a.dest);
    let done = build::run::run(&run, &dest, &bar, &mut |e| report_build(e, quiet));
    drop(bar);
    match done {
        // The digest file is the library's; stdout gets the digest.
        Ok(digest) => finish(&digest, None, quiet),
        Err(e) => fail(e),
    }
}

/// Prints a step of `image build` (nothing with `-q` but the skipped digest file's warning).
fn report_build(e: build::run::Event<'_>, quiet: bool) {
    use build::run::Event;
    match e {
        Event::DigestFileSkipped(f) => output::warning(format_args!(
            "--digest-file {}: not written, as nothing was written or pushed (pass --push to push)",
            f.display()
        )),
        _ if quiet => {}
        Event::Built { warnings, note } => {
            warnings.iter().for_each(output::diagnostic);
            if let Some(n) = note {
                output::warning(n);
            }
        }
        Event::Wrote { target, digest } => output::status(format_args!("wrote {target} {digest}")),
        Event::Pushed { to, pushed: p } => pushed(to, p),
        Event::Signed { to, signed } => super::sign::signed(&to.given, signed),
        Event::WouldPush {
            to,
            digest,
            blobs,
            bytes,
            platforms,
        } => output::status(format_args!(
            "would push {to} {digest} ({blobs} blobs, {bytes} bytes; platforms {}): pass --push to push",
            platforms.join(", ")
        )),
    }
}
