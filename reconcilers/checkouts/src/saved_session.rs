//! A removed session's conversation, saved. Before jackin removes a unit
//! (a purge, whatever asked for it: the exit policy, "Exit and clean up",
//! the keep cap, `set-phase purged`, `prune`, `delete`), it saves what of
//! the agent's home holds its conversation (the entry's `stateEnv` path:
//! claude's `.claude/`, codex's `.codex/`, aider's history file, gemini's
//! `.gemini/`) into the unit's save under `$JACKIN_HOME/discarded/`, beside
//! any saved work and kept as long (see [`crate::discard`]). With it the
//! save keeps the instance's spec and its `status.conversation` (the id,
//! the history of starts), from which `jackin restore-discarded NAME
//! --session` makes the session again. A state path that holds nothing a
//! save would keep (no file, or only a login's: an agent that never
//! started), in a unit whose checkouts hold no unfinished work, makes no
//! save: clean means nothing would be lost.
//!
//! The files are taken as a checkout's are ([`crate::saved_files`]): no
//! link followed, a link saved as a link, no FIFO or device opened, the
//! sizes capped, what was left out listed. Never saved: the files that hold
//! a login (every credential file the pinned credential sets and the
//! agent's entry name, whether forwarded or written by the agent's own
//! login): a saved conversation holds no login, and a session made again
//! from it logs in as any new one does.

use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Conversation, Instance, InstanceSpec, Recipe};
use serde::{Deserialize, Serialize};

use crate::saved_files::{Collector, Origin, SavedFiles, StagingError};
use jackin_files::fsutil::{
    BeneathDir, ensure_private_dir, ensure_real_dir_below, remove_if_exists,
};
use jackin_files::layout::Layout;

/// The directory of a save that holds the conversation's files, as they
/// were in the agent's home (`conversation/.claude/…`).
pub const CONVERSATION_DIR: &str = "conversation";

/// What a save keeps of the session itself (`session` in its record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedSession {
    /// The instance's spec as it was: what a restore makes again.
    pub spec: InstanceSpec,
    /// The agent's conversation: its id, its history of starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// What of the agent's home was saved, relative to it (`.claude`);
    /// none when the agent keeps no state jackin knows of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The files saved under [`CONVERSATION_DIR`], and what was left out.
    #[serde(default)]
    pub files: SavedFiles,
}

impl SavedSession {
    /// What was saved, in one line of names and counts, for the event.
    pub fn summary(&self) -> String {
        let files = &self.files;
        let mut line = match &self.path {
            Some(path) => format!(
                "{path} ({} {}, {} bytes)",
                files.saved,
                if files.saved == 1 { "file" } else { "files" },
                files.bytes
            ),
            None => "the spec and the conversation's record".to_owned(),
        };
        if let Some(id) = self.conversation.as_ref().and_then(|c| c.id.as_deref()) {
            line.push_str(&format!(", conversation {id}"));
        }
        if files.skipped > 0 {
            line.push_str(&format!(
                "; left out: {} ({})",
                files.skipped,
                files.skipped_listed.join(", ")
            ));
        }
        line
    }
}

/// Why a conversation could not be saved: the unit must then stay.
#[derive(Debug, thiserror::Error)]
#[error(
    "the conversation in {home} could not be saved before the unit's removal ({cause}), so \
     nothing of the unit was removed: fix that and purge again"
)]
pub struct NotSaved {
    pub home: String,
    pub cause: String,
}

/// What of the agent's home holds its conversation, relative to the home,
/// by the pinned entry; none when it names no state path, or the whole home.
pub fn conversation_path(recipe: &Recipe) -> Option<String> {
    let state = recipe.agent.as_ref()?.spec.state_env.as_ref()?;
    let path = state.conversations_path();
    let path = path.trim_start_matches("./").trim_end_matches('/');
    (!path.is_empty() && path != ".").then(|| path.to_owned())
}

