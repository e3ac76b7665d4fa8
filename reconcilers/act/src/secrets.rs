//! Resolving environment references, at container creation and nowhere else.
//!
//! Values live only in the returned `NAME=value` strings, which go straight
//! into the engine's create request. No error message carries a value: they
//! name the variable and the reference instead.

use std::path::Path;
use std::process::Command;

use jackin_api::instance::{EnvVar, MAX_VALUE_BYTES};

use jackin_engine::{Engine, EngineError};
use jackin_files::fsutil::read_untrusted;
use jackin_plan::redact::Redactor;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// `hostEnv` names a variable the resolving process does not have.
    /// `process` says which process that is: a controller started without
    /// the variable does not see it, whatever the operator's shell holds.
    #[error("{var}: host variable {source_var} is not set in the environment of {process}")]
    HostEnvUnset {
        var: String,
        source_var: String,
        process: String,
    },
    #[error("{var}: cannot read {path}: {error}")]
    File {
        var: String,
        path: String,
        error: std::io::Error,
    },
    #[error("{var}: `op read {reference}` failed: {detail}")]
    OnePassword {
        var: String,
        reference: String,
        detail: String,
    },
}

/// What this process is called in a [`SecretError::HostEnvUnset`], set
/// once at start (see [`set_process`]).
static PROCESS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names this process for the errors that say which environment a `hostEnv`
/// reference was looked up in: "the jackin controller", "this `jackin
/// apply`". The first call wins.
pub fn set_process(what: impl Into<String>) {
    let _ = PROCESS.set(what.into());
}

/// This process as [`SecretError::HostEnvUnset`] names it, with its pid.
fn this_process() -> String {
    let what = PROCESS.get().map_or("this jackin process", String::as_str);
    format!("{what} (pid {})", std::process::id())
}

/// `NAME=value` for every variable, references resolved now.
pub fn resolve(vars: &[EnvVar]) -> Result<Vec<String>, SecretError> {
    vars.iter()
        .map(|var| Ok(format!("{}={}", var.name, value_of(var)?)))
        .collect()
}

/// One variable's value, its reference resolved now.
pub fn value_of(var: &EnvVar) -> Result<String, SecretError> {
    if let Some(value) = &var.value {
        return Ok(value.clone());
    }
    let Some(from) = &var.value_from else {
        return Ok(String::new());
    };
    let name = || var.name.clone();
    if let Some(host) = &from.host_env {
        return std::env::var(host).map_err(|_| SecretError::HostEnvUnset {
            var: name(),
            source_var: host.clone(),
            process: this_process(),
        });
    }
    if let Some(path) = &from.file {
        let failed = |error| SecretError::File {
            var: name(),
            path: path.clone(),
            error,
        };
        let bytes = read_untrusted(Path::new(path), MAX_VALUE_BYTES as u64).map_err(failed)?;
        let text = String::from_utf8(bytes).map_err(|_| {
            failed(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it is not UTF-8 text",
            ))
        })?;
        let value = text.strip_suffix('\n').unwrap_or(&text);
        if value.contains('\0') {
            return Err(failed(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "it holds a NUL byte, which no environment variable can",
            )));
        }
        return Ok(value.to_owned());
    }
    if let Some(reference) = &from.one_password {
        let failed = |detail: String| SecretError::OnePassword {
            var: name(),
            reference: reference.clone(),
            detail,
        };
        let out = Command::new("op")
            .args(["read", "--no-newline", "--", reference])
            .output()
            .map_err(|e| failed(e.to_string()))?;
        if !out.status.success() {
            // op's stderr explains access problems; it never echoes a value.
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(failed(stderr.lines().next().unwrap_or("").to_owned()));
        }
        return String::from_utf8(out.stdout).map_err(|_| failed("the value is not UTF-8".into()));
    }
    Ok(String::new())
}

/// The secret values container `id` was handed (`names`, from
/// [`jackin_plan::redact::secret_names`]), read back from the engine's
/// record of its environment: what jackin keeps of the agent's output is
/// scrubbed with them. No engine call when `names` is empty.
pub async fn handed_over(
    engine: &Engine,
    id: &str,
    names: &std::collections::BTreeSet<String>,
) -> Result<Redactor, EngineError> {
    if names.is_empty() {
        return Ok(Redactor::default());
    }
    let env = engine
        .inspect_container(id)
        .await?
        .and_then(|c| c.config)
        .and_then(|c| c.env)
        .unwrap_or_default();
    Ok(Redactor::from_env(&env, names))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::EnvSource;

    #[test]
    fn file_references_are_read_and_trimmed_and_errors_hold_no_value() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "s3cr3t\n").unwrap();
        let var = |from: EnvSource| EnvVar {
            name: "TOKEN".into(),
            value: None,
            value_from: Some(from),
        };
        let resolved = resolve(&[
            EnvVar {
                name: "MODE".into(),
                value: Some("dev".into()),
                value_from: None,
            },
            var(EnvSource {
                file: Some(path.display().to_string()),
                ..Default::default()
            }),
        ])
        .unwrap();
        assert_eq!(resolved, ["MODE=dev", "TOKEN=s3cr3t"]);

        let err = resolve(&[var(EnvSource {
            host_env: Some("JACKIN_TEST_SURELY_UNSET".into()),
            ..Default::default()
        })])
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "TOKEN: host variable JACKIN_TEST_SURELY_UNSET is not set in the environment \
                 of this jackin process (pid {})",
                std::process::id()
            )
        );
    }
}
