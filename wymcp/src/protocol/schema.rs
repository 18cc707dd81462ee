//! The official MCP JSON Schemas, embedded in the crate and compiled once.
//!
//! Each revision wymcp knows ships its schema file (`wymcp/schema/<rev>/schema.json`,
//! provenance in `wymcp/schema/SOURCE.md`). Every client request and client
//! notification the revision defines (the members of its `ClientRequest` and
//! `ClientNotification` definitions) gets its own compiled validator, keyed
//! by method and compiled on its first use: `tools/call` on 2026-07-28 is validated against
//! `#/$defs/CallToolRequest` alone, never against the whole `ClientRequest`
//! union, so a validation costs microseconds rather than a walk of every
//! alternative.
//!
//! Each method's definition is first compiled into wymcp's own check of the
//! JSON Schema subset the files use ([`Subset`]), asked before jsonschema and
//! trusted only when it says *valid*: a valid message never compiles or runs
//! jsonschema's validator of its method (issue 26 §1: that validator, its
//! compiler and its meta-schema validator were all of wymcp's RSS above
//! rmcp's). Every other message is judged, and its refusal worded, by
//! jsonschema as below; a test holds the subset to jsonschema over every
//! definition of every revision (see `protocol/subset.rs`).
//!
//! How a validator is built: a document of the definitions the method
//! reaches through `$ref` (and those a deviation patches) is put in a
//! [`jsonschema::Registry`] under a private URN, and the definition is
//! compiled from a one-line wrapper, `{"$schema": <the file's dialect>, "$ref":
//! "<urn>#/$defs/<Def>"}` (`definitions` and draft-07 for 2025-06-18; `$defs`
//! and 2020-12 for the later two), offline: nothing is ever fetched. The
//! document and registry are dropped once the validator is built; what
//! stays is the validator and the revision's index (its definitions as
//! slices of the embedded text). A test holds every method so compiled to
//! the same verdicts and errors as one compiled against the whole file.
//!
//! `format` (`uri`, `uri-template`, `byte`) is an annotation, never an
//! assertion, in every revision: that is 2020-12's default, and draft-07's
//! would otherwise differ, so 2025-06-18 is held to the same rule. The
//! official SDKs do not enforce these formats either; whether a URI names
//! something is the handler's to say (a resource not found), not the
//! schema's.
//!
//! Where the generated `schema.json` is stricter than the revision's
//! normative `schema.ts` on a message a client sends (a TypeScript `number`
//! generated as JSON `integer`, a `JSONValue` union without `null`), a
//! message the specification allows would be refused. Those places are
//! listed once, in [`DEVIATIONS`]: each is patched into the parsed document
//! before it is compiled, and the vendored files stay upstream's bytes. A
//! deviation whose pointer no longer finds the value it expects (a
//! re-vendored file that moved or fixed it) fails the compilation, so none
//! is skipped silently. `docs/schema.md` is their account for users.
//!
//! Why on first use: compiling every method of three revisions at
//! [`ServerBuilder::build`](crate::ServerBuilder::build) held 1.8 MB of heap
//! an idle server never used and touched jsonschema's compile code (issue
//! 26 §1: wymcp's RSS against rmcp's). The build reads only the index of
//! each served revision and checks its deviations (a file that fails them is
//! [`BuildError::Schema`](crate::BuildError::Schema)); a method is compiled
//! once per process, by the first message of it (concurrent ones wait for
//! that compile), and every [`Server`](crate::Server) of the process shares
//! the result through an [`Arc`]. A definition that does not compile (a bug
//! in wymcp; the shipped files are tested to compile, every method of every
//! revision) is logged once and its messages are answered 500/-32603,
//! never let through unvalidated.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::{Registry, ValidationError, Validator};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::revision::Revision;
use super::subset::{Formats, Subset};

/// Why the embedded schemas could not be compiled. This is a bug in wymcp,
/// never in the caller's configuration; it is reported rather than panicked.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the embedded MCP schema of {revision} could not be compiled: {reason}")]
pub struct SchemaError {
    revision: Revision,
    reason: String,
}

impl SchemaError {
    fn new(revision: Revision, reason: impl fmt::Display) -> Self {
        SchemaError {
            revision,
            reason: reason.to_string(),
        }
    }
}

/// The schema file of a revision, as embedded.
#[must_use]
pub(crate) const fn source(revision: Revision) -> &'static str {
    match revision {
        Revision::V2025_06_18 => include_str!("../../schema/2025-06-18/schema.json"),
        Revision::V2025_11_25 => include_str!("../../schema/2025-11-25/schema.json"),
        Revision::V2026_07_28 => include_str!("../../schema/2026-07-28/schema.json"),
    }
}

/// One place where wymcp validates against what a revision's `schema.ts`
/// says rather than what its generated `schema.json` says: the file is
/// stricter there, on a message a client sends, and would refuse what the
/// specification allows. See [`DEVIATIONS`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deviation {
    /// The revision whose file is patched.
    pub revision: Revision,
    /// The JSON pointer (RFC 6901) of the value replaced in the file.
    pub pointer: &'static str,
    /// The value the file holds there, as JSON text. Any other value (or
    /// none) fails the load: the file changed and the deviation must be
    /// reviewed against `schema.ts`.
    pub file: &'static str,
    /// What `schema.ts` says, as TypeScript.
    pub ts: &'static str,
    /// The value validated against instead, as JSON text.
    pub fix: &'static str,
}

/// Every place where the vendored `schema.json` is stricter than
/// `schema.ts` on a message a client sends and Validate holds to a schema
/// (a client request or notification, and for 2026-07-28 the results a
/// client carries back in `inputResponses`). Found by reading each file's
/// definitions reachable from `ClientRequest` and `ClientNotification`
/// against `schema.ts`; a test lists every `integer` that remains on that
/// path so a re-vendored file cannot add one unreviewed.
///
/// Kept stricter than `schema.ts` on purpose: `RequestId`
/// (`string | number`, generated `["string", "integer"]`). A request id is
/// echoed in the answer, JSON-RPC 2.0 says it SHOULD NOT have a fractional
/// part, and classification refuses a fractional id (400/-32600, `/id`)
/// before any schema is consulted; a `notifications/cancelled` naming one
/// names a request this server never accepted.
///
/// Not patched, because no message wymcp validates reaches it: the 2025
/// revisions' `ElicitResult` and `ResourceLink.size`, reachable only from a
/// client's *response* to a server-to-client request, which a stateless
/// server never makes of a 2025 client (and classification refuses
/// responses). What a server sends is not validated by wymcp; its own types
/// write integers where the files say `integer`.
pub(crate) const DEVIATIONS: &[Deviation] = &[
    // An elicitation accepted with a number the user typed (a `number`
    // field of the form, a default like `95.5`), carried back in a 2026
    // retry's `inputResponses`.
    Deviation {
        revision: Revision::V2026_07_28,
        pointer: "/$defs/ElicitResult/properties/content/additionalProperties/anyOf/1/type",
        file: r#"["string", "integer", "boolean"]"#,
        ts: "content?: { [key: string]: string | number | boolean | string[] }",
        fix: r#"["string", "number", "boolean"]"#,
    },
    // The values inside `JSONObject`: every object of `clientCapabilities`
    // (`experimental`, `extensions`, `sampling.context`, `elicitation.form`,
    // …), sent in `_meta` on every 2026 request.
    Deviation {
        revision: Revision::V2026_07_28,
        pointer: "/$defs/JSONValue/anyOf/2/type",
        file: r#"["string", "integer", "boolean"]"#,
        ts: "type JSONValue = string | number | boolean | null | JSONObject | JSONArray",
        fix: r#"["string", "number", "boolean", "null"]"#,
    },
    // `_meta.progressToken` of every request. A token that is not a string
    // or an integer is accepted, and no progress is reported under it (a
    // receiver is not obliged to report progress).
    Deviation {
        revision: Revision::V2026_07_28,
        pointer: "/$defs/ProgressToken/type",
        file: r#"["string", "integer"]"#,
        ts: "type ProgressToken = string | number",
        fix: r#"["string", "number"]"#,
    },
    // A resource link inside a sampling answer's `tool_result` content,
    // carried back in a 2026 retry's `inputResponses`.
    Deviation {
        revision: Revision::V2026_07_28,
        pointer: "/$defs/ResourceLink/properties/size/type",
        file: r#""integer""#,
        ts: "size?: number",
        fix: r#""number""#,
    },
    Deviation {
        revision: Revision::V2025_11_25,
        pointer: "/$defs/ProgressToken/type",
        file: r#"["string", "integer"]"#,
        ts: "type ProgressToken = string | number",
        fix: r#"["string", "number"]"#,
    },
    // `params.task.ttl` of a task-augmented `tools/call`.
    Deviation {
        revision: Revision::V2025_11_25,
        pointer: "/$defs/TaskMetadata/properties/ttl/type",
        file: r#""integer""#,
        ts: "ttl?: number",
        fix: r#""number""#,
    },
    // `notifications/tasks/status` from a client.
    Deviation {
        revision: Revision::V2025_11_25,
        pointer: "/$defs/Task/properties/ttl/type",
        file: r#"["integer", "null"]"#,
        ts: "ttl: number | null",
        fix: r#"["number", "null"]"#,
    },
    Deviation {
        revision: Revision::V2025_11_25,
        pointer: "/$defs/Task/properties/pollInterval/type",
        file: r#""integer""#,
        ts: "pollInterval?: number",
        fix: r#""number""#,
    },
    // `ping`'s `_meta.progressToken` and a client's `notifications/progress`
    // (the file describes no `_meta` on the other 2025-06-18 requests).
    Deviation {
        revision: Revision::V2025_06_18,
        pointer: "/definitions/ProgressToken/type",
        file: r#"["string", "integer"]"#,
        ts: "type ProgressToken = string | number",
        fix: r#"["string", "number"]"#,
    },
];

