//! A validator of wymcp's own for the part of JSON Schema that the MCP
//! schemas and most tools' schemas use, asked before jsonschema and trusted
//! only when it says *valid*.
//!
//! Why: validating every message with jsonschema cost a served call about
//! 3,600 instructions of ≈ 73,000, and holding its compiler, its validators
//! and its 2020-12 meta-schema validator in memory was all of wymcp's RSS
//! above rmcp's on the public benchmark's workload (BENCHMARKS.md, issue 26
//! §1, "RSS, where it goes"). A message this validator accepts never reaches
//! jsonschema; one it does not accept is handed to jsonschema, which decides
//! and words the error exactly as before. So the verdict stays jsonschema's
//! as long as one rule holds: **whatever this accepts, jsonschema accepts**.
//! Saying "not valid" for a valid message costs only time.
//!
//! The subset: `type`, `const`, `enum`, `properties`, `required`,
//! `additionalProperties`, `items` (one schema), `minItems`, `maxItems`,
//! `minLength`, `maxLength`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (numbers), `anyOf`, `allOf`, `$ref` to a JSON pointer
//! in the same document, `$defs`/`definitions`, `true`/`false`, `format`
//! when it is an annotation, and the annotations (`title`, `description`,
//! `default`, `examples`, `$comment`, `deprecated`, `readOnly`,
//! `writeOnly`, `$schema`, and `x-` extensions). Any other keyword, or one
//! of these with a value of another shape, compiles to a node that is never
//! valid, so every message it reaches goes to jsonschema; a schema with none
//! is *complete* (see [`Subset::is_complete`]).
//!
//! Where the subset is deliberately narrower than JSON Schema, it says "not
//! valid" and lets jsonschema decide: an `integer` written with a fraction
//! (`1.0`), numbers beyond 2⁵³ against a bound, `const` and `enum` values
//! that differ only as numbers (`1` and `1.0`), `oneOf` and everything
//! else outside the list above.
//!
//! The tests hold the rule against jsonschema over every definition of
//! every revision and over tools' schemas, on generated messages and
//! mutations of them.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Whether a schema's `format` only annotates (2019-09 and 2020-12 by
/// default, and wymcp's MCP schemas in every revision) or may assert (what
/// jsonschema does by default for drafts 4, 6 and 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Formats {
    /// `format` is ignored.
    Annotate,
    /// `format` is outside the subset.
    MayAssert,
}

type Id = u32;

/// The deepest the check recurses (schema nodes on one path) before it
/// gives up and says "not valid": a message's nesting is bounded by the
/// parse step, and this bounds a `$ref` cycle that consumes none of it.
const MAX_DEPTH: u32 = 512;

/// The most schema nodes one check visits before it gives up and says "not
/// valid" (nested `anyOf`s can revisit a value once per branch).
const MAX_STEPS: u32 = 1 << 20;

/// The largest integer an `f64` holds exactly.
const EXACT: u64 = 1 << 53;

/// A compiled schema of the subset.
#[derive(Debug)]
pub(crate) struct Subset {
    nodes: Vec<Node>,
    root: Id,
    complete: bool,
}

/// Where one check is: its depth, and the nodes visited so far.
struct Walk {
    depth: u32,
    steps: u32,
}

/// A failure worded as jsonschema words it (see [`Subset::explain`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The failing value's JSON pointer in the instance; for a missing
    /// member, the pointer it would have.
    pub(crate) pointer: String,
    /// The keyword that failed.
    pub(crate) keyword: &'static str,
    /// What is wrong, the instance's value masked as `the value`.
    pub(crate) message: String,
}

/// Where [`Subset::explain`] is: the walk, the path to the value being
/// looked at, and what it found.
struct Explain<'i> {
    walk: Walk,
    path: Vec<Step<'i>>,
    found: Option<Failure>,
    /// Set by a second failure, or by one not worded here.
    unsure: bool,
}

enum Step<'i> {
    Key(&'i str),
    Index(usize),
}

impl Explain<'_> {
    /// Records a failure at the current path (`also` appended to it); a
    /// second makes the walk unsure (which jsonschema reports first is its
    /// own order).
    fn record(&mut self, keyword: &'static str, also: Option<&str>, message: &[&str]) {
        if self.found.is_some() {
            self.unsure = true;
            return;
        }
        let mut pointer = String::with_capacity(32);
        for step in &self.path {
            pointer.push('/');
            match step {
                Step::Key(name) => push_escaped(&mut pointer, name),
                Step::Index(at) => {
                    use std::fmt::Write as _;
                    // Writing to a String cannot fail.
                    let _ = write!(pointer, "{at}");
                }
            }
        }
        if let Some(name) = also {
            pointer.push('/');
            push_escaped(&mut pointer, name);
        }
        self.found = Some(Failure {
            pointer,
            keyword,
            message: message.concat(),
        });
    }

    /// Records the member `name` missing, as `required` words it.
    fn record_missing(&mut self, name: &str) {
        let quoted = Value::from(name).to_string();
        self.record(
            "required",
            Some(name),
            &[&quoted, " is a required property"],
        );
    }
}

/// Appends `name` to a JSON pointer, `~` and `/` escaped.
fn push_escaped(pointer: &mut String, name: &str) {
    if !name.contains(['~', '/']) {
        pointer.push_str(name);
        return;
    }
    for ch in name.chars() {
        match ch {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(ch),
        }
    }
}

#[derive(Debug)]
enum Node {
    /// `true`, or a schema with annotations only.
    Any,
    /// `false`, or outside the subset: never valid here.
    Never,
    Checks(Box<Checks>),
}

#[derive(Debug, Default)]
struct Checks {
    /// `type`, as a set of [`Types`] bits; 0 when absent.
    types: u8,
    /// Whether `types` is one type named by the `type` keyword (what
    /// jsonschema words as `not of type "…"`).
    named_type: bool,
    constant: Option<Value>,
    values: Option<Vec<Value>>,
    /// `properties`, each marked when `required` names it: those with
    /// nothing below them (a `type`, a `const`) first, so a plain mismatch
    /// is found before anything is walked into; then by name.
    properties: Vec<Property>,
    /// `properties`' indexes in name order.
    by_name: Vec<u16>,
    /// How many of `properties` are required.
    required_properties: usize,
    /// The names `required` lists that `properties` does not.
    required: Vec<String>,
    /// `additionalProperties`, unless it allows anything.
    additional: Option<Id>,
    items: Option<Id>,
    bounds: Option<Box<Bounds>>,
    any_of: Vec<Id>,
    all_of: Vec<Id>,
    reference: Option<Id>,
}

