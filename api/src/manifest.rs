//! Reading objects from YAML text.
//!
//! A file may hold several documents separated by `---`. A valid document
//! that names its `kind` before its content (as manifests and everything
//! jackin writes do) is read in one pass, straight into the matching type
//! with unknown fields rejected (`read_once`). Any other document, and
//! any that pass finds fault with, is read with care: once for its `kind`,
//! once into the type and, after each error, again without the field at
//! fault, so that one run reports all its errors (`typed_all`). Every error names the source, line, column and field
//! path, including semantic errors from [`crate::validate`], whose paths are
//! mapped back to positions through a location tree of the document. A
//! rule that a removed field breaks is left out of those: the field's own
//! error says it.
//!
//! A stream is split at its document markers in one pass (`---` or `...`
//! at the start of a line, which YAML forbids inside a document, so the
//! split is exact), and each document keeps the line it starts at, which
//! is added to the parser's lines to give the file's.
//!
//! [`parse_unless`] shows each document's text to its caller first, and
//! does not read one the caller knows (an apply skips the documents it
//! applied before, byte for byte); the others keep their places.
//!
//! What an operator applies ([`parse`]) may not set the names jackin keeps
//! for itself ([`crate::names::reserved_label`]); jackin's own stored
//! objects ([`parse_stored`]) carry the ones it set.

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess, Visitor,
};
use serde_saphyr::Spanned;

use crate::agent::Agent;
use crate::instance::Instance;
use crate::meta::ObjectMeta;
use crate::validate::{self, FieldError};
use crate::workspace::Workspace;

/// An object read from a manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    Instance(Box<Instance>),
    Workspace(Box<Workspace>),
    Agent(Box<Agent>),
}

impl Object {
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Instance(_) => Instance::KIND,
            Object::Workspace(_) => Workspace::KIND,
            Object::Agent(_) => Agent::KIND,
        }
    }

    pub fn name(&self) -> &str {
        &self.metadata().name
    }

    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Object::Instance(i) => &i.metadata,
            Object::Workspace(w) => &w.metadata,
            Object::Agent(a) => &a.metadata,
        }
    }

    pub fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Object::Instance(i) => &mut i.metadata,
            Object::Workspace(w) => &mut w.metadata,
            Object::Agent(a) => &mut a.metadata,
        }
    }

    /// The engine the object names, for the kinds that name one.
    fn engine(&self) -> Option<&str> {
        match self {
            Object::Instance(i) => i.spec.engine.as_deref(),
            Object::Workspace(w) => w.spec.engine.as_deref(),
            Object::Agent(_) => None,
        }
    }
}

/// Who wrote the text: what an operator applies may not set jackin's
/// reserved names; what jackin stored carries those it set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Author {
    Operator,
    Jackin,
}

/// A problem in a manifest, located as precisely as the input allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestError {
    /// File name (or `<stdin>`) the text came from.
    pub source: String,
    /// 1-based line; 0 when unknown.
    pub line: usize,
    /// 1-based column; 0 when unknown.
    pub column: usize,
    /// Field path such as `spec.mounts[1].dst`, when the error concerns a field.
    pub field: Option<String>,
    pub message: String,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}: ", self.source, self.line, self.column)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ManifestError {}

/// Parses every document of an operator's manifest in `text`; `source`
/// names it in errors. A label or annotation jackin keeps for itself is an
/// error at its place.
///
/// All documents are checked, and all their errors returned, so an operator
/// fixes a file in one round. On any error no object is returned.
pub fn parse(source: &str, text: &str) -> Result<Vec<Object>, Vec<ManifestError>> {
    parse_as(source, text, Author::Operator, |_| Err::<(), ()>(()))
        .whole()
        .map(|read| read.into_iter().filter_map(Parsed::object).collect())
}

/// What [`parse_unless`] made of a document.
#[derive(Debug)]
pub enum Parsed<K, D> {
    /// A document the caller knew, not read: what the caller said of it.
    Known(K),
    /// An object read, with what the caller said of its document when the
    /// document holds this one object (not for the items of a `List`).
    Read(Object, Option<D>),
}

impl<K, D> Parsed<K, D> {
    fn object(self) -> Option<Object> {
        match self {
            Parsed::Read(obj, _) => Some(obj),
            Parsed::Known(_) => None,
        }
    }
}

/// As [`parse`], but each document's text is first shown to `known`: a
/// document it knows (`Ok`) is not read at all, so that a caller that
/// remembers documents it applied before skips reading them again; any
/// other document is read and checked as by [`parse`], every error at its
/// place in the file.
pub fn parse_unless<K, D>(
    source: &str,
    text: &str,
    known: impl FnMut(&str) -> Result<K, D>,
) -> Result<Vec<Parsed<K, D>>, Vec<ManifestError>> {
    parse_as(source, text, Author::Operator, known).whole()
}

/// What [`parse_unless_partly`] read of a stream with errors or without.
#[derive(Debug)]
pub struct Partly<K, D> {
    /// The documents read whole, as [`parse_unless`] gives them.
    pub parsed: Vec<Parsed<K, D>>,
    /// Every error of every document.
    pub errors: Vec<ManifestError>,
    /// The objects of documents with errors, read without the fields at
    /// fault, for the checks that find the rest of their errors (an agent
    /// or a workspace named that is nowhere): never to be applied.
    pub faulty: Vec<Object>,
}

impl<K, D> Partly<K, D> {
    fn whole(self) -> Result<Vec<Parsed<K, D>>, Vec<ManifestError>> {
        match self.errors.is_empty() {
            true => Ok(self.parsed),
            false => Err(self.errors),
        }
    }
}

/// As [`parse_unless`], but what could be read is returned beside the
/// errors, so that a caller checks it too and one run says every error.
pub fn parse_unless_partly<K, D>(
    source: &str,
    text: &str,
    known: impl FnMut(&str) -> Result<K, D>,
) -> Partly<K, D> {
    parse_as(source, text, Author::Operator, known)
}

/// Parses an object jackin stored (`workspaces/NAME.yaml`): as [`parse`],
/// but the reserved names jackin set on it are its own.
pub fn parse_stored(source: &str, text: &str) -> Result<Vec<Object>, Vec<ManifestError>> {
    parse_as(source, text, Author::Jackin, |_| Err::<(), ()>(()))
        .whole()
        .map(|read| read.into_iter().filter_map(Parsed::object).collect())
}

fn parse_as<K, D>(
    source: &str,
    text: &str,
    author: Author,
    mut known: impl FnMut(&str) -> Result<K, D>,
) -> Partly<K, D> {
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    let mut faulty = Vec::new();
    for doc in split_documents(text) {
        let said = match known(&doc.text) {
            Ok(known) => {
                objects.push(Parsed::Known(known));
                continue;
            }
            Err(said) => said,
        };
        match read_once(&doc.text, author) {
            Some(OnePass::Empty) => continue,
            Some(OnePass::Object(obj)) => {
                objects.push(Parsed::Read(*obj, Some(said)));
                continue;
            }
            // Read with care, for its errors or its unusual shape.
            None => {}
        }
        let items = match list_items(source, &doc) {
            Ok(items) => items,
            Err(mut errs) => {
                errors.append(&mut errs);
                continue;
            }
        };
        let Some(items) = items else {
            match parse_document(source, &doc, author) {
                Ok(Some(obj)) => objects.push(Parsed::Read(obj, Some(said))),
                Ok(None) => {}
                Err(mut faults) => {
                    errors.append(&mut faults.errors);
                    faulty.extend(faults.partial);
                }
            }
            continue;
        };
        // A `List` (what `jackin get -o json|yaml` prints for a listing):
        // each item is a document; its errors are placed at the list and
        // named by the item's index.
        for (i, item) in items.iter().enumerate() {
            match parse_document(source, item, author) {
                Ok(Some(obj)) => objects.push(Parsed::Read(obj, None)),
                Ok(None) => {}
                Err(faults) => errors.extend(faults.errors.into_iter().map(|mut e| {
                    e.line = doc.first_line;
                    e.column = 1;
                    e.field = Some(match e.field {
                        Some(field) => format!("items[{i}].{field}"),
                        None => format!("items[{i}]"),
                    });
                    e
                })),
            }
        }
    }
    Partly {
        parsed: objects,
        errors,
        faulty,
    }
}