/// Applies the `deviations` of `revision` to its parsed `document`. Fails,
/// naming the pointer, when the file does not hold what a deviation expects
/// there.
fn deviate(
    revision: Revision,
    document: &mut Value,
    deviations: &[Deviation],
) -> Result<(), SchemaError> {
    for deviation in deviations.iter().filter(|d| d.revision == revision) {
        let fail = |reason: &dyn fmt::Display| {
            SchemaError::new(
                revision,
                format_args!(
                    "deviation at `{}`: {reason}; review it against schema.ts ({})",
                    deviation.pointer, deviation.ts
                ),
            )
        };
        let parse = |text: &str| serde_json::from_str::<Value>(text).map_err(|e| fail(&e));
        let (expected, fix) = (parse(deviation.file)?, parse(deviation.fix)?);
        let Some(at) = document.pointer_mut(deviation.pointer) else {
            return Err(fail(&"the file has no value there"));
        };
        if *at != expected {
            return Err(fail(&format_args!(
                "the file says {at} there, not {expected}"
            )));
        }
        *at = fix;
    }
    Ok(())
}

/// What Validate reads of a method before jsonschema: whether it is a
/// request or a notification, and the definition in wymcp's subset.
#[derive(Clone, Copy)]
pub(crate) struct Quick<'s> {
    /// Request or notification.
    pub(crate) kind: DefinitionKind,
    /// `None` when the definition's document did not build (the compiled
    /// definition then reports it).
    pub(crate) subset: Option<&'s Subset>,
    schemas: &'s RevisionSchemas,
    index: &'s Index,
    member: &'s Member,
}

impl fmt::Debug for Quick<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Quick")
            .field("kind", &self.kind)
            .field("definition", &self.member.name)
            .finish_non_exhaustive()
    }
}

impl<'s> Quick<'s> {
    /// Whether the subset vouches for `message` (see [`Subset::holds`]).
    #[must_use]
    pub(crate) fn holds(&self, message: &Value) -> bool {
        self.subset.is_some_and(|subset| subset.holds(message))
    }

    /// The failure of a message [`holds`](Self::holds) did not vouch for,
    /// when the subset words it exactly as [`Definition::validate`] would
    /// (see [`Subset::explain`]): a refusal that compiles and runs no
    /// jsonschema validator.
    #[must_use]
    pub(crate) fn explain(&self, message: &Value) -> Option<SchemaFailure> {
        let failure = self.subset?.explain(message)?;
        Some(SchemaFailure {
            pointer: truncate(failure.pointer),
            keyword: failure.keyword.to_owned(),
            message: truncate(failure.message),
        })
    }

    /// The method's definition for jsonschema, compiled on its first use;
    /// `Err` when it did not compile (a bug in wymcp: the message is
    /// answered as an internal error, never let through unvalidated).
    pub(crate) fn definition(&self) -> Result<&'s Definition, &'s SchemaError> {
        self.schemas.compiled(self.index, self.member)
    }
}

/// Whether a definition describes a client request or a client notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DefinitionKind {
    /// A member of the revision's `ClientRequest`: it needs an `id`.
    Request,
    /// A member of the revision's `ClientNotification`: it must carry no `id`.
    Notification,
}

/// One compiled definition: the schema a message of one method is held to.
pub(crate) struct Definition {
    revision: Revision,
    kind: DefinitionKind,
    pointer: String,
    validator: Validator,
    /// The definition with `params` accepting anything: what a message's
    /// envelope (everything outside `params`) is held to when the first
    /// failure lies inside `params`. `None` for a definition whose top
    /// level holds more than `type`, `properties`, `required` and
    /// `description` (none today): the detailed pass chooses then.
    envelope: Option<Validator>,
    /// The envelope's shape, when it is the one every shipped definition
    /// has: what a message's envelope is checked against in Rust before
    /// the envelope validator is asked (see [`EnvelopeShape`]).
    shape: Option<EnvelopeShape>,
}

impl fmt::Debug for Definition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Definition")
            .field("revision", &self.revision)
            .field("kind", &self.kind)
            .field("pointer", &self.pointer)
            .finish_non_exhaustive()
    }
}

impl Definition {
    /// Request or notification.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn kind(&self) -> DefinitionKind {
        self.kind
    }

    /// The definition's pointer in its schema file, e.g. `#/$defs/CallToolRequest`.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn pointer(&self) -> &str {
        &self.pointer
    }

    /// Whether `message` satisfies the definition, no error built.
    /// Validate takes [`validate`](Self::validate) alone: one traversal
    /// for a valid message and a refused one alike.
    #[must_use]
    #[cfg(test)]
    pub(crate) fn is_valid(&self, message: &Value) -> bool {
        self.validator.is_valid(message)
    }

    /// Validates `message`, describing the first failure that matters most: a
    /// failure of the envelope (anything outside `params`) before one inside
    /// `params`, the first of each in the order jsonschema's detailed pass
    /// (`iter_errors`) finds them. Only the failure reported is turned into
    /// text.
    ///
    /// The detailed pass over the whole message is not taken: jsonschema's
    /// `validate` stops at the first failure; outside `params` that is the
    /// one to report. Inside `params`, an envelope failure would come
    /// first: the envelope validator (the definition with `params`
    /// accepting anything) says whether there is one (`is_valid`, ≈ 1,200
    /// instructions) and only then finds it; else the first
    /// failure stands. A test holds this choice to the detailed pass's over
    /// every definition and a corpus.
    pub(crate) fn validate(&self, message: &Value) -> Result<(), SchemaFailure> {
        let Err(first) = self.validator.validate(message) else {
            return Ok(());
        };
        if !lies_in_params(&first) {
            return Err(SchemaFailure::from_error(&first));
        }
        let Some(envelope) = &self.envelope else {
            #[cfg(test)]
            DETAILED_PASSES.with(|n| n.set(n.get() + 1));
            let chosen = most_relevant(self.validator.iter_errors(message), lies_in_params);
            return Err(SchemaFailure::from_error(chosen.as_ref().unwrap_or(&first)));
        };
        if self
            .shape
            .as_ref()
            .is_some_and(|shape| shape.holds(message))
            || {
                #[cfg(test)]
                ENVELOPE_CHECKS.with(|n| n.set(n.get() + 1));
                envelope.is_valid(message)
            }
        {
            return Err(SchemaFailure::from_error(&first));
        }
        let outside = envelope.iter_errors(message).find(|e| !lies_in_params(e));
        Err(SchemaFailure::from_error(
            outside.as_ref().unwrap_or(&first),
        ))
    }
}

#[cfg(test)]
thread_local! {
    /// How often [`Definition::validate`] ran the detailed pass over the
    /// whole message on this thread.
    static DETAILED_PASSES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How often [`Definition::validate`] asked the envelope validator on
    /// this thread.
    static ENVELOPE_CHECKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The failure to report: the first outside `params` (the envelope is more
/// fundamental), else the first inside.
fn most_relevant<T>(failures: impl IntoIterator<Item = T>, in_params: fn(&T) -> bool) -> Option<T> {
    let mut params = None;
    for failure in failures {
        if !in_params(&failure) {
            return Some(failure);
        }
        params.get_or_insert(failure);
    }
    params
}

/// Whether the pointer [`SchemaFailure::from_error`] gives `error` lies
/// inside `params` ([`SchemaFailure::in_params`]), read from the error
/// without building the pointer.
fn lies_in_params(error: &ValidationError<'_>) -> bool {
    let path = error.instance_path().as_str();
    if path.is_empty() {
        // A missing property of the message itself: `/params` when it is
        // `params` (an escaped name holds no `/`, so no other is inside).
        return matches!(error.kind(), ValidationErrorKind::Required { property }
            if property.as_str() == Some("params"));
    }
    path == "/params" || path.starts_with("/params/")
}

/// The longest pointer or message a failure reports; the rest is cut, since
/// both can carry client-controlled text (property names).
const REPORT_LIMIT: usize = 200;

/// Why a message failed its definition, small enough to send back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaFailure {
    /// The JSON pointer of the failing value in the message, e.g.
    /// `/params/name`. For a missing property, the pointer of the property
    /// that should be there.
    pub pointer: String,
    /// The JSON Schema keyword that failed (`required`, `type`, `const`, …).
    pub keyword: String,
    /// What is wrong, without echoing the client's value.
    pub message: String,
}

impl SchemaFailure {
    fn from_error(error: &ValidationError<'_>) -> Self {
        let mut pointer = error.instance_path().as_str().to_owned();
        if let ValidationErrorKind::Required { property } = error.kind()
            && let Some(name) = property.as_str()
        {
            pointer.push('/');
            pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
        }
        SchemaFailure {
            pointer: truncate(pointer),
            keyword: error.kind().keyword().to_owned(),
            message: truncate(masked(error)),
        }
    }

    /// Whether the failure lies inside `params` (or is `params` itself
    /// missing or mistyped): an invalid-params failure rather than an
    /// invalid request.
    #[must_use]
    pub(crate) fn in_params(&self) -> bool {
        self.pointer == "/params" || self.pointer.starts_with("/params/")
    }
}

/// What is wrong, the client's value masked; written into one buffer
/// sized for the usual message, not grown from empty.
fn masked(error: &ValidationError<'_>) -> String {
    let mut text = String::with_capacity(MASKED_CAPACITY);
    // Writing to a String cannot fail.
    let _ = write!(text, "{}", error.masked_with("the value"));
    text
}

/// Room for the usual masked message (`the value is not of type "object"`:
/// 34 bytes) and most longer ones.
const MASKED_CAPACITY: usize = 96;

fn truncate(mut text: String) -> String {
    if text.len() > REPORT_LIMIT {
        let mut end = REPORT_LIMIT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// One revision's schema, compiled a method at a time.
///
/// Nothing is parsed until the revision is first needed. Then its *index* is
/// read: the file is scanned once into a map of its definitions, each kept
/// as a slice of the embedded text (nothing parsed into a tree), and the
/// members of `ClientRequest` and `ClientNotification` are mapped to their
/// methods. A method's validator is compiled the first time a message of
/// that method is validated, from a document holding only the definitions
/// it reaches (and those a deviation patches); the document and its
/// registry are dropped once the validator is built.
struct RevisionSchemas {
    revision: Revision,
    source: &'static str,
    deviations: &'static [Deviation],
    index: OnceLock<Result<Index, SchemaError>>,
}

impl fmt::Debug for RevisionSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RevisionSchemas")
            .field("revision", &self.revision)
            .field("indexed", &self.index.get().is_some())
            .finish_non_exhaustive()
    }
}

/// A revision's file, read without building its tree: the definitions are
/// slices of the embedded text.
#[derive(serde::Deserialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    dialect: Option<Value>,
    #[serde(rename = "$defs", borrow, default)]
    defs: Option<HashMap<&'a str, &'a RawValue>>,
    #[serde(borrow, default)]
    definitions: Option<HashMap<&'a str, &'a RawValue>>,
}

