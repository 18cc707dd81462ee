//! The skills a server serves: each [`Skill`] checked against the SEP and
//! the Agent Skills specification, its entry (front matter, manifest with
//! digests) and its files as resources, fixed when the server is built;
//! and the answers of `skills/get` and `resources/directory/read`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use base64::Engine as _;
use serde_json::{Map, Value, json};
use sha2::Digest as _;

use super::dir;
use super::frontmatter;
use super::skill::{
    DIRECTORY, MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_SKILL_BYTES, MAX_SKILL_DEPTH,
    MAX_SKILL_FILES, MAX_SKILLS, MAX_SKILLS_BYTES, RESERVED_METADATA, SKILL_MD, Skill, name_rule,
    uri_segment,
};
use crate::protocol::ids::hex_into;
use crate::surface::context::HandlerError;
use crate::surface::error::{SkillError, SurfaceError};
use crate::surface::resource::Resource;

fn digest(bytes: &[u8]) -> String {
    let hash = sha2::Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    hex_into(&mut out, &hash);
    out
}

/// The media type of a file, by its extension.
fn mime_of(path: &str, text: bool) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js") => "text/javascript",
        Some("html" | "htm") => "text/html",
        Some("csv") => "text/csv",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("pdf") => "application/pdf",
        _ if text => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The skills a server serves, fixed when it is built.
#[derive(Debug, Default)]
pub(crate) struct Skills {
    /// Each skill's entry, by URI order.
    entries: Vec<Value>,
    /// The index of each entry by its `SKILL.md` URI.
    by_uri: HashMap<String, usize>,
    /// Each directory's direct children (their resource listings), by URI
    /// order, by the directory's URI.
    dirs: HashMap<String, Vec<Value>>,
}

/// One checked skill: its entry and its files as resources.
struct Checked {
    uri: String,
    entry: Value,
    resources: Vec<Resource>,
    /// Every file's path from the scheme (`a/b/SKILL.md`), with its listing.
    listings: Vec<(String, Value)>,
}

/// Checks a skill against the SEP and the Agent Skills specification.
fn check(skill: &Skill) -> Result<Checked, SkillError> {
    let md_label = skill.label(SKILL_MD);
    let dir_label = match &skill.origin {
        Some(dir) => dir.display().to_string(),
        None => skill.root(),
    };
    let dir_label = || dir_label.clone();
    let root = skill.root();
    name_rule(&skill.name).map_err(|rule| SkillError::new(dir_label(), rule))?;
    if let Some(bad) = skill.prefix.iter().find(|s| !uri_segment(s)) {
        return Err(SkillError::new(
            dir_label(),
            format!(
                "the prefix segment `{}` is not a URI path segment (letters, digits, `-`, `.`, `_`, `~`)",
                bad.escape_debug()
            ),
        ));
    }
    let text = std::str::from_utf8(&skill.markdown)
        .map_err(|_| SkillError::new(&md_label, "SKILL.md is not UTF-8"))?;
    let frontmatter = frontmatter::read(text).map_err(|rule| SkillError::new(&md_label, rule))?;
    check_frontmatter(&frontmatter, &skill.name)
        .map_err(|rule| SkillError::new(&md_label, rule))?;
    let name = skill.name.clone();
    let description = frontmatter
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();

    // The files: SKILL.md first, then the others by path.
    let mut files: Vec<(String, Vec<u8>)> = Vec::with_capacity(skill.files.len() + 1);
    let mut seen = HashSet::new();
    let mut others = skill.files.clone();
    others.sort_by(|a, b| a.0.cmp(&b.0));
    for (path, _) in &others {
        let label = skill.label(path);
        let segments: Vec<&str> = path.split('/').collect();
        if let Some(bad) = segments.iter().find(|s| !uri_segment(s)) {
            return Err(SkillError::new(
                label,
                format!(
                    "the name `{}` is not a URI path segment (letters, digits, `-`, `.`, `_`, `~`)",
                    bad.escape_debug()
                ),
            ));
        }
        if segments.len() > MAX_SKILL_DEPTH + 1 {
            return Err(SkillError::new(
                label,
                format!("deeper than {MAX_SKILL_DEPTH} directories below the skill's root"),
            ));
        }
        if path == SKILL_MD || !seen.insert(path.clone()) {
            return Err(SkillError::new(label, "the file is given twice"));
        }
    }
    // A file that is also a directory of another.
    for (path, _) in &others {
        let below = format!("{path}/");
        if others.iter().any(|(p, _)| p.starts_with(&below)) {
            return Err(SkillError::new(
                skill.label(path),
                "a file and a directory of the skill share this path",
            ));
        }
    }
    files.push((SKILL_MD.to_owned(), skill.markdown.clone()));
    files.extend(others);
    if files.len() > MAX_SKILL_FILES {
        return Err(SkillError::new(
            dir_label(),
            format!(
                "the skill has {} files, more than the {MAX_SKILL_FILES} a skill may have",
                files.len()
            ),
        ));
    }
    let total: u64 = files.iter().map(|(_, b)| b.len() as u64).sum();
    if total > MAX_SKILL_BYTES {
        return Err(SkillError::new(
            dir_label(),
            format!(
                "the skill's files hold {total} bytes, more than the {MAX_SKILL_BYTES} a skill may"
            ),
        ));
    }

    let uri = format!("{root}/{SKILL_MD}");
    let mut manifest = Vec::with_capacity(files.len());
    let mut resources = Vec::with_capacity(files.len());
    let mut listings = Vec::with_capacity(files.len());
    for (path, bytes) in files {
        let file_uri = format!("{root}/{path}");
        let size = bytes.len() as u64;
        manifest.push(json!({"uri": file_uri, "digest": digest(&bytes), "size": size}));
        let leaf = path.rsplit('/').next().unwrap_or(&path).to_owned();
        let is_md = path == SKILL_MD;
        let (resource_name, text) = match String::from_utf8(bytes) {
            Ok(text) => (leaf, Ok(text)),
            Err(not_text) => (leaf, Err(not_text.into_bytes())),
        };
        let mime = mime_of(&path, text.is_ok());
        let mut resource = if is_md {
            Resource::new(&file_uri, &name).description(&description)
        } else {
            Resource::new(&file_uri, resource_name)
        }
        .mime_type(mime)
        .size(size);
        resource = match text {
            Ok(text) => resource.text(text),
            Err(bytes) => resource.blob(base64::engine::general_purpose::STANDARD.encode(bytes)),
        };
        listings.push((file_uri["skill://".len()..].to_owned(), resource.listing()));
        resources.push(resource);
    }
    let entry = json!({
        "uri": uri,
        "frontmatter": Value::Object(frontmatter),
        "resources": manifest,
    });
    Ok(Checked {
        uri,
        entry,
        resources,
        listings,
    })
}

