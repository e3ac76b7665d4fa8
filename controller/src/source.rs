//! Sources: the files an apply reads, what applying them would change, and
//! the objects a source owns.
//!
//! An apply with `--prune` (and every `controller --sync DIR`) applies from a
//! *source*: the set of paths given, identified by a short hash of their
//! canonical form. Each object it applies carries the label
//! [`label::SOURCE`] with that id, as kubectl's applysets do; an object of
//! the source's that is no longer in its files is pruned: an instance is set
//! to `Purged` (the loop purges it, and the discard gate still holds), a
//! workspace or agent is deleted. An object applied by hand, or from another
//! source, does not carry this source's label and is never pruned. A plain
//! apply (no `--prune`) of the source's own files keeps the label on what
//! it owns ([`Store::keep_owners`]); applying an object by hand from any
//! other file takes its labels from that file, which ends its ownership.
//! No file may set the label itself (it is reserved, see
//! [`jackin_api::names::reserved_label`]), and `get -o yaml` does not print
//! it: `get`'s output applied by hand is the operator's own. An apply
//! killed mid-prune is finished by the same apply again: the source's
//! instances already `Purged` and still there
//! ([`Store::still_pruning`]) are converged with the rest.
//!
//! `controller --sync` applies again only the objects whose document
//! changed since the source last applied them (a digest each, in the
//! source's record): a commit that changes one file does not undo what the
//! operator changed by hand in the objects of the others.
//!
//! Every file of a source is a regular file of at most
//! [`MAX_MANIFEST_BYTES`], and a link is followed only when it leads to a
//! file inside the source directory (for a file named on its own, the
//! directory it is in): a policy repository cannot make jackin read, and
//! print in an error, a file from elsewhere on the host. `apply -f -`
//! reads its standard input under the same cap ([`read_stream`]).
//!
//! What each source last did is kept in `sources/<id>.json` for `jackin get
//! sources`: the revision and time of the last good apply, how many objects
//! it holds, and the last error with its place.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use jackin_api::agent::AgentSpec;
use jackin_api::manifest::Parsed;
use jackin_api::names::label;
use jackin_api::redact::json_error;
use jackin_api::{Agent, Instance, Object, ObjectMeta, Workspace, manifest};
use jackin_checkouts::git;
use jackin_files::fsutil::{ensure_private_dir, read_regular, read_untrusted, write_atomic};
use jackin_files::layout::Layout;
use jackin_files::layout::cap;
use jackin_plan::digest::{hex, sha256_hex};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::index::{Index, IndexRow, document_digest, document_key, file_stamp};
use crate::objects::FileObject;
use crate::store::{ApplyOutcome, Store, StoreError};
use crate::unit_object::read_object;

/// One input text and the name errors give it (a path, or `<stdin>`).
#[derive(Debug, Clone)]
pub struct Input {
    pub name: String,
    pub text: String,
}

/// Problems with the input, each worded for the operator (`file:line:col:
/// field: …`); when there is any, nothing is applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub Vec<String>);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

impl std::error::Error for Invalid {}

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: no *.yaml or *.yml files here")]
    Empty(PathBuf),
    #[error(
        "{path}: it is a link to {}, outside the source directory {}: jackin follows a \
         link in a source only within it; put the file itself here",
        target.display(), root.display()
    )]
    LinksOut {
        path: PathBuf,
        target: PathBuf,
        root: PathBuf,
    },
    #[error(transparent)]
    Invalid(#[from] Invalid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SourceError + '_ {
    move |source| SourceError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The most jackin reads of one manifest file: `get -o yaml` prints 1 to
/// 3 KB an instance (status included), so a listing of 500 saved to a file
/// is under 2 MB, and a hand-written policy file is far smaller.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The manifest files a path stands for: a file itself, or every `*.yaml`
/// and `*.yml` file below a directory, in path order. Hidden entries (`.git`)
/// and symbolic links to directories are skipped; a link to a file is kept
/// only when it leads inside the directory (else an error). Whether each is
/// a regular file is for the reading to say.
pub fn files_under(path: &Path) -> Result<Vec<PathBuf>, SourceError> {
    if !path.is_dir() {
        let parent = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let root = parent.canonicalize().map_err(io(parent))?;
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink());
        if is_link {
            inside(path, &root)?;
        }
        return Ok(vec![path.to_owned()]);
    }
    let root = path.canonicalize().map_err(io(path))?;
    let mut found = Vec::new();
    let mut dirs = vec![path.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io(&dir))? {
            let entry = entry.map_err(io(&dir))?;
            let file = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(io(&file))?;
            let is_yaml = file
                .extension()
                .is_some_and(|ext| ext == "yaml" || ext == "yml");
            if kind.is_dir() {
                dirs.push(file);
            } else if is_yaml && kind.is_symlink() {
                if !inside(&file, &root)?.is_dir() {
                    found.push(file);
                }
            } else if is_yaml {
                found.push(file);
            }
        }
    }
    if found.is_empty() {
        return Err(SourceError::Empty(path.to_owned()));
    }
    found.sort();
    Ok(found)
}