/// Reads `text` as one document of `T` that is not an object (a role's
/// `jackin.role.yaml`): every error is placed as an object's are, with its
/// line, column and field, the type's own ones and `check`'s. A
/// document of nothing (or only comments) is `T`'s default.
pub fn parse_plain<T>(
    source: &str,
    text: &str,
    check: impl FnOnce(&T) -> Result<(), Vec<FieldError>>,
) -> Result<T, Vec<ManifestError>>
where
    T: for<'de> Deserialize<'de> + Default,
{
    let doc = Document {
        text: text.to_owned(),
        first_line: 1,
        line_offset: 0,
    };
    if typed::<Option<serde_json::Value>>(source, &doc)?.is_none() {
        return Ok(T::default());
    }
    let read = typed_all::<T, T>(source, &doc, |t| t);
    let mut errors = read.errors;
    // Read without the fields at fault, the rest is checked too: one round
    // fixes the file. A rule that a removed field breaks is its own error.
    let Some(value) = read.object else {
        return Err(errors);
    };
    if let Err(faults) = check(&value) {
        let kept = faults
            .into_iter()
            .filter(|e| !read.removed.iter().any(|r| within(&e.path, r)))
            .collect();
        errors.extend(locate(source, &doc, kept));
    }
    match errors.is_empty() {
        true => Ok(value),
        false => Err(errors),
    }
}

/// A document's errors, and its object read without the fields at fault
/// when it could be read at all.
struct Faults {
    errors: Vec<ManifestError>,
    partial: Option<Object>,
}

impl From<Vec<ManifestError>> for Faults {
    fn from(errors: Vec<ManifestError>) -> Self {
        Self {
            errors,
            partial: None,
        }
    }
}

/// One document of a stream. The parser numbers lines from the document's
/// start; adding `line_offset` gives the file's line. (Padding each
/// document with blank lines instead would make splitting quadratic.)
struct Document {
    text: String,
    /// The file's line of the document's first content.
    first_line: usize,
    /// The file's line before the document's text begins.
    line_offset: usize,
}

impl Document {
    /// A line the parser reported, as a line of the file.
    fn file_line(&self, parser_line: usize) -> usize {
        if parser_line == 0 {
            0
        } else {
            parser_line + self.line_offset
        }
    }
}

/// Splits a stream at its document markers. A marker is `---` or `...` at the
/// start of a line followed by a space or the end of the line, which YAML
/// forbids inside any document content, so splitting on it is exact. Lines
/// are YAML's ([`yaml_lines`]), so that the parser's line numbers and the
/// file's agree.
fn split_documents(text: &str) -> Vec<Document> {
    let mut docs = Vec::new();
    let mut current = String::new();
    let mut first_line = 1;
    let mut line_offset = 0;
    let mut has_content = false;
    let is_marker = |line: &str, marker: &str| {
        line.strip_prefix(marker)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    };
    for (index, line) in yaml_lines(text).enumerate() {
        let line_no = index + 1;
        let start = is_marker(line, "---");
        if start || is_marker(line, "...") {
            if has_content {
                docs.push(Document {
                    text: std::mem::take(&mut current),
                    first_line,
                    line_offset,
                });
            }
            current.clear();
            // The marker's line is the document text's first line.
            line_offset = line_no - 1;
            first_line = line_no;
            has_content = false;
            // Content after `---` on the same line belongs to the new
            // document; blanking the marker keeps its columns.
            let rest = &line[3..];
            if start && !rest.trim().is_empty() && !rest.trim_start().starts_with('#') {
                current.push_str("   ");
                current.push_str(rest);
                has_content = true;
            }
            current.push('\n');
            continue;
        }
        let trimmed = line.trim_start();
        if !trimmed.is_empty() && !trimmed.starts_with('#') {
            if !has_content {
                first_line = line_no;
            }
            has_content = true;
        }
        current.push_str(line);
        current.push('\n');
    }
    if has_content {
        docs.push(Document {
            text: current,
            first_line,
            line_offset,
        });
    }
    docs
}

/// The lines of `text` as YAML counts them, and so as the parser numbers
/// them: a line ends at `\r\n`, `\n` or a lone `\r` (`str::lines` knows no
/// lone `\r`). Inside a scalar YAML reads each as `\n`, so a document
/// rebuilt with `\n` means what the file meant.
fn yaml_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = (!text.is_empty()).then_some(text);
    std::iter::from_fn(move || {
        let text = rest?;
        let Some(end) = text.find(['\r', '\n']) else {
            rest = None;
            return Some(text);
        };
        let next = end
            + if text[end..].starts_with("\r\n") {
                2
            } else {
                1
            };
        rest = Some(&text[next..]).filter(|r| !r.is_empty());
        Some(&text[..end])
    })
}

/// The items of a document of kind `List` (`apiVersion: v1`, as kubectl
/// and `jackin get` write listings), each as a document of its own;
/// `None` for any other document.
fn list_items(source: &str, doc: &Document) -> Result<Option<Vec<Document>>, Vec<ManifestError>> {
    #[derive(Deserialize)]
    struct List {
        kind: Option<String>,
        #[serde(default)]
        items: Vec<serde_json::Value>,
    }
    let Ok(Some(list)) = serde_saphyr::from_str::<Option<List>>(&doc.text) else {
        // Not a mapping with a kind, or not one that parses: the document
        // is read as such, and its errors said there.
        return Ok(None);
    };
    if list.kind.as_deref() != Some("List") {
        return Ok(None);
    }
    list.items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            serde_saphyr::to_string(item)
                .map(|text| Document {
                    text,
                    first_line: doc.first_line,
                    line_offset: doc.first_line.saturating_sub(1),
                })
                .map_err(|e| ManifestError {
                    source: source.to_owned(),
                    line: doc.first_line,
                    column: 1,
                    field: Some(format!("items[{i}]")),
                    message: e.to_string(),
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
        .map_err(|e| vec![e])
}

/// A document read in one pass.
enum OnePass {
    /// No content (comments only).
    Empty,
    Object(Box<Object>),
}

/// Reads a document in one pass when it can be: a mapping whose `kind`
/// (of the three) comes before any key but `apiVersion`, that reads into
/// its type and passes its checks. `None` for any other document: the
/// careful reading then reports its errors, each at its place, or reads
/// what this one does not (a `List`, a `kind` after the content).
fn read_once(text: &str, author: Author) -> Option<OnePass> {
    let Some(KindFirst(obj)) = serde_saphyr::from_str::<Option<KindFirst>>(text).ok()? else {
        return Some(OnePass::Empty);
    };
    let checked = match &obj {
        Object::Instance(i) => validate::instance(i),
        Object::Workspace(w) => validate::workspace(w),
        Object::Agent(a) => validate::agent(a),
    };
    let names = match author {
        Author::Operator => validate::operator_input(obj.metadata(), obj.engine()),
        Author::Jackin => Ok(()),
    };
    (checked.is_ok() && names.is_ok()).then(|| OnePass::Object(Box::new(obj)))
}

/// An object whose mapping names its kind first: the keys before the
/// first other one are taken in, and the rest of the mapping is handed,
/// with them, to the kind's own type.
struct KindFirst(Object);

impl<'de> Deserialize<'de> for KindFirst {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KindFirstVisitor;
        impl<'de> Visitor<'de> for KindFirstVisitor {
            type Value = KindFirst;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a mapping that names its kind first")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<KindFirst, A::Error> {
                let mut read: Vec<(&'static str, String)> = Vec::new();
                let mut next = None;
                while let Some(key) = map.next_key::<String>()? {
                    let field = match key.as_str() {
                        "apiVersion" => "apiVersion",
                        "kind" => "kind",
                        _ => {
                            next = Some(key);
                            break;
                        }
                    };
                    if read.iter().any(|(k, _)| *k == field) {
                        return Err(de::Error::custom("a key given twice"));
                    }
                    read.push((field, map.next_value()?));
                }
                let kind = read
                    .iter()
                    .find(|(k, _)| *k == "kind")
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| de::Error::custom("no kind before the content"))?;
                let rest = MapAccessDeserializer::new(Resumed {
                    read: read.into_iter(),
                    value: None,
                    next,
                    map,
                });
                Ok(KindFirst(match kind.as_str() {
                    Instance::KIND => Object::Instance(Box::new(Instance::deserialize(rest)?)),
                    Workspace::KIND => Object::Workspace(Box::new(Workspace::deserialize(rest)?)),
                    Agent::KIND => Object::Agent(Box::new(Agent::deserialize(rest)?)),
                    _ => return Err(de::Error::custom("not a kind read in one pass")),
                }))
            }
        }
        deserializer.deserialize_map(KindFirstVisitor)
    }
}

