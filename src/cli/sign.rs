//! `opreg image generate-key-pair`, `image sign` and `image verify`, and the passphrase and
//! `--sign-key` handling `image build` and `image push` share: argument parsing and printing
//! only; the work is [`crate::sign::keys`]' and [`crate::image::signature`]'s.

use super::connection_args::RegistryArgs;
use super::output;
use crate::error::Error;
use crate::image::signature;
use crate::sign::keys;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(clap::Args, Debug)]
pub struct GenerateArgs {
    /// Write PREFIX.key (encrypted, mode 0600) and PREFIX.pub.
    #[arg(long, value_name = "PREFIX", default_value = "cosign")]
    pub output_key_prefix: PathBuf,
    /// Read the passphrase from this file (its first line) [default: $COSIGN_PASSWORD, else a
    /// prompt on the terminal].
    #[arg(long, value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
pub struct SignArgs {
    /// The image to sign: registry/repository[:tag|@digest] (its digest now is signed).
    #[arg(value_name = "REF")]
    pub reference: String,
    /// cosign's encrypted private key (`cosign generate-key-pair`'s cosign.key).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Read the passphrase from this file [default: $COSIGN_PASSWORD, else a prompt].
    #[arg(long, value_name = "FILE")]
    pub passphrase_file: Option<PathBuf>,
    #[command(flatten)]
    pub image: RegistryArgs,
}

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// The image to verify: registry/repository[:tag|@digest].
    #[arg(value_name = "REF")]
    pub reference: String,
    /// The public key (PEM `PUBLIC KEY`, cosign.pub).
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Accept a signature that names REPOSITORY, not REF's own repository: a mirrored image
    /// keeps the signature made for its source, which names the source's repository (for
    /// example `--signed-identity quay.io/org/app` for `mirror.local:5000/org/app:v1`).
    #[arg(long, value_name = "REPOSITORY")]
    pub signed_identity: Option<String>,
    #[command(flatten)]
    pub image: RegistryArgs,
}

/// The passphrase ([`crate::sign::passphrase`]'s order), asked on the terminal when it comes
/// to that (twice when `confirm`).
pub fn passphrase(file: Option<&Path>, confirm: bool) -> Result<Vec<u8>, Error> {
    use crate::sign::passphrase::PassphraseError;
    let mut terminal = |prompt: &str| {
        std::io::stdin()
            .is_terminal()
            .then(|| rpassword::prompt_password(prompt))
    };
    crate::sign::passphrase::passphrase(file, confirm, &mut terminal).map_err(|e| match e {
        PassphraseError::Nowhere => Error::Usage(e.to_string()),
        e => Error::failed(e),
    })
}

/// Reads and decrypts `--sign-key` (before anything is pushed, so a wrong passphrase pushes
/// nothing).
pub fn signing_key(key: &Path, passphrase_file: Option<&Path>) -> Result<keys::SigningKey, Error> {
    let pass = passphrase(passphrase_file, false)?;
    keys::read_private_key_file(key, &pass).map_err(Error::failed)
}

pub fn run_generate(a: GenerateArgs) -> super::Ended {
    let done = passphrase(a.passphrase_file.as_deref(), true)
        .and_then(|p| keys::generate_key_pair(&a.output_key_prefix, &p).map_err(Error::failed));
    match done {
        Ok((private, public)) => {
            output::status(format_args!(
                "Private key written to {}\nPublic key written to {}",
                private.display(),
                public.display()
            ));
            super::Ended::Done
        }
        Err(e) => e.into(),
    }
}

pub fn run_sign(a: SignArgs) -> super::Ended {
    let done = (|| {
        let r =
            signature::registry_reference(&a.reference).map_err(|e| Error::Usage(e.to_string()))?;
        let key = signing_key(&a.key, a.passphrase_file.as_deref())?;
        let limit = crate::image::DEFAULT_MAX_MANIFEST_SIZE;
        signature::sign(&r, &key, &a.image.connection(), limit).map_err(|e| {
            Error::failed(format!(
                "signing {}: {}",
                a.reference,
                crate::text::one_line(&e)
            ))
        })
    })();
    match done {
        Ok(s) => {
            signed(&a.reference, &s);
            super::Ended::Done
        }
        Err(e) => e.into(),
    }
}

/// The line `image sign`, `image push --sign-key` and `image build --sign-key` print.
pub fn signed(reference: &str, s: &signature::Signed) {
    output::status(format_args!(
        "signed {reference} {} ({}; {} signature(s) at {})",
        s.digest,
        if s.added {
            "signature added"
        } else {
            "this signature was there already"
        },
        s.signatures,
        s.tag
    ));
}

pub fn run_verify(a: VerifyArgs) -> super::Ended {
    let done = (|| {
        let r =
            signature::registry_reference(&a.reference).map_err(|e| Error::Usage(e.to_string()))?;
        let key = keys::read_public_key_file(&a.key).map_err(Error::failed)?;
        let limit = crate::image::DEFAULT_MAX_MANIFEST_SIZE;
        signature::verify(
            &r,
            &[key],
            a.signed_identity.as_deref(),
            &a.image.connection(),
            limit,
        )
        .map_err(|e| Error::failed(format!("{}: {}", a.reference, crate::text::one_line(&e))))
    })();
    match done {
        Ok(v) => {
            output::status(format_args!(
                "verified {} {}: signed by {} ({} signature(s) read)",
                a.reference,
                v.digest,
                a.key.display(),
                v.signatures
            ));
            super::Ended::Done
        }
        Err(e) => e.into(),
    }
}
