//! The passphrase of a cosign private key, in cosign's order: a passphrase file (its first
//! line), else `COSIGN_PASSWORD` (empty is allowed, as cosign allows it), else asked through
//! the caller's prompt (twice when confirming). The caller owns the terminal: the library
//! never reads one.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Why no passphrase was found.
#[derive(Debug, thiserror::Error)]
pub enum PassphraseError {
    /// The passphrase file could not be read.
    #[error("--passphrase-file {}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// No file, no `COSIGN_PASSWORD`, and no terminal to ask on: a usage error.
    #[error("no passphrase: set COSIGN_PASSWORD, pass --passphrase-file, or run on a terminal to be asked")]
    Nowhere,
    /// The prompt failed.
    #[error("cannot read the passphrase: {0}")]
    Prompt(std::io::Error),
    /// Asked twice, answered differently.
    #[error("the passphrases do not match")]
    Mismatch,
}

/// What asks the user: given a prompt, the answer; `None` when there is no one to ask (no
/// terminal).
pub type Prompt<'a> = dyn FnMut(&str) -> Option<std::io::Result<String>> + 'a;

/// The passphrase: `file`, else `COSIGN_PASSWORD`, else `prompt` (twice when `confirm`).
pub fn passphrase(
    file: Option<&Path>,
    confirm: bool,
    prompt: &mut Prompt<'_>,
) -> Result<Vec<u8>, PassphraseError> {
    choose(file, std::env::var_os("COSIGN_PASSWORD"), confirm, prompt)
}

/// [`passphrase`] with the environment's value given.
fn choose(
    file: Option<&Path>,
    env: Option<OsString>,
    confirm: bool,
    prompt: &mut Prompt<'_>,
) -> Result<Vec<u8>, PassphraseError> {
    if let Some(f) = file {
        let text = std::fs::read(f).map_err(|source| PassphraseError::File {
            path: f.to_path_buf(),
            source,
        })?;
        let line = text.split(|b| *b == b'\n').next().unwrap_or_default();
        return Ok(line.strip_suffix(b"\r").unwrap_or(line).to_vec());
    }
    if let Some(p) = env {
        return Ok(p.into_encoded_bytes());
    }
    let mut ask = |text: &str| match prompt(text) {
        None => Err(PassphraseError::Nowhere),
        Some(answer) => answer.map_err(PassphraseError::Prompt),
    };
    let first = ask("Enter password for private key: ")?;
    if confirm && ask("Enter password for private key again: ")? != first {
        return Err(PassphraseError::Mismatch);
    }
    Ok(first.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prompt that answers from a list, in order.
    fn answers(list: &[&str]) -> impl FnMut(&str) -> Option<std::io::Result<String>> {
        let mut left: Vec<String> = list.iter().rev().map(|s| s.to_string()).collect();
        move |_: &str| left.pop().map(Ok)
    }

    #[test]
    fn the_file_comes_first_then_the_environment_then_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("pass");
        std::fs::write(&f, "from-file\r\nsecond line\n").unwrap();
        let mut asked = 0;
        let mut prompt = |_: &str| {
            asked += 1;
            Some(Ok("from-prompt".to_string()))
        };
        let env = Some(OsString::from("from-env"));
        assert_eq!(
            choose(Some(&f), env.clone(), false, &mut prompt).unwrap(),
            b"from-file"
        );
        assert_eq!(choose(None, env, false, &mut prompt).unwrap(), b"from-env");
        // An empty COSIGN_PASSWORD is a passphrase, as cosign takes it.
        assert_eq!(
            choose(None, Some(OsString::new()), false, &mut prompt).unwrap(),
            b""
        );
        assert_eq!(
            choose(None, None, false, &mut prompt).unwrap(),
            b"from-prompt"
        );
        assert_eq!(
            asked, 1,
            "the prompt is asked only when nothing else gives one"
        );
    }

    #[test]
    fn confirming_asks_twice_and_refuses_a_mismatch() {
        let mut same = answers(&["a", "a"]);
        assert_eq!(choose(None, None, true, &mut same).unwrap(), b"a");
        let mut differ = answers(&["a", "b"]);
        let e = choose(None, None, true, &mut differ).unwrap_err();
        assert_eq!(e.to_string(), "the passphrases do not match");
    }

    #[test]
    fn no_terminal_and_an_unreadable_file_are_one_line_errors() {
        let mut nobody = |_: &str| None;
        let e = choose(None, None, false, &mut nobody).unwrap_err();
        assert!(matches!(e, PassphraseError::Nowhere), "{e}");
        let missing = Path::new("/nonexistent/pass");
        let e = choose(Some(missing), None, false, &mut nobody).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--passphrase-file /nonexistent/pass: "),
            "{e}"
        );
        let mut broken = |_: &str| Some(Err(std::io::Error::other("tty gone")));
        let e = choose(None, None, false, &mut broken).unwrap_err();
        assert_eq!(e.to_string(), "cannot read the passphrase: tty gone");
    }
}