/// A mapping read in part, whole again: the entries taken in, then the key
/// read last, then the parser's own entries (so their values are read by
/// the parser, as the type asks).
struct Resumed<A> {
    read: std::vec::IntoIter<(&'static str, String)>,
    /// The value of the entry taken in whose key was handed out last.
    value: Option<String>,
    next: Option<String>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Resumed<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        if let Some((key, value)) = self.read.next() {
            self.value = Some(value);
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        if let Some(key) = self.next.take() {
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        self.map.next_key_seed(seed)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value.into_deserializer()),
            None => self.map.next_value_seed(seed),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeMeta {
    #[serde(default)]
    kind: Option<Spanned<String>>,
}

fn parse_document(source: &str, doc: &Document, author: Author) -> Result<Option<Object>, Faults> {
    let at_doc = |message: String| ManifestError {
        source: source.to_owned(),
        line: doc.first_line,
        column: 1,
        field: None,
        message,
    };
    let type_meta: Option<TypeMeta> =
        serde_saphyr::from_str(&doc.text).map_err(|e| vec![yaml_error(source, doc, None, &e)])?;
    let Some(type_meta) = type_meta else {
        return Ok(None);
    };
    let Some(kind) = type_meta.kind else {
        let missing = "missing field `kind`: expected Instance, Workspace or Agent";
        return Err(vec![at_doc(missing.into())].into());
    };
    let read = match kind.value.as_str() {
        Instance::KIND => typed_all(source, doc, |obj: Instance| {
            let result = validate::instance(&obj);
            (Object::Instance(Box::new(obj)), result)
        }),
        Workspace::KIND => typed_all(source, doc, |obj: Workspace| {
            let result = validate::workspace(&obj);
            (Object::Workspace(Box::new(obj)), result)
        }),
        Agent::KIND => typed_all(source, doc, |obj: Agent| {
            let result = validate::agent(&obj);
            (Object::Agent(Box::new(obj)), result)
        }),
        other => {
            return Err(vec![ManifestError {
                source: source.to_owned(),
                line: doc.file_line(kind.referenced.line() as usize),
                column: kind.referenced.column() as usize,
                field: Some("kind".into()),
                message: format!("unknown kind {other:?}: expected Instance, Workspace or Agent"),
            }]
            .into());
        }
    };
    let Read {
        object,
        mut errors,
        removed,
    } = read;
    let Some((object, result)) = object else {
        return Err(errors.into());
    };
    let names = match author {
        Author::Operator => validate::operator_input(object.metadata(), object.engine()),
        Author::Jackin => Ok(()),
    };
    // A rule broken by what the reading removed (a default standing in for
    // a bad value) is not the file's: the file's own error says it.
    let semantic: Vec<FieldError> = [result, names]
        .into_iter()
        .filter_map(Result::err)
        .flatten()
        .filter(|e| !removed.iter().any(|r| within(&e.path, r)))
        .collect();
    errors.extend(locate(source, doc, semantic));
    if errors.is_empty() {
        return Ok(Some(object));
    }
    // In the file's order, whichever pass found them.
    errors.sort_by_key(|e| (e.line, e.column));
    Err(Faults {
        errors,
        partial: Some(object),
    })
}

/// What reading a document into its type gave: the object and its
/// semantic check, when it could be read (with the bad values removed);
/// every error the reading met; the fields it removed to go on.
struct Read<T> {
    object: Option<T>,
    errors: Vec<ManifestError>,
    removed: Vec<String>,
}

/// The most errors of the types' own (unknown fields, bad values) read in
/// one document: the reading starts again after each.
const MAX_TYPE_ERRORS: usize = 64;

/// The most text read again to find a document's further errors (as
/// much as the largest file jackin reads): a huge document with many
/// errors costs a few readings, not 64.
const MAX_REREAD_BYTES: usize = 16 << 20;

/// Reads `doc` into `T` and hands it to `then`; on an error, keeps reading
/// so that one run reports every error of the document, not the first:
/// the field at fault is removed from a copy of the document, which is
/// read again, until it reads or an error leaves nothing to remove (a
/// required field missing, a value with no field path). Every error is
/// placed in the file as it is. The first reading is of the file's own
/// text; the later ones of the copy, written out again as YAML.
fn typed_all<T, R>(source: &str, doc: &Document, then: impl FnOnce(T) -> R) -> Read<R>
where
    T: for<'de> Deserialize<'de>,
{
    let mut read = Read {
        object: None,
        errors: Vec::new(),
        removed: Vec::new(),
    };
    let mut first = match typed::<T>(source, doc) {
        Ok(obj) => {
            read.object = Some(then(obj));
            return read;
        }
        Err(mut errors) => errors.remove(0),
    };
    let (Ok(mut copy), Ok(Some(tree))) = (
        serde_saphyr::from_str::<serde_json::Value>(&doc.text),
        serde_saphyr::from_str::<Option<Spanned<Node>>>(&doc.text),
    ) else {
        read.errors.push(first);
        return read;
    };
    // The parser places an unknown field at its key; so does the tree.
    if let Some(field) = &first.field
        && first.message.starts_with("unknown field")
    {
        let (line, column) = tree.lookup_key(field);
        (first.line, first.column) = (doc.file_line(line), column);
    }
    // A missing field has no value to remove.
    let mut at_fault = first
        .field
        .clone()
        .filter(|_| !first.message.starts_with("missing field"));
    read.errors.push(first);
    let mut reread = 0;
    while let Some(field) = at_fault.take() {
        if read.errors.len() >= MAX_TYPE_ERRORS || !remove_at(&mut copy, &field) {
            break;
        }
        read.removed.push(field);
        let Ok(text) = serde_saphyr::to_string(&copy) else {
            break;
        };
        reread += text.len();
        if reread > MAX_REREAD_BYTES {
            break;
        }
        let mut path = None;
        let again = serde_saphyr::with_deserializer_from_str(&text, |de| {
            serde_path_to_error::deserialize::<_, T>(de).map_err(|e| {
                let p = e.path().to_string();
                if p != "." && !p.ends_with('?') {
                    path = Some(p);
                }
                e.into_inner()
            })
        });
        let err = match again {
            Ok(obj) => {
                read.object = Some(then(obj));
                break;
            }
            Err(err) => err,
        };
        let message = without_location(&err);
        // A field removed to go on that the type needs: said already.
        let (Some(field), false) = (path, message.starts_with("missing field")) else {
            break;
        };
        if read.removed.iter().any(|r| within(&field, r)) {
            break;
        }
        let (line, column) = if message.starts_with("unknown field") {
            tree.lookup_key(&field)
        } else {
            tree.lookup(&field)
        };
        read.errors.push(ManifestError {
            source: source.to_owned(),
            line: doc.file_line(line),
            column,
            field: Some(field.clone()),
            message,
        });
        at_fault = Some(field);
    }
    read
}

/// Whether the field `path` is `field` or lies within it.
fn within(path: &str, field: &str) -> bool {
    path.strip_prefix(field)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// Removes the map entry at `path` (as `serde_path_to_error` writes it)
/// from `value`; `false` when there is none. An item of a list is never
/// removed: the items after it would change their index, and so the path
/// their errors are reported at.
fn remove_at(value: &mut serde_json::Value, path: &str) -> bool {
    let path = path.strip_prefix('.').unwrap_or(path);
    match value {
        serde_json::Value::Object(map) => {
            // Keys may contain dots (label keys): the longest that fits.
            let Some(key) = map
                .keys()
                .filter(|k| within(path, k))
                .max_by_key(|k| k.len())
                .cloned()
            else {
                return false;
            };
            let rest = &path[key.len()..];
            if rest.is_empty() {
                return map.remove(&key).is_some();
            }
            map.get_mut(&key)
                .is_some_and(|child| remove_at(child, rest))
        }
        serde_json::Value::Array(items) => {
            let Some((index, rest)) = path
                .strip_prefix('[')
                .and_then(|rest| rest.split_once(']'))
                .and_then(|(i, rest)| Some((i.parse::<usize>().ok()?, rest)))
            else {
                return false;
            };
            !rest.is_empty()
                && items
                    .get_mut(index)
                    .is_some_and(|item| remove_at(item, rest))
        }
        _ => false,
    }
}

/// The parser's message, without the position it appends (we print our
/// own in front).
fn without_location(err: &serde_saphyr::Error) -> String {
    let message = err.without_snippet().to_string();
    let message = match err.location() {
        Some(l) => {
            let suffix = format!(" at line {}, column {}", l.line(), l.column());
            message
                .strip_suffix(&suffix)
                .map_or(message.clone(), str::to_owned)
        }
        None => message,
    };
    // The parser names the Rust type a scalar did not fit (`invalid u32`):
    // said here as what the field expects.
    match message.strip_prefix("invalid ").and_then(expected_scalar) {
        Some(expected) => expected.to_owned(),
        None => crate::suggest::unknown_name_explained(message),
    }
}

/// What a field of Rust type `ty` expects, in the operator's words; `None`
/// for what is not a scalar type's name.
fn expected_scalar(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "expected a whole number (0 or more)",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "expected a whole number",
        "f32" | "f64" => "expected a number",
        "bool" => "expected true or false",
        "char" => "expected a single character",
        _ => return None,
    })
}

/// Deserializes into `T`, tracking the field path for the error.
fn typed<T: for<'de> Deserialize<'de>>(
    source: &str,
    doc: &Document,
) -> Result<T, Vec<ManifestError>> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str(&doc.text, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            let p = e.path().to_string();
            // `?` marks a position serde could not name, `.` the root.
            if p != "." && !p.ends_with('?') {
                path = Some(p);
            }
            e.into_inner()
        })
    })
    .map_err(|e| vec![yaml_error(source, doc, path, &e)])
}

