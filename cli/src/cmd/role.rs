//! `jackin role validate DIR` and `jackin role init DIR`: a role
//! repository's manifest and Dockerfile checked, or a starter role written.
//! Both work on the directory alone: no engine, no home.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use jackin_api::role::{self, ROLE_CONFIG_FILE};
use jackin_files::fsutil;

use crate::args::RoleCommand;

/// The most read of a manifest or a Dockerfile: far above an honest one.
const MAX_FILE_BYTES: u64 = 1 << 20;

pub fn run(command: RoleCommand) -> Result<()> {
    match command {
        RoleCommand::Validate { dir } => validate(&dir),
        RoleCommand::Init { dir } => init(&dir),
    }
}

/// Reads `path` as text; `None` when there is no such file.
fn read(path: &Path) -> Result<Option<String>> {
    match fsutil::read_regular(path, MAX_FILE_BYTES) {
        Ok(bytes) => {
            Ok(Some(String::from_utf8(bytes).with_context(|| {
                format!("{}: not UTF-8 text", path.display())
            })?))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

fn validate(dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        bail!(
            "{} is not a directory: name a role repository's work tree",
            dir.display()
        );
    }
    let manifest_path = dir.join(ROLE_CONFIG_FILE);
    let (config, mut errors) = match read(&manifest_path)? {
        Some(text) => match role::parse_located(&manifest_path.display().to_string(), &text) {
            Ok(config) => (Some(config), Vec::new()),
            Err(errors) => (None, errors.iter().map(ToString::to_string).collect()),
        },
        None => (Some(role::RoleConfig::default()), Vec::new()),
    };
    // A manifest that does not read names no Dockerfile to check.
    if let Some(config) = &config {
        let path = dir.join(config.dockerfile());
        match read(&path)? {
            Some(text) => errors.extend(
                role::check_dockerfile(&path.display().to_string(), &text)
                    .iter()
                    .map(ToString::to_string),
            ),
            None => errors.push(format!(
                "{}: no such file: write the role's Dockerfile there, or name its path in {} \
                 (`dockerfile:`)",
                path.display(),
                ROLE_CONFIG_FILE
            )),
        }
    }
    if !errors.is_empty() {
        bail!("{}", errors.join("\n"));
    }
    let config = config.expect("no errors: the manifest read");
    let agents = match config.agents.is_empty() {
        true => "any".to_owned(),
        false => config.agents.join(", "),
    };
    println!(
        "{}: valid ({}; Dockerfile {}; agents: {agents}; {} env variable(s))",
        dir.display(),
        match manifest_path.exists() {
            true => ROLE_CONFIG_FILE,
            false => "no manifest, the defaults apply",
        },
        config.dockerfile(),
        config.env.len()
    );
    Ok(())
}

/// The starter role's Dockerfile: the vendors' own way to install the
/// agents, as the README's first role has it.
const STARTER_DOCKERFILE: &str = "\
# The role's image: the tools its agents work with. jackin installs an
# agent the image lacks from the agent's entry, but a role that installs
# its agents itself starts faster and pins their versions.
FROM node:22-bookworm-slim
RUN apt-get update \\
 && apt-get install -y --no-install-recommends git ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
RUN npm install -g @anthropic-ai/claude-code @openai/codex
";

const STARTER_MANIFEST: &str = "\
# This role's manifest (see the README's \"The role manifest\").
dockerfile: Dockerfile
agents: [claude, codex]
env: []
# env:
#   - name: JIRA_URL
#     description: the tracker the agent files issues in
#     prompt: true
";

fn init(dir: &Path) -> Result<()> {
    let files = [
        ("Dockerfile", STARTER_DOCKERFILE),
        (ROLE_CONFIG_FILE, STARTER_MANIFEST),
    ];
    for (name, _) in files {
        let path = dir.join(name);
        if path.symlink_metadata().is_ok() {
            bail!(
                "{} exists: `role init` writes only where there is no role yet; pick another \
                 directory, or move it aside",
                path.display()
            );
        }
    }
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, text) in files {
        let path = dir.join(name);
        // Made new, never written through what appeared meanwhile.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("writing {}", path.display()))?;
        file.write_all(text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "wrote {0}/Dockerfile and {0}/{ROLE_CONFIG_FILE}; check them with `jackin role \
         validate {0}`, commit them (`git init`, `git add`, `git commit`), and name the \
         repository in a workspace's spec.roles ({{name: ROLE, source: {{git: PATH}}}})",
        dir.display()
    );
    Ok(())
}
