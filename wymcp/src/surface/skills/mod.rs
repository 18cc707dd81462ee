//! The Skills extension (SEP-2640, `io.modelcontextprotocol/skills`):
//! [`Skill`]s given to the builder or read from a directory
//! ([`ServerBuilder::skills_dir`](crate::ServerBuilder::skills_dir)),
//! checked when the server is built, served as `skills/list`,
//! `skills/get` and `resources/directory/read`, each file of a skill an
//! ordinary resource at `skill://<skill-path>/<file-path>`.
//!
//! Files, bottom up: `skill` (a skill as given, the limits and naming
//! rules), `frontmatter` (the strict reader of a `SKILL.md`'s front
//! matter), `dir` (a skills directory read from disk, bounded), `served`
//! (the checks, the entries and the answers). Why a skill cannot be served
//! is a `SkillError`, in `surface/error.rs`.
//!
//! What is served is fixed when the server is built: a skill's entry
//! carries the digest of each file, and the files are the catalog's
//! resources from then on.

mod dir;
mod frontmatter;
mod served;
mod skill;

pub use frontmatter::{MAX_FRONTMATTER_BYTES, MAX_FRONTMATTER_KEYS};
pub(crate) use served::Skills;
pub use skill::{
    MAX_COMPATIBILITY_CHARS, MAX_DESCRIPTION_CHARS, MAX_SKILL_BYTES, MAX_SKILL_DEPTH,
    MAX_SKILL_FILES, MAX_SKILLS, MAX_SKILLS_BYTES, Skill,
};