/// What a revision's first use reads of its file.
struct Index {
    dialect: Value,
    /// `$defs` (2020-12) or `definitions` (draft-07).
    defs_key: &'static str,
    defs: HashMap<&'static str, &'static RawValue>,
    /// Each client method's definition, compiled on first use.
    methods: HashMap<String, Member>,
}

/// A client method of a revision: its definition's name, wymcp's own check
/// of it and its validator once compiled.
struct Member {
    name: &'static str,
    kind: DefinitionKind,
    /// The definition in wymcp's subset (`None` when its document did not
    /// build: `compiled` then says why), compiled on the first message.
    subset: OnceLock<Option<Subset>>,
    /// jsonschema's validators, compiled on the first message the subset
    /// does not vouch for.
    compiled: OnceLock<Result<Definition, SchemaError>>,
}

impl RevisionSchemas {
    fn new(revision: Revision, source: &'static str, deviations: &'static [Deviation]) -> Self {
        RevisionSchemas {
            revision,
            source,
            deviations,
            index: OnceLock::new(),
        }
    }

    fn index(&self) -> Result<&Index, &SchemaError> {
        self.index
            .get_or_init(|| Index::read(self.revision, self.source))
            .as_ref()
    }

    /// `method`'s kind and its definition in wymcp's subset, compiled on
    /// first use; `Ok(None)` for a method the revision does not define.
    fn quick(&self, method: &str) -> Result<Option<Quick<'_>>, &SchemaError> {
        let index = self.index()?;
        let Some(member) = index.methods.get(method) else {
            return Ok(None);
        };
        let subset = member.subset.get_or_init(|| {
            let document = self.document(index, Some(member.name)).ok()?;
            let pointer = format!("/{}/{}", index.defs_key, member.name);
            Some(Subset::compile(&document, &pointer, Formats::Annotate))
        });
        Ok(Some(Quick {
            kind: member.kind,
            subset: subset.as_ref(),
            schemas: self,
            index,
            member,
        }))
    }

    #[cfg(test)]
    fn definition(&self, method: &str) -> Result<Option<&Definition>, &SchemaError> {
        let index = self.index()?;
        let Some(member) = index.methods.get(method) else {
            return Ok(None);
        };
        self.compiled(index, member).map(Some)
    }

    /// `member`'s definition, compiled on its first use.
    fn compiled<'s>(
        &'s self,
        index: &'s Index,
        member: &'s Member,
    ) -> Result<&'s Definition, &'s SchemaError> {
        member
            .compiled
            .get_or_init(|| {
                let compiled = self.compile(index, member);
                if let Err(error) = &compiled {
                    // Once per method and process: the error is wymcp's own
                    // text, never the client's.
                    tracing::error!(%error, definition = member.name, "an MCP schema did not compile; its messages are answered -32603");
                }
                compiled
            })
            .as_ref()
    }

    /// The document of the definitions `root` reaches (none for `None`)
    /// and those a deviation patches, the deviations applied.
    fn document(&self, index: &Index, root: Option<&'static str>) -> Result<Value, SchemaError> {
        let revision = self.revision;
        let fail = |reason: &dyn fmt::Display| SchemaError::new(revision, reason);
        let defs_key = index.defs_key;
        let reference = format!("#/{defs_key}/");
        let patched = format!("/{defs_key}/");
        let mut todo: Vec<&'static str> = root.into_iter().collect();
        // The definitions a deviation patches are always included, so a
        // deviation that no longer finds its value fails every compile.
        todo.extend(
            self.deviations
                .iter()
                .filter(|d| d.revision == revision)
                .filter_map(|d| d.pointer.strip_prefix(patched.as_str()))
                .filter_map(|rest| rest.split('/').next()),
        );
        let mut defs = Map::new();
        while let Some(name) = todo.pop() {
            if defs.contains_key(name) {
                continue;
            }
            // A name not defined is left out: a `$ref` to it fails the
            // compilation, a deviation of it fails `deviate`.
            let Some((&name, raw)) = index.defs.get_key_value(name) else {
                continue;
            };
            let def: Value = serde_json::from_str(raw.get())
                .map_err(|e| fail(&format_args!("`{name}`: {e}")))?;
            references(&def, &reference, &mut |to| {
                if let Some((&to, _)) = index.defs.get_key_value(to) {
                    todo.push(to);
                }
            });
            defs.insert(name.to_owned(), def);
        }
        let mut document = Map::new();
        document.insert("$schema".to_owned(), index.dialect.clone());
        document.insert(defs_key.to_owned(), Value::Object(defs));
        let mut document = Value::Object(document);
        deviate(revision, &mut document, self.deviations)?;
        Ok(document)
    }

    /// Compiles `member` from a document of the definitions it reaches.
    fn compile(&self, index: &Index, member: &Member) -> Result<Definition, SchemaError> {
        let revision = self.revision;
        let fail = |reason: &dyn fmt::Display| SchemaError::new(revision, reason);
        let defs_key = index.defs_key;
        let document = self.document(index, Some(member.name))?;
        let base = format!("urn:wymcp:mcp-schema:{revision}");
        let registry = Registry::new()
            .add(&base, &document)
            .and_then(jsonschema::RegistryBuilder::prepare)
            .map_err(|e| fail(&e))?;
        let pointer = format!("#/{defs_key}/{}", member.name);
        let wrapper = json!({ "$schema": index.dialect, "$ref": format!("{base}{pointer}") });
        let validator = jsonschema::options()
            .offline()
            .should_validate_formats(false)
            .with_registry(&registry)
            .build(&wrapper)
            .map_err(|e| fail(&format_args!("`{}`: {e}", member.name)))?;
        let envelope = match document
            .get(defs_key)
            .and_then(|defs| defs.get(member.name))
            .and_then(|def| envelope(def, &index.dialect, &base))
        {
            Some(schema) => Some(
                jsonschema::options()
                    .offline()
                    .should_validate_formats(false)
                    .with_registry(&registry)
                    .build(&schema)
                    .map_err(|e| fail(&format_args!("`{}`'s envelope: {e}", member.name)))?,
            ),
            None => None,
        };
        let shape = document
            .get(defs_key)
            .and_then(|defs| EnvelopeShape::of(defs.get(member.name)?, defs, defs_key));
        Ok(Definition {
            revision,
            kind: member.kind,
            pointer,
            validator,
            envelope,
            shape,
        })
    }
}

/// Calls `found` with the definition name of every local `$ref` in
/// `value` (`#/$defs/<Name>…`, `reference` being `#/$defs/`).
fn references<'v>(value: &'v Value, reference: &str, found: &mut impl FnMut(&'v str)) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(to)) = map.get("$ref")
                && let Some(rest) = to.strip_prefix(reference)
            {
                found(rest.split('/').next().unwrap_or_default());
            }
            for value in map.values() {
                references(value, reference, found);
            }
        }
        Value::Array(items) => {
            for value in items {
                references(value, reference, found);
            }
        }
        _ => {}
    }
}