/// What a conversation's save leaves out, relative to the agent's home,
/// each with why: every credential file of the pinned sets and of the
/// agent's own entry, which a login inside the session writes too; and
/// every place of the operator's own setup (`operatorConfig`): it may hold
/// secrets, and it is copied in again at the next start. A path that is
/// both is told as a login.
fn left_out_files(recipe: &Recipe) -> Vec<(String, &'static str)> {
    const LOGIN: &str = "it holds a login";
    const SETUP: &str = "it is the operator's own agent setup, copied in again at each start";
    let pinned = recipe
        .credentials
        .iter()
        .flat_map(|c| c.sets.iter())
        .flat_map(|set| set.files.iter());
    let own = recipe
        .agent
        .iter()
        .filter_map(|a| a.spec.credentials.as_ref())
        .flat_map(|c| c.files.iter());
    let operator_config = recipe
        .agent
        .iter()
        .flat_map(|a| a.spec.operator_config.iter())
        .map(|entry| (entry.dst.as_str(), SETUP));
    let mut paths: Vec<(String, &'static str)> = pinned
        .chain(own)
        .map(|file| (file.dst.as_str(), LOGIN))
        .chain(operator_config)
        .map(|(dst, why)| (dst.trim_start_matches("./").to_owned(), why))
        .collect();
    // A login first, so that the one kept of a path named twice is it.
    paths.sort_by(|a, b| a.0.cmp(&b.0).then((a.1 != LOGIN).cmp(&(b.1 != LOGIN))));
    paths.dedup_by(|later, earlier| later.0 == earlier.0);
    paths
}

/// Saves the conversation of `obj`'s unit `container` into `save_dir` (the
/// unit's save, made if need be): its state path's files under
/// [`CONVERSATION_DIR`], replacing what an earlier attempt saved. Returns
/// the record's part; none for a unit whose pinned agent keeps no state
/// (or that never pinned one). None too, with nothing made, for a state
/// path that holds nothing a save would keep (no file, or only a login's:
/// an agent that never started) unless `keep_empty` says the save is kept
/// all the same.
pub fn save(
    layout: &Layout,
    container: &str,
    obj: &Instance,
    save_dir: &Path,
    keep_empty: impl FnOnce() -> bool,
) -> Result<Option<SavedSession>, NotSaved> {
    // A unit that never pinned an agent keeping state (the `shell` agent)
    // has no conversation to save.
    let Some((recipe, path)) = obj
        .recipe()
        .and_then(|recipe| Some((recipe, conversation_path(recipe)?)))
    else {
        return Ok(None);
    };
    let home = layout.unit_home_dir(container);
    let not_saved = |cause: String| NotSaved {
        home: home.display().to_string(),
        cause,
    };
    let mut session = SavedSession {
        spec: obj.spec.clone(),
        conversation: obj.status.as_ref().and_then(|s| s.conversation.clone()),
        path: Some(path.clone()),
        files: SavedFiles::default(),
    };
    ensure_private_dir(save_dir).map_err(|e| not_saved(format!("{}: {e}", save_dir.display())))?;
    let to = save_dir.join(CONVERSATION_DIR);
    remove_if_exists(&to).map_err(|e| not_saved(format!("{}: {e}", to.display())))?;
    let collected = match BeneathDir::open(&home) {
        Ok(tree) => Some(collect(&tree, recipe, &path, save_dir).map_err(not_saved)?),
        // A unit whose home never was made holds no conversation.
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(not_saved(e.to_string())),
    };
    if collected.as_ref().is_none_or(|(_, c)| c.holds_nothing()) && !keep_empty() {
        drop(collected);
        // What this attempt made goes; a directory that holds anything
        // else stays.
        return match std::fs::remove_dir(save_dir) {
            Err(e)
                if !matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty
                ) =>
            {
                Err(not_saved(format!("{}: {e}", save_dir.display())))
            }
            _ => Ok(None),
        };
    }
    if let Some((work, collector)) = collected {
        let staging = work.path().join(CONVERSATION_DIR);
        std::fs::rename(&staging, &to).map_err(|e| not_saved(format!("{}: {e}", to.display())))?;
        session.files = collector.finish();
    }
    Ok(Some(session))
}

