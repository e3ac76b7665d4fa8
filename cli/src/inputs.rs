//! The manifests a command reads (`apply -f`, `diff -f`, `delete -f`, `-f`
//! wherever targets are selected): files, directories, or `-` for stdin.

use std::path::PathBuf;

use anyhow::{Result, bail};
use jackin_controller::source::{self, Input};

/// Reads the inputs: files, directories (every `*.yaml`/`*.yml` below
/// them), or `-` for stdin.
pub fn read_inputs(paths: &[PathBuf]) -> Result<Vec<Input>> {
    if paths.is_empty() {
        bail!("no files given\nhint: jackin apply -f FILE_OR_DIR (`-` reads stdin)");
    }
    let mut inputs = Vec::new();
    for path in paths {
        if path.as_os_str() == "-" {
            inputs.push(source::read_stream("<stdin>", std::io::stdin().lock())?);
        } else {
            inputs.extend(source::read(std::slice::from_ref(path))?);
        }
    }
    Ok(inputs)
}