impl Index {
    /// Reads `revision`'s file: its dialect, its definitions (as slices),
    /// and the method of each client request and notification.
    fn read(revision: Revision, source: &'static str) -> Result<Index, SchemaError> {
        let fail = |reason: &dyn fmt::Display| SchemaError::new(revision, reason);
        let file: File<'static> = serde_json::from_str(source).map_err(|e| fail(&e))?;
        let dialect = file.dialect.ok_or_else(|| fail(&"no `$schema`"))?;
        let (defs_key, defs) = match (file.defs, file.definitions) {
            (Some(defs), _) => ("$defs", defs),
            (None, Some(defs)) => ("definitions", defs),
            (None, None) => return Err(fail(&"no definitions")),
        };
        let parse = |name: &str| -> Result<Value, SchemaError> {
            let raw = defs
                .get(name)
                .ok_or_else(|| fail(&format_args!("no `{name}`")))?;
            serde_json::from_str(raw.get()).map_err(|e| fail(&format_args!("`{name}`: {e}")))
        };
        let mut methods = HashMap::new();
        for (union, kind) in [
            ("ClientRequest", DefinitionKind::Request),
            ("ClientNotification", DefinitionKind::Notification),
        ] {
            for name in union_members(&parse(union)?, union) {
                let def = parse(&name)?;
                let method = def
                    .pointer("/properties/method/const")
                    .and_then(Value::as_str)
                    .ok_or_else(|| fail(&format_args!("`{name}` names no method")))?;
                let Some((&name, _)) = defs.get_key_value(name.as_str()) else {
                    return Err(fail(&format_args!("no `{name}`")));
                };
                let member = Member {
                    name,
                    kind,
                    subset: OnceLock::new(),
                    compiled: OnceLock::new(),
                };
                methods.insert(method.to_owned(), member);
            }
        }
        Ok(Index {
            dialect,
            defs_key,
            defs,
            methods,
        })
    }
}

/// The MCP schemas of every revision wymcp knows, each compiled a method at
/// a time on first use (see [`RevisionSchemas`]); held by the
/// [`Server`](crate::Server), read by [`Validate`](crate::stages::Validate).
#[derive(Debug)]
pub(crate) struct Schemas {
    revisions: Vec<RevisionSchemas>,
}

impl Schemas {
    /// The process-wide set: what one server compiles, every other reuses.
    #[must_use]
    pub(crate) fn shared() -> Arc<Schemas> {
        static SHARED: OnceLock<Arc<Schemas>> = OnceLock::new();
        SHARED
            .get_or_init(|| Arc::new(Schemas::embedded(DEVIATIONS)))
            .clone()
    }

    /// The embedded files, with `deviations` applied when compiled. Nothing
    /// is read yet.
    fn embedded(deviations: &'static [Deviation]) -> Schemas {
        Schemas::of(|revision| (source(revision), deviations))
    }

    /// Schemas whose files and deviations `files` gives, per revision.
    fn of(files: impl Fn(Revision) -> (&'static str, &'static [Deviation])) -> Schemas {
        let revisions = Revision::ALL
            .into_iter()
            .map(|revision| {
                let (source, deviations) = files(revision);
                RevisionSchemas::new(revision, source, deviations)
            })
            .collect();
        Schemas { revisions }
    }

    /// Test hook: the embedded schemas, but `revision`'s file replaced by
    /// `document` (e.g. one that cannot compile).
    #[cfg(test)]
    pub(crate) fn replacing(revision: Revision, document: &Value) -> Schemas {
        let text: &'static str = document.to_string().leak();
        Schemas::of(move |r| {
            let source = if r == revision { text } else { source(r) };
            (source, DEVIATIONS)
        })
    }

    /// Reads the index of each of `revisions` (what a server serves) and
    /// applies its deviations to the definitions they patch: a file whose
    /// definitions cannot be found, or that no longer holds what a
    /// deviation expects, fails here, at
    /// [`ServerBuilder::build`](crate::ServerBuilder::build). No validator
    /// is compiled yet.
    pub(crate) fn check(&self, revisions: &[Revision]) -> Result<(), SchemaError> {
        for schemas in &self.revisions {
            if revisions.contains(&schemas.revision) {
                let index = schemas.index().map_err(Clone::clone)?;
                schemas.document(index, None)?;
            }
        }
        Ok(())
    }

    /// The definition a message of `method` is held to on `revision`,
    /// compiled on its first use (once, whatever the concurrency: later
    /// callers wait for it); `Ok(None)` when the revision defines no client
    /// request or notification of that name (an unknown or removed method:
    /// Dispatch answers it); `Err` when the revision's schema or that
    /// definition did not compile (a bug in wymcp: the message is answered
    /// as an internal error, never let through unvalidated).
    #[cfg(test)]
    pub(crate) fn definition(
        &self,
        revision: Revision,
        method: &str,
    ) -> Result<Option<&Definition>, &SchemaError> {
        match self.revisions.iter().find(|s| s.revision == revision) {
            Some(schemas) => schemas.definition(method),
            None => Ok(None),
        }
    }

    /// `method`'s kind and wymcp's own check of it ([`Subset`]), the
    /// subset compiled on its first use; `Ok(None)` when the revision
    /// defines no client request or notification of that name (Dispatch
    /// answers it), `Err` when the revision's file does not read. Validate
    /// asks this first: a message the subset holds is valid, and
    /// jsonschema's validator is neither compiled nor run for it
    /// ([`Quick::definition`] compiles it for the rest).
    pub(crate) fn quick(
        &self,
        revision: Revision,
        method: &str,
    ) -> Result<Option<Quick<'_>>, &SchemaError> {
        match self.revisions.iter().find(|s| s.revision == revision) {
            Some(schemas) => schemas.quick(method),
            None => Ok(None),
        }
    }

    /// Whether `method`'s subset, and jsonschema's validator of it, have
    /// been compiled on `revision` (what a test of Validate watches).
    #[cfg(test)]
    pub(crate) fn compiled_yet(&self, revision: Revision, method: &str) -> (bool, bool) {
        let member = self
            .revisions
            .iter()
            .find(|s| s.revision == revision)
            .and_then(|s| s.index().ok())
            .and_then(|index| index.methods.get(method));
        member.map_or((false, false), |m| {
            (m.subset.get().is_some(), m.compiled.get().is_some())
        })
    }

    /// A fresh set of the embedded schemas, nothing compiled yet.
    #[cfg(test)]
    pub(crate) fn fresh() -> Schemas {
        Schemas::embedded(DEVIATIONS)
    }

    /// [`definition`](Self::definition), the schema known to compile.
    #[cfg(test)]
    pub(crate) fn compiled(&self, revision: Revision, method: &str) -> Option<&Definition> {
        self.definition(revision, method)
            .expect("the embedded schema compiles")
    }

    /// The methods `revision` defines (unordered), each compiled.
    #[cfg(test)]
    pub(crate) fn methods(
        &self,
        revision: Revision,
    ) -> Result<Vec<(&str, &Definition)>, SchemaError> {
        let Some(schemas) = self.revisions.iter().find(|s| s.revision == revision) else {
            return Ok(Vec::new());
        };
        let index = schemas.index().map_err(Clone::clone)?;
        let mut methods = Vec::new();
        for method in index.methods.keys() {
            if let Some(def) = schemas.definition(method).map_err(Clone::clone)? {
                methods.push((method.as_str(), def));
            }
        }
        Ok(methods)
    }
}

/// A definition's envelope in the shape every shipped definition's has:
/// an object whose `jsonrpc` is the string `"2.0"`, whose `id` is a
/// `RequestId` (a string or an integer), whose `method` is its constant,
/// with some of those and `params` required, and nothing else held to a
/// schema (a missing `params` is a failure inside `params`, not the
/// shape's to check). A validation rejection with its first failure
/// inside `params` must know whether the envelope holds too (an envelope
/// failure is reported first): for a message whose envelope plainly
/// holds, these few
/// comparisons answer it without the envelope validator (≈ 1,100
/// instructions, the rejection's own cost). Only a "holds" is trusted:
/// anything else (an id of `1.0`, a member missing) is left to the
/// validator, so the verdict stays jsonschema's. A definition of another
/// shape has none and always asks the validator.
#[derive(Debug)]
struct EnvelopeShape {
    /// `jsonrpc` is held to `{"type": "string", "const": "2.0"}`.
    jsonrpc: bool,
    /// `id` is held to `RequestId`, `{"type": ["string", "integer"]}`.
    id: bool,
    /// `method`'s constant.
    method: String,
    /// Whether `jsonrpc`, `id` and `method` are required (`params` is
    /// not the shape's to check).
    required: [bool; 3],
}

impl EnvelopeShape {
    /// The shape of `def` (a definition of `defs`, under `defs_key`), when
    /// it is exactly the one described above.
    fn of(def: &Value, defs: &Value, defs_key: &str) -> Option<EnvelopeShape> {
        let def = def.as_object()?;
        let plain = def.keys().all(|key| {
            matches!(
                key.as_str(),
                "type" | "properties" | "required" | "description"
            )
        });
        if !plain || def.get("type")? != "object" {
            return None;
        }
        let properties = def.get("properties")?.as_object()?;
        // `RequestId` as every revision defines it: a string or an integer.
        let request_id = defs
            .get("RequestId")
            .and_then(Value::as_object)
            .is_some_and(|id| {
                id.get("type") == Some(&json!(["string", "integer"]))
                    && id.keys().all(|key| key == "type" || key == "description")
            });
        let mut shape = EnvelopeShape {
            jsonrpc: false,
            id: false,
            method: String::new(),
            required: [false; 3],
        };
        for (name, schema) in properties {
            match name.as_str() {
                "jsonrpc" if *schema == json!({"type": "string", "const": "2.0"}) => {
                    shape.jsonrpc = true;
                }
                "id" if request_id
                    && *schema == json!({"$ref": format!("#/{defs_key}/RequestId")}) =>
                {
                    shape.id = true;
                }
                "method" => {
                    let method = schema.as_object()?;
                    if method.len() != 2 || method.get("type")? != "string" {
                        return None;
                    }
                    method.get("const")?.as_str()?.clone_into(&mut shape.method);
                }
                "params" => {}
                _ => return None,
            }
        }
        if shape.method.is_empty() {
            return None;
        }
        for name in def
            .get("required")
            .map_or(Some(&[][..]), |r| r.as_array().map(Vec::as_slice))?
        {
            let name = name.as_str()?;
            if !properties.contains_key(name) {
                return None;
            }
            match name {
                "jsonrpc" => shape.required[0] = true,
                "id" => shape.required[1] = true,
                "method" => shape.required[2] = true,
                _ => {}
            }
        }
        Some(shape)
    }