#[derive(Debug)]
struct Property {
    name: String,
    id: Id,
    required: bool,
}

/// The counting and numeric keywords, rare enough to sit apart.
#[derive(Debug, Default)]
struct Bounds {
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: Option<f64>,
    exclusive_maximum: Option<f64>,
}

/// The `type` bits.
struct Types;

impl Types {
    const NULL: u8 = 1;
    const BOOLEAN: u8 = 2;
    const OBJECT: u8 = 4;
    const ARRAY: u8 = 8;
    const NUMBER: u8 = 16;
    const INTEGER: u8 = 32;
    const STRING: u8 = 64;

    fn named(name: &str) -> Option<u8> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "object" => Self::OBJECT,
            "array" => Self::ARRAY,
            "number" => Self::NUMBER,
            "integer" => Self::INTEGER,
            "string" => Self::STRING,
            _ => return None,
        })
    }

    /// The name of a single type bit, as JSON Schema spells it.
    fn name(bits: u8) -> Option<&'static str> {
        Some(match bits {
            Self::NULL => "null",
            Self::BOOLEAN => "boolean",
            Self::OBJECT => "object",
            Self::ARRAY => "array",
            Self::NUMBER => "number",
            Self::INTEGER => "integer",
            Self::STRING => "string",
            _ => return None,
        })
    }
}

impl Subset {
    /// Compiles the schema at `pointer` (a JSON pointer, `""` for the
    /// whole document) of `document`, resolving `$ref`s within it.
    pub(crate) fn compile(document: &Value, pointer: &str, formats: Formats) -> Subset {
        let mut compiler = Compiler {
            document,
            formats,
            nodes: Vec::new(),
            at: HashMap::new(),
            complete: true,
        };
        let root = compiler.reference(pointer);
        let mut nodes = compiler.nodes;
        let root = simplify(&mut nodes, root);
        Subset {
            nodes,
            root,
            complete: compiler.complete,
        }
    }

    /// A tool's schema as jsonschema's `validator_for` reads it: `format`
    /// annotates under 2020-12, which is also what a schema without
    /// `$schema` is read as, and may assert under any other draft. A
    /// `$schema` that names none of 2020-12, 2019-09 and draft-07 leaves the
    /// subset incomplete.
    pub(crate) fn of_schema(schema: &Value) -> Subset {
        let (formats, known) = match schema.get("$schema") {
            None => (Formats::Annotate, true),
            Some(Value::String(uri)) => {
                let uri = uri.trim_end_matches('#');
                let uri = uri
                    .strip_prefix("https://")
                    .or_else(|| uri.strip_prefix("http://"))
                    .unwrap_or("");
                match uri {
                    "json-schema.org/draft/2020-12/schema" => (Formats::Annotate, true),
                    "json-schema.org/draft/2019-09/schema" | "json-schema.org/draft-07/schema" => {
                        (Formats::MayAssert, true)
                    }
                    _ => (Formats::MayAssert, false),
                }
            }
            Some(_) => (Formats::MayAssert, false),
        };
        let mut subset = Subset::compile(schema, "", formats);
        subset.complete &= known;
        subset
    }

    /// Whether every keyword the schema holds (and every definition it
    /// reaches or defines) is in the subset with a value of the shape JSON
    /// Schema's meta-schema asks for. A complete subset has no node that
    /// refuses what jsonschema would accept because it was not understood.
    pub(crate) fn is_complete(&self) -> bool {
        self.complete
    }

    /// Whether `instance` is valid, said only when it surely is: `false`
    /// means "not valid, or not known here" (ask jsonschema).
    pub(crate) fn holds(&self, instance: &Value) -> bool {
        let mut walk = Walk { depth: 0, steps: 0 };
        self.node(self.root, instance, &mut walk)
    }

    fn node(&self, id: Id, instance: &Value, walk: &mut Walk) -> bool {
        if walk.depth >= MAX_DEPTH || walk.steps >= MAX_STEPS {
            return false;
        }
        walk.steps += 1;
        match self.nodes.get(id as usize) {
            Some(Node::Any) => true,
            Some(Node::Checks(checks)) => {
                walk.depth += 1;
                let holds = self.checks(checks, instance, walk);
                walk.depth -= 1;
                holds
            }
            Some(Node::Never) | None => false,
        }
    }

    fn checks(&self, c: &Checks, instance: &Value, walk: &mut Walk) -> bool {
        if let Some(target) = c.reference
            && !self.node(target, instance, walk)
        {
            return false;
        }
        if c.types != 0 && !has_type(c.types, instance) {
            return false;
        }
        if let Some(constant) = &c.constant
            && constant != instance
        {
            return false;
        }
        if let Some(values) = &c.values
            && !values.contains(instance)
        {
            return false;
        }
        let fits = match instance {
            Value::Object(object) => self.object(c, object, walk),
            Value::Array(items) => self.array(c, items, walk),
            Value::String(text) => c.bounds.as_deref().is_none_or(|b| length_fits(b, text)),
            Value::Number(number) => c.bounds.as_deref().is_none_or(|b| bounds_fit(b, number)),
            Value::Null | Value::Bool(_) => true,
        };
        fits && (c.any_of.is_empty() || c.any_of.iter().any(|&s| self.node(s, instance, walk)))
            && c.all_of.iter().all(|&s| self.node(s, instance, walk))
    }

    fn object(&self, c: &Checks, object: &Map<String, Value>, walk: &mut Walk) -> bool {
        if !c.required.iter().all(|name| object.contains_key(name)) {
            return false;
        }
        match c.additional {
            // Members outside `properties` are free: each property is
            // looked up (those with nothing below them first: see
            // [`simplify`]), and a required one must be there.
            None => c.properties.iter().all(|p| match object.get(&p.name) {
                Some(value) => self.node(p.id, value, walk),
                None => !p.required,
            }),
            // Every member is held to its property or to
            // `additionalProperties`.
            Some(additional) => {
                let mut required = 0;
                object.iter().all(|(name, value)| match c.property(name) {
                    Some(p) => {
                        required += usize::from(p.required);
                        self.node(p.id, value, walk)
                    }
                    None => self.node(additional, value, walk),
                }) && required == c.required_properties
            }
        }
    }

