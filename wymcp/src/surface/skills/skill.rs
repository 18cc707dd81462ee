//! A skill as the builder is given it: its name, prefix, `SKILL.md` and
//! files, and the limits and naming rules every skill is held to.

use std::path::PathBuf;

/// The most files one skill may have, `SKILL.md` included: the SEP's limit.
pub const MAX_SKILL_FILES: usize = 512;
/// The most bytes the files of one skill may hold together: the SEP's
/// limit (16 MiB).
pub const MAX_SKILL_BYTES: u64 = 16 * 1024 * 1024;
/// The most skills one server serves.
pub const MAX_SKILLS: usize = 1024;
/// The most bytes the files of every skill of a server may hold together
/// (they are held in memory): 64 MiB.
pub const MAX_SKILLS_BYTES: u64 = 64 * 1024 * 1024;
/// The most directory levels below a skill's root.
pub const MAX_SKILL_DEPTH: usize = 8;
/// The longest `description` (the Agent Skills specification's limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// The longest `compatibility` (the Agent Skills specification's limit).
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

/// The media type of a directory resource.
pub(super) const DIRECTORY: &str = "inode/directory";
/// The manifest every skill has at its root.
pub(super) const SKILL_MD: &str = "SKILL.md";
/// The prefix of `metadata` keys reserved for MCP extensions.
pub(super) const RESERVED_METADATA: &str = "io.modelcontextprotocol/";

/// One skill: its name, its `SKILL.md` and its other files, given in code
/// ([`ServerBuilder::skill`](crate::ServerBuilder::skill)); a skills
/// directory gives them from disk. Checked when the server is built.
///
/// ```
/// use wymcp::Skill;
///
/// let skill = Skill::new(
///     "git-workflow",
///     "---\nname: git-workflow\ndescription: Follow our Git conventions\n---\n# Git\nSee `refs/branching.md`.\n",
/// )
/// .file("refs/branching.md", "Branch from main.\n");
/// let server = wymcp::Server::builder().skill(skill).build()?;
/// # let _ = server;
/// # Ok::<(), wymcp::BuildError>(())
/// ```
#[derive(Clone)]
pub struct Skill {
    pub(super) name: String,
    pub(super) prefix: Vec<String>,
    pub(super) markdown: Vec<u8>,
    pub(super) files: Vec<(String, Vec<u8>)>,
    /// The skill's directory on disk, when it was read from one: what
    /// errors name.
    pub(super) origin: Option<PathBuf>,
}

impl std::fmt::Debug for Skill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Skill")
            .field("name", &self.name)
            .field("prefix", &self.prefix)
            .field("files", &self.files.len())
            .finish_non_exhaustive()
    }
}

impl Skill {
    /// A skill called `name` (its front matter's `name` must be the same),
    /// whose `SKILL.md` is `skill_md`.
    pub fn new(name: impl Into<String>, skill_md: impl Into<String>) -> Self {
        Skill {
            name: name.into(),
            prefix: Vec::new(),
            markdown: skill_md.into().into_bytes(),
            files: Vec::new(),
            origin: None,
        }
    }

    /// Served under an organizational prefix: `acme/billing` serves the
    /// skill `refunds` at `skill://acme/billing/refunds/SKILL.md`.
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into().split('/').map(str::to_owned).collect();
        self
    }

    /// A supporting file at `path` (relative to the skill's root, `/`
    /// separated: `references/FORMS.md`).
    #[must_use]
    pub fn file(mut self, path: impl Into<String>, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), contents.into()));
        self
    }

    /// `skill://<prefix>/<name>`, the skill's root directory.
    pub(super) fn root(&self) -> String {
        let mut root = String::from("skill://");
        for segment in &self.prefix {
            root.push_str(segment);
            root.push('/');
        }
        root.push_str(&self.name);
        root
    }

    /// What an error about the file at `path` in this skill names.
    pub(super) fn label(&self, path: &str) -> String {
        match &self.origin {
            Some(dir) => dir.join(path).display().to_string(),
            None => format!("{}/{path}", self.root()),
        }
    }
}

/// A segment of a skill path or a file path that is safe in a URI as it
/// is: RFC 3986 unreserved characters, not `.` or `..`.
pub(super) fn uri_segment(segment: &str) -> bool {
    !segment.is_empty()
        && segment != "."
        && segment != ".."
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// The Agent Skills naming rules: 1 to 64 characters, lowercase letters,
/// digits and hyphens, no leading, trailing or doubled hyphen.
pub(super) fn name_rule(name: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(format!(
            "the skill name `{}` breaks the naming rules: 1 to 64 lowercase letters, digits and hyphens, no leading, trailing or doubled hyphen",
            name.escape_debug()
        ))
    }
}