/// Where the link `file` leads, when that is inside `root` (canonical).
fn inside(file: &Path, root: &Path) -> Result<PathBuf, SourceError> {
    let target = file.canonicalize().map_err(io(file))?;
    if target.starts_with(root) {
        Ok(target)
    } else {
        Err(SourceError::LinksOut {
            path: file.to_owned(),
            target,
            root: root.to_owned(),
        })
    }
}

/// Reads every manifest file of `paths`: regular files (a FIFO or device
/// is refused, not waited on) of at most [`MAX_MANIFEST_BYTES`].
pub fn read(paths: &[PathBuf]) -> Result<Vec<Input>, SourceError> {
    let mut inputs = Vec::new();
    for path in paths {
        for file in files_under(path)? {
            let bytes = read_regular(&file, MAX_MANIFEST_BYTES).map_err(io(&file))?;
            inputs.push(as_text(&file, bytes)?);
        }
    }
    Ok(inputs)
}

/// Reads one manifest from a stream (`-`: stdin), capped as a file is: a
/// stream that goes on past [`MAX_MANIFEST_BYTES`] is refused there, the
/// rest never read (nor held in memory).
pub fn read_stream(name: &str, stream: impl std::io::Read) -> Result<Input, SourceError> {
    let path = PathBuf::from(name);
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut stream.take(MAX_MANIFEST_BYTES + 1), &mut bytes)
        .map_err(io(&path))?;
    if bytes.len() as u64 > MAX_MANIFEST_BYTES {
        return Err(SourceError::Io {
            path,
            source: std::io::Error::new(
                ErrorKind::InvalidData,
                format!(
                    "it is larger than {MAX_MANIFEST_BYTES} bytes, more than jackin reads of one \
                     manifest: split it into files of a directory and `jackin apply -f DIR`"
                ),
            ),
        });
    }
    as_text(&path, bytes)
}

/// A manifest read whole, named by where it was read from.
fn as_text(path: &Path, bytes: Vec<u8>) -> Result<Input, SourceError> {
    let text = String::from_utf8(bytes).map_err(|_| SourceError::Io {
        path: path.to_owned(),
        source: std::io::Error::new(ErrorKind::InvalidData, "it is not UTF-8 text"),
    })?;
    Ok(Input {
        name: path.display().to_string(),
        text,
    })
}

/// Parses and validates every input; any error anywhere fails the whole
/// load, reporting all errors at once.
pub fn parse(inputs: &[Input]) -> Result<Vec<Object>, Invalid> {
    Ok(parse_each(inputs)?
        .into_iter()
        .map(|(_, obj)| obj)
        .collect())
}

/// As [`parse`], each object with the input it was read from.
pub fn parse_each(inputs: &[Input]) -> Result<Vec<(&Input, Object)>, Invalid> {
    Ok(parse_unless_applied(inputs, None)?.objects)
}

/// An instance's document that the last apply wrote its object from, byte
/// for byte, while the object file is as that apply left it (see
/// [`crate::index::AppliedDocument`]): applying it again changes nothing,
/// so it is not read again. What the index row says of it stands in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedBefore {
    pub name: String,
    pub agent: String,
    pub workspace: Option<String>,
}

/// What a plain apply read of its inputs.
#[derive(Debug)]
pub struct Read<'a> {
    /// The objects read and checked, each with its input.
    pub objects: Vec<(&'a Input, Object)>,
    /// Of each instance read from a document of its own, the
    /// [`crate::index::document_digest`] of that document: the apply
    /// records it.
    pub documents: HashMap<String, String>,
    /// The documents not read again.
    pub unchanged: Vec<AppliedBefore>,
}

/// Parses and validates every input as [`parse_each`] does, but with the
/// index of `layout`, a document that the last apply of its instance wrote
/// it from, byte for byte, is not read again: it comes back as
/// [`AppliedBefore`]. Any other document, new or changed, is read and
/// checked in full, every error at its place. Without `layout` every
/// document is read.
pub fn parse_unless_applied<'a>(
    inputs: &'a [Input],
    layout: Option<&Layout>,
) -> Result<Read<'a>, Invalid> {
    // A sound index only: one to repair is for the store to repair.
    let index = layout.and_then(|layout| Index::read(layout).ok()?.ok()?);
    let applied: HashMap<&str, &IndexRow> = index
        .iter()
        .flat_map(|index| index.rows())
        .filter_map(|row| Some((row.applied.as_ref()?.key.as_str(), row)))
        .collect();
    let unchanged_row = |digest: &str| {
        let row = applied.get(document_key(digest, None).as_str())?;
        let layout = layout?;
        let record = row.applied.as_ref()?;
        // The object as the apply left it, else what changed it is compared.
        (file_stamp(&layout.object_file(&row.container_name)).as_ref() == Some(&record.object))
            .then_some(*row)
    };
    let read = parse_with(inputs, |text| {
        let digest = document_digest(text);
        match unchanged_row(&digest) {
            Some(row) => Ok(AppliedBefore {
                name: row.name.clone(),
                agent: row.agent.clone(),
                workspace: row.workspace.clone(),
            }),
            None => Err(digest),
        }
    })?;
    // An agent in the same input may change how an instance's document
    // checks (the conversation id's format): then every one is read.
    let defines_agents = read
        .objects
        .iter()
        .any(|(_, o)| matches!(o, Object::Agent(_)));
    if defines_agents && !read.unchanged.is_empty() {
        return parse_with(inputs, |text| Err(document_digest(text)));
    }
    Ok(read)
}