fn yaml_error(
    source: &str,
    doc: &Document,
    field: Option<String>,
    err: &serde_saphyr::Error,
) -> ManifestError {
    let (line, column) = err
        .location()
        .map(|l| (l.line() as usize, l.column() as usize))
        .unwrap_or((0, 0));
    ManifestError {
        source: source.to_owned(),
        line: doc.file_line(line),
        column,
        field,
        message: without_location(err),
    }
}

fn locate(source: &str, doc: &Document, errors: Vec<FieldError>) -> Vec<ManifestError> {
    if errors.is_empty() {
        return Vec::new();
    }
    let tree: Option<Spanned<Node>> = serde_saphyr::from_str(&doc.text).ok();
    errors
        .into_iter()
        .map(|e| {
            let (line, column) = tree
                .as_ref()
                .map(|t| t.lookup(&e.path))
                .map(|(line, column)| (doc.file_line(line), column))
                .unwrap_or((doc.first_line, 1));
            ManifestError {
                source: source.to_owned(),
                line,
                column,
                field: Some(e.path),
                message: e.message,
            }
        })
        .collect()
}

/// A document's shape with the position of every value, used only to place
/// semantic errors.
enum Node {
    Leaf,
    /// Each entry's key, with its own position, and value.
    Map(Vec<(Spanned<String>, Spanned<Node>)>),
    Seq(Vec<Spanned<Node>>),
}

trait Lookup {
    /// Position of the deepest node along `path`.
    fn lookup(&self, path: &str) -> (usize, usize) {
        self.find(path, false)
    }

    /// As [`Lookup::lookup`], but when `path` ends at a map entry, the
    /// position of its key (where an unknown field is).
    fn lookup_key(&self, path: &str) -> (usize, usize) {
        self.find(path, true)
    }

    fn find(&self, path: &str, key: bool) -> (usize, usize);
}

fn position<T>(spanned: &Spanned<T>) -> (usize, usize) {
    (
        spanned.referenced.line() as usize,
        spanned.referenced.column() as usize,
    )
}

impl Lookup for Spanned<Node> {
    fn find(&self, path: &str, key: bool) -> (usize, usize) {
        let here = position(self);
        let path = path.strip_prefix('.').unwrap_or(path);
        if path.is_empty() {
            return here;
        }
        match &self.value {
            Node::Map(entries) => {
                // Keys may contain dots (label keys), so match the longest
                // key that is followed by a separator or ends the path.
                let found = entries
                    .iter()
                    .filter(|(k, _)| within(path, &k.value))
                    .max_by_key(|(k, _)| k.value.len());
                match found {
                    Some((k, _)) if key && path.len() == k.value.len() => position(k),
                    Some((k, child)) => child.find(&path[k.value.len()..], key),
                    None => here,
                }
            }
            Node::Seq(items) => {
                let index = path
                    .strip_prefix('[')
                    .and_then(|rest| rest.split_once(']'))
                    .and_then(|(i, rest)| Some((i.parse::<usize>().ok()?, rest)));
                match index.and_then(|(i, rest)| Some((items.get(i)?, rest))) {
                    Some((child, rest)) => child.find(rest, key),
                    None => here,
                }
            }
            Node::Leaf => here,
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_none<E: de::Error>(self) -> Result<Node, E> {
                Ok(Node::Leaf)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Node, D::Error> {
                Node::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(Node::Map(entries))
            }
        }
        deserializer.deserialize_any(NodeVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Beside the errors, what could be read: the good documents whole,
    /// and a faulty one without its fields at fault, for the checks that
    /// find the rest of its errors.
    #[test]
    fn a_stream_with_errors_still_gives_what_could_be_read() {
        let good = "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: good}\n\
                    spec: {role: {name: r}, image: i, agent: cluade}\n";
        let bad = good
            .replace("name: good", "name: bad")
            .replace("image: i", "image: i, phase: Runing");
        let text = format!("{good}---\n{bad}");
        let read = parse_unless_partly("f.yaml", &text, |_| Err::<(), ()>(()));
        assert_eq!(read.errors.len(), 1, "{:?}", read.errors);
        assert_eq!(read.parsed.len(), 1);
        let faulty: Vec<&str> = read.faulty.iter().map(Object::name).collect();
        assert_eq!(faulty, ["bad"]);
        assert!(parse_unless("f.yaml", &text, |_| Err::<(), ()>(())).is_err());
    }

    /// Splitting costs one pass: the documents together are no larger than
    /// the stream (plus a marker line each), however many there are.
    #[test]
    fn splitting_is_linear_in_the_stream() {
        let doc = "kind: Workspace\n";
        let text = format!("---\n{doc}").repeat(2_000);
        let docs = split_documents(&text);
        assert_eq!(docs.len(), 2_000);
        let total: usize = docs.iter().map(|d| d.text.len()).sum();
        assert!(
            total <= text.len() + docs.len(),
            "{total} bytes for {}",
            text.len()
        );
        assert_eq!(docs[1999].first_line, 4_000);
        assert_eq!(docs[1999].file_line(2), 4_000);
        // Empty documents cost nothing at all.
        assert!(split_documents(&"---\n".repeat(100_000)).is_empty());
    }

    #[test]
    fn a_list_as_get_prints_it_reads_as_its_items() {
        let list = r#"{"apiVersion": "v1", "kind": "List", "items": [
          {"apiVersion": "jackin.dev/v1alpha1", "kind": "Workspace", "metadata": {"name": "w"},
           "spec": {}},
          {"apiVersion": "jackin.dev/v1alpha1", "kind": "Instance", "metadata": {"name": "i"},
           "spec": {"role": {"name": "r"}, "agent": "claude", "image": "x:1"},
           "status": {"phase": "Running"}}
        ]}"#;
        let objects = parse("list.json", list).unwrap();
        let names: Vec<(&str, &str)> = objects.iter().map(|o| (o.kind(), o.name())).collect();
        assert_eq!(names, [("Workspace", "w"), ("Instance", "i")]);
        let bad = list.replace(r#""image": "x:1""#, r#""image": "x 1""#);
        let errors = parse("list.json", &bad).unwrap_err();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].field.as_deref(),
            Some("items[1].spec.image"),
            "{}",
            errors[0]
        );
        assert_eq!(errors[0].line, 1);
    }

