//! Building the images a recipe pins: a role's image from its repository at
//! the pinned commit (its Dockerfile's final base pinned to the image id the
//! engine holds), and the agent's image derived from it. What a recipe
//! wants and how two recipes differ is `jackin_plan::recipe`'s; this module
//! asks git and the engine, and every way that can fail is a [`RecipeError`].
//!
//! A first launch resolves the role's ref to a commit in the role source's
//! checkout in the `roles/` cache (cloned once, fetched at each build; when
//! the source cannot be reached, the checkout serves as it is), archives
//! that commit's tree as the build context, and records the image its
//! Dockerfile's final `FROM` names, with its id. A tier-3 rebuild
//! archives the pinned commit, never the ref's head, and rewrites the final
//! `FROM` to the recorded base id while that image is still there, so a moved
//! base tag does not change the session either.

use std::collections::HashMap;
use std::io::Read;

use jackin_api::instance::RoleSource;
use jackin_api::names::label;
use jackin_api::role::{self, ROLE_CONFIG_FILE, RoleConfig};
use jackin_checkouts::git::{GitError, RoleCheckout};
use jackin_engine::{Engine, EngineError};
use jackin_plan::recipe::{RoleWideningRefused, UnknownProvider};

#[derive(Debug, thiserror::Error)]
pub enum RecipeError {
    /// `buildable`: the instance names a role source, which jackin can
    /// build instead.
    #[error("image {image:?} is not present on the engine")]
    ImageNotFound { image: String, buildable: bool },
    #[error("{source_repo}: ref {git_ref:?} names no commit")]
    RefNotFound {
        source_repo: String,
        git_ref: String,
    },
    #[error(
        "{source_repo}: the pinned commit {commit} can no longer be found, so the session's image \
         cannot be rebuilt as it was"
    )]
    CommitUnavailable { source_repo: String, commit: String },
    #[error("the pinned image is gone and the recipe has no role commit to rebuild it from")]
    NothingToRebuild,
    #[error(transparent)]
    UnknownProvider(#[from] UnknownProvider),
    /// Boxed: it is the largest of the errors, and every step's result
    /// carries this type.
    #[error(transparent)]
    RoleWideningRefused(Box<RoleWideningRefused>),
    #[error("the role's settings are not valid: {0}")]
    RoleConfig(String),
    #[error(
        "{source_repo} has no {path} at {commit}: commit one there, or name the Dockerfile's \
         path in its jackin.role.yaml (`dockerfile:`)"
    )]
    NoDockerfile {
        source_repo: String,
        commit: String,
        path: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("preparing the build context: {0}")]
    Context(#[from] std::io::Error),
}

impl From<RoleWideningRefused> for RecipeError {
    fn from(refused: RoleWideningRefused) -> Self {
        Self::RoleWideningRefused(Box::new(refused))
    }
}

impl RecipeError {
    /// Whether trying again without a change elsewhere cannot help.
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::ImageNotFound { .. }
            | Self::RefNotFound { .. }
            | Self::CommitUnavailable { .. }
            | Self::NothingToRebuild
            | Self::UnknownProvider(_)
            | Self::RoleWideningRefused(_)
            | Self::RoleConfig(_)
            | Self::NoDockerfile { .. } => true,
            Self::Git(e) => e.is_permanent(),
            Self::Engine(e) => e.is_permanent(),
            Self::Context(_) => false,
        }
    }
}

/// An image jackin built from a role repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltImage {
    pub tag: String,
    pub id: String,
    pub commit: String,
    /// `reference@id` of the final stage's base, when it is a local image.
    pub base: Option<String>,
    /// The role's settings at the commit (its `jackin.role.yaml`).
    pub config: RoleConfig,
    /// Why the source could not be fetched, when the build used the
    /// `roles/` cache's checkout as it was.
    pub unreachable: Option<String>,
}

/// The name of a role source's checkout in the `roles/` cache: a digest of
/// its URL, so one source has one checkout whichever roles name it.
pub fn role_checkout_key(git: &str) -> String {
    jackin_plan::digest::sha256_hex(git.as_bytes(), 8)
}

/// The largest `jackin.role.yaml` read.
const MAX_ROLE_CONFIG_BYTES: usize = 64 * 1024;

/// The image of the final build stage's `FROM`, skipping flags and stage
/// aliases; `None` when the final stage builds on an earlier stage.
pub fn final_base(dockerfile: &str) -> Option<String> {
    let mut stages: Vec<String> = Vec::new();
    let mut base = None;
    for line in dockerfile.lines() {
        let mut words = line.split_whitespace();
        if !words.next().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            continue;
        }
        let rest: Vec<&str> = words.filter(|w| !w.starts_with("--")).collect();
        let image = rest.first()?.to_string();
        base = (!stages.contains(&image.to_lowercase())).then(|| image.clone());
        if let [_, kw, alias] = rest.as_slice()
            && kw.eq_ignore_ascii_case("AS")
        {
            stages.push(alias.to_lowercase());
        }
    }
    base
}