/// Parses every input, each document first shown to `known` (see
/// [`manifest::parse_unless`]); any error anywhere fails the whole load,
/// reporting all errors at once, duplicates included.
fn parse_with<'a>(
    inputs: &'a [Input],
    mut known: impl FnMut(&str) -> Result<AppliedBefore, String>,
) -> Result<Read<'a>, Invalid> {
    let mut read = Read {
        objects: Vec::new(),
        documents: HashMap::new(),
        unchanged: Vec::new(),
    };
    let mut errors = Vec::new();
    for input in inputs {
        match manifest::parse_unless(&input.name, &input.text, &mut known) {
            Ok(parsed) => {
                for doc in parsed {
                    match doc {
                        Parsed::Known(before) => read.unchanged.push(before),
                        Parsed::Read(obj, digest) => {
                            if let (Object::Instance(i), Some(digest)) = (&obj, digest) {
                                read.documents.insert(i.metadata.name.clone(), digest);
                            }
                            read.objects.push((input, obj));
                        }
                    }
                }
            }
            Err(errs) => errors.extend(errs.iter().map(ToString::to_string)),
        }
    }
    let mut seen = BTreeSet::new();
    let names = read.objects.iter().map(|(_, obj)| (obj.kind(), obj.name()));
    let unchanged = read
        .unchanged
        .iter()
        .map(|u| (Instance::KIND, u.name.as_str()));
    for (kind, name) in names.chain(unchanged) {
        if !seen.insert((kind, name)) {
            errors.push(format!(
                "{}/{name} appears more than once in the input",
                kind.to_lowercase(),
            ));
        }
    }
    if !errors.is_empty() {
        return Err(Invalid(errors));
    }
    if read.objects.is_empty() && read.unchanged.is_empty() {
        return Err(Invalid(vec!["no objects found in the given files".into()]));
    }
    Ok(read)
}

/// The paths an apply reads, as one owner of what it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// `src-` and 12 hex digits of the canonical paths' hash: a label value.
    pub id: String,
    pub paths: Vec<PathBuf>,
}

impl Source {
    /// The source of `paths`, whichever way they are spelled.
    pub fn of(paths: &[PathBuf]) -> Result<Self, SourceError> {
        let mut canonical = paths
            .iter()
            .map(|p| p.canonicalize().map_err(io(p)))
            .collect::<Result<Vec<_>, _>>()?;
        canonical.sort();
        canonical.dedup();
        let mut hasher = sha2::Sha256::new();
        for path in &canonical {
            hasher.update(path.as_os_str().as_encoded_bytes());
            hasher.update([0]);
        }
        let hex = hex(&hasher.finalize()[..6]);
        Ok(Self {
            id: format!("src-{hex}"),
            paths: canonical,
        })
    }
}

/// Why `obj`'s engine address can never be reached, when it can be told
/// now: a unix address whose path is there and is no socket (`unix:///dev/
/// zero`). The address's form was checked when the file was read; a docker
/// context is looked up when the instance is reconciled (it may be made
/// later), and an address whose socket is not there yet may be an engine
/// that has not started.
fn engine_refused(obj: &Object) -> Option<String> {
    let engine = match obj {
        Object::Instance(i) => i.spec.engine.as_deref(),
        Object::Workspace(w) => w.spec.engine.as_deref(),
        Object::Agent(_) => None,
    }?;
    if !engine.contains("://") {
        return None;
    }
    let inputs = jackin_engine::endpoint::Inputs::default();
    let refused = jackin_engine::endpoint::resolve_named(&inputs, Some(engine)).err()?;
    // The error names `spec.engine` as where the address came from.
    Some(format!(
        "{}/{}: {refused}",
        obj.kind().to_lowercase(),
        obj.name()
    ))
}

/// The object as this source applies it: with its ownership label, which
/// only jackin sets (a file that sets it is refused when it is read).
fn owned(obj: &Object, source: Option<&Source>) -> Object {
    let mut obj = obj.clone();
    if let Some(source) = source {
        obj.metadata_mut()
            .labels
            .insert(label::SOURCE.to_owned(), source.id.clone());
    }
    obj
}

/// `kind/name`: an object's key in [`SourceRecord::applied`].
fn object_key(obj: &Object) -> String {
    format!("{}/{}", obj.kind().to_lowercase(), obj.name())
}

/// The digest of an object as a source applies it (see
/// [`SourceRecord::applied`]): of everything its document says, so any
/// change to it, and no change elsewhere, makes another.
fn digest(obj: &Object) -> String {
    let json = match obj {
        Object::Instance(i) => serde_json::to_vec(i),
        Object::Workspace(w) => serde_json::to_vec(w),
        Object::Agent(a) => serde_json::to_vec(a),
    }
    .expect("an object serializes");
    sha256_hex(&json, 16)
}

/// What an apply knows of the documents it read (see [`Read`]).
#[derive(Default)]
struct Documents<'a> {
    /// The digest of each instance's own document, by name.
    digests: Option<&'a HashMap<String, String>>,
    unchanged: &'a [AppliedBefore],
}