    const INSTANCE: &str = "\
apiVersion: jackin.dev/v1alpha1
kind: Instance
metadata:
  name: architect-1
spec:
  role: {name: the-architect}
  agent: claude
  image: jackin/test:1
";

    fn one_error(text: &str) -> ManifestError {
        let mut errors = parse("f.yaml", text).expect_err("accepted bad input");
        assert_eq!(errors.len(), 1, "{errors:?}");
        errors.remove(0)
    }

    /// A word where a number belongs says what the field expects, at its
    /// place, not the Rust type it did not fit.
    #[test]
    fn a_word_for_a_number_says_a_whole_number_is_expected() {
        let text = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: w}\n\
                    spec:\n  keep:\n    max: three\n";
        let err = one_error(text);
        assert_eq!(
            err.to_string(),
            "f.yaml:6:10: field `spec.keep.max`: expected a whole number (0 or more)"
        );
    }

    #[test]
    fn multiple_documents_and_empty_ones() {
        let text = format!(
            "# leading comment\n---\n{INSTANCE}---\n# only a comment\n---\n{}",
            INSTANCE.replace("architect-1", "architect-2")
        );
        let objects = parse("f.yaml", &text).unwrap();
        let names: Vec<_> = objects.iter().map(Object::name).collect();
        assert_eq!(names, ["architect-1", "architect-2"]);
    }

    #[test]
    fn unknown_field_names_line_column_and_path() {
        let text = INSTANCE.replace("  agent: claude\n", "  agent: claude\n  agnet: codex\n");
        let err = one_error(&text);
        assert_eq!((err.line, err.column), (8, 3));
        assert_eq!(err.field.as_deref(), Some("spec.agnet"));
        assert!(err.message.contains("unknown field `agnet`"), "{err}");
    }

    #[test]
    fn unknown_phase_lists_the_choices() {
        let text = INSTANCE.replace("  agent: claude\n", "  agent: claude\n  phase: Paused\n");
        let err = one_error(&text);
        assert_eq!((err.line, err.column), (8, 10));
        assert_eq!(err.field.as_deref(), Some("spec.phase"));
        assert!(err.message.contains("Running, Kept, Purged"), "{err}");
    }

    #[test]
    fn a_known_document_is_not_read_and_the_others_keep_their_places() {
        let bad = INSTANCE
            .replace("name: architect-1", "name: ../x")
            .replace("architect-1", "architect-3");
        let second = INSTANCE.replace("architect-1", "architect-2");
        let text = format!("{INSTANCE}---\n{second}---\n{bad}");
        let mut shown = Vec::new();
        let known = |doc: &str| {
            shown.push(doc.contains("architect-2"));
            if doc.contains("architect-2") {
                Ok("two")
            } else {
                Err(doc.len())
            }
        };
        let errors = parse_unless("f.yaml", &text, known).expect_err("accepted bad input");
        // Every document is shown once, and the error of the third is where
        // `parse` puts it, the second one skipped or not.
        assert_eq!(shown, [false, true, false]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        let placed = parse("f.yaml", &text).expect_err("accepted bad input");
        assert_eq!(
            (errors[0].line, errors[0].column),
            (placed[0].line, placed[0].column)
        );
        assert_eq!((errors[0].line, errors[0].column), (22, 9));

        let good = format!("{INSTANCE}---\n{second}");
        let read = parse_unless("f.yaml", &good, |doc| match doc.contains("architect-2") {
            true => Ok("two"),
            false => Err(doc.len()),
        })
        .unwrap();
        assert!(matches!(&read[0], Parsed::Read(obj, Some(len))
            if obj.name() == "architect-1" && *len == INSTANCE.len()));
        assert!(matches!(read[1], Parsed::Known("two")));
    }

    #[test]
    fn semantic_errors_are_located_in_later_documents() {
        let bad = INSTANCE.replace("name: architect-1", "name: ../x");
        let text = format!("{INSTANCE}---\n{bad}");
        let err = one_error(&text);
        assert_eq!((err.line, err.column), (13, 9));
        assert_eq!(err.field.as_deref(), Some("metadata.name"));
        assert_eq!(
            err.to_string(),
            format!("f.yaml:13:9: field `metadata.name`: {}", err.message)
        );
    }

    #[test]
    fn duplicate_mount_destination_points_at_the_second() {
        let text =
            format!("{INSTANCE}  mounts:\n  - {{src: /a, dst: /w}}\n  - src: /b\n    dst: /w\n");
        let err = one_error(&text);
        assert_eq!((err.line, err.column), (12, 10));
        assert_eq!(err.field.as_deref(), Some("spec.mounts[1].dst"));
    }

    /// One run reports every error of a document, each at its place:
    /// the types' own (read again after each) and the semantic ones.
    #[test]
    fn every_error_of_a_document_is_reported_in_one_run() {
        let text = INSTANCE
            .replace("name: architect-1", "name: ../x")
            .replace(
                "  agent: claude\n",
                "  agent: claude\n  agnet: codex\n  phase: Paused\n  mounts:\n  - {src: /a, dst: /w, isolaton: clone}\n",
            );
        let errors = parse("f.yaml", &text).expect_err("accepted three typos");
        let found: Vec<(usize, usize, Option<&str>)> = errors
            .iter()
            .map(|e| (e.line, e.column, e.field.as_deref()))
            .collect();
        assert_eq!(
            found,
            [
                (4, 9, Some("metadata.name")),
                (8, 3, Some("spec.agnet")),
                (9, 10, Some("spec.phase")),
                (11, 24, Some("spec.mounts[0].isolaton")),
            ],
            "{errors:#?}"
        );
        assert!(
            errors[1].message.contains("unknown field `agnet`"),
            "{}",
            errors[1]
        );
        assert!(
            errors[2].message.contains("Running, Kept, Purged"),
            "{}",
            errors[2]
        );
        assert!(
            errors[3].message.contains("unknown field `isolaton`"),
            "{}",
            errors[3]
        );
        // The same document as the second of a file: placed in the file.
        let later = parse("f.yaml", &format!("{INSTANCE}---\n{text}")).unwrap_err();
        let lines: Vec<usize> = later.iter().map(|e| e.line).collect();
        assert_eq!(lines, [13, 17, 18, 20], "{later:#?}");
    }

    /// A bad value of a field the type cannot do without is reported with
    /// the other fields' errors, never as a made-up "missing field".
    #[test]
    fn a_bad_required_field_is_reported_once() {
        let text = INSTANCE.replace(
            "  role: {name: the-architect}\n",
            "  role: architect\n  agnet: x\n",
        );
        let errors = parse("f.yaml", &text).unwrap_err();
        assert_eq!(errors.len(), 2, "{errors:#?}");
        assert_eq!(errors[0].field.as_deref(), Some("spec.role"));
        assert_eq!(errors[1].field.as_deref(), Some("spec.agnet"));
        assert!(
            errors.iter().all(|e| !e.message.contains("missing field")),
            "{errors:#?}"
        );
    }

    #[test]
    fn broken_yaml_is_located() {
        let err = one_error("kind: Instance\nspec: [unclosed\n");
        assert_eq!((err.line, err.column), (2, 7), "{err}");
        assert!(err.message.contains("unclosed"), "{err}");
    }

    #[test]
    fn unknown_and_missing_kind() {
        let err = one_error(&INSTANCE.replace("kind: Instance", "kind: Pod"));
        assert_eq!((err.line, err.column), (2, 7));
        let err = one_error(&INSTANCE.replace("kind: Instance\n", ""));
        assert_eq!(err.line, 1);
        assert!(err.message.contains("missing field `kind`"));
    }

    #[test]
    fn label_keys_with_dots_are_located() {
        let text = INSTANCE.replace(
            "  name: architect-1\n",
            "  name: architect-1\n  labels:\n    jackin.dev/a b: x\n",
        );
        let err = one_error(&text);
        assert_eq!(err.field.as_deref(), Some("metadata.labels.jackin.dev/a b"));
        assert_eq!((err.line, err.column), (6, 21));
    }

    #[test]
    fn a_reserved_name_is_refused_at_its_place_but_kept_in_a_stored_object() {
        let text = INSTANCE.replace(
            "  name: architect-1\n",
            "  name: architect-1\n  labels:\n    jackin.dev/source: src-1\n",
        );
        let err = one_error(&text);
        assert_eq!(
            err.field.as_deref(),
            Some("metadata.labels.jackin.dev/source")
        );
        assert_eq!((err.line, err.column), (6, 24));
        assert!(err.message.contains("reserved"), "{err}");
        let stored = parse_stored("instance.yaml", &text).unwrap();
        assert_eq!(stored[0].metadata().labels["jackin.dev/source"], "src-1");
    }

    /// F6: a label an operator applies is one `-l` can select; an escape
    /// in its value is refused at its place, and shown escaped. A stored
    /// object keeps a label an older jackin accepted, so it stays readable.
    #[test]
    fn f6_a_label_value_with_an_escape_is_refused_at_apply() {
        let text = INSTANCE.replace(
            "  name: architect-1\n",
            "  name: architect-1\n  labels:\n    team: \"\\e[31m\"\n",
        );
        let err = one_error(&text);
        assert_eq!(err.field.as_deref(), Some("metadata.labels.team"));
        assert_eq!(err.line, 6);
        assert!(err.message.contains("not a label value"), "{err}");
        assert!(err.message.contains("-l"), "{err}");
        assert!(!err.to_string().contains('\u{1b}'), "{err}");
        let stored = parse_stored("instance.yaml", &text).unwrap();
        assert_eq!(stored[0].metadata().labels["team"], "\u{1b}[31m");
        for bad_key in ["-team", "Team.X/y", "t/u/v"] {
            let text = INSTANCE.replace(
                "  name: architect-1\n",
                &format!("  name: architect-1\n  labels:\n    {bad_key:?}: x\n"),
            );
            assert!(parse("i.yaml", &text).is_err(), "{bad_key}");
        }
    }

    /// A document read in one pass (its kind first) and the same read with
    /// care (its kind last) give the same object, scalars and all.
    #[test]
    fn one_pass_reads_as_the_careful_reading_does() {
        let text = format!("{INSTANCE}  command: [sleep, 3600, yes, 1.0, \"~\"]\n");
        let once = parse("f.yaml", &text).unwrap();
        let kind_last = format!("{}kind: Instance\n", text.replace("kind: Instance\n", ""));
        assert!(
            read_once(&kind_last, Author::Operator).is_none(),
            "a kind after the content is read with care"
        );
        let careful = parse("f.yaml", &kind_last).unwrap();
        assert_eq!(once, careful);
        let Object::Instance(i) = &once[0] else {
            panic!("not an instance")
        };
        assert_eq!(
            i.spec.command.as_deref(),
            Some(&["sleep", "3600", "yes", "1.0", "~"].map(String::from)[..])
        );
        assert!(matches!(
            read_once(&text, Author::Operator),
            Some(OnePass::Object(_))
        ));
    }

    /// A key given twice is an error at its place, whichever reading
    /// meets it.
    #[test]
    fn a_key_given_twice_is_refused_at_its_place() {
        let in_spec = INSTANCE.replace("  agent: claude\n", "  agent: claude\n  agent: codex\n");
        let err = one_error(&in_spec);
        assert_eq!(err.line, 8, "{err}");
        assert!(err.message.contains("duplicate"), "{err}");
        let kind_twice = INSTANCE.replace("kind: Instance\n", "kind: Instance\nkind: Instance\n");
        let err = one_error(&kind_twice);
        assert_eq!(err.line, 3, "{err}");
        assert!(err.message.contains("duplicate"), "{err}");
    }

    /// A lone carriage return ends a line, as YAML counts lines and so as
    /// the parser numbers them (found by `properties`): a `---` after one
    /// starts a document, and an error in a later document is placed on
    /// the line the parser says, not on one of its own count.
    #[test]
    fn a_lone_carriage_return_ends_a_line() {
        let second = INSTANCE.replace("architect-1", "architect-2");
        let text = format!("{INSTANCE}---\n{second}").replace('\n', "\r");
        let names: Vec<String> = parse("f.yaml", &text)
            .unwrap()
            .iter()
            .map(|o| o.name().to_owned())
            .collect();
        assert_eq!(names, ["architect-1", "architect-2"]);
        let bad = format!(
            "{INSTANCE}---\n{}",
            second.replace("kind: Instance", "kind: Pod")
        );
        let err = one_error(&bad.replace('\n', "\r"));
        assert_eq!((err.line, err.column), (11, 7), "{err}");
        let mixed = format!(
            "{}---\n{}",
            INSTANCE.replace('\n', "\r"),
            second.replace("kind: Instance", "kind: Pod")
        );
        let err = one_error(&mixed);
        assert_eq!((err.line, err.column), (11, 7), "{err}");
    }

    #[test]
    fn discard_is_an_alias_of_clean() {
        let text = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: w}\nspec: {exitPolicy: discard}\n";
        let Object::Workspace(ws) = &parse("w.yaml", text).unwrap()[0] else {
            panic!("not a workspace")
        };
        assert_eq!(ws.spec.exit_policy, crate::workspace::ExitPolicy::Clean);
    }
}