    /// Whether `message`'s envelope plainly holds: `false` says "ask the
    /// validator", never "it fails".
    fn holds(&self, message: &Value) -> bool {
        let Some(message) = message.as_object() else {
            return false;
        };
        // One pass over the message's members (the envelope's three, its
        // `params`, rarely more), each name matched once.
        let mut present = [false; 3];
        for (name, value) in message {
            let holds = match name.as_str() {
                "jsonrpc" => {
                    present[0] = true;
                    !self.jsonrpc || value == "2.0"
                }
                "id" => {
                    present[1] = true;
                    !self.id
                        || match value {
                            Value::String(_) => true,
                            Value::Number(n) => n.is_i64() || n.is_u64(),
                            _ => false,
                        }
                }
                "method" => {
                    present[2] = true;
                    value.as_str() == Some(self.method.as_str())
                }
                _ => true,
            };
            if !holds {
                return false;
            }
        }
        self.required
            .iter()
            .zip(present)
            .all(|(&required, present)| present || !required)
    }
}

/// The schema of a definition's envelope: the definition itself, its
/// `params` accepting anything (still required where it was), each `$ref`
/// made absolute under `base`. Its failures are the definition's failures
/// outside `params`, in the same order: the same keywords, the same
/// properties in the same places, only `params`' subschema emptied. `None`
/// when the definition's top level holds anything else (an `allOf`, an
/// `additionalProperties`, a `$ref`), whose failures could lie anywhere.
fn envelope(def: &Value, dialect: &Value, base: &str) -> Option<Value> {
    let mut schema = def.as_object()?.clone();
    let plain = schema.keys().all(|key| {
        matches!(
            key.as_str(),
            "type" | "properties" | "required" | "description"
        )
    });
    let params = schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
        .and_then(|properties| properties.get_mut("params"))?;
    if !plain {
        return None;
    }
    *params = Value::Bool(true);
    let mut schema = Value::Object(schema);
    absolute_refs(&mut schema, base);
    schema
        .as_object_mut()?
        .insert("$schema".to_owned(), dialect.clone());
    Some(schema)
}

/// Makes every document-relative `$ref` (`#/$defs/…`) in `value` absolute
/// under `base`, so the schema can be compiled outside its document.
fn absolute_refs(value: &mut Value, base: &str) {
    match value {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(reference) if key == "$ref" && reference.starts_with('#') => {
                        reference.insert_str(0, base);
                    }
                    _ => absolute_refs(value, base),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| absolute_refs(item, base)),
        _ => {}
    }
}