impl Documents<'_> {
    /// The key `applied` is recorded under: its document's, with the source
    /// label it carries. `None` when it was not read from a document of its
    /// own, or sets annotations of jackin's own (whose merge depends on
    /// the stored ones, which the record does not cover: such a document
    /// is always read and compared).
    fn key(&self, applied: &Instance) -> Option<String> {
        let meta = &applied.metadata;
        if meta
            .annotations
            .keys()
            .any(|k| k.starts_with("jackin.dev/"))
        {
            return None;
        }
        let digest = self.digests?.get(&meta.name)?;
        Some(document_key(
            digest,
            meta.labels.get(label::SOURCE).map(String::as_str),
        ))
    }
}

/// An object of a source that is no longer in its files.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pruned {
    pub kind: &'static str,
    pub name: String,
}

/// What an apply did, object by object, and what it pruned.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    pub outcomes: Vec<(Object, ApplyOutcome)>,
    /// The instances whose documents were not read again
    /// ([`AppliedBefore`]): unchanged.
    pub unchanged: Vec<String>,
    pub pruned: Vec<Pruned>,
    /// Instances an earlier prune of the source set to `Purged` whose purge
    /// has not finished (that apply was killed, say): converged again, so
    /// that the same apply run again finishes the prune.
    pub still_pruning: Vec<String>,
}

impl Applied {
    /// The instances the loop should look at now: created or changed ones
    /// (an `Ended` one is not created) and pruned ones.
    pub fn instances_to_converge(&self) -> Vec<String> {
        self.instances(|outcome| outcome != ApplyOutcome::Ended)
    }

    /// The instances this apply changed: created, configured or pruned.
    pub fn changed_instances(&self) -> Vec<String> {
        self.instances(|outcome| {
            matches!(outcome, ApplyOutcome::Created | ApplyOutcome::Configured)
        })
    }

    /// The applied instances whose outcome `wanted` takes, then the pruned.
    fn instances(&self, wanted: impl Fn(ApplyOutcome) -> bool) -> Vec<String> {
        let applied = self.outcomes.iter().filter_map(|(obj, outcome)| match obj {
            Object::Instance(i) if wanted(*outcome) => Some(i.metadata.name.clone()),
            _ => None,
        });
        let unchanged = self
            .unchanged
            .iter()
            .filter(|_| wanted(ApplyOutcome::Unchanged))
            .cloned();
        let pruned = self
            .pruned
            .iter()
            .filter(|p| p.kind == Instance::KIND)
            .map(|p| p.name.clone());
        applied
            .chain(unchanged)
            .chain(pruned)
            .chain(self.still_pruning.iter().cloned())
            .collect()
    }
}

/// One object's change, for `jackin diff`: its operator-owned parts
/// (labels, annotations, spec) before and after, as YAML.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    pub kind: &'static str,
    pub name: String,
    pub before: String,
    pub after: String,
}

impl ObjectDiff {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// The parts of an object the operator owns, as `diff` shows them.
#[derive(Serialize)]
struct OperatorParts<'a, S: Serialize> {
    metadata: PartsMeta<'a>,
    spec: &'a S,
}

#[derive(Serialize)]
struct PartsMeta<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

fn parts<S: Serialize>(meta: &ObjectMeta, spec: &S) -> String {
    serde_saphyr::to_string(&OperatorParts {
        metadata: PartsMeta {
            name: &meta.name,
            labels: &meta.labels,
            annotations: &meta.annotations,
        },
        spec,
    })
    .expect("an object serializes")
}

impl Store {
    /// Checks every object against the store before any is written: a uid
    /// that is not the stored object's, an instance of an agent nobody
    /// defines or that does not fit its agent (`jackin_api::fit`). Writes
    /// nothing.
    pub fn check(&self, objects: &[Object]) -> Result<(), SourceError> {
        self.check_against(&self.index()?, objects)
    }

    /// What [`Store::check`] refuses of `inputs` that hold errors of their
    /// own: the documents that read, and those with errors read without
    /// the fields at fault, so that one run says every error of a file,
    /// whatever its stage (an agent named that is nowhere, beside a
    /// misspelled field). Writes nothing.
    pub fn refusals_despite_errors(&self, inputs: &[Input]) -> Result<Vec<String>, SourceError> {
        let mut objects = Vec::new();
        for input in inputs {
            let read =
                manifest::parse_unless_partly(&input.name, &input.text, |_| Err::<(), ()>(()));
            objects.extend(read.parsed.into_iter().filter_map(|p| match p {
                Parsed::Read(obj, _) => Some(obj),
                Parsed::Known(()) => None,
            }));
            objects.extend(read.faulty);
        }
        match self.check(&objects) {
            Ok(()) => Ok(Vec::new()),
            Err(SourceError::Invalid(Invalid(refusals))) => Ok(refusals),
            Err(e) => Err(e),
        }
    }