/// Properties of [`parse`]: what jackin renders reads back, in every shape
/// `jackin get` prints it, and any text gets errors that point inside it.
#[cfg(test)]
mod properties {
    use proptest::prelude::*;

    use super::*;
    use crate::env::EnvVar;
    use crate::instance::{DesiredPhase, InstanceSpec, RoleRef};
    use crate::meta::API_VERSION;
    use crate::workspace::{ExitPolicy, KeepPolicy, WorkspaceRole, WorkspaceSpec};

    /// Text of `min` to `max` characters, none a control one: what an
    /// argv element, a path or an id may hold (validation refuses others).
    fn no_control(min: usize, max: usize) -> impl Strategy<Value = String> {
        proptest::string::string_regex(&format!("[^\\p{{Cc}}]{{{min},{max}}}")).unwrap()
    }

    fn dns_label() -> impl Strategy<Value = String> {
        "[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?"
    }

    /// Labels `-l` can select (an optional DNS prefix of the operator's,
    /// never jackin's), and annotations with any value at all.
    fn metadata() -> impl Strategy<Value = ObjectMeta> {
        let prefix = proptest::option::of("[a-z0-9]{1,6}\\.example\\.com/");
        let name = "[A-Za-z0-9]([A-Za-z0-9._-]{0,10}[A-Za-z0-9])?";
        let label_key = (prefix.clone(), name).prop_map(|(p, n)| p.unwrap_or_default() + &n);
        let label_value = prop_oneof![Just(String::new()), name.prop_map(String::from)];
        let annotation_key = (prefix, name).prop_map(|(p, n)| p.unwrap_or_default() + &n);
        (
            dns_label(),
            proptest::collection::btree_map(label_key, label_value, 0..3),
            proptest::collection::btree_map(annotation_key, any::<String>(), 0..3),
        )
            .prop_map(|(name, labels, annotations)| ObjectMeta {
                name,
                labels,
                annotations,
                ..Default::default()
            })
    }