    fn array(&self, c: &Checks, items: &[Value], walk: &mut Walk) -> bool {
        let n = items.len() as u64;
        c.bounds.as_deref().is_none_or(|b| {
            b.min_items.is_none_or(|min| n >= min) && b.max_items.is_none_or(|max| n <= max)
        }) && c
            .items
            .is_none_or(|s| items.iter().all(|item| self.node(s, item, walk)))
    }

    /// The failure of `instance`, worded as jsonschema words it, when the
    /// subset is sure it is the instance's only one and of a kind it words
    /// exactly: a value of the wrong single `type`, a string `const` not
    /// matched, a `required` member missing. `None` otherwise (ask
    /// jsonschema, which decides and words it): two failures or more (which
    /// comes first is jsonschema's order), one under `anyOf` or `allOf`
    /// (reported there as the combinator's), any other keyword's, and
    /// anything outside the subset.
    ///
    /// Asked only for a message [`holds`](Self::holds) did not vouch for:
    /// a refusal worded here never runs jsonschema's validator. A test holds
    /// every failure worded here to jsonschema's over the corpus.
    pub(crate) fn explain(&self, instance: &Value) -> Option<Failure> {
        let mut explain = Explain {
            walk: Walk { depth: 0, steps: 0 },
            path: Vec::new(),
            found: None,
            unsure: false,
        };
        self.explain_node(self.root, instance, &mut explain);
        if explain.unsure { None } else { explain.found }
    }

    fn explain_node<'i>(&self, id: Id, instance: &'i Value, e: &mut Explain<'i>) {
        if e.unsure {
            return;
        }
        if e.walk.depth >= MAX_DEPTH || e.walk.steps >= MAX_STEPS {
            e.unsure = true;
            return;
        }
        e.walk.steps += 1;
        match self.nodes.get(id as usize) {
            Some(Node::Any) => {}
            Some(Node::Checks(checks)) => {
                e.walk.depth += 1;
                self.explain_checks(checks, instance, e);
                e.walk.depth -= 1;
            }
            Some(Node::Never) | None => e.unsure = true,
        }
    }

    fn explain_checks<'i>(&self, c: &Checks, instance: &'i Value, e: &mut Explain<'i>) {
        if let Some(target) = c.reference {
            self.explain_node(target, instance, e);
        }
        if c.types != 0 && !has_type(c.types, instance) {
            // One type named by `type` itself (not an `anyOf` merged into
            // it), and no number that might be an integer written `1.0`.
            let named = c.named_type && !(instance.is_number() && c.types & Types::INTEGER != 0);
            match Types::name(c.types) {
                Some(name) if named => {
                    e.record("type", None, &["the value is not of type \"", name, "\""]);
                }
                _ => e.unsure = true,
            }
        }
        if let Some(constant) = &c.constant
            && constant != instance
        {
            // A string is equal to no other kind of value, so the
            // comparison is exact; numbers are left to jsonschema.
            match constant {
                Value::String(_) => {
                    let quoted = constant.to_string();
                    e.record("const", None, &[&quoted, " was expected"]);
                }
                _ => e.unsure = true,
            }
        }
        if let Some(values) = &c.values
            && !values.contains(instance)
        {
            e.unsure = true;
        }
        match instance {
            Value::Object(object) => self.explain_object(c, object, e),
            Value::Array(items) => {
                let counted = c.bounds.as_deref().is_none_or(|b| {
                    let n = items.len() as u64;
                    b.min_items.is_none_or(|min| n >= min) && b.max_items.is_none_or(|max| n <= max)
                });
                if !counted {
                    e.unsure = true;
                }
                if let Some(schema) = c.items {
                    for (at, item) in items.iter().enumerate() {
                        e.path.push(Step::Index(at));
                        self.explain_node(schema, item, e);
                        e.path.pop();
                    }
                }
            }
            Value::String(text) => {
                if !c.bounds.as_deref().is_none_or(|b| length_fits(b, text)) {
                    e.unsure = true;
                }
            }
            Value::Number(number) => {
                if !c.bounds.as_deref().is_none_or(|b| bounds_fit(b, number)) {
                    e.unsure = true;
                }
            }
            Value::Null | Value::Bool(_) => {}
        }
        // A failure under a combinator is reported as the combinator's.
        if !e.unsure {
            let any = c.any_of.is_empty()
                || c.any_of
                    .iter()
                    .any(|&s| self.node(s, instance, &mut e.walk));
            let all = any
                && c.all_of
                    .iter()
                    .all(|&s| self.node(s, instance, &mut e.walk));
            if !all {
                e.unsure = true;
            }
        }
    }

    fn explain_object<'i>(&self, c: &Checks, object: &'i Map<String, Value>, e: &mut Explain<'i>) {
        for name in &c.required {
            if !object.contains_key(name) {
                e.record_missing(name);
            }
        }
        let Some(additional) = c.additional else {
            for p in &c.properties {
                match object.get_key_value(&p.name) {
                    Some((name, value)) => {
                        e.path.push(Step::Key(name));
                        self.explain_node(p.id, value, e);
                        e.path.pop();
                    }
                    None if p.required => e.record_missing(&p.name),
                    None => {}
                }
            }
            return;
        };
        let mut required = 0;
        for (name, value) in object {
            let schema = match c.property(name) {
                Some(p) => {
                    required += usize::from(p.required);
                    p.id
                }
                None => additional,
            };
            e.path.push(Step::Key(name));
            self.explain_node(schema, value, e);
            e.path.pop();
        }
        if required != c.required_properties {
            for p in c.properties.iter().filter(|p| p.required) {
                if !object.contains_key(&p.name) {
                    e.record_missing(&p.name);
                }
            }
        }
    }
}