    /// As [`Store::check`], with the index already read.
    fn check_against(&self, index: &Index, objects: &[Object]) -> Result<(), SourceError> {
        let mut refusals = Vec::new();
        let mut agents_known: HashMap<&str, Option<AgentSpec>> = HashMap::new();
        for obj in objects {
            if let Some(refused) = engine_refused(obj) {
                refusals.push(refused);
            }
            let Object::Instance(instance) = obj else {
                if let Err(e) = self.plan_object(obj) {
                    refusals.push(e.to_string());
                }
                continue;
            };
            if !self.unchanged_by_row(index, instance)
                && let Err(e) = self.plan_instance(instance)
            {
                refusals.push(e.to_string());
            }
            let agent = &instance.spec.agent;
            let in_input = objects.iter().find_map(|o| match o {
                Object::Agent(a) if &a.metadata.name == agent => Some(a.spec.clone()),
                _ => None,
            });
            let spec = match (in_input, agents_known.get(agent.as_str())) {
                (Some(spec), _) => Some(spec),
                (None, Some(known)) => known.clone(),
                (None, None) => {
                    let known = self.resolve_agent(agent)?.map(|a| a.spec);
                    agents_known.insert(agent, known.clone());
                    known
                }
            };
            let Some(spec) = spec else {
                refusals.push(self.no_agent_named(&instance.metadata.name, agent)?);
                continue;
            };
            refusals.extend(jackin_api::fit::refusals(instance, &spec));
        }
        match refusals.is_empty() {
            true => Ok(()),
            false => Err(Invalid(refusals).into()),
        }
    }

    /// The objects of a plain apply (no `--prune`), each with the label of
    /// the source that owns it kept when the file it was read from is one
    /// of that source's: applying a source's files by hand (to try a
    /// change before committing it, say) leaves what the source owns its
    /// own. An object read from any other file (`get -o yaml`'s output)
    /// takes its labels from that file, so applying it makes it the
    /// operator's. Writes nothing.
    pub fn keep_owners(&self, read: Vec<(&Input, Object)>) -> Result<Vec<Object>, StoreError> {
        let records = self.source_records()?;
        // Read once: a source may hold hundreds of instances.
        let index = match records.is_empty() {
            true => None,
            false => Some(self.index()?),
        };
        let mut objects = Vec::with_capacity(read.len());
        // Once per file, not per document, and not at all without sources.
        let mut canonical: HashMap<&str, Option<PathBuf>> = HashMap::new();
        for (input, mut obj) in read {
            // Stdin, or a file no source reads: nothing to look up.
            let file = match records.is_empty() {
                true => None,
                false => canonical
                    .entry(input.name.as_str())
                    .or_insert_with(|| Path::new(&input.name).canonicalize().ok())
                    .clone(),
            };
            let sources: Vec<&SourceRecord> = records
                .iter()
                .filter(|r| {
                    file.as_ref()
                        .is_some_and(|f| r.paths.iter().any(|p| f.starts_with(p)))
                })
                .collect();
            if let Some(index) = index.as_ref().filter(|_| !sources.is_empty())
                && let Some(owner) = self.owner_of(index, &obj)?
                && sources.iter().any(|r| r.id == owner)
            {
                obj.metadata_mut()
                    .labels
                    .insert(label::SOURCE.to_owned(), owner);
            }
            objects.push(obj);
        }
        Ok(objects)
    }

    /// The source that owns the stored object of `obj`'s kind and name.
    fn owner_of(&self, index: &Index, obj: &Object) -> Result<Option<String>, StoreError> {
        let labels = match obj {
            Object::Instance(i) => {
                let stored = match index.find(&i.metadata.name) {
                    Some(row) => read_object(self.layout(), &row.container_name)?,
                    None => None,
                };
                match stored {
                    Some(stored) => stored.metadata.labels,
                    None => return Ok(None),
                }
            }
            Object::Workspace(w) => match self.get::<Workspace>(&w.metadata.name)? {
                Some(stored) => stored.metadata.labels,
                None => return Ok(None),
            },
            Object::Agent(a) => match self.get::<Agent>(&a.metadata.name)? {
                Some(stored) => stored.metadata.labels,
                None => return Ok(None),
            },
        };
        Ok(labels.get(label::SOURCE).cloned())
    }

    /// What applying `obj` would do, writing nothing.
    pub fn plan_object(&self, obj: &Object) -> Result<ApplyOutcome, StoreError> {
        match obj {
            Object::Instance(i) => self.plan_instance(i),
            Object::Workspace(w) => self.plan(w.as_ref()),
            Object::Agent(a) => self.plan(a.as_ref()),
        }
    }

    /// Applies `objects` (checked first: one refused object applies none)
    /// and, from a source, prunes what it owns and no longer holds.
    pub fn apply_objects(
        &self,
        objects: &[Object],
        source: Option<&Source>,
    ) -> Result<Applied, SourceError> {
        self.apply_objects_but(objects, source, &BTreeMap::new(), &Documents::default())
    }

    /// As [`Store::apply_objects`], for what [`parse_unless_applied`] read:
    /// each instance is recorded as made from its document, and the
    /// documents not read again are checked only for what may have changed
    /// around them (their agent is still there) and are unchanged.
    pub fn apply_read(
        &self,
        objects: &[Object],
        source: Option<&Source>,
        documents: &HashMap<String, String>,
        unchanged: &[AppliedBefore],
    ) -> Result<Applied, SourceError> {
        let documents = Documents {
            digests: Some(documents),
            unchanged,
        };
        self.apply_objects_but(objects, source, &BTreeMap::new(), &documents)
    }