/// The definitions a union names: the `$ref`s of its `anyOf`/`oneOf`, or the
/// union itself when it has a single member and is written out in place
/// (2026-07-28's `ClientNotification` is `notifications/cancelled` itself).
fn union_members(def: &Value, name: &str) -> Vec<String> {
    let alternatives = def
        .get("anyOf")
        .or_else(|| def.get("oneOf"))
        .and_then(Value::as_array);
    match alternatives {
        Some(alternatives) => alternatives
            .iter()
            .filter_map(|alt| alt.get("$ref")?.as_str())
            .filter_map(|reference| reference.rsplit('/').next())
            .map(str::to_owned)
            .collect(),
        None => vec![name.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schemas() -> Arc<Schemas> {
        Schemas::shared()
    }

    fn pointer(revision: Revision, method: &str) -> Option<(&'static str, DefinitionKind)> {
        let schemas = schemas();
        let def = schemas.compiled(revision, method)?;
        Some((def.pointer().to_owned().leak(), def.kind()))
    }

    #[test]
    fn definition_follows_method_and_revision() {
        use DefinitionKind::{Notification, Request};
        use Revision::{V2025_06_18, V2025_11_25, V2026_07_28};
        type Row = (
            Revision,
            &'static str,
            Option<(&'static str, DefinitionKind)>,
        );
        let rows: &[Row] = &[
            (
                V2026_07_28,
                "tools/call",
                Some(("#/$defs/CallToolRequest", Request)),
            ),
            (
                V2026_07_28,
                "server/discover",
                Some(("#/$defs/DiscoverRequest", Request)),
            ),
            (
                V2026_07_28,
                "subscriptions/listen",
                Some(("#/$defs/SubscriptionsListenRequest", Request)),
            ),
            (
                V2026_07_28,
                "notifications/cancelled",
                Some(("#/$defs/ClientNotification", Notification)),
            ),
            (V2026_07_28, "initialize", None),
            (V2026_07_28, "ping", None),
            (V2026_07_28, "logging/setLevel", None),
            (V2026_07_28, "resources/subscribe", None),
            (V2026_07_28, "resources/unsubscribe", None),
            (V2026_07_28, "notifications/initialized", None),
            // Server-to-client messages are not the client's to send.
            (V2026_07_28, "sampling/createMessage", None),
            (V2026_07_28, "notifications/tools/list_changed", None),
            (V2026_07_28, "foo/bar", None),
            (
                V2025_11_25,
                "tools/call",
                Some(("#/$defs/CallToolRequest", Request)),
            ),
            (
                V2025_11_25,
                "initialize",
                Some(("#/$defs/InitializeRequest", Request)),
            ),
            (V2025_11_25, "ping", Some(("#/$defs/PingRequest", Request))),
            (
                V2025_11_25,
                "logging/setLevel",
                Some(("#/$defs/SetLevelRequest", Request)),
            ),
            (
                V2025_11_25,
                "tasks/get",
                Some(("#/$defs/GetTaskRequest", Request)),
            ),
            (
                V2025_11_25,
                "notifications/initialized",
                Some(("#/$defs/InitializedNotification", Notification)),
            ),
            (V2025_11_25, "server/discover", None),
            (
                V2025_06_18,
                "tools/call",
                Some(("#/definitions/CallToolRequest", Request)),
            ),
            (
                V2025_06_18,
                "notifications/initialized",
                Some(("#/definitions/InitializedNotification", Notification)),
            ),
            (V2025_06_18, "tasks/get", None),
        ];
        for (revision, method, expected) in rows {
            assert_eq!(pointer(*revision, method), *expected, "{revision} {method}");
        }
    }

    #[test]
    fn every_union_member_is_compiled() {
        let schemas = schemas();
        let count = |r| schemas.methods(r).expect("every method compiles").len();
        assert_eq!(count(Revision::V2025_06_18), 13 + 4);
        assert_eq!(count(Revision::V2025_11_25), 17 + 5);
        assert_eq!(count(Revision::V2026_07_28), 10 + 1);
    }

    fn call(params: &Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    }

    fn meta() -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        })
    }

    #[test]
    fn a_valid_call_passes_and_a_bad_one_names_its_pointer() {
        let schemas = schemas();
        let def = schemas
            .compiled(Revision::V2026_07_28, "tools/call")
            .expect("tools/call is defined");
        let good = call(&json!({"_meta": meta(), "name": "echo", "arguments": {"x": 1}}));
        assert!(def.is_valid(&good));
        assert_eq!(def.validate(&good), Ok(()));

        let missing = call(&json!({"_meta": meta()}));
        assert!(!def.is_valid(&missing));
        let failure = def.validate(&missing).expect_err("name is required");
        assert_eq!(failure.pointer, "/params/name");
        assert_eq!(failure.keyword, "required");
        assert!(failure.in_params());

        let mistyped = call(&json!({"_meta": meta(), "name": 7}));
        let failure = def.validate(&mistyped).expect_err("name is a string");
        assert_eq!(failure.pointer, "/params/name");
        assert_eq!(failure.keyword, "type");
    }

    #[test]
    fn an_envelope_failure_comes_before_a_params_failure() {
        let schemas = schemas();
        let def = schemas
            .compiled(Revision::V2026_07_28, "tools/call")
            .expect("tools/call is defined");
        for both in [
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/call", "params": {"_meta": meta()}}),
            json!({"id": 1, "method": "tools/call", "params": {"_meta": meta()}}),
            json!({"id": 1, "method": "tools/call", "params": {"_meta": meta(), "name": 5}}),
        ] {
            let failure = def.validate(&both).expect_err("two failures");
            assert_eq!(failure.pointer, "/jsonrpc", "{both}");
            assert!(!failure.in_params());
        }
    }

    #[test]
    fn the_envelope_failure_is_reported_whatever_the_order() {
        let at = |pointer: &str| SchemaFailure {
            pointer: pointer.to_owned(),
            keyword: "type".to_owned(),
            message: String::new(),
        };
        let pick = |pointers: &[&str]| {
            most_relevant(pointers.iter().map(|p| at(p)), SchemaFailure::in_params)
                .map(|f| f.pointer)
        };
        assert_eq!(
            pick(&["/params/name", "/jsonrpc", "/id"]),
            Some("/jsonrpc".to_owned())
        );
        assert_eq!(
            pick(&["/params/name", "/params"]),
            Some("/params/name".to_owned())
        );
        assert_eq!(pick(&["/paramsx"]), Some("/paramsx".to_owned()));
        assert_eq!(pick(&[]), None);
        assert!(at("/params").in_params());
        assert!(!at("/paramsx").in_params());
        assert!(!at("").in_params());
    }

    #[test]
    fn a_failure_never_echoes_a_huge_value() {
        let schemas = schemas();
        let def = schemas
            .compiled(Revision::V2026_07_28, "tools/call")
            .expect("tools/call is defined");
        let huge = "x".repeat(100_000);
        let failure = def
            .validate(&call(&json!({"_meta": meta(), "name": [huge]})))
            .expect_err("name is a string");
        assert!(failure.message.len() <= REPORT_LIMIT + '…'.len_utf8());
        assert!(!failure.message.contains("xxxxxxxxxx"));
    }

    #[test]
    fn formats_are_annotations_in_every_revision() {
        let schemas = schemas();
        for revision in Revision::ALL {
            let def = schemas
                .compiled(revision, "resources/read")
                .expect("resources/read is defined");
            let mut params = json!({"uri": "::not a uri::"});
            if revision == Revision::V2026_07_28 {
                params["_meta"] = meta();
            }
            let message =
                json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": params});
            assert!(
                def.is_valid(&message),
                "{revision}: {:?}",
                def.validate(&message)
            );
        }
    }

    /// The failure as the detailed pass chose it before it picked by
    /// pointer: every error formatted, then the most relevant taken.
    fn formatted_then_chosen(def: &Definition, message: &Value) -> Option<SchemaFailure> {
        let failures = def
            .validator
            .iter_errors(message)
            .map(|error| SchemaFailure::from_error(&error));
        most_relevant(failures, SchemaFailure::in_params)
    }

    #[test]
    fn the_failure_chosen_before_formatting_is_the_one_chosen_after() {
        let schemas = schemas();
        let bad_params = [
            json!("x"),
            json!([]),
            json!({}),
            json!({"_meta": 5}),
            json!({"_meta": meta(), "name": 7, "arguments": "x", "uri": [], "taskId": {}}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 7}, "cursor": 1}),
            json!({"name": {"a/b~c": 1}, "params": 1, "level": "loud", "ref": null}),
        ];
        let mut compared = 0;
        for revision in Revision::ALL {
            for (method, def) in schemas.methods(revision).expect("every method compiles") {
                for params in &bad_params {
                    let envelopes = [
                        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                        json!({"jsonrpc": "1.0", "id": 1, "method": method, "params": params}),
                        json!({"jsonrpc": "2.0", "method": method, "params": params}),
                        json!({"jsonrpc": "2.0", "id": null, "method": 5, "params": params}),
                        json!({"id": "a", "method": method}),
                        json!({"jsonrpc": "2.0", "id": 1, "method": method}),
                        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params, "x": 1}),
                        // A failure inside `params` found before the envelope's.
                        json!({"method": method, "params": params}),
                        json!({"jsonrpc": 2, "id": [], "method": method, "params": params}),
                        json!({"jsonrpc": "2.0", "id": 1.5, "method": "x", "params": params}),
                    ];
                    for message in envelopes {
                        for error in def.validator.iter_errors(&message) {
                            let failure = SchemaFailure::from_error(&error);
                            assert_eq!(
                                lies_in_params(&error),
                                failure.in_params(),
                                "{revision} {method}: {message}: {failure:?}"
                            );
                        }
                        assert_eq!(
                            def.validate(&message).err(),
                            formatted_then_chosen(def, &message),
                            "{revision} {method}: {message}"
                        );
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 1_000, "{compared}");
    }

    /// `method`'s validator on `revision` compiled as before per-method
    /// compiles: against the whole patched file.
    fn compiled_whole(revision: Revision, name: &str) -> Validator {
        let mut document = raw(revision);
        deviate(revision, &mut document, DEVIATIONS).expect("every deviation applies");
        let key = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let base = format!("urn:wymcp:mcp-schema:{revision}");
        let registry = Registry::new()
            .add(&base, &document)
            .and_then(jsonschema::RegistryBuilder::prepare)
            .expect("the registry builds");
        let wrapper =
            json!({"$schema": document["$schema"], "$ref": format!("{base}#/{key}/{name}")});
        jsonschema::options()
            .offline()
            .should_validate_formats(false)
            .with_registry(&registry)
            .build(&wrapper)
            .expect("the definition compiles")
    }

    #[test]
    fn a_method_compiled_from_the_definitions_it_reaches_judges_as_the_whole_file() {
        // The per-method document leaves out the definitions a method does
        // not reach; every verdict and every error must be the same.
        let schemas = schemas();
        let params = [
            json!({}),
            json!({"_meta": meta(), "name": "t", "arguments": {"a": 1}}),
            json!({"_meta": meta(), "name": 7, "arguments": "x", "uri": [], "taskId": {}}),
            json!({"_meta": meta(), "uri": "file:///a", "cursor": "c", "level": "info"}),
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}),
            json!({"requestId": 1, "reason": "r", "progressToken": 1.5, "progress": 1}),
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}),
            json!({"taskId": "t", "status": "working", "ttl": null, "createdAt": "x", "lastUpdatedAt": "y"}),
        ];
        let mut compared = 0;
        for revision in Revision::ALL {
            for (method, def) in schemas.methods(revision).expect("every method compiles") {
                let name = def.pointer.rsplit('/').next().expect("a name");
                let whole = compiled_whole(revision, name);
                for params in &params {
                    for message in [
                        json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}),
                        json!({"jsonrpc": "2.0", "method": method, "params": params}),
                        json!({"jsonrpc": "2.0", "id": 1, "method": method}),
                    ] {
                        let what = format!("{revision} {method}: {message}");
                        assert_eq!(def.is_valid(&message), whole.is_valid(&message), "{what}");
                        let errors = |v: &Validator| {
                            v.iter_errors(&message)
                                .map(|e| SchemaFailure::from_error(&e))
                                .collect::<Vec<_>>()
                        };
                        assert_eq!(errors(&def.validator), errors(&whole), "{what}");
                        compared += 1;
                    }
                }
            }
        }
        assert!(compared > 1_000, "{compared}");
    }

    #[test]
    fn a_failure_inside_params_is_chosen_without_the_detailed_pass() {
        // The detailed pass over the whole message was most of a validation
        // rejection's cost: every definition has its envelope validator,
        // and a rejection takes the first failure and the envelope's.
        let schemas = schemas();
        for revision in Revision::ALL {
            for (method, def) in schemas.methods(revision).expect("every method compiles") {
                assert!(def.envelope.is_some(), "{revision} {method}");
            }
        }
        let def = schemas
            .compiled(Revision::V2026_07_28, "tools/call")
            .expect("tools/call is defined");
        let before = DETAILED_PASSES.with(std::cell::Cell::get);
        let asked = ENVELOPE_CHECKS.with(std::cell::Cell::get);
        let inside = call(&json!({"_meta": meta(), "name": "echo", "arguments": "x"}));
        let failure = def.validate(&inside).expect_err("arguments is an object");
        assert_eq!(failure.pointer, "/params/arguments");
        // A plain envelope is judged by its shape: the validator not asked.
        assert_eq!(ENVELOPE_CHECKS.with(std::cell::Cell::get), asked);
        // An envelope that does not plainly hold is the validator's to
        // judge: an id of `1.0` is an integer to JSON Schema, not to the
        // shape's check.
        let float_id = json!({"jsonrpc": "2.0", "id": 1.0, "method": "tools/call",
                              "params": {"_meta": meta(), "name": 7}});
        let failure = def.validate(&float_id).expect_err("name is a string");
        assert_eq!(failure.pointer, "/params/name");
        assert_eq!(ENVELOPE_CHECKS.with(std::cell::Cell::get), asked + 1);
        let both = json!({"jsonrpc": "2.0", "id": [], "method": "tools/call",
                          "params": {"_meta": meta(), "name": 7}});
        let failure = def.validate(&both).expect_err("two failures");
        assert_eq!(failure.pointer, "/id");
        assert_eq!(DETAILED_PASSES.with(std::cell::Cell::get), before);
    }

    /// Every shipped definition's envelope has the shape the Rust check
    /// reads, and the check never says "holds" of a message the envelope
    /// validator finds a failure outside `params` in (a "holds" is what
    /// skips it; a missing `params` is a failure inside), over envelopes
    /// built member by member from right and wrong values.
    #[test]
    fn the_envelope_shape_never_holds_where_the_envelope_validator_refuses() {
        let schemas = schemas();
        let jsonrpcs = [
            None,
            Some(json!("2.0")),
            Some(json!("1.0")),
            Some(json!(2)),
            Some(json!(null)),
        ];
        let ids = [
            None,
            Some(json!(1)),
            Some(json!(-7)),
            Some(json!(u64::MAX)),
            Some(json!("a")),
            Some(json!(1.0)),
            Some(json!(1.5)),
            Some(json!(null)),
            Some(json!([])),
            Some(json!(true)),
        ];
        let mut judged = 0;
        let mut held = 0;
        for revision in Revision::ALL {
            for (method, def) in schemas.methods(revision).expect("every method compiles") {
                let shape = def
                    .shape
                    .as_ref()
                    .unwrap_or_else(|| panic!("{revision} {method}"));
                let envelope = def.envelope.as_ref().expect("an envelope validator");
                let methods = [None, Some(json!(method)), Some(json!("x")), Some(json!(5))];
                for jsonrpc in &jsonrpcs {
                    for id in &ids {
                        for m in &methods {
                            for params in [None, Some(json!("x")), Some(json!({}))] {
                                let mut message = Map::new();
                                for (key, value) in [
                                    ("jsonrpc", jsonrpc),
                                    ("id", id),
                                    ("method", m),
                                    ("params", &params),
                                ] {
                                    if let Some(value) = value {
                                        message.insert(key.to_owned(), value.clone());
                                    }
                                }
                                let message = Value::Object(message);
                                if shape.holds(&message) {
                                    assert!(
                                        envelope.iter_errors(&message).all(|e| lies_in_params(&e)),
                                        "{revision} {method}: {message}"
                                    );
                                    held += 1;
                                }
                                judged += 1;
                            }
                        }
                    }
                }
                assert!(!shape.holds(&json!([])) && !shape.holds(&json!("x")));
            }
        }
        assert!(judged > 10_000 && held > 100, "{judged} {held}");
    }

    /// wymcp's own check of every definition of every revision is whole
    /// (no keyword left to jsonschema), accepts only what jsonschema's
    /// validator of the definition accepts, and accepts nearly all of it:
    /// over messages generated from each definition and mutations of them,
    /// and over the deviation samples.
    #[test]
    fn the_subset_accepts_only_what_jsonschema_accepts() {
        use crate::protocol::subset::corpus::{Rng, has_edge, instance, mutate_once};
        let schemas = schemas();
        let mut judged = 0_usize;
        let mut refused = 0_usize;
        let mut worded = 0_usize;
        let mut valid = 0_usize;
        let mut vouched = 0_usize;
        for revision in Revision::ALL {
            let revision_schemas = schemas
                .revisions
                .iter()
                .find(|s| s.revision == revision)
                .expect("every revision");
            let index = revision_schemas.index().expect("indexed");
            for (method, def) in schemas.methods(revision).expect("every method compiles") {
                let quick = schemas
                    .quick(revision, method)
                    .expect("indexed")
                    .expect("a method");
                let subset = quick.subset.expect("a subset");
                assert!(subset.is_complete(), "{revision} {method}");
                assert_eq!(quick.kind, def.kind());
                let name = index.methods[method].name;
                let document = revision_schemas
                    .document(index, Some(name))
                    .expect("a document");
                let schema = &document[index.defs_key][name];
                let mut rng = Rng::new(judged as u64 + 1);
                for round in 0..500 {
                    let chaos = [0, 0, 10, 60, 250][round % 5];
                    let mut message = instance(&document, schema, &mut rng, chaos);
                    if round >= 400 {
                        mutate_once(&mut message, &mut rng);
                    }
                    let ours = quick.holds(&message);
                    let theirs = def.is_valid(&message);
                    assert!(
                        !ours || theirs,
                        "{revision} {method}: accepted what jsonschema refuses: {message}"
                    );
                    // A refusal the subset words is jsonschema's, word for word.
                    if !ours && let Some(failure) = quick.explain(&message) {
                        assert_eq!(
                            Err(failure),
                            def.validate(&message),
                            "{revision} {method}: worded otherwise: {message}"
                        );
                        worded += 1;
                    }
                    refused += usize::from(!theirs);
                    if theirs && !has_edge(&message) {
                        valid += 1;
                        vouched += usize::from(ours);
                    }
                    judged += 1;
                }
            }
        }
        for sample in samples() {
            let quick = schemas
                .quick(sample.revision, sample.method)
                .expect("indexed")
                .expect("a method");
            assert!(quick.holds(&sample.message), "{}", sample.message);
        }
        // Valid messages the subset turned away (it only does so for the
        // edges excluded above): none.
        assert_eq!(vouched, valid, "{judged} judged");
        assert!(
            valid > 5_000 && judged - valid > 5_000,
            "{judged} judged, {valid} valid"
        );
        // Most refusals with a single plain failure are worded by the
        // subset; the rest go to jsonschema.
        eprintln!("{judged} judged, {refused} refused, {worded} worded by the subset");
        assert!(worded > 2_000, "{refused} refused, {worded} worded");
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        let text = "é".repeat(REPORT_LIMIT);
        let cut = truncate(text);
        assert!(cut.ends_with('…'));
        assert!(cut.len() <= REPORT_LIMIT + '…'.len_utf8());
    }

    /// `revision`'s file as vendored, parsed.
    fn raw(revision: Revision) -> Value {
        serde_json::from_str(source(revision)).expect("the vendored file is JSON")
    }

    /// One message a deviation lets through: the file refuses it at
    /// `refused_at` (and nowhere else), `schema.ts` allows it.
    struct Sample {
        revision: Revision,
        deviation: &'static str,
        method: &'static str,
        message: Value,
        refused_at: &'static str,
    }

    fn modern_call(params: &Value) -> Value {
        let mut message = call(&json!({"_meta": meta(), "name": "t"}));
        if let (Some(into), Some(params)) = (message["params"].as_object_mut(), params.as_object())
        {
            into.extend(params.clone());
        }
        message
    }

    fn samples() -> Vec<Sample> {
        use Revision::{V2025_06_18, V2025_11_25, V2026_07_28};
        let elicited = json!({"action": "accept", "content": {
            "age": 30, "name": "John Doe", "score": 95.5, "status": "active", "verified": true
        }});
        let capabilities = |extension: Value| {
            let mut meta = meta();
            meta["io.modelcontextprotocol/clientCapabilities"] =
                json!({"extensions": {"com.example/x": extension}});
            modern_call(&json!({"_meta": meta}))
        };
        let mut token = meta();
        token["progressToken"] = json!(0.5);
        let sampled = json!({"role": "user", "model": "m", "content": {
        "type": "tool_result", "toolUseId": "t", "content": [
            {"type": "resource_link", "uri": "file:///a", "name": "a", "size": 1.5}
        ]}});
        let status = |ttl: Value, poll: Value| {
            json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": {
                "taskId": "t", "status": "working", "ttl": ttl, "pollInterval": poll,
                "createdAt": "2025-11-25T00:00:00Z", "lastUpdatedAt": "2025-11-25T00:00:00Z"}})
        };
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                              "params": {"progressToken": 0.5, "progress": 1}});
        let legacy_call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        vec![
            Sample {
                revision: V2026_07_28,
                deviation: "/$defs/ElicitResult/properties/content/additionalProperties/anyOf/1/type",
                method: "tools/call",
                message: modern_call(&json!({
                    "inputResponses": {"defaults": elicited}, "requestState": "s"})),
                refused_at: "/params/inputResponses/defaults",
            },
            Sample {
                revision: V2026_07_28,
                deviation: "/$defs/JSONValue/anyOf/2/type",
                method: "tools/call",
                message: capabilities(json!({"ratio": 0.5})),
                refused_at: "/params/_meta/io.modelcontextprotocol~1clientCapabilities/extensions/com.example~1x/ratio",
            },
            Sample {
                revision: V2026_07_28,
                deviation: "/$defs/JSONValue/anyOf/2/type",
                method: "tools/call",
                message: capabilities(json!({"since": null})),
                refused_at: "/params/_meta/io.modelcontextprotocol~1clientCapabilities/extensions/com.example~1x/since",
            },
            Sample {
                revision: V2026_07_28,
                deviation: "/$defs/ProgressToken/type",
                method: "tools/call",
                message: modern_call(&json!({"_meta": token})),
                refused_at: "/params/_meta/progressToken",
            },
            Sample {
                revision: V2026_07_28,
                deviation: "/$defs/ResourceLink/properties/size/type",
                method: "tools/call",
                message: modern_call(
                    &json!({"inputResponses": {"q": sampled}, "requestState": "s"}),
                ),
                refused_at: "/params/inputResponses/q",
            },
            Sample {
                revision: V2025_11_25,
                deviation: "/$defs/ProgressToken/type",
                method: "tools/call",
                message: legacy_call(json!({"name": "t", "_meta": {"progressToken": 0.5}})),
                refused_at: "/params/_meta/progressToken",
            },
            Sample {
                revision: V2025_11_25,
                deviation: "/$defs/ProgressToken/type",
                method: "notifications/progress",
                message: progress.clone(),
                refused_at: "/params/progressToken",
            },
            Sample {
                revision: V2025_11_25,
                deviation: "/$defs/TaskMetadata/properties/ttl/type",
                method: "tools/call",
                message: legacy_call(json!({"name": "t", "task": {"ttl": 1500.5}})),
                refused_at: "/params/task/ttl",
            },
            Sample {
                revision: V2025_11_25,
                deviation: "/$defs/Task/properties/ttl/type",
                method: "notifications/tasks/status",
                message: status(json!(60_000.5), json!(250)),
                refused_at: "/params/ttl",
            },
            Sample {
                revision: V2025_11_25,
                deviation: "/$defs/Task/properties/pollInterval/type",
                method: "notifications/tasks/status",
                message: status(Value::Null, json!(250.5)),
                refused_at: "/params/pollInterval",
            },
            Sample {
                revision: V2025_06_18,
                deviation: "/definitions/ProgressToken/type",
                method: "ping",
                message: json!({"jsonrpc": "2.0", "id": 1, "method": "ping",
                                "params": {"_meta": {"progressToken": 0.5}}}),
                refused_at: "/params/_meta/progressToken",
            },
            Sample {
                revision: V2025_06_18,
                deviation: "/definitions/ProgressToken/type",
                method: "notifications/progress",
                message: progress,
                refused_at: "/params/progressToken",
            },
        ]
    }

    #[test]
    fn each_deviation_accepts_what_schema_ts_allows_and_the_file_refuses() {
        let patched = schemas();
        let unpatched = Schemas::embedded(&[]);
        let samples = samples();
        for deviation in DEVIATIONS {
            assert!(
                samples
                    .iter()
                    .any(|s| s.revision == deviation.revision && s.deviation == deviation.pointer),
                "{} {}: no sample message pins this deviation",
                deviation.revision,
                deviation.pointer
            );
        }
        for sample in &samples {
            let what = format!("{} {} {}", sample.revision, sample.method, sample.message);
            assert!(
                DEVIATIONS
                    .iter()
                    .any(|d| d.revision == sample.revision && d.pointer == sample.deviation),
                "{what}: names no deviation"
            );
            let raw = unpatched
                .compiled(sample.revision, sample.method)
                .expect("the method is defined");
            let failure = raw.validate(&sample.message).expect_err(&what);
            assert_eq!(failure.pointer, sample.refused_at, "{what}: {failure:?}");
            let def = patched
                .compiled(sample.revision, sample.method)
                .expect("the method is defined");
            assert_eq!(def.validate(&sample.message), Ok(()), "{what}");
            assert!(def.is_valid(&sample.message), "{what}");
        }
    }

    #[test]
    fn a_request_id_stays_an_integer_or_a_string() {
        // Kept stricter than schema.ts (see DEVIATIONS): a cancellation of a
        // fractional id names no request this server accepted.
        let schemas = schemas();
        let def = schemas
            .compiled(Revision::V2026_07_28, "notifications/cancelled")
            .expect("notifications/cancelled is defined");
        let cancel = |id: Value| json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
        assert_eq!(def.validate(&cancel(json!(7))), Ok(()));
        let failure = def.validate(&cancel(json!(7.5))).expect_err("a fraction");
        assert_eq!(failure.pointer, "/params/requestId");
    }

    #[test]
    fn every_deviation_finds_what_it_expects_in_its_file() {
        for revision in Revision::ALL {
            let mut document = raw(revision);
            deviate(revision, &mut document, DEVIATIONS).expect("every deviation applies");
            for deviation in DEVIATIONS.iter().filter(|d| d.revision == revision) {
                let fix: Value = serde_json::from_str(deviation.fix).expect("a fix is JSON");
                assert_eq!(document.pointer(deviation.pointer), Some(&fix));
            }
        }
    }

    #[test]
    fn a_file_that_no_longer_holds_what_a_deviation_expects_fails_the_load() {
        let revision = Revision::V2026_07_28;
        let elicit = DEVIATIONS[0].pointer;
        // Upstream fixed the value (or changed it otherwise).
        let mut fixed = raw(revision);
        *fixed.pointer_mut(elicit).expect("the file holds it") =
            json!(["string", "number", "boolean"]);
        // The check at build fails, and so does every method's compile,
        // not only those that reach it.
        let schemas = Schemas::replacing(revision, &fixed);
        let error = schemas.check(&[revision]).expect_err("the build fails");
        assert!(error.to_string().contains(elicit), "{error}");
        schemas
            .check(&[Revision::V2025_11_25])
            .expect("a revision not served is not read");
        for method in ["tools/call", "notifications/cancelled"] {
            let error = schemas
                .definition(revision, method)
                .expect_err("the load fails");
            let text = error.to_string();
            assert!(
                text.contains(elicit) && text.contains("the file says"),
                "{text}"
            );
        }
        // Upstream moved or renamed the definition.
        let mut moved = raw(revision);
        moved["$defs"]
            .as_object_mut()
            .expect("definitions")
            .remove("JSONValue");
        let schemas = Schemas::replacing(revision, &moved);
        let error = schemas.check(&[revision]).expect_err("the build fails");
        assert!(error.to_string().contains("no value there"), "{error}");
        let error = schemas
            .definition(revision, "notifications/cancelled")
            .expect_err("the load fails");
        let text = error.to_string();
        assert!(
            text.contains("/$defs/JSONValue/anyOf/2/type") && text.contains("no value there"),
            "{text}"
        );
    }

    /// The definitions a client's messages can reach in `document`: from
    /// `ClientRequest` and `ClientNotification`, following `$ref`s.
    fn reachable(document: &Value) -> Vec<(String, &Value)> {
        let key = if document.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        let defs = document[key].as_object().expect("definitions");
        let mut seen: Vec<(String, &Value)> = Vec::new();
        let mut todo = vec!["ClientRequest".to_owned(), "ClientNotification".to_owned()];
        while let Some(name) = todo.pop() {
            if seen.iter().any(|(n, _)| *n == name) {
                continue;
            }
            let def = &defs[&name];
            let mut stack = vec![def];
            while let Some(value) = stack.pop() {
                match value {
                    Value::Object(map) => {
                        if let Some(Value::String(r)) = map.get("$ref") {
                            todo.push(r.rsplit('/').next().unwrap_or_default().to_owned());
                        }
                        stack.extend(map.values());
                    }
                    Value::Array(items) => stack.extend(items),
                    _ => {}
                }
            }
            seen.push((name, def));
        }
        seen.into_iter()
            .map(|(name, def)| (format!("/{key}/{name}"), def))
            .collect()
    }

    /// The pointers under `at` of every `type` naming `integer`.
    fn integers(at: &str, value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                let ty = map.get("type");
                if ty == Some(&json!("integer"))
                    || ty
                        .and_then(Value::as_array)
                        .is_some_and(|t| t.contains(&json!("integer")))
                {
                    out.push(format!("{at}/type"));
                }
                for (key, value) in map {
                    integers(&format!("{at}/{key}"), value, out);
                }
            }
            Value::Array(items) => {
                for (i, value) in items.iter().enumerate() {
                    integers(&format!("{at}/{i}"), value, out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn every_integer_a_client_message_can_carry_was_reviewed_against_schema_ts() {
        // After the deviations, a client's message meets `integer` only
        // where wymcp keeps it on purpose. A re-vendored file that adds one
        // fails here: read schema.ts there, and add a deviation (a TS
        // `number`) or keep it (and say why in DEVIATIONS' comment).
        for revision in Revision::ALL {
            let mut document = raw(revision);
            deviate(revision, &mut document, DEVIATIONS).expect("every deviation applies");
            let mut found = Vec::new();
            for (at, def) in reachable(&document) {
                integers(&at, def, &mut found);
            }
            found.sort();
            let kept = if revision == Revision::V2025_06_18 {
                "/definitions/RequestId/type"
            } else {
                "/$defs/RequestId/type"
            };
            assert_eq!(found, [kept], "{revision}");
        }
    }

    #[test]
    fn docs_schema_md_names_every_deviation() {
        let docs = include_str!("../../../docs/schema.md");
        for deviation in DEVIATIONS {
            let row = docs.lines().find(|line| {
                line.contains(&format!("`{}`", deviation.pointer))
                    && line.contains(deviation.revision.as_str())
            });
            assert!(
                row.is_some(),
                "docs/schema.md has no row naming {} `{}`",
                deviation.revision,
                deviation.pointer
            );
        }
    }

    /// Release-mode timing of the fast path:
    /// `cargo test -p wymcp --release --lib schema::tests::timing -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check; run in release mode"]
    fn timing() {
        use std::time::Instant;
        let compiled = Schemas::embedded(DEVIATIONS);
        for revision in Revision::ALL {
            let started = Instant::now();
            compiled.check(&[revision]).expect("indexes");
            println!("{revision}: index: {:?}", started.elapsed());
            for method in ["initialize", "tools/call", "tools/list"] {
                let started = Instant::now();
                if compiled.compiled(revision, method).is_some() {
                    println!("{revision}: first {method}: {:?}", started.elapsed());
                }
            }
        }
        let started = Instant::now();
        let all = Schemas::embedded(DEVIATIONS);
        for revision in Revision::ALL {
            all.methods(revision).expect("compiles");
        }
        println!(
            "compile every method of every revision: {:?}",
            started.elapsed()
        );
        let def = compiled
            .compiled(Revision::V2026_07_28, "tools/call")
            .expect("tools/call is defined");
        let message = call(&json!({"_meta": meta(), "name": "echo", "arguments": {"text": "hi"}}));
        let rounds: u32 = 1_000_000;
        let started = Instant::now();
        let mut valid = 0u32;
        for _ in 0..rounds {
            valid += u32::from(def.is_valid(std::hint::black_box(&message)));
        }
        let per = started.elapsed() / rounds;
        assert_eq!(valid, rounds);
        println!("is_valid, small tools/call: {per:?} per validation");
        // What Validate does per message: the lookup by revision and method,
        // then the fast path.
        let started = Instant::now();
        let mut valid = 0u32;
        for _ in 0..rounds {
            let method = std::hint::black_box(&message)["method"]
                .as_str()
                .unwrap_or_default();
            let def = compiled.definition(Revision::V2026_07_28, method);
            valid += u32::from(def.is_ok_and(|def| def.is_some_and(|def| def.is_valid(&message))));
        }
        let per = started.elapsed() / rounds;
        assert_eq!(valid, rounds);
        println!("lookup + is_valid, small tools/call: {per:?} per validation");
    }
}