    /// A path in normal form: absolute, no `.`, `..` or empty part.
    fn normal_path() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            no_control(1, 8).prop_filter("a step", |p| !p.contains('/') && p != "." && p != ".."),
            1..4,
        )
        .prop_map(|parts| format!("/{}", parts.join("/")))
    }

    fn engine() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9][a-zA-Z0-9_.+-]{0,12}",
            (dns_label(), 1u32..=65_535).prop_map(|(host, port)| format!("tcp://{host}:{port}")),
        ]
    }

    fn instance() -> impl Strategy<Value = Object> {
        let command = proptest::collection::vec(no_control(0, 12), 1..4)
            .prop_filter("no program", |argv| !argv[0].is_empty());
        let env =
            proptest::collection::btree_map("[A-Za-z_][A-Za-z0-9_]{0,8}", "[^\u{0}]{0,16}", 0..3)
                .prop_map(|vars| {
                    vars.into_iter()
                        .map(|(name, value)| EnvVar {
                            name,
                            value: Some(value),
                            value_from: None,
                        })
                        .collect()
                });
        let spec = (
            (
                proptest::sample::select(DesiredPhase::ALL.to_vec()),
                dns_label(),
                dns_label(),
            ),
            "[a-z0-9][a-z0-9./:@_-]{0,30}",
            proptest::option::of(command),
            (any::<bool>(), proptest::option::of(no_control(1, 40))),
            (
                proptest::option::of(engine()),
                proptest::option::of(normal_path()),
            ),
            env,
        )
            .prop_map(
                |((phase, role, agent), image, command, (resume, id), (engine, dir), env)| {
                    InstanceSpec {
                        phase,
                        role: RoleRef {
                            name: role,
                            source: None,
                        },
                        agent,
                        image: Some(image),
                        command,
                        resume,
                        conversation_id: id,
                        engine,
                        working_dir: dir,
                        env,
                        ..Default::default()
                    }
                },
            );
        (metadata(), spec).prop_map(|(metadata, spec)| {
            Object::Instance(Box::new(Instance {
                api_version: API_VERSION.into(),
                kind: Instance::KIND.into(),
                metadata,
                spec,
                status: None,
            }))
        })
    }

    fn workspace() -> impl Strategy<Value = Object> {
        let policy =
            proptest::sample::select(vec![ExitPolicy::Ask, ExitPolicy::Keep, ExitPolicy::Clean]);
        let roles =
            proptest::collection::btree_map(dns_label(), "[a-z0-9][a-z0-9./:@_-]{0,20}", 0..3)
                .prop_map(|roles| {
                    roles
                        .into_iter()
                        .map(|(name, image)| WorkspaceRole {
                            name,
                            source: None,
                            image: Some(image),
                        })
                        .collect()
                });
        let spec = (
            (policy, proptest::option::of(any::<u32>()), roles),
            (
                proptest::option::of(engine()),
                proptest::option::of(normal_path()),
            ),
            proptest::collection::btree_map(any::<String>(), any::<bool>(), 0..3),
            (
                proptest::option::of(any::<bool>()),
                proptest::option::of("[1-9][0-9]?[smh]"),
            ),
        )
            .prop_map(
                |((exit_policy, max, roles), (engine, dir), settings, (save, after))| {
                    WorkspaceSpec {
                        exit_policy,
                        keep: KeepPolicy { max },
                        roles,
                        engine,
                        working_dir: dir,
                        agent_settings: settings,
                        save_conversations: save,
                        needs_you_after: after,
                        ..Default::default()
                    }
                },
            );
        (metadata(), spec).prop_map(|(metadata, spec)| {
            Object::Workspace(Box::new(Workspace {
                api_version: API_VERSION.into(),
                kind: Workspace::KIND.into(),
                metadata,
                spec,
            }))
        })
    }

    fn object() -> impl Strategy<Value = Object> {
        prop_oneof![instance(), workspace()]
    }

    /// The rules an object breaks, as an apply checks them.
    fn broken_rules(obj: &Object) -> Vec<FieldError> {
        let checked = match obj {
            Object::Instance(i) => validate::instance(i),
            Object::Workspace(w) => validate::workspace(w),
            Object::Agent(a) => validate::agent(a),
        };
        let names = validate::operator_input(obj.metadata(), obj.engine());
        [checked, names]
            .into_iter()
            .filter_map(Result::err)
            .flatten()
            .collect()
    }

    fn to_value(obj: &Object) -> serde_json::Value {
        match obj {
            Object::Instance(i) => serde_json::to_value(i),
            Object::Workspace(w) => serde_json::to_value(w),
            Object::Agent(a) => serde_json::to_value(a),
        }
        .unwrap()
    }

    fn to_yaml(obj: &Object) -> String {
        match obj {
            Object::Instance(i) => serde_saphyr::to_string(i),
            Object::Workspace(w) => serde_saphyr::to_string(w),
            Object::Agent(a) => serde_saphyr::to_string(a),
        }
        .unwrap()
    }

    /// The document with its `kind` last, as an operator may write it:
    /// read with care rather than in one pass.
    fn kind_last(obj: &Object) -> String {
        let mut value = to_value(obj);
        let kind = value.as_object_mut().unwrap().remove("kind").unwrap();
        let mut text = serde_saphyr::to_string(&value).unwrap();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text + &format!("kind: {}\n", kind.as_str().unwrap())
    }

    /// Documents as `jackin get -o yaml` joins them; with the file's line
    /// before each document.
    fn stream(docs: &[String]) -> (String, Vec<usize>) {
        let mut text = String::new();
        let mut offsets = Vec::new();
        for (i, doc) in docs.iter().enumerate() {
            if i > 0 {
                text.push_str("---\n");
            }
            offsets.push(text.lines().count());
            text.push_str(doc);
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
        (text, offsets)
    }

    /// An invalid value for a field every object of its kind has or can
    /// have, the field's path, and the value as it is written.
    fn broken(obj: &mut Object, which: prop::sample::Index) -> (&'static str, &'static str) {
        match obj {
            Object::Instance(i) => {
                let choices = [
                    ("metadata.name", "Not_A_Name"),
                    ("spec.workingDir", "relative/dir"),
                    ("spec.agent", "no agent"),
                    ("spec.image", "-image"),
                ];
                let (path, value) = choices[which.index(choices.len())];
                match path {
                    "metadata.name" => i.metadata.name = value.into(),
                    "spec.workingDir" => i.spec.working_dir = Some(value.into()),
                    "spec.agent" => i.spec.agent = value.into(),
                    _ => i.spec.image = Some(value.into()),
                }
                (path, value)
            }
            Object::Workspace(w) => {
                let choices = [
                    ("metadata.name", "Not_A_Name"),
                    ("spec.workingDir", "relative/dir"),
                    ("spec.needsYouAfter", "0s"),
                    ("spec.provider", "No_Provider"),
                ];
                let (path, value) = choices[which.index(choices.len())];
                match path {
                    "metadata.name" => w.metadata.name = value.into(),
                    "spec.workingDir" => w.spec.working_dir = Some(value.into()),
                    "spec.needsYouAfter" => w.spec.needs_you_after = Some(value.into()),
                    _ => w.spec.provider = Some(value.into()),
                }
                (path, value)
            }
            Object::Agent(_) => unreachable!("no agents are made here"),
        }
    }

    /// The text of `line` (1-based) of `text` from `column` (1-based, in
    /// characters) on.
    fn at(text: &str, line: usize, column: usize) -> String {
        let line = text.lines().nth(line - 1).unwrap_or_default();
        line.chars().skip(column - 1).collect()
    }

    /// Text a manifest may be, or be near: any text, YAML's own marks and
    /// words, and a valid manifest edited at random (text put in, taken
    /// out, lines swapped), which the careful reading's errors come from.
    fn near_manifest() -> impl Strategy<Value = String> {
        let token = prop_oneof![
            proptest::sample::select(vec![
                "---",
                "...",
                ": ",
                "- ",
                "\n",
                "\n  ",
                "\r\n",
                "\r",
                "\t",
                "#",
                "{",
                "}",
                "[",
                "]",
                ",",
                "\"",
                "'",
                "&a ",
                "*a",
                "!!str ",
                "? ",
                "|\n",
                ">-\n",
                "kind",
                "Instance",
                "Workspace",
                "Agent",
                "List",
                "items",
                "spec",
                "metadata",
                "name",
                "apiVersion",
                "jackin.dev/v1alpha1",
                "~",
                "null",
                "0x1F",
                "-.inf",
                "\u{feff}",
                "\u{85}",
                "\u{2028}",
            ])
            .prop_map(str::to_owned),
            "[a-z0-9 ]{1,6}",
            any::<char>().prop_map(String::from),
        ];
        let soup = proptest::collection::vec(token, 0..40).prop_map(|t| t.concat());
        let edited = (
            proptest::collection::vec(object(), 1..3),
            any::<prop::sample::Index>(),
            any::<prop::sample::Index>(),
            prop_oneof![
                proptest::collection::vec(any::<char>(), 0..4)
                    .prop_map(|c| c.into_iter().collect()),
                "[:\\-#{}\\[\\]\"' \n]{1,3}",
            ],
        )
            .prop_map(|(objects, from, to, put)| {
                let docs: Vec<String> = objects.iter().map(to_yaml).collect();
                let chars: Vec<char> = stream(&docs).0.chars().collect();
                let (from, to) = (from.index(chars.len() + 1), to.index(chars.len() + 1));
                let (from, to) = (from.min(to), from.max(to).min(from + 8));
                let mut edited: String = chars[..from].iter().collect();
                edited.push_str(&put);
                edited.extend(&chars[to..]);
                edited
            });
        prop_oneof![any::<String>(), soup, edited]
    }

    /// A failing case is not saved to a file beside the source: the shrunk
    /// input it prints is made a named example test instead, which says why
    /// it matters (and CI's clean clone would lose the file anyway).
    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    proptest! {
        // Each case reads up to three whole objects, some twice over (the
        // careful reading, the errors'): 64 cases keep these near a second
        // each on two shared cores.
        #![proptest_config(ProptestConfig { cases: 64, ..config() })]

        /// Valid objects, as `jackin get -o yaml` prints them (documents
        /// joined by `---`), read back as themselves, kind first or last,
        /// and whatever a file's line ends (`\r\n`, or a lone `\r`).
        #[test]
        fn objects_as_get_prints_them_read_back(
            objects in proptest::collection::vec((object(), any::<bool>()), 1..4),
            line_end in proptest::sample::select(vec!["\n", "\r\n", "\r"]),
        ) {
            let docs: Vec<String> = objects
                .iter()
                .map(|(obj, last)| match last {
                    true => kind_last(obj),
                    false => to_yaml(obj),
                })
                .collect();
            let text = stream(&docs).0.replace('\n', line_end);
            let objects: Vec<Object> = objects.into_iter().map(|(obj, _)| obj).collect();
            for obj in &objects {
                prop_assert_eq!(broken_rules(obj), vec![], "made invalid: {:?}", obj);
            }
            let read = parse("f.yaml", &text);
            prop_assert_eq!(read.as_ref(), Ok(&objects), "{}", text);
        }

        /// Valid objects as `jackin get -o json` prints them (one as
        /// itself, several as a `List`) read back as themselves.
        #[test]
        fn objects_as_get_prints_them_in_json_read_back(
            objects in proptest::collection::vec(object(), 1..4),
        ) {
            let values: Vec<serde_json::Value> = objects.iter().map(to_value).collect();
            let text = match values.as_slice() {
                [one] => serde_json::to_string_pretty(one),
                _ => serde_json::to_string_pretty(
                    &serde_json::json!({"apiVersion": "v1", "kind": "List", "items": values}),
                ),
            }
            .unwrap();
            // serde_json writes DEL and the C1 controls raw in a string, as
            // JSON allows, and serde-saphyr 2.2 refuses them there (YAML
            // 1.2 takes them in a quoted scalar): such a value, printed by
            // `get -o json`, does not apply back. Left out here until the
            // output escapes them or the parser takes them.
            prop_assume!(!text.contains(|c| ('\u{7f}'..='\u{9f}').contains(&c)));
            prop_assert_eq!(parse("f.json", &text), Ok(objects));
        }

        /// A field no kind has is named, at its key, in whichever document
        /// of the file it is, however the document is read.
        #[test]
        fn an_unknown_field_is_named_at_its_key(
            objects in proptest::collection::vec(object(), 1..4),
            target in any::<prop::sample::Index>(),
            section in proptest::sample::select(vec!["metadata", "spec"]),
            key in "zz[a-zA-Z]{0,8}",
            kind_first in any::<bool>(),
        ) {
            let target = target.index(objects.len());
            let mut docs: Vec<String> = objects.iter().map(to_yaml).collect();
            if !kind_first {
                docs[target] = kind_last(&objects[target]);
            }
            let mut lines: Vec<String> = docs[target].lines().map(str::to_owned).collect();
            let below = lines.iter().position(|l| *l == format!("{section}:")).unwrap() + 1;
            lines.insert(below, format!("  {key}: x"));
            docs[target] = lines.join("\n") + "\n";
            let (text, offsets) = stream(&docs);
            let errors = parse("f.yaml", &text).unwrap_err();
            prop_assert_eq!(errors.len(), 1, "{:?}\n{}", errors, text);
            let err = &errors[0];
            prop_assert_eq!(err.field.clone(), Some(format!("{section}.{key}")));
            prop_assert!(err.message.contains("unknown field"), "{}", err);
            prop_assert_eq!((err.line, err.column), (offsets[target] + below + 1, 3), "{}", text);
        }

        /// A value an object may not have is named by its field and placed
        /// at the value, in whichever document it is.
        #[test]
        fn a_bad_value_is_named_at_its_place(
            mut objects in proptest::collection::vec(object(), 1..4),
            target in any::<prop::sample::Index>(),
            which in any::<prop::sample::Index>(),
            kind_first in any::<bool>(),
        ) {
            let target = target.index(objects.len());
            let (path, value) = broken(&mut objects[target], which);
            let docs: Vec<String> = objects
                .iter()
                .enumerate()
                .map(|(i, obj)| match i == target && !kind_first {
                    true => kind_last(obj),
                    false => to_yaml(obj),
                })
                .collect();
            let (text, offsets) = stream(&docs);
            let errors = parse("f.yaml", &text).unwrap_err();
            prop_assert_eq!(errors.len(), 1, "{:?}\n{}", errors, text);
            let err = &errors[0];
            prop_assert_eq!(err.field.as_deref(), Some(path));
            let doc_lines = offsets[target]..offsets[target] + docs[target].lines().count() + 1;
            prop_assert!(doc_lines.contains(&err.line), "{} not in {:?}", err, doc_lines);
            let there = at(&text, err.line, err.column);
            prop_assert!(
                there.trim_start_matches(['"', '\'']).starts_with(value),
                "{} points at {:?}", err, there
            );
        }

    }

    proptest! {
        #![proptest_config(config())]

        /// YAML's lines are `str::lines` where no `\r` stands alone, and
        /// a lone `\r` ends one as `\n` does.
        #[test]
        fn yaml_lines_end_where_yaml_ends_them(text in "[a\r\n]{0,12}") {
            let yaml: Vec<&str> = yaml_lines(&text).collect();
            let lone = text.replace("\r\n", "").contains('\r');
            if !lone {
                prop_assert_eq!(&yaml, &text.lines().collect::<Vec<_>>());
            }
            let as_lf = text.replace("\r\n", "\n").replace('\r', "\n");
            prop_assert_eq!(yaml, as_lf.lines().collect::<Vec<_>>());
        }

        /// Any text is read without a panic, and every error it gets
        /// names the file and points inside it: a line of the file (lines
        /// end as YAML ends them, a lone `\r` too), a column of that line
        /// or just past its end, or the end of the text, where an unclosed
        /// bracket or quote is found (or, where the parser knows no place,
        /// 0:0).
        #[test]
        fn every_error_points_inside_the_text(text in near_manifest()) {
            // The end of the text as the start of a line after it, as
            // when the text ends with a line break.
            let breaks = text.replace("\r\n", "\n") + "\n";
            let lines: Vec<&str> = breaks.split(['\r', '\n']).collect();
            let Err(errors) = parse("f.yaml", &text) else {
                return Ok(());
            };
            prop_assert!(!errors.is_empty());
            for err in &errors {
                prop_assert_eq!(err.source.as_str(), "f.yaml");
                prop_assert!(err.field.as_ref().is_none_or(|f| !f.is_empty()), "{}", err);
                if (err.line, err.column) == (0, 0) {
                    continue;
                }
                let line = lines.get(err.line.wrapping_sub(1));
                let count = lines.len();
                prop_assert!(line.is_some(), "{} is past the {} lines of {:?}", err, count, text);
                let width = line.unwrap().chars().count();
                prop_assert!(
                    (1..=width + 1).contains(&err.column),
                    "{} is past the {} characters of its line in {:?}", err, width, text
                );
            }
        }
    }
}