    /// Instances whose documents were not read again must still name an
    /// agent there is.
    fn check_unchanged(&self, unchanged: &[AppliedBefore]) -> Result<(), SourceError> {
        let mut known: HashMap<&str, bool> = HashMap::new();
        let mut refusals = Vec::new();
        for before in unchanged {
            let agent = before.agent.as_str();
            let there = match known.get(agent) {
                Some(there) => *there,
                None => *known
                    .entry(agent)
                    .or_insert(self.resolve_agent(agent)?.is_some()),
            };
            if !there {
                refusals.push(self.no_agent_named(&before.name, agent)?);
            }
        }
        match refusals.is_empty() {
            true => Ok(()),
            false => Err(Invalid(refusals).into()),
        }
    }

    /// The refusal of the instance `instance`, which names `agent`, an
    /// agent there is not: with the closest name of one there is.
    fn no_agent_named(&self, instance: &str, agent: &str) -> Result<String, SourceError> {
        let agents = self.agents()?;
        let known = agents.iter().map(|(a, _)| a.metadata.name.as_str());
        let suggestion = jackin_api::suggest::closest(agent, known)
            .map_or_else(String::new, |k| format!("; did you mean {k:?}?"));
        Ok(format!(
            "instance/{instance}: no agent is named {agent:?}{suggestion} (`jackin get agents` \
             lists them; apply an Agent to add one)"
        ))
    }

    /// As [`Store::apply_objects`], but an object whose digest is the one
    /// in `as_applied` (what the source last applied of it, see
    /// [`SourceRecord::applied`]) is left as it is: it still counts as the
    /// source's, for the prune.
    fn apply_objects_but(
        &self,
        objects: &[Object],
        source: Option<&Source>,
        as_applied: &BTreeMap<String, String>,
        documents: &Documents<'_>,
    ) -> Result<Applied, SourceError> {
        // Read once, for the checks and the comparisons: 500 rows are a
        // good part of an unchanged apply's work.
        let index = self.index()?;
        self.check_against(&index, objects)?;
        self.check_unchanged(documents.unchanged)?;
        let mut applied = Applied {
            unchanged: documents.unchanged.iter().map(|u| u.name.clone()).collect(),
            ..Applied::default()
        };
        for obj in objects {
            let obj = owned(obj, source);
            let untouched =
                !as_applied.is_empty() && as_applied.get(&object_key(&obj)) == Some(&digest(&obj));
            let outcome = match &obj {
                _ if untouched => ApplyOutcome::Unchanged,
                // The same again: nothing to write, nothing to open.
                Object::Instance(i) if self.unchanged_by_row(&index, i) => ApplyOutcome::Unchanged,
                Object::Instance(i) => {
                    let document = documents.key(i);
                    self.apply_instance_from(i, document.as_deref())?
                }
                Object::Workspace(w) => self.apply(w.as_ref())?,
                Object::Agent(a) => self.apply(a.as_ref())?,
            };
            applied.outcomes.push((obj, outcome));
        }
        if let Some(source) = source {
            applied.still_pruning = self.still_pruning(objects, source)?;
            for gone in self.prunable(objects, source)? {
                match gone.kind {
                    Instance::KIND => {
                        self.set_phase(&gone.name, jackin_api::DesiredPhase::Purged)?;
                    }
                    Workspace::KIND => {
                        self.delete::<Workspace>(&gone.name)?;
                    }
                    _ => {
                        self.delete::<Agent>(&gone.name)?;
                    }
                }
                applied.pruned.push(gone);
            }
        }
        Ok(applied)
    }

    /// The objects `source` owns that `objects` no longer hold.
    pub fn prunable(&self, objects: &[Object], source: &Source) -> Result<Vec<Pruned>, StoreError> {
        let kept: BTreeSet<(&str, &str)> = objects.iter().map(|o| (o.kind(), o.name())).collect();
        let ours = |meta: &ObjectMeta| meta.labels.get(label::SOURCE) == Some(&source.id);
        let mut owned: Vec<Pruned> = Vec::new();
        for obj in self.list_instances()?.instances {
            // Already being purged for the source: nothing more to ask.
            if ours(&obj.metadata) && obj.spec.phase != jackin_api::DesiredPhase::Purged {
                owned.push(Pruned {
                    kind: Instance::KIND,
                    name: obj.metadata.name,
                });
            }
        }
        owned.extend(self.owned_by::<Workspace>(source)?);
        owned.extend(self.owned_by::<Agent>(source)?);
        owned.retain(|p| !kept.contains(&(p.kind, p.name.as_str())));
        owned.sort();
        Ok(owned)
    }