/// Copies the files of the state `path` in the agent's home `tree`, but a
/// login's, into a work directory in `save_dir` (its [`CONVERSATION_DIR`]).
fn collect(
    tree: &BeneathDir,
    recipe: &Recipe,
    path: &str,
    save_dir: &Path,
) -> Result<(tempfile::TempDir, Collector), String> {
    let work = tempfile::Builder::new()
        .prefix(".work-")
        .tempdir_in(save_dir)
        .map_err(|e| format!("{}: {e}", save_dir.display()))?;
    let staging = work.path().join(CONVERSATION_DIR);
    ensure_private_dir(&staging).map_err(|e| format!("{}: {e}", staging.display()))?;
    let mut collector = Collector::leaving_out(left_out_files(recipe));
    collector
        .take(tree, &staging, path, Origin::Untracked)
        .map_err(|e: StagingError| e.to_string())?;
    Ok((work, collector))
}

/// Puts a save's conversation files into the home of a new unit (made if
/// need be), as they were: directories, files and links. The save is
/// jackin's own; the home is the new unit's, which nothing runs in yet.
/// Returns how many files and links were put back.
pub fn restore_into(save_dir: &Path, home: &Path) -> io::Result<usize> {
    let from = save_dir.join(CONVERSATION_DIR);
    ensure_private_dir(home)?;
    if std::fs::symlink_metadata(&from).is_err() {
        return Ok(0);
    }
    let mut count = 0;
    let mut pending: Vec<PathBuf> = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in std::fs::read_dir(from.join(&relative))? {
            let entry = entry?;
            let name = relative.join(entry.file_name());
            let source = from.join(&name);
            let kind = std::fs::symlink_metadata(&source)?.file_type();
            if kind.is_dir() {
                ensure_real_dir_below(home, &name)?;
                pending.push(name);
                continue;
            }
            if let Some(parent) = name.parent().filter(|p| !p.as_os_str().is_empty()) {
                ensure_real_dir_below(home, parent)?;
            }
            let target = home.join(&name);
            if kind.is_symlink() {
                std::os::unix::fs::symlink(std::fs::read_link(&source)?, &target)?;
            } else if kind.is_file() {
                let mode = std::fs::symlink_metadata(&source)?.permissions();
                let mut input = std::fs::File::open(&source)?;
                let mut output = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(&target)?;
                io::copy(&mut input, &mut output)?;
                output.set_permissions(mode)?;
            } else {
                continue;
            }
            count += 1;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::agent::Strategy;
    use jackin_api::instance::PinnedAgent;

    /// A save told `.claude/settings.json`, the operator's own setup, as "a
    /// login" (issue 57): each left-out path now says which it is.
    #[test]
    fn left_out_files_say_whether_a_login_or_the_operators_setup() {
        let claude = jackin_api::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "claude")
            .unwrap();
        let recipe = Recipe {
            agent: Some(PinnedAgent {
                name: "claude".into(),
                source: "builtin".into(),
                spec: claude.spec,
                strategy: Strategy::Id,
                version: None,
            }),
            ..Recipe::default()
        };
        let left_out = left_out_files(&recipe);
        let why = |path: &str| {
            left_out
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, why)| *why)
                .unwrap_or_else(|| panic!("{path} is not left out: {left_out:?}"))
        };
        assert!(why(".claude/settings.json").contains("operator's own agent setup"));
        assert_eq!(why(".claude/.credentials.json"), "it holds a login");
        let mut paths: Vec<_> = left_out.iter().map(|(p, _)| p).collect();
        paths.dedup();
        assert_eq!(paths.len(), left_out.len(), "each path once");
    }
}