/// Rewrites `nodes` to walk less, judging the same, once every node is
/// known (a `$ref` may name one compiled after it); returns the root's new
/// id. A node whose only check is a `$ref` is replaced by its target; an
/// `additionalProperties` that allows anything is dropped (members outside
/// `properties` are then not walked); an `anyOf` whose branches each check
/// only `type` (`anyOf: [{type: string}, {type: integer}]`) becomes the
/// node's `type`; and an object's properties are put in the order they are
/// looked up in, those with nothing below them first.
fn simplify(nodes: &mut [Node], root: Id) -> Id {
    fn checks(nodes: &[Node], id: Id) -> Option<&Checks> {
        match nodes.get(id as usize) {
            Some(Node::Checks(c)) => Some(c),
            _ => None,
        }
    }
    // Each node's target through `$ref`-only nodes (a cycle of them is left
    // as it is: walking it ends at the depth bound).
    let alias: Vec<Id> = (0..nodes.len())
        .map(|start| {
            let mut id = Id::try_from(start).unwrap_or(Id::MAX);
            for _ in 0..64 {
                match checks(nodes, id) {
                    Some(c) if c.only_refers() => id = c.reference.unwrap_or(id),
                    _ => break,
                }
            }
            id
        })
        .collect();
    let to = |id: Id| alias.get(id as usize).copied().unwrap_or(id);
    let free: Vec<bool> = nodes.iter().map(|n| matches!(n, Node::Any)).collect();
    for node in nodes.iter_mut() {
        let Node::Checks(c) = node else { continue };
        for p in &mut c.properties {
            p.id = to(p.id);
        }
        c.additional = c
            .additional
            .map(to)
            .filter(|&id| free.get(id as usize) != Some(&true));
        c.items = c.items.map(to);
        c.reference = c.reference.map(to);
        for id in c.any_of.iter_mut().chain(c.all_of.iter_mut()) {
            *id = to(*id);
        }
    }
    // Read from the nodes as rewritten: the `type` an `anyOf` of
    // type-only branches amounts to, and whether a node checks nothing
    // below the value itself.
    let unions: Vec<Option<u8>> = nodes
        .iter()
        .map(|node| {
            let Node::Checks(c) = node else { return None };
            if c.any_of.is_empty() || c.types != 0 {
                return None;
            }
            c.any_of.iter().try_fold(0_u8, |bits, &branch| {
                let b = checks(nodes, branch)?;
                b.only_types().then_some(bits | b.types)
            })
        })
        .collect();
    let flat: Vec<bool> = nodes
        .iter()
        .map(|node| match node {
            Node::Checks(c) => !c.has_parts() && c.reference.is_none(),
            _ => true,
        })
        .collect();
    for (node, union) in nodes.iter_mut().zip(unions) {
        let Node::Checks(c) = node else { continue };
        c.properties.sort_by(|a, b| {
            let deep = |p: &Property| !flat.get(p.id as usize).copied().unwrap_or(false);
            (deep(a), &a.name).cmp(&(deep(b), &b.name))
        });
        let mut by_name: Vec<u16> = (0..c.properties.len())
            .map(|at| u16::try_from(at).unwrap_or(u16::MAX))
            .collect();
        by_name.sort_by(|&a, &b| {
            let name = |at: u16| c.properties.get(usize::from(at)).map(|p| p.name.as_str());
            name(a).cmp(&name(b))
        });
        c.by_name = by_name;
        if let Some(types) = union {
            c.types = types;
            c.any_of.clear();
        }
    }
    to(root)
}

impl Checks {
    /// The property named `name`, found by name.
    fn property(&self, name: &str) -> Option<&Property> {
        let at = self
            .by_name
            .binary_search_by(|&at| self.properties[usize::from(at)].name.as_str().cmp(name))
            .ok()?;
        self.properties.get(usize::from(self.by_name[at]))
    }

    /// Whether `$ref` is the only check.
    fn only_refers(&self) -> bool {
        self.reference.is_some() && self.types == 0 && !self.has_parts() && !self.has_values()
    }

    /// Whether `type` is the only check.
    fn only_types(&self) -> bool {
        self.types != 0 && self.reference.is_none() && !self.has_parts() && !self.has_values()
    }

    /// Whether anything of a value's members or items is checked, or the
    /// value is held to other nodes (`$ref` apart).
    fn has_parts(&self) -> bool {
        !self.properties.is_empty()
            || !self.required.is_empty()
            || self.additional.is_some()
            || self.items.is_some()
            || !self.any_of.is_empty()
            || !self.all_of.is_empty()
    }

    /// Whether the value is compared (`const`, `enum`) or bounded.
    fn has_values(&self) -> bool {
        self.constant.is_some() || self.values.is_some() || self.bounds.is_some()
    }
}

fn has_type(types: u8, instance: &Value) -> bool {
    let bit = match instance {
        Value::Null => Types::NULL,
        Value::Bool(_) => Types::BOOLEAN,
        Value::Object(_) => Types::OBJECT,
        Value::Array(_) => Types::ARRAY,
        Value::String(_) => Types::STRING,
        Value::Number(n) => {
            // An integer written with a fraction (`1.0`) is one to JSON
            // Schema; here it is left to jsonschema.
            let integer = n.is_i64() || n.is_u64();
            return types & Types::NUMBER != 0 || (integer && types & Types::INTEGER != 0);
        }
    };
    types & bit != 0
}

fn length_fits(c: &Bounds, text: &str) -> bool {
    if c.min_length.is_none() && c.max_length.is_none() {
        return true;
    }
    // Characters (code points), as JSON Schema counts a string's length.
    let n = text.chars().count() as u64;
    c.min_length.is_none_or(|min| n >= min) && c.max_length.is_none_or(|max| n <= max)
}

fn bounds_fit(c: &Bounds, number: &serde_json::Number) -> bool {
    if c.minimum.is_none()
        && c.maximum.is_none()
        && c.exclusive_minimum.is_none()
        && c.exclusive_maximum.is_none()
    {
        return true;
    }
    // Compared as f64 only where that is exact.
    let Some(x) = exact(number) else {
        return false;
    };
    c.minimum.is_none_or(|b| x >= b)
        && c.maximum.is_none_or(|b| x <= b)
        && c.exclusive_minimum.is_none_or(|b| x > b)
        && c.exclusive_maximum.is_none_or(|b| x < b)
}

/// A number as an `f64` when that is its exact value.
#[allow(clippy::cast_precision_loss)] // only within ±2^53, where it is exact
fn exact(number: &serde_json::Number) -> Option<f64> {
    if let Some(n) = number.as_u64() {
        return (n <= EXACT).then_some(n as f64);
    }
    if let Some(n) = number.as_i64() {
        return (n.unsigned_abs() <= EXACT).then_some(n as f64);
    }
    number.as_f64().filter(|x| x.is_finite())
}

struct Compiler<'d> {
    document: &'d Value,
    formats: Formats,
    nodes: Vec<Node>,
    /// The node compiled for each JSON pointer reached, so a `$ref` cycle
    /// ends and a definition is compiled once.
    at: HashMap<String, Id>,
    complete: bool,
}