/// `dockerfile` with the final stage's base replaced by `image`, so a
/// rebuild lands on the recorded base even if its tag has moved since.
pub fn pin_final_base(dockerfile: &str, image: &str) -> String {
    let lines: Vec<&str> = dockerfile.lines().collect();
    let last_from = lines.iter().rposition(|l| {
        l.split_whitespace()
            .next()
            .is_some_and(|w| w.eq_ignore_ascii_case("FROM"))
    });
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        if Some(i) == last_from {
            let mut replaced = false;
            let words: Vec<String> = line
                .split_whitespace()
                .enumerate()
                .map(|(n, w)| {
                    if n > 0 && !replaced && !w.starts_with("--") {
                        replaced = true;
                        image.to_owned()
                    } else {
                        w.to_owned()
                    }
                })
                .collect();
            out.push_str(&words.join(" "));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

/// A tar archive with the file at `path` replaced by `contents`, or
/// added when it has none.
fn replace_in_tar(archive: &[u8], path: &str, contents: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut input = tar::Archive::new(archive);
    let mut output = tar::Builder::new(Vec::new());
    let mut found = false;
    for entry in input.entries()? {
        let mut entry = entry?;
        let mut header = entry.header().clone();
        if entry.path()?.to_str() == Some(path) {
            found = true;
            header.set_size(contents.len() as u64);
            header.set_cksum();
            output.append(&header, contents)?;
        } else {
            let mut data = Vec::new();
            entry.read_to_end(&mut data)?;
            output.append(&header, data.as_slice())?;
        }
    }
    if !found {
        let mut header = tar::Header::new_gnu();
        header.set_size(contents.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        output.append_data(&mut header, path, contents)?;
    }
    output.into_inner()
}

/// An image with the agent installed on top of an image that lacks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedImage {
    pub tag: String,
    pub id: String,
    /// Whether the engine had it already (same base, same block).
    pub cached: bool,
}

/// The role image `base` (an image id, running as `user`) with the agent
/// `agent`'s install block on top: the instructions run as root, then the
/// image's own user is restored, so the agent runs as the role intended.
/// Its tag is a hash of the base and the block, so a role image and block
/// are built once, whoever asks; `cached` says the engine had it.
#[allow(
    clippy::too_many_arguments,
    reason = "each is one fact of the build; a struct would only rename them"
)]
pub async fn derive_agent_image(
    engine: &Engine,
    home_id: &str,
    role: &str,
    agent: &str,
    base: &str,
    user: Option<&str>,
    install: &[String],
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<DerivedImage, RecipeError> {
    use jackin_plan::digest::sha256_hex;
    // By number: an image without a passwd file (a static one) has no
    // user named root.
    let mut dockerfile = format!("FROM {base}\nUSER 0\n");
    for line in install {
        dockerfile.push_str(line);
        dockerfile.push('\n');
    }
    dockerfile.push_str(&format!("USER {}\n", user.unwrap_or("0")));
    let hash = sha256_hex(dockerfile.as_bytes(), 6);
    let tag = format!("jackin/{role}-{agent}:{hash}");
    if let Some(id) = engine.image_id(&tag).await? {
        return Ok(DerivedImage {
            tag,
            id,
            cached: true,
        });
    }
    let mut context = tar::Builder::new(Vec::new());
    let mut header = tar::Header::new_gnu();
    header.set_size(dockerfile.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    context.append_data(&mut header, "Dockerfile", dockerfile.as_bytes())?;
    let context = context.into_inner()?;
    // Labelled as the role's image: a sweep removes it once no session
    // pins it, as it does the role's own.
    let labels = HashMap::from([
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), home_id.to_owned()),
        (label::ROLE.to_owned(), role.to_owned()),
    ]);
    let id = engine
        .build_image(context, &tag, &labels, |line| progress(line))
        .await?;
    Ok(DerivedImage {
        tag,
        id,
        cached: false,
    })
}

/// What a build reads of the role's checkout, at the commit it pins.
struct RoleTree {
    commit: String,
    dockerfile: String,
    config: RoleConfig,
    context: Vec<u8>,
    /// Why the source could not be fetched, when the cached checkout had
    /// what the build needed all the same.
    unreachable: Option<String>,
}