/// The front matter's fields against the Agent Skills specification and
/// the SEP, `name` against the skill's.
fn check_frontmatter(frontmatter: &Map<String, Value>, name: &str) -> Result<(), String> {
    let string = |key: &str| frontmatter.get(key).and_then(Value::as_str);
    match string("name") {
        None | Some("") => return Err("the front matter has no `name`".into()),
        Some(given) if given != name => {
            return Err(format!(
                "the front matter's name `{}` is not the skill's name `{name}` (its directory's)",
                given.escape_debug()
            ));
        }
        Some(_) => {}
    }
    match string("description") {
        None | Some("") => return Err("the front matter has no `description`".into()),
        Some(d) if d.chars().count() > MAX_DESCRIPTION_CHARS => {
            return Err(format!(
                "the description is longer than {MAX_DESCRIPTION_CHARS} characters"
            ));
        }
        Some(_) => {}
    }
    if string("compatibility").is_some_and(|c| c.chars().count() > MAX_COMPATIBILITY_CHARS) {
        return Err(format!(
            "the compatibility is longer than {MAX_COMPATIBILITY_CHARS} characters"
        ));
    }
    for (key, value) in frontmatter {
        match (key.as_str(), value) {
            ("metadata", Value::Object(metadata)) => {
                if let Some(reserved) = metadata.keys().find(|k| k.starts_with(RESERVED_METADATA)) {
                    return Err(format!(
                        "the metadata key `{reserved}` is under `{RESERVED_METADATA}`, reserved for MCP extensions"
                    ));
                }
            }
            ("metadata", _) => return Err("`metadata` must be a map of strings".into()),
            (_, Value::String(_)) => {}
            (key, _) => return Err(format!("`{key}` must be a string")),
        }
    }
    Ok(())
}