impl Compiler<'_> {
    fn push(&mut self, node: Node) -> Id {
        let id = Id::try_from(self.nodes.len()).unwrap_or(Id::MAX);
        self.nodes.push(node);
        id
    }

    fn never(&mut self) -> Id {
        self.complete = false;
        self.push(Node::Never)
    }

    /// The node of the schema at `pointer`, compiled once.
    fn reference(&mut self, pointer: &str) -> Id {
        if let Some(&id) = self.at.get(pointer) {
            return id;
        }
        let Some(schema) = resolve(self.document, pointer) else {
            return self.never();
        };
        // A placeholder first: a cycle back to `pointer` finds it.
        let id = self.push(Node::Never);
        self.at.insert(pointer.to_owned(), id);
        let node = self.schema(schema, pointer);
        if let Some(slot) = self.nodes.get_mut(id as usize) {
            *slot = node;
        }
        id
    }

    fn child(&mut self, schema: &Value, pointer: String) -> Id {
        let node = self.schema(schema, &pointer);
        let id = self.push(node);
        self.at.entry(pointer).or_insert(id);
        id
    }

    /// Reads one checking keyword into `c`: whether it is in the subset
    /// with a value of the meta-schema's shape.
    fn keyword(&mut self, c: &mut Checks, key: &str, value: &Value, here: String) -> bool {
        match key {
            "type" => types(value)
                .map(|t| {
                    c.types = t;
                    c.named_type = t.is_power_of_two();
                })
                .is_some(),
            "const" => {
                c.constant = Some(value.clone());
                true
            }
            "enum" => match value {
                Value::Array(values) => {
                    c.values = Some(values.clone());
                    true
                }
                _ => false,
            },
            "properties" => match value {
                // (Indexed by `u16`: more properties than that is left
                // to jsonschema.)
                Value::Object(properties) if u16::try_from(properties.len()).is_ok() => {
                    for (name, schema) in properties {
                        let at = format!("{here}/{}", escape(name));
                        let id = self.child(schema, at);
                        c.properties.push(Property {
                            name: name.clone(),
                            id,
                            required: false,
                        });
                    }
                    c.properties.sort_by(|a, b| a.name.cmp(&b.name));
                    true
                }
                _ => false,
            },
            "required" => strings(value).map(|r| c.required = r).is_some(),
            "additionalProperties" => is_schema(value)
                .then(|| c.additional = Some(self.child(value, here)))
                .is_some(),
            "items" => is_schema(value)
                .then(|| c.items = Some(self.child(value, here)))
                .is_some(),
            "minItems" => fill(
                &mut c.bounds.get_or_insert_default().min_items,
                count(value),
            ),
            "maxItems" => fill(
                &mut c.bounds.get_or_insert_default().max_items,
                count(value),
            ),
            "minLength" => fill(
                &mut c.bounds.get_or_insert_default().min_length,
                count(value),
            ),
            "maxLength" => fill(
                &mut c.bounds.get_or_insert_default().max_length,
                count(value),
            ),
            "minimum" => fill(&mut c.bounds.get_or_insert_default().minimum, bound(value)),
            "maximum" => fill(&mut c.bounds.get_or_insert_default().maximum, bound(value)),
            "exclusiveMinimum" => fill(
                &mut c.bounds.get_or_insert_default().exclusive_minimum,
                bound(value),
            ),
            "exclusiveMaximum" => fill(
                &mut c.bounds.get_or_insert_default().exclusive_maximum,
                bound(value),
            ),
            "anyOf" | "allOf" => match value {
                Value::Array(schemas) if !schemas.is_empty() && schemas.iter().all(is_schema) => {
                    let ids: Vec<Id> = schemas
                        .iter()
                        .enumerate()
                        .map(|(i, s)| self.child(s, format!("{here}/{i}")))
                        .collect();
                    if key == "anyOf" {
                        c.any_of = ids;
                    } else {
                        c.all_of = ids;
                    }
                    true
                }
                _ => false,
            },
            "$ref" => match value.as_str().and_then(local_pointer) {
                Some(target) => {
                    c.reference = Some(self.reference(&target));
                    true
                }
                None => false,
            },
            _ => false,
        }
    }

    fn schema(&mut self, schema: &Value, pointer: &str) -> Node {
        let object = match schema {
            Value::Bool(true) => return Node::Any,
            Value::Bool(false) => return Node::Never,
            Value::Object(object) => object,
            _ => {
                self.complete = false;
                return Node::Never;
            }
        };
        let mut c = Checks::default();
        let mut checks = false;
        for (key, value) in object {
            let here = format!("{pointer}/{}", escape(key));
            // What only annotates (or holds definitions) first: it leaves
            // the node `Any` when nothing else is there.
            let annotation = match key.as_str() {
                "format" => Some(value.is_string() && self.formats == Formats::Annotate),
                "title" | "description" | "$comment" | "$schema" => Some(value.is_string()),
                "deprecated" | "readOnly" | "writeOnly" => Some(value.is_boolean()),
                "examples" => Some(value.is_array()),
                "default" => Some(true),
                "$defs" | "definitions" => Some(match value {
                    Value::Object(defs) if defs.values().all(is_schema) => {
                        // Compiled whether reached or not, so a complete
                        // subset vouches for every definition it holds.
                        for name in defs.keys() {
                            self.reference(&format!("{here}/{}", escape(name)));
                        }
                        true
                    }
                    _ => false,
                }),
                extension if extension.starts_with("x-") => Some(true),
                _ => None,
            };
            let understood = if let Some(understood) = annotation {
                understood
            } else {
                checks = true;
                self.keyword(&mut c, key, value, here)
            };
            if !understood {
                self.complete = false;
                return Node::Never;
            }
        }
        if !checks {
            return Node::Any;
        }
        // `required` split: the names `properties` has are marked there.
        let mut rest = Vec::new();
        for name in std::mem::take(&mut c.required) {
            match c.properties.binary_search_by(|p| p.name.cmp(&name)) {
                Ok(at) => {
                    c.properties[at].required = true;
                    c.required_properties += 1;
                }
                Err(_) => rest.push(name),
            }
        }
        c.required = rest;
        Node::Checks(Box::new(c))
    }
}

/// Puts `value` in `slot`: whether there was one (a keyword whose value
/// has the wrong shape is outside the subset).
fn fill<T>(slot: &mut Option<T>, value: Option<T>) -> bool {
    let understood = value.is_some();
    *slot = value;
    understood
}