/// Reads the role at the commit to build, in its checkout at `dir` (the
/// `roles/` cache): a first launch fetches and resolves `source.ref`; a
/// rebuild fetches only when the pinned commit is not there yet. When the
/// source cannot be read, the checkout's own refs and commits serve.
fn read_role(
    dir: &std::path::Path,
    source: &RoleSource,
    pinned: Option<&str>,
) -> Result<RoleTree, RecipeError> {
    let repo = &source.git;
    let checkout = RoleCheckout::open(dir, repo)?;
    let present = |c: &str| checkout.resolve(Some(c)).map(|r| r.as_deref() == Some(c));
    // Fetched even when just cloned: a clone makes a branch of the source's
    // HEAD alone, and the others are named as the source names them only
    // once fetched.
    let fetched = match pinned {
        Some(commit) if !checkout.cloned && present(commit)? => Ok(()),
        _ => checkout.fetch(source.git_ref.is_none()),
    };
    let commit =
        match pinned {
            Some(commit) => checkout
                .resolve(Some(commit))?
                .filter(|c| c == commit)
                .ok_or_else(|| RecipeError::CommitUnavailable {
                    source_repo: repo.clone(),
                    commit: commit.to_owned(),
                }),
            None => checkout.resolve(source.git_ref.as_deref())?.ok_or_else(|| {
                RecipeError::RefNotFound {
                    source_repo: repo.clone(),
                    git_ref: source.git_ref.clone().unwrap_or_else(|| "HEAD".into()),
                }
            }),
        };
    // The cache lacks what the build needs: the source's own error says why.
    let (commit, unreachable) = match (commit, fetched) {
        (Ok(commit), fetched) => (commit, fetched.err().map(|e| e.to_string())),
        (Err(_), Err(e)) => return Err(e.into()),
        (Err(e), Ok(())) => return Err(e),
    };
    checkout.check_out(&commit)?;
    let config = match checkout.show(&commit, ROLE_CONFIG_FILE) {
        Ok(text) if text.len() > MAX_ROLE_CONFIG_BYTES => {
            return Err(RecipeError::RoleConfig(format!(
                "{ROLE_CONFIG_FILE} is larger than {MAX_ROLE_CONFIG_BYTES} bytes"
            )));
        }
        Ok(text) => role::parse(
            &format!("{repo} at {commit}: {ROLE_CONFIG_FILE}"),
            &String::from_utf8_lossy(&text),
        )
        .map_err(RecipeError::RoleConfig)?,
        // A role without settings is the common case.
        Err(GitError::Failed { stderr, .. })
            if stderr.contains("does not exist")
                || stderr.contains("exists on disk, but not in") =>
        {
            RoleConfig::default()
        }
        Err(e) => return Err(e.into()),
    };
    let path = config.dockerfile();
    let dockerfile = checkout
        .show(&commit, path)
        .map_err(|_| RecipeError::NoDockerfile {
            source_repo: repo.clone(),
            commit: commit.clone(),
            path: path.to_owned(),
        })?;
    let mut context = checkout.archive(&commit)?;
    // The engine builds the context's `Dockerfile`: the one the manifest
    // names takes its place.
    if path != role::DEFAULT_DOCKERFILE {
        context = replace_in_tar(&context, role::DEFAULT_DOCKERFILE, &dockerfile)?;
    }
    let dockerfile = String::from_utf8_lossy(&dockerfile).into_owned();
    Ok(RoleTree {
        commit,
        dockerfile,
        config,
        context,
        unreachable,
    })
}