    /// The instances `source` owns, no longer in `objects`, that a prune
    /// already set to `Purged` and that are still there: their purge did
    /// not finish (the apply was killed mid-prune, or the purge waits for
    /// unfinished work to be acknowledged).
    pub fn still_pruning(
        &self,
        objects: &[Object],
        source: &Source,
    ) -> Result<Vec<String>, StoreError> {
        let kept: BTreeSet<&str> = objects
            .iter()
            .filter(|o| o.kind() == Instance::KIND)
            .map(Object::name)
            .collect();
        let mut names: Vec<String> = self
            .list_instances()?
            .instances
            .into_iter()
            .filter(|obj| {
                obj.metadata.labels.get(label::SOURCE) == Some(&source.id)
                    && obj.spec.phase == jackin_api::DesiredPhase::Purged
                    && !kept.contains(obj.metadata.name.as_str())
            })
            .map(|obj| obj.metadata.name)
            .collect();
        names.sort();
        Ok(names)
    }

    /// What applying `objects` would change, object by object, computed by
    /// the same merge the apply runs; with a source, the objects it would
    /// prune come last, as removals. Writes nothing.
    pub fn diff_objects(
        &self,
        objects: &[Object],
        source: Option<&Source>,
    ) -> Result<Vec<ObjectDiff>, SourceError> {
        self.check(objects)?;
        let mut diffs = Vec::new();
        for obj in objects {
            let obj = owned(obj, source);
            let (before, after) = match &obj {
                Object::Instance(applied) => {
                    let before = match self.get_instance(&applied.metadata.name) {
                        Ok(stored) => parts(&stored.metadata, &stored.spec),
                        Err(StoreError::InstanceNotFound(_)) => String::new(),
                        Err(e) => return Err(e.into()),
                    };
                    let after = match self.preview_instance(applied)? {
                        (_, Some(would_be)) => parts(&would_be.metadata, &would_be.spec),
                        // Ended and cleaned up: the apply creates nothing.
                        (_, None) => before.clone(),
                    };
                    (before, after)
                }
                Object::Workspace(applied) => self.diff_file_object(applied.as_ref())?,
                Object::Agent(applied) => self.diff_file_object(applied.as_ref())?,
            };
            diffs.push(ObjectDiff {
                kind: obj.kind(),
                name: obj.name().to_owned(),
                before,
                after,
            });
        }
        if let Some(source) = source {
            for gone in self.prunable(objects, source)? {
                let before = match gone.kind {
                    Instance::KIND => {
                        let obj = self.get_instance(&gone.name)?;
                        parts(&obj.metadata, &obj.spec)
                    }
                    Workspace::KIND => self.stored_parts::<Workspace>(&gone.name)?,
                    _ => self.stored_parts::<Agent>(&gone.name)?,
                };
                diffs.push(ObjectDiff {
                    kind: gone.kind,
                    name: gone.name,
                    before,
                    after: String::new(),
                });
            }
        }
        Ok(diffs)
    }

    /// The stored objects of kind `K` that `source` applied.
    fn owned_by<K: FileObject>(&self, source: &Source) -> Result<Vec<Pruned>, StoreError> {
        Ok(self
            .list::<K>()?
            .into_iter()
            .filter(|obj| obj.metadata().labels.get(label::SOURCE) == Some(&source.id))
            .map(|obj| Pruned {
                kind: K::KIND,
                name: obj.metadata().name.clone(),
            })
            .collect())
    }

    fn diff_file_object<K>(&self, applied: &K) -> Result<(String, String), StoreError>
    where
        K: FileObject + Spec,
    {
        let stored = self.get::<K>(&applied.metadata().name)?;
        let before = stored
            .as_ref()
            .map(|s| parts(s.metadata(), s.spec()))
            .unwrap_or_default();
        let after = match stored {
            Some(mut merged) => {
                merged.merge_from(applied)?;
                parts(merged.metadata(), merged.spec())
            }
            None => parts(applied.metadata(), applied.spec()),
        };
        Ok((before, after))
    }

    fn stored_parts<K: FileObject + Spec>(&self, name: &str) -> Result<String, StoreError> {
        Ok(self
            .get::<K>(name)?
            .map(|obj| parts(obj.metadata(), obj.spec()))
            .unwrap_or_default())
    }
}

/// A kind's spec, for diffs.
pub trait Spec {
    type Spec: Serialize;
    fn spec(&self) -> &Self::Spec;
}

impl Spec for Workspace {
    type Spec = jackin_api::WorkspaceSpec;
    fn spec(&self) -> &Self::Spec {
        &self.spec
    }
}

impl Spec for Agent {
    type Spec = AgentSpec;
    fn spec(&self) -> &Self::Spec {
        &self.spec
    }
}

/// What a source last did, kept in `sources/<id>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRecord {
    pub id: String,
    pub paths: Vec<PathBuf>,
    /// The git commit of the last good apply, when the source is in a work
    /// tree (with `+dirty` when its files had uncommitted changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_at: Option<Timestamp>,
    /// How many objects the last good apply held.
    #[serde(default)]
    pub objects: usize,
    /// Why the last attempt changed nothing, with the place of each problem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempted_at: Option<Timestamp>,
    /// Each object of the last good apply (`kind/name`) with the digest of
    /// its document as applied. `controller --sync` applies an object again
    /// only when its document changed since: a hand change (`set-phase
    /// NAME kept`) stands until the file itself changes, whatever else the
    /// source's commits change.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applied: BTreeMap<String, String>,
}