fn is_schema(value: &Value) -> bool {
    value.is_object() || value.is_boolean()
}

fn types(value: &Value) -> Option<u8> {
    match value {
        Value::String(name) => Types::named(name),
        Value::Array(names) if !names.is_empty() => {
            let mut bits = 0;
            for name in names {
                let bit = Types::named(name.as_str()?)?;
                if bits & bit != 0 {
                    return None;
                }
                bits |= bit;
            }
            Some(bits)
        }
        _ => None,
    }
}

fn strings(value: &Value) -> Option<Vec<String>> {
    let list = value.as_array()?;
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for item in list {
        let text = item.as_str()?;
        if out.iter().any(|seen| seen == text) {
            return None;
        }
        out.push(text.to_owned());
    }
    Some(out)
}

fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

fn bound(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => exact(n),
        _ => None,
    }
}

/// The JSON pointer a `$ref` of the same document names (`#` or
/// `#/a/b`), unescaped of nothing: a `%` (a percent-encoded pointer) or
/// anything but a fragment is outside the subset.
fn local_pointer(reference: &str) -> Option<String> {
    let pointer = reference.strip_prefix('#')?;
    if !(pointer.is_empty() || pointer.starts_with('/')) || pointer.contains('%') {
        return None;
    }
    Some(pointer.to_owned())
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn resolve<'d>(document: &'d Value, pointer: &str) -> Option<&'d Value> {
    if pointer.is_empty() {
        return Some(document);
    }
    document.pointer(pointer)
}

/// Instances generated from a schema, and their mutations: the corpus the
/// tests hold the subset to jsonschema with.
#[cfg(test)]
pub(crate) mod corpus {
    use serde_json::{Map, Value, json};

    /// A small deterministic generator (xorshift64*).
    pub(crate) struct Rng(u64);

    impl Rng {
        pub(crate) fn new(seed: u64) -> Rng {
            Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
        }

        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            usize::try_from(self.next() % (n.max(1) as u64)).unwrap_or(0)
        }

        fn chance(&mut self, per_mille: u64) -> bool {
            self.next() % 1000 < per_mille
        }