/// Builds the role's image from its checkout in the `roles/` cache (at
/// `roles`, the cache's directory of this source). A first launch resolves
/// `source.ref` (the repository's HEAD when unset); a tier-3 rebuild passes
/// the pinned commit and base, which are used as they are, never re-resolved.
#[allow(
    clippy::too_many_arguments,
    reason = "each is one fact of the build; a struct would only rename them"
)]
pub async fn build_role(
    engine: &Engine,
    home_id: &str,
    checkout_dir: &std::path::Path,
    role: &str,
    source: &RoleSource,
    pinned: Option<(&str, Option<&str>)>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<BuiltImage, RecipeError> {
    let tree = {
        let (dir, source) = (checkout_dir.to_owned(), source.clone());
        let commit = pinned.map(|(c, _)| c.to_owned());
        jackin_files::offload::blocking(move || read_role(&dir, &source, commit.as_deref())).await?
    };
    let RoleTree {
        commit,
        dockerfile,
        config,
        mut context,
        unreachable,
    } = tree;

    let recorded_base = pinned.and_then(|(_, base)| base);
    let base_ref = final_base(&dockerfile);
    if let Some((_, id)) = recorded_base.and_then(|b| b.rsplit_once('@'))
        && engine.image_id(id).await?.is_some()
    {
        let pinned_dockerfile = pin_final_base(&dockerfile, id);
        context = replace_in_tar(&context, "Dockerfile", pinned_dockerfile.as_bytes())?;
    }

    let tag = format!("jackin/{role}:{}", &commit[..12.min(commit.len())]);
    let labels = HashMap::from([
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), home_id.to_owned()),
        (label::ROLE.to_owned(), role.to_owned()),
        (label::ROLE_COMMIT.to_owned(), commit.clone()),
    ]);
    let id = engine
        .build_image(context, &tag, &labels, |line| progress(line))
        .await?;
    let base = match recorded_base {
        Some(base) => Some(base.to_owned()),
        None => match &base_ref {
            Some(r) if r != "scratch" => engine.image_id(r).await?.map(|id| format!("{r}@{id}")),
            _ => None,
        },
    };
    Ok(BuiltImage {
        tag,
        id,
        commit,
        base,
        config,
        unreachable,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_base_names_the_last_stage_image() {
        assert_eq!(
            final_base("FROM busybox:1\nRUN x\n"),
            Some("busybox:1".into())
        );
        assert_eq!(
            final_base("from --platform=linux/amd64 alpine AS build\nFROM debian:12\n"),
            Some("debian:12".into())
        );
        // The final stage builds on an earlier stage: no external base.
        assert_eq!(final_base("FROM alpine AS build\nFROM build\n"), None);
        assert_eq!(final_base("RUN x\n"), None);
    }

    #[test]
    fn pinning_the_base_rewrites_only_the_final_from() {
        let text = "FROM a AS build\nRUN x\nFROM --platform=linux/amd64 b:1 AS final\nCMD y\n";
        assert_eq!(
            pin_final_base(text, "sha256:abc"),
            "FROM a AS build\nRUN x\nFROM --platform=linux/amd64 sha256:abc AS final\nCMD y\n"
        );
    }

    /// The manifest's Dockerfile becomes the context's when the
    /// repository has none at its root.
    #[test]
    fn a_missing_tar_entry_is_added() {
        let archive = tar::Builder::new(Vec::new()).into_inner().unwrap();
        let added = replace_in_tar(&archive, "Dockerfile", b"FROM b\n").unwrap();
        let mut entries = tar::Archive::new(added.as_slice());
        let mut entry = entries.entries().unwrap().next().unwrap().unwrap();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        assert_eq!(
            (entry.path().unwrap().to_str(), text.as_str()),
            (Some("Dockerfile"), "FROM b\n")
        );
    }

    #[test]
    fn tar_entries_are_replaced() {
        let mut builder = tar::Builder::new(Vec::new());
        for (name, data) in [("Dockerfile", "FROM a\n"), ("file", "x")] {
            let mut header = tar::Header::new_gnu();
            header.set_size(data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            builder
                .append_data(&mut header, name, data.as_bytes())
                .unwrap();
        }
        let archive = builder.into_inner().unwrap();
        let replaced = replace_in_tar(&archive, "Dockerfile", b"FROM b\n").unwrap();
        let mut files = Vec::new();
        for entry in tar::Archive::new(replaced.as_slice()).entries().unwrap() {
            let mut entry = entry.unwrap();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            files.push((entry.path().unwrap().display().to_string(), text));
        }
        assert_eq!(
            files,
            [
                ("Dockerfile".to_owned(), "FROM b\n".to_owned()),
                ("file".to_owned(), "x".to_owned())
            ]
        );
    }

    #[test]
    fn an_unknown_provider_is_permanent() {
        let unknown = UnknownProvider {
            agent: "claude".into(),
            provider: "nope".into(),
            known: "anthropic".into(),
        };
        assert!(RecipeError::from(unknown).is_permanent());
    }

    /// A first build of a role without a ref builds the source's HEAD, and
    /// one at another branch that branch: both from a fresh clone.
    #[test]
    fn a_fresh_checkout_resolves_head_and_every_branch() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(&source)
                .args(["-c", "user.email=t@jackin.dev", "-c", "user.name=t"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "{out:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        std::fs::create_dir(&source).unwrap();
        git(&["init", "--quiet", "--initial-branch=main"]);
        std::fs::write(source.join("Dockerfile"), "FROM a\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "--quiet", "-m", "a"]);
        let head = git(&["rev-parse", "HEAD"]);
        git(&["checkout", "--quiet", "-b", "feature"]);
        std::fs::write(source.join("Dockerfile"), "FROM b\n").unwrap();
        git(&["commit", "--quiet", "-am", "b"]);
        let feature = git(&["rev-parse", "HEAD"]);
        git(&["checkout", "--quiet", "main"]);
        for (n, git_ref, want) in [(1, None, &head), (2, Some("feature"), &feature)] {
            let role = RoleSource {
                git: source.display().to_string(),
                git_ref: git_ref.map(str::to_owned),
            };
            let tree = read_role(&dir.path().join(format!("roles/{n}")), &role, None).unwrap();
            assert_eq!((&tree.commit, tree.unreachable), (want, None));
        }
    }
}
