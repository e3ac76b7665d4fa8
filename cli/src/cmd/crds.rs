//! `jackin crds`: the generated CustomResourceDefinitions.

use std::io::Write;

use anyhow::{Context, Result};

use crate::output;

pub fn run(out: Option<&std::path::Path>) -> Result<()> {
    let mut stdout = String::new();
    for (file, crd) in jackin_api::crd::all() {
        let text = render_crd(&crd)?;
        match out {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let path = dir.join(file);
                std::fs::write(&path, text.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            None => {
                if !stdout.is_empty() {
                    stdout.push_str("---\n");
                }
                stdout.push_str(&text);
            }
        }
    }
    std::io::stdout().write_all(stdout.as_bytes())?;
    Ok(())
}

/// The committed form of a CRD; `crds_match_the_types` compares against it.
pub fn render_crd(crd: &serde_json::Value) -> Result<String> {
    Ok(format!(
        "# Generated from the Rust types by `jackin crds --out crds`; do not edit.\n{}",
        output::yaml_stream(std::slice::from_ref(crd))?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    use crate::args::Cli;

    /// The committed CRDs must be exactly what the types generate.
    #[test]
    fn crds_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
        for (file, crd) in jackin_api::crd::all() {
            let committed = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("crds/{file}: {e}; run `jackin crds --out crds`"));
            assert!(
                committed == render_crd(&crd).unwrap(),
                "crds/{file} is stale: run `cargo run -p jackin-cli -- crds --out crds`"
            );
        }
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