        fn pick<'a>(&mut self, list: &'a [Value]) -> &'a Value {
            &list[self.below(list.len())]
        }
    }

    /// Values of every type, and the edges the subset leaves to
    /// jsonschema (an integral float, integers beyond 2^53).
    pub(crate) fn junk() -> Vec<Value> {
        vec![
            json!(null),
            json!(true),
            json!(0),
            json!(-1),
            json!(1.0),
            json!(2.5),
            json!(9_007_199_254_740_993_u64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!("x"),
            json!([]),
            json!([1, "a"]),
            json!({}),
            json!({"a": null}),
        ]
    }

    /// An instance of `schema` (a node of `document`), each value replaced
    /// by junk with probability `chaos` per mille and each required member
    /// dropped with it too.
    pub(crate) fn instance(document: &Value, schema: &Value, rng: &mut Rng, chaos: u64) -> Value {
        grow(document, schema, rng, chaos, 0)
    }

    fn grow(document: &Value, schema: &Value, rng: &mut Rng, chaos: u64, depth: u32) -> Value {
        let junk = junk();
        if depth > 10 || rng.chance(chaos) {
            return rng.pick(&junk).clone();
        }
        let Value::Object(o) = schema else {
            return match schema {
                Value::Bool(false) => json!(null),
                _ => rng.pick(&junk).clone(),
            };
        };
        if let Some(target) = o
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|p| document.pointer(p))
        {
            return grow(document, target, rng, chaos, depth + 1);
        }
        if let Some(value) = o.get("const") {
            return value.clone();
        }
        if let Some(Value::Array(values)) = o.get("enum") {
            return rng.pick(values).clone();
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            if let Some(Value::Array(branches)) = o.get(key) {
                let branch = if key == "allOf" {
                    &branches[0]
                } else {
                    rng.pick(branches)
                };
                return grow(document, branch, rng, chaos, depth + 1);
            }
        }
        let ty = match o.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(types)) => rng.pick(types).as_str().unwrap_or("null").to_owned(),
            _ if o.contains_key("properties") => "object".to_owned(),
            _ if o.contains_key("items") => "array".to_owned(),
            _ => return rng.pick(&junk).clone(),
        };
        match ty.as_str() {
            "object" => {
                let required: Vec<&str> = o
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let mut out = Map::new();
                if let Some(Value::Object(properties)) = o.get("properties") {
                    for (name, property) in properties {
                        let wanted = required.contains(&name.as_str()) && !rng.chance(chaos);
                        if wanted || rng.chance(500) {
                            out.insert(
                                name.clone(),
                                grow(document, property, rng, chaos, depth + 1),
                            );
                        }
                    }
                }
                if rng.chance(200) {
                    let extra = match o.get("additionalProperties") {
                        Some(schema) => grow(document, schema, rng, chaos, depth + 1),
                        None => rng.pick(&junk).clone(),
                    };
                    out.insert("zz-extra".to_owned(), extra);
                }
                Value::Object(out)
            }
            "array" => {
                let n = rng.below(4);
                let items = o.get("items").cloned().unwrap_or(Value::Bool(true));
                Value::Array(
                    (0..n)
                        .map(|_| grow(document, &items, rng, chaos, depth + 1))
                        .collect(),
                )
            }
            "string" => rng
                .pick(&[
                    json!(""),
                    json!("a"),
                    json!("file:///a"),
                    json!("2025-01-01T00:00:00Z"),
                    json!("\u{1F600}\u{e9}"),
                ])
                .clone(),
            "integer" => rng
                .pick(&[json!(0), json!(1), json!(7), json!(-3), json!(100)])
                .clone(),
            "number" => rng
                .pick(&[json!(0), json!(0.5), json!(1), json!(2.5), json!(-1)])
                .clone(),
            "boolean" => json!(rng.chance(500)),
            _ => json!(null),
        }
    }

    /// `value` with one change: a member removed, or one value (the whole,
    /// or one reached by a random walk down) replaced by junk.
    pub(crate) fn mutate_once(value: &mut Value, rng: &mut Rng) {
        let junk = junk();
        let mut at = value;
        loop {
            let len = match &*at {
                Value::Object(members) => members.len(),
                Value::Array(items) => items.len(),
                _ => 0,
            };
            if len == 0 || !rng.chance(700) {
                *at = rng.pick(&junk).clone();
                return;
            }
            let pick = rng.below(len);
            at = match at {
                Value::Object(members) => {
                    if rng.chance(250) {
                        let name = members.keys().nth(pick).cloned().unwrap_or_default();
                        members.remove(&name);
                        return;
                    }
                    match members.values_mut().nth(pick) {
                        Some(next) => next,
                        None => return,
                    }
                }
                Value::Array(items) => match items.get_mut(pick) {
                    Some(next) => next,
                    None => return,
                },
                _ => return,
            };
        }
    }

    /// Whether `value` holds an edge the subset leaves to jsonschema: a
    /// float with no fraction, or an integer beyond 2^53.
    pub(crate) fn has_edge(value: &Value) -> bool {
        match value {
            Value::Number(n) => {
                n.as_f64()
                    .is_some_and(|x| x.fract() == 0.0 && !(n.is_i64() || n.is_u64()))
                    || n.as_u64().is_some_and(|x| x > super::EXACT)
                    || n.as_i64().is_some_and(|x| x.unsigned_abs() > super::EXACT)
            }
            Value::Array(items) => items.iter().any(has_edge),
            Value::Object(members) => members.values().any(has_edge),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::corpus::{Rng, has_edge, instance, junk};
    use super::*;

    fn strict(schema: &Value) -> jsonschema::Validator {
        jsonschema::options()
            .should_validate_formats(false)
            .build(schema)
            .expect("the test schema compiles")
    }

    /// Schemas using every keyword of the subset, alone and together.
    fn schemas() -> Vec<Value> {
        vec![
            json!(true),
            json!(false),
            json!({}),
            json!({"type": "string"}),
            json!({"type": "integer"}),
            json!({"type": "number"}),
            json!({"type": ["string", "null"]}),
            json!({"type": "object", "required": ["a"]}),
            json!({"const": 1}),
            json!({"const": {"a": [1, "x"]}}),
            json!({"enum": [1, "x", null]}),
            json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false}),
            json!({"properties": {"a": {"type": "integer"}}, "additionalProperties": {"type": "boolean"}}),
            json!({"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 2}),
            json!({"type": "string", "minLength": 1, "maxLength": 2}),
            json!({"minimum": 0, "maximum": 1}),
            json!({"exclusiveMinimum": 0, "exclusiveMaximum": 2.5}),
            json!({"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]}),
            json!({"allOf": [{"type": "object"}, {"required": ["a"]}]}),
            json!({"anyOf": [{"type": "string"}, {"type": ["integer", "null"]}]}),
            json!({"$defs": {"S": {"type": "string"}, "R": {"$ref": "#/$defs/S"}},
                   "properties": {"a": {"anyOf": [{"$ref": "#/$defs/R"}, {"type": "boolean"}]}},
                   "required": ["a"]}),
            json!({"$defs": {"N": {"type": "integer"}}, "type": "object",
                   "properties": {"a": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/properties/a"}}}),
            json!({"$defs": {"T": {"type": "object", "properties": {"c": {"$ref": "#/$defs/T"}},
                                   "additionalProperties": false}},
                   "$ref": "#/$defs/T"}),
            json!({"type": ["string"]}),
            json!({"anyOf": [{"type": "string"}]}),
            json!({"const": "x"}),
            json!({"const": "a\"b/c"}),
            json!({"type": "object", "required": ["a", "b~/c"],
                   "properties": {"a": {"type": "integer"}, "c": {"const": "x"}}}),
            json!({"type": "array", "items": {"type": "object", "required": ["x/y"],
                   "additionalProperties": {"type": "string"}}}),
            json!({"type": "string", "format": "uri", "title": "t", "description": "d",
                   "default": 1, "examples": [1], "x-mcp-header": "A"}),
        ]
    }

    fn instances() -> Vec<Value> {
        let mut all = junk();
        all.extend([
            json!("ab"),
            json!("abc"),
            json!("\u{1F600}\u{1F600}"),
            json!(0.5),
            json!(2),
            json!(3),
            json!(-0.5),
            json!({"a": "x"}),
            json!({"a": 1}),
            json!({"a": 1, "b": 2}),
            json!({"a": 1, "b": true}),
            json!({"a": [1, "x"]}),
            json!({"c": {"c": {}}}),
            json!({"c": {"c": {"d": 1}}}),
            json!({"a": 1, "x/y~z": 2}),
            json!([{"x/y": "s"}, {"x/y": 1}]),
            json!([1]),
            json!([1, 2, 3]),
            json!([1.5]),
        ]);
        all
    }

    /// Holds a refusal the subset words to jsonschema's first error, word
    /// for word; whether it was worded.
    fn worded_as_jsonschema(
        subset: &Subset,
        validator: &jsonschema::Validator,
        value: &Value,
    ) -> bool {
        let Some(ours) = subset.explain(value) else {
            return false;
        };
        let theirs = validator.validate(value).map_err(|error| {
            let mut pointer = error.instance_path().as_str().to_owned();
            if let jsonschema::error::ValidationErrorKind::Required { property } = error.kind()
                && let Some(name) = property.as_str()
            {
                // Escaped as RFC 6901 says, not by the code under test.
                pointer.push('/');
                pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
            (
                pointer,
                error.kind().keyword().to_owned(),
                error.masked_with("the value").to_string(),
            )
        });
        let ours = (ours.pointer, ours.keyword.to_owned(), ours.message);
        assert_eq!(Err(ours), theirs, "worded otherwise: {value}");
        true
    }

    /// The rule, keyword by keyword: whatever the subset accepts,
    /// jsonschema accepts; and on values without the edges it leaves to
    /// jsonschema (integral floats, integers beyond 2^53), both agree.
    #[test]
    fn each_keyword_judges_as_jsonschema_does() {
        let mut worded = 0;
        for schema in schemas() {
            let subset = Subset::compile(&schema, "", Formats::Annotate);
            assert!(subset.is_complete(), "{schema}");
            let validator = strict(&schema);
            for value in instances() {
                let ours = subset.holds(&value);
                let theirs = validator.is_valid(&value);
                assert!(
                    !ours || theirs,
                    "accepted what jsonschema refuses: {schema} {value}"
                );
                if !has_edge(&value) {
                    assert_eq!(ours, theirs, "{schema} {value}");
                }
                worded += usize::from(worded_as_jsonschema(&subset, &validator, &value));
            }
        }
        assert!(worded > 100, "{worded} refusals worded by the subset");
    }

    /// Outside the subset is never valid here, and marks the subset
    /// incomplete: jsonschema decides there.
    #[test]
    fn what_is_outside_the_subset_is_left_to_jsonschema() {
        for schema in [
            json!({"pattern": "a"}),
            json!({"oneOf": [{}, {}]}),
            json!({"not": {}}),
            json!({"$ref": "https://example.com/s"}),
            json!({"$ref": "#/$defs/Missing"}),
            json!({"$ref": "#/%24defs/A", "$defs": {"A": {}}}),
            json!({"$id": "urn:x", "type": "object"}),
            json!({"type": "strng"}),
            json!({"type": ["string", "string"]}),
            json!({"required": ["a", "a"]}),
            json!({"required": "a"}),
            json!({"minimum": "0"}),
            json!({"maxItems": -1}),
            json!({"items": [{}]}),
            json!({"anyOf": []}),
            json!({"description": 5}),
            json!({"properties": {"a": 5}}),
            json!({"unevaluatedProperties": false}),
            json!({"$defs": {"Unused": {"pattern": "("}}}),
        ] {
            let subset = Subset::compile(&schema, "", Formats::Annotate);
            assert!(!subset.is_complete(), "{schema}");
            for value in instances() {
                if subset.holds(&value) {
                    assert!(strict(&json!({})).is_valid(&value));
                }
            }
        }
        // `format` asserts under draft-07 and its kin: outside the subset there.
        let draft7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "format": "uri"});
        let subset = Subset::of_schema(&draft7);
        assert!(!subset.holds(&json!("not a uri")) && !subset.is_complete());
        let unknown = json!({"$schema": "https://example.com/my-dialect", "type": "string"});
        assert!(!Subset::of_schema(&unknown).is_complete());
        for annotated in [
            json!({"format": "uri"}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "format": "uri"}),
        ] {
            let subset = Subset::of_schema(&annotated);
            assert!(subset.is_complete() && subset.holds(&json!("not a uri")));
            assert!(
                jsonschema::validator_for(&annotated)
                    .expect("compiles")
                    .is_valid(&json!("not a uri"))
            );
        }
    }

    /// A complete subset is what lets a tool's registration skip
    /// jsonschema's compile: every schema it calls complete compiles.
    #[test]
    fn a_complete_schema_compiles_in_jsonschema() {
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Item {
            /// A name.
            name: String,
            count: u32,
            ratio: Option<f64>,
            tags: Vec<String>,
            kind: Kind,
            next: Option<Box<Item>>,
        }
        #[derive(schemars::JsonSchema)]
        #[allow(dead_code)]
        #[serde(rename_all = "lowercase")]
        enum Kind {
            Small,
            Large,
        }
        let derived = serde_json::to_value(schemars::schema_for!(Item)).expect("a schema");
        let mut all = schemas();
        all.push(derived.clone());
        for schema in all {
            let subset = Subset::of_schema(&schema);
            if subset.is_complete() {
                assert!(jsonschema::validator_for(&schema).is_ok(), "{schema}");
            }
        }
        let subset = Subset::of_schema(&derived);
        assert!(subset.is_complete(), "{derived}");
        let validator = jsonschema::validator_for(&derived).expect("compiles");
        let mut rng = Rng::new(7);
        let mut agreed = 0;
        let mut worded = 0;
        for round in 0..3_000 {
            let chaos = [0, 20, 150][round % 3];
            let value = instance(&derived, &derived, &mut rng, chaos);
            let ours = subset.holds(&value);
            let theirs = validator.is_valid(&value);
            assert!(!ours || theirs, "accepted what jsonschema refuses: {value}");
            if !has_edge(&value) {
                assert_eq!(ours, theirs, "{value}");
                agreed += usize::from(ours);
            }
            worded += usize::from(!ours && worded_as_jsonschema(&subset, &validator, &value));
        }
        assert!(agreed > 300, "{agreed} generated values were valid");
        assert!(worded > 100, "{worded} refusals worded by the subset");
    }

    /// A `$ref` cycle that consumes no instance, and nesting past the
    /// walk's bound, end in "not valid" (jsonschema's to decide), not a
    /// stack overflow.
    #[test]
    fn cycles_and_depth_are_bounded() {
        let cycle = json!({"$defs": {"A": {"$ref": "#/$defs/B"}, "B": {"$ref": "#/$defs/A"}},
                           "$ref": "#/$defs/A"});
        assert!(!Subset::compile(&cycle, "", Formats::Annotate).holds(&json!(1)));
        let nested = json!({"$defs": {"L": {"type": "array", "items": {"$ref": "#/$defs/L"}}},
                            "$ref": "#/$defs/L"});
        let subset = Subset::compile(&nested, "", Formats::Annotate);
        let mut deep = json!([]);
        for _ in 0..100 {
            deep = json!([deep]);
        }
        assert!(subset.holds(&deep));
        for _ in 0..MAX_DEPTH {
            deep = json!([deep]);
        }
        assert!(!subset.holds(&deep));
        assert_eq!(subset.explain(&deep), None);
    }

    /// Nested `anyOf`s whose first branch fails only after walking the
    /// rest revisit a value twice per level: `2^levels` steps. Past
    /// [`MAX_STEPS`] the walk gives up ("not valid": jsonschema decides)
    /// instead of running on; below it, the same shape is vouched for.
    #[test]
    fn steps_are_bounded() {
        fn doubling(levels: u32) -> Value {
            let mut defs = serde_json::Map::new();
            defs.insert("S0".to_owned(), json!(true));
            for k in 1..=levels {
                let below = json!({"$ref": format!("#/$defs/S{}", k - 1)});
                defs.insert(
                    format!("S{k}"),
                    json!({"anyOf": [{"allOf": [below, false]}, below]}),
                );
            }
            json!({"$defs": defs, "$ref": format!("#/$defs/S{levels}")})
        }
        let within = Subset::compile(&doubling(12), "", Formats::Annotate);
        assert!(within.holds(&json!(1)));
        // Each level visits about four nodes and the level below twice:
        // 4 * 2^19 steps, past the bound of 2^20.
        let past = doubling(MAX_STEPS.ilog2() - 1);
        let subset = Subset::compile(&past, "", Formats::Annotate);
        assert!(subset.is_complete());
        assert!(!subset.holds(&json!(1)));
        assert_eq!(subset.explain(&json!(1)), None);
        // What jsonschema says of it: valid (the bound only hands it over).
        assert!(strict(&past).is_valid(&json!(1)));
    }
}