impl Store {
    fn source_file(&self, id: &str) -> PathBuf {
        self.layout()
            .objects_dir("sources")
            .join(format!("{id}.json"))
    }

    /// The record of `source`, or a fresh one.
    pub fn source_record(&self, source: &Source) -> Result<SourceRecord, StoreError> {
        let path = self.source_file(&source.id);
        match read_untrusted(&path, cap::SOURCE_RECORD) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Unreadable {
                path,
                message: json_error(&e),
            }),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(SourceRecord {
                id: source.id.clone(),
                paths: source.paths.clone(),
                ..Default::default()
            }),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    pub fn write_source_record(&self, record: &SourceRecord) -> Result<(), StoreError> {
        let dir = self.layout().objects_dir("sources");
        ensure_private_dir(&dir).map_err(|e| StoreError::io(&dir, e))?;
        let path = self.source_file(&record.id);
        let mut bytes = serde_json::to_vec_pretty(record).expect("a record serializes");
        bytes.push(b'\n');
        write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
    }

    /// Every source's record, by id. An unreadable one is skipped with a
    /// warning: it is only a report.
    pub fn source_records(&self) -> Result<Vec<SourceRecord>, StoreError> {
        let dir = self.layout().objects_dir("sources");
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut records = Vec::new();
        for entry in entries {
            let path = entry.map_err(|e| StoreError::io(&dir, e))?.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match read_untrusted(&path, cap::SOURCE_RECORD)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice(&b).map_err(|e| json_error(&e)))
            {
                Ok(record) => records.push(record),
                Err(e) => tracing::warn!("{}: cannot read the source record: {e}", path.display()),
            }
        }
        records.sort_by(|a: &SourceRecord, b| a.id.cmp(&b.id));
        Ok(records)
    }
}

impl Store {
    /// Records what an apply of `source` did, or why it changed nothing.
    pub fn record_source(
        &self,
        source: &Source,
        result: Result<&Applied, &SourceError>,
    ) -> Result<(), StoreError> {
        let mut record = self.source_record(source)?;
        let now = Timestamp::now();
        record.attempted_at = Some(now);
        match result {
            Ok(applied) => {
                record.error = None;
                record.applied_at = Some(now);
                record.objects = applied.outcomes.len();
                record.applied = applied
                    .outcomes
                    .iter()
                    .map(|(obj, _)| (object_key(obj), digest(obj)))
                    .collect();
                record.revision = source.paths.first().and_then(|p| revision(p));
            }
            Err(e) => record.error = Some(e.to_string()),
        }
        self.write_source_record(&record)
    }

    /// Applies `source` with prune when its files (or its revision) differ
    /// from `seen`, the fingerprint of the last attempt, and records the
    /// result. An invalid file applies nothing: the last good state stays.
    /// `None` when nothing changed since `seen`. Of the objects, only those
    /// whose document changed since the source last applied them are
    /// applied again (see [`SourceRecord::applied`]): the operator's hand
    /// change to one stands until its own file changes.
    pub fn sync_source(
        &self,
        source: &Source,
        seen: &mut Option<String>,
    ) -> Option<Result<Applied, SourceError>> {
        let inputs = read(&source.paths);
        let rev = source.paths.first().and_then(|p| revision(p));
        let mut hasher = sha2::Sha256::new();
        match &inputs {
            Ok(inputs) => {
                for input in inputs {
                    hasher.update(input.name.as_bytes());
                    hasher.update([0]);
                    hasher.update(input.text.as_bytes());
                    hasher.update([0]);
                }
            }
            Err(e) => hasher.update(e.to_string().as_bytes()),
        }
        hasher.update(rev.unwrap_or_default().as_bytes());
        let fingerprint = hex(&hasher.finalize());
        if seen.as_deref() == Some(fingerprint.as_str()) {
            return None;
        }
        *seen = Some(fingerprint);
        // A record that cannot be read costs the hand changes, not the sync.
        let as_applied = self.source_record(source).map_or_else(
            |e| {
                tracing::warn!(source = source.id, "applying every object again: {e}");
                BTreeMap::new()
            },
            |record| record.applied,
        );
        let result = inputs.and_then(|inputs| {
            let read = parse_unless_applied(&inputs, None)?;
            let objects: Vec<Object> = read.objects.into_iter().map(|(_, o)| o).collect();
            let documents = Documents {
                digests: Some(&read.documents),
                unchanged: &[],
            };
            self.apply_objects_but(&objects, Some(source), &as_applied, &documents)
        });
        if let Err(e) = self.record_source(source, result.as_ref()) {
            tracing::warn!(source = source.id, "cannot record the sync: {e}");
        }
        Some(result)
    }
}

/// The commit a path's work tree is at, if it is in one: `git rev-parse
/// HEAD`, with `+dirty` when the path has uncommitted changes. Git runs with
/// every setting that would start a program defused, as in a checkout.
pub fn revision(path: &Path) -> Option<String> {
    let dir = if path.is_dir() { path } else { path.parent()? };
    let dir = dir.to_str()?;
    let git = |args: &[&str]| {
        git::run_untrusted_anywhere(dir, args)
            .ok()
            .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
    };
    let head = git(&["rev-parse", "--verify", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--", "."]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}+dirty") } else { head })
}