impl Skills {
    /// The skills given and those of the `dirs`, checked, and their files
    /// as resources for the catalog.
    pub(crate) fn build(
        given: Vec<Skill>,
        dirs: &[PathBuf],
    ) -> Result<(Skills, Vec<Resource>), SurfaceError> {
        let mut all = given;
        let mut budget = MAX_SKILLS_BYTES;
        for skill in &all {
            let bytes = skill.markdown.len() as u64
                + skill.files.iter().map(|(_, b)| b.len() as u64).sum::<u64>();
            budget = budget.saturating_sub(bytes);
        }
        for root in dirs {
            all.extend(dir::load(
                root,
                &mut budget,
                MAX_SKILLS.saturating_sub(all.len()),
            )?);
        }
        if all.len() > MAX_SKILLS {
            return Err(SkillError::new(
                all[MAX_SKILLS].label(""),
                format!("more than {MAX_SKILLS} skills"),
            )
            .into());
        }
        let total: u64 = all
            .iter()
            .map(|s| {
                s.markdown.len() as u64 + s.files.iter().map(|(_, b)| b.len() as u64).sum::<u64>()
            })
            .sum();
        if total > MAX_SKILLS_BYTES {
            return Err(SkillError::new(
                all.last().map(|s| s.label("")).unwrap_or_default(),
                format!("the skills' files hold more than {MAX_SKILLS_BYTES} bytes together"),
            )
            .into());
        }
        // No skill inside another, no two at one path.
        let mut roots: Vec<(String, String)> = all
            .iter()
            .map(|s| (format!("{}/", s.root()), s.label("")))
            .collect();
        roots.sort();
        for pair in roots.windows(2) {
            if pair[1].0.starts_with(&pair[0].0) {
                return Err(SkillError::new(
                    pair[1].1.clone(),
                    format!(
                        "the skill at `{}` lies inside (or is) the skill at `{}`: serve nested skills as files of the outer one",
                        pair[1].0.trim_end_matches('/'),
                        pair[0].0.trim_end_matches('/')
                    ),
                )
                .into());
            }
        }
        let mut checked = Vec::with_capacity(all.len());
        for skill in all {
            checked.push(check(&skill)?);
        }
        checked.sort_by(|a, b| a.uri.cmp(&b.uri));
        let mut skills = Skills::default();
        let mut children: HashMap<String, BTreeMap<String, Value>> = HashMap::new();
        let mut resources = Vec::new();
        for one in checked {
            skills.by_uri.insert(one.uri.clone(), skills.entries.len());
            skills.entries.push(one.entry);
            for (path, listing) in one.listings {
                // Every ancestor directory of the file has a child on its way.
                let segments: Vec<&str> = path.split('/').collect();
                for depth in 1..segments.len() {
                    let dir = format!("skill://{}", segments[..depth].join("/"));
                    let child = format!("skill://{}", segments[..=depth].join("/"));
                    let value = if depth + 1 == segments.len() {
                        listing.clone()
                    } else {
                        json!({"uri": child, "name": segments[depth], "mimeType": DIRECTORY})
                    };
                    children.entry(dir).or_default().insert(child, value);
                }
            }
            resources.extend(one.resources);
        }
        skills.dirs = children
            .into_iter()
            .map(|(dir, kids)| (dir, kids.into_values().collect()))
            .collect();
        Ok((skills, resources))
    }

    /// Every entry, by URI order.
    pub(crate) fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// `skills/get`: the entry of the skill whose `SKILL.md` is at `uri`.
    pub(crate) fn get(&self, params: Option<&Value>) -> Result<Value, HandlerError> {
        let Some(Value::String(uri)) = params.and_then(|p| p.get("uri")) else {
            return Err(HandlerError::invalid_params("`uri` must be a string"));
        };
        match self.by_uri.get(uri.as_str()) {
            Some(&i) => Ok(json!({"skill": self.entries[i]})),
            None => Err(HandlerError::InvalidParams {
                message: format!(
                    "no skill is served at {}",
                    crate::protocol::text::truncated(uri)
                ),
                data: Some(json!({"uri": crate::protocol::text::truncated(uri)})),
            }),
        }
    }

    /// `resources/directory/read`: the children of the directory at `uri`.
    pub(crate) fn directory(&self, params: Option<&Value>) -> Result<&[Value], HandlerError> {
        let Some(Value::String(uri)) = params.and_then(|p| p.get("uri")) else {
            return Err(HandlerError::invalid_params("`uri` must be a string"));
        };
        self.dirs
            .get(uri.as_str())
            .map(Vec::as_slice)
            .ok_or_else(|| HandlerError::InvalidParams {
                message: format!(
                    "{} is not a directory resource",
                    crate::protocol::text::truncated(uri)
                ),
                data: Some(json!({"uri": crate::protocol::text::truncated(uri)})),
            })
    }
}
